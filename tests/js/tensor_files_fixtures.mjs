// Fixtures of tests/js/tensor_files.test.mjs and tensor_files_fuzz.test.mjs: the Python-made
// checkpoint files (tests/js/make_torch_files.py, run with /usr/bin/python3, which has torch; zip
// and legacy torch.save files, safetensors files, hostile ones),
// a small writer of stored zip archives like torch.save's, a safetensors builder and a seeded PRNG.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Runs the generator into a new temporary folder; returns {dir, manifest, good(name), hostile(name), cleanup}.
export function makeTorchFiles(canaryPort = 9) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tensor-files-'));
  const run = spawnSync('/usr/bin/python3', [path.join(ROOT, 'tests/js/make_torch_files.py'), dir, String(canaryPort)], {
    cwd: ROOT, encoding: 'utf8', timeout: 180_000,
  });
  if (run.status !== 0) throw new Error(`make_torch_files.py failed (${run.status ?? run.signal}): ${run.stderr}`);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  return {
    dir,
    manifest,
    good: (name) => new Uint8Array(fs.readFileSync(path.join(dir, 'good', name))),
    hostile: (name) => new Uint8Array(fs.readFileSync(path.join(dir, 'hostile', name))),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

// mulberry32: a small seeded PRNG; next() in [0, 1).
export function mulberry32(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (list) => list[Math.floor(next() * list.length)] };
}

const enc = new TextEncoder();

// A safetensors file from a header object (serialised as given) and the data bytes; headerLength
// overrides the length field.
export function safetensorsBytes(header, data = new Uint8Array(0), { headerLength } = {}) {
  const text = enc.encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength ?? text.length), true);
  out.set(text, 8);
  out.set(data, 8 + text.length);
  return out;
}

// A stored zip archive of [{name, data}] as torch.save writes it: data 64-byte aligned behind a
// padding extra field, zip64 end records. zip64Fields: the central directory's sizes and offsets
// as 0xffffffff with a zip64 extra field. method: the method number written (data unchanged).
export function zipBytes(entries, { align = 64, zip64End = true, zip64Fields = false, method = 0, comment = '' } = {}) {
  const chunks = [];
  let offset = 0;
  const add = (bytes) => { chunks.push(bytes); offset += bytes.length; };
  const central = [];
  for (const { name, data } of entries) {
    const nameBytes = enc.encode(name);
    const headerEnd = offset + 30 + nameBytes.length;
    let pad = align > 1 ? (align - ((headerEnd + 4) % align)) % align : 0;
    const extraLength = align > 1 ? 4 + pad : 0;
    const local = new Uint8Array(30 + nameBytes.length + extraLength);
    const v = new DataView(local.buffer);
    v.setUint32(0, 0x04034b50, true);
    v.setUint16(4, 20, true);
    v.setUint16(8, method, true);
    v.setUint32(18, data.length, true);
    v.setUint32(22, data.length, true);
    v.setUint16(26, nameBytes.length, true);
    v.setUint16(28, extraLength, true);
    local.set(nameBytes, 30);
    if (extraLength) {
      v.setUint16(30 + nameBytes.length, 0x4246, true); // 'FB', as torch's writer pads
      v.setUint16(32 + nameBytes.length, pad, true);
    }
    central.push({ nameBytes, size: data.length, local: offset });
    add(local);
    add(data);
  }
  const cdOffset = offset;
  for (const { nameBytes, size, local } of central) {
    const extra = zip64Fields ? 4 + 24 : 0;
    const entry = new Uint8Array(46 + nameBytes.length + extra);
    const v = new DataView(entry.buffer);
    v.setUint32(0, 0x02014b50, true);
    v.setUint16(4, 0x031e, true);
    v.setUint16(6, 45, true);
    v.setUint16(10, method, true);
    v.setUint32(20, zip64Fields ? 0xffffffff : size, true);
    v.setUint32(24, zip64Fields ? 0xffffffff : size, true);
    v.setUint16(28, nameBytes.length, true);
    v.setUint16(30, extra, true);
    v.setUint32(42, zip64Fields ? 0xffffffff : local, true);
    entry.set(nameBytes, 46);
    if (zip64Fields) {
      const e = 46 + nameBytes.length;
      v.setUint16(e, 1, true);
      v.setUint16(e + 2, 24, true);
      v.setBigUint64(e + 4, BigInt(size), true);
      v.setBigUint64(e + 12, BigInt(size), true);
      v.setBigUint64(e + 20, BigInt(local), true);
    }
    add(entry);
  }
  const cdSize = offset - cdOffset;
  if (zip64End) {
    const record = new Uint8Array(56);
    const v = new DataView(record.buffer);
    v.setUint32(0, 0x06064b50, true);
    v.setBigUint64(4, 44n, true);
    v.setUint16(12, 0x031e, true);
    v.setUint16(14, 45, true);
    v.setBigUint64(24, BigInt(entries.length), true);
    v.setBigUint64(32, BigInt(entries.length), true);
    v.setBigUint64(40, BigInt(cdSize), true);
    v.setBigUint64(48, BigInt(cdOffset), true);
    const recordOffset = offset;
    add(record);
    const locator = new Uint8Array(20);
    const w = new DataView(locator.buffer);
    w.setUint32(0, 0x07064b50, true);
    w.setBigUint64(8, BigInt(recordOffset), true);
    w.setUint32(16, 1, true);
    add(locator);
  }
  const commentBytes = enc.encode(comment);
  const end = new Uint8Array(22 + commentBytes.length);
  const v = new DataView(end.buffer);
  v.setUint32(0, 0x06054b50, true);
  v.setUint16(8, Math.min(entries.length, 0xffff), true);
  v.setUint16(10, Math.min(entries.length, 0xffff), true);
  v.setUint32(12, cdSize, true);
  v.setUint32(16, cdOffset, true);
  v.setUint16(20, commentBytes.length, true);
  end.set(commentBytes, 22);
  add(end);
  const out = new Uint8Array(offset);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

export const fromBase64 = (text) => new Uint8Array(Buffer.from(text, 'base64'));
export const concatBytes = (parts) => new Uint8Array(Buffer.concat(parts));
export const hex = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

// A hand-written protocol-2 pickle of {name: _rebuild_tensor_v2(storage '0' FloatStorage, offset,
// size, stride)} for each [name, offset, size] (contiguous strides), as torch.save writes it.
export function handPickle(tensors, numel) {
  const out = [];
  const byte = (...b) => out.push(...b);
  const str = (s) => { const b = enc.encode(s); byte(0x58, b.length & 255, (b.length >> 8) & 255, 0, 0, ...b); };
  const int = (n) => byte(0x4a, n & 255, (n >> 8) & 255, (n >> 16) & 255, (n >>> 24) & 255);
  const line = (s) => byte(...enc.encode(`${s}\n`));
  byte(0x80, 2);
  byte(0x63); line('collections'); line('OrderedDict');
  byte(0x71, 0, 0x29, 0x52); // BINPUT 0, EMPTY_TUPLE, REDUCE
  byte(0x28); // MARK
  tensors.forEach(([name, offset, size], i) => {
    str(name);
    byte(0x63); line('torch._utils'); line('_rebuild_tensor_v2');
    byte(0x28); // MARK (args)
    byte(0x28); str('storage'); byte(0x63); line('torch'); line('FloatStorage'); str('0'); str('cpu'); int(numel); byte(0x74, 0x51); // tuple, BINPERSID
    int(offset);
    byte(0x28); for (const d of size) int(d); byte(0x74);
    const stride = size.map((_, d) => size.slice(d + 1).reduce((p, x) => p * x, 1));
    byte(0x28); for (const s of stride) int(s); byte(0x74);
    byte(0x89, 0x68, 0, 0x29, 0x52); // False, BINGET 0 (OrderedDict), (), REDUCE
    byte(0x74, 0x52); // TUPLE (args), REDUCE
    if (i === 0) byte(0x71, 1); // BINPUT 1: memo the first tensor
  });
  byte(0x75, 0x2e); // SETITEMS, STOP
  return new Uint8Array(out);
}
