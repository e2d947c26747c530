// The two weight files of a Hugging Face BERT repository, model.safetensors and pytorch_model.bin,
// read straight from their bytes. pytorch_model.bin is read in both of torch.save's formats: the
// zip archive (PyTorch 1.6 and later) and the legacy format (before 1.6, and later ones saving with
// _use_new_zipfile_serialization=False, which many 2020-era Hub repositories ship): five pickles
// back to back (the magic number, the protocol version 1001, a sys_info dict, the state_dict, the
// list of storage keys) followed by each storage's int64 element count and raw bytes. Nothing a
// file contains is ever run: the PyTorch pickles are read by a small restricted pickle machine that
// knows only the handful of opcodes and globals a state_dict uses and refuses everything else by
// name. Every tensor's data is a view into the given bytes (no copy): a 440 MB checkpoint is held
// once. torch.save's oldest format (a tar archive, PyTorch 0.1) and the storage views that only
// PyTorch before 0.4 wrote are refused with a message that says so.
//
// Every failure is an EngineError of kind 'model' whose message starts with the file's name.
// No DOM and no Node-only API: this runs in the engine's worker and in Node.
import { EngineError } from './errors.js';

// safetensors' dtype names and their sizes in bytes. F32, F16 and BF16 are the ones toFloat32
// reads; the others are listed so that a caller can skip a buffer (position_ids is I64) by name.
const ITEMSIZE = Object.freeze({
  BOOL: 1, U8: 1, I8: 1,
  I16: 2, U16: 2, F16: 2, BF16: 2,
  I32: 4, U32: 4, F32: 4,
  I64: 8, U64: 8, F64: 8,
});

const LIMITS = Object.freeze({
  safetensorsHeader: 100_000_000, // bytes of JSON header
  zipEntries: 100_000,
  memo: 1_000_000,                // pickle memo entries
  stack: 1_000_000,               // pickle stack items
  marks: 100_000,                 // open MARKs
  opcodes: 10_000_000,
  globalLine: 256,                // bytes of a GLOBAL's module or name
  dims: 64,                       // a tensor's rank
  metadataNodes: 1_000_000,       // values of a state_dict's _metadata made into plain objects
  metadataDepth: 64,
});

const refuse = (message) => new EngineError('model', message);
const utf8 = new TextDecoder('utf-8', { fatal: true });

// 1234567 -> '1,234,567' (numbers or BigInts).
const count = (n) => String(n).replace(/\B(?=(\d{3})+$)/g, ',');
// A name from a file, safe to put in a message: short, and quoted if it holds anything odd.
function shown(text, max = 120) {
  const s = String(text);
  const cut = s.length > max ? `${s.slice(0, max)}…` : s;
  return /^[\w.\-/:]*$/.test(cut) && cut !== '' ? cut : JSON.stringify(cut);
}

function asBytes(input, file) {
  if (input instanceof Uint8Array) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  throw refuse(`${file} could not be read: expected the file's bytes (a Uint8Array), got ${input === null ? 'null' : typeof input}.`);
}

const u16 = (b, i) => b[i] | (b[i + 1] << 8);
const u32 = (b, i) => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
// A u64 as a Number; values past 2^53 come out as an inexact, larger-than-any-file Number, which
// every caller refuses by comparing with the file's length.
const u64 = (b, i) => u32(b, i) + u32(b, i + 4) * 4294967296;
const u64big = (b, i) => BigInt(u32(b, i)) | (BigInt(u32(b, i + 4)) << 32n);

const startsWith = (bytes, ascii) => bytes.length >= ascii.length && [...ascii].every((c, i) => bytes[i] === c.charCodeAt(0));
const ZIP_MAGIC = 'PK\x03\x04';
// torch.save's legacy format starts with a pickle of its magic number 0x1950a86a20f9469cfc6c:
// PROTO 2 (torch.save's default; 3 to 5 when asked), a FRAME under protocol 4 and 5, then LONG1.
// This is how the format is told; the number itself is checked by readLegacyTorch, which names a
// wrong one.
const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;
const LEGACY_PROTOCOL = 1001;
function looksLikeLegacyTorch(bytes) {
  if (bytes.length < 3 || bytes[0] !== 0x80 || bytes[1] < 2 || bytes[1] > 5) return false;
  const at = bytes[2] === 0x95 ? 11 : 2; // FRAME and its 8-byte length
  return at >= bytes.length || bytes[at] === 0x8a; // a FRAME cut short is read, and refused as truncated
}
// The POSIX tar header's magic at byte 257: torch.save's oldest format (PyTorch 0.1).
const looksLikeTar = (bytes) => bytes.length >= 262 && [...'ustar'].every((c, i) => bytes[257 + i] === c.charCodeAt(0));

function looksLikeSafetensors(bytes) {
  if (bytes.length < 10) return false;
  const n = u64(bytes, 0);
  return n >= 2 && n <= LIMITS.safetensorsHeader && n <= bytes.length - 8 && bytes[8] === 0x7b; // '{'
}

function looksLikeMarkup(bytes) {
  let i = 0;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) i = 3;
  while (i < bytes.length && i < 1024 && (bytes[i] === 0x20 || (bytes[i] >= 0x09 && bytes[i] <= 0x0d))) i++;
  return bytes[i] === 0x3c; // '<'
}

// What a file that is not of the expected format looks like instead, or null.
function foreign(bytes, file, expected) {
  if (bytes.length === 0) return `${file} is empty (0 bytes); the download may have failed.`;
  if (looksLikeMarkup(bytes)) return `${file} is an HTML or XML page, not model weights; the server probably sent an error or sign-in page instead of the file.`;
  if (expected !== 'pytorch' && startsWith(bytes, ZIP_MAGIC)) return `${file} is a zip archive (PyTorch's pytorch_model.bin format), not a safetensors file.`;
  if (expected !== 'pytorch' && looksLikeLegacyTorch(bytes)) return `${file} is a PyTorch checkpoint in torch.save's legacy format (pytorch_model.bin before PyTorch 1.6), not a safetensors file.`;
  if (expected !== 'safetensors' && looksLikeSafetensors(bytes)) return `${file} is a safetensors file, not a PyTorch checkpoint.`;
  if (expected !== 'safetensors' && looksLikeTar(bytes)) {
    return `${file} is a tar archive, torch.save's oldest format (PyTorch 0.1), which is not read here; save it again with a current torch.save, or as safetensors.`;
  }
  if (expected !== 'safetensors' && bytes[0] === 0x80 && bytes.length >= 2 && bytes[1] <= 5) {
    return `${file} is a Python pickle that does not start with torch.save's magic number, so it is not a PyTorch checkpoint (torch.save's legacy files start with it; current ones are zip archives).`;
  }
  return null;
}

// 'safetensors' | 'pytorch' | null, from the first bytes. 'pytorch' is either of torch.save's
// formats: the zip archive or the legacy pickles.
export function sniffWeightsFormat(input) {
  if (!(input instanceof Uint8Array) && !(input instanceof ArrayBuffer)) return null;
  const bytes = input instanceof ArrayBuffer ? new Uint8Array(input) : input;
  if (startsWith(bytes, ZIP_MAGIC)) return 'pytorch';
  if (looksLikeLegacyTorch(bytes)) return 'pytorch';
  if (looksLikeSafetensors(bytes)) return 'safetensors';
  return null;
}

// ---------------------------------------------------------------------------------------------
// safetensors: u64 LE header length N, N bytes of JSON, then the data; offsets are relative to
// the data's start.

export function readSafetensors(input, { file = 'model.safetensors' } = {}) {
  const bytes = asBytes(input, file);
  const bad = (what) => refuse(`${file} is not a usable safetensors file: ${what}.`);
  if (bytes.length < 8) throw refuse(foreign(bytes, file, 'safetensors') ?? `${file} is ${bytes.length} bytes, too short for a safetensors file (the header length alone is 8 bytes).`);
  const n = u64big(bytes, 0);
  if (n > BigInt(LIMITS.safetensorsHeader) || 8n + n > BigInt(bytes.length)) {
    const other = foreign(bytes, file, 'safetensors');
    if (other) throw refuse(other);
    if (n > BigInt(LIMITS.safetensorsHeader)) throw bad(`its header length field says ${count(n)} bytes, more than the ${count(LIMITS.safetensorsHeader)} a header may have`);
    throw bad(`its header length field says ${count(n)} bytes, but only ${count(bytes.length - 8)} bytes follow it (the file is truncated, or not safetensors)`);
  }
  const dataStart = 8 + Number(n);
  const dataLength = bytes.length - dataStart;
  let header;
  try {
    header = JSON.parse(utf8.decode(bytes.subarray(8, dataStart)));
  } catch (error) {
    const other = foreign(bytes, file, 'safetensors');
    if (other) throw refuse(other);
    throw bad(`its header is not UTF-8 JSON (${String(error?.message ?? error).slice(0, 200)})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) throw bad('its header is not a JSON object');

  let metadata = {};
  const entries = [];
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (info === null) continue;
      if (typeof info !== 'object' || Array.isArray(info)) throw bad('its __metadata__ is not an object of strings');
      for (const [key, value] of Object.entries(info)) {
        if (typeof value !== 'string') throw bad(`its __metadata__ entry ${shown(key)} is not a string`);
      }
      metadata = Object.fromEntries(Object.entries(info));
      continue;
    }
    const what = `tensor ${shown(name)}`;
    if (info === null || typeof info !== 'object' || Array.isArray(info)) throw bad(`${what} is described by ${info === null ? 'null' : Array.isArray(info) ? 'an array' : `a ${typeof info}`}, not an object`);
    const { dtype, shape, data_offsets: offsets } = info;
    if (typeof dtype !== 'string') throw bad(`${what} has no dtype string`);
    if (!Object.hasOwn(ITEMSIZE, dtype)) throw bad(`${what} has the unknown dtype ${shown(dtype, 40)}`);
    if (!Array.isArray(shape)) throw bad(`${what} has no shape array`);
    if (shape.length > LIMITS.dims) throw bad(`${what} has ${count(shape.length)} dimensions`);
    for (const dim of shape) {
      if (!Number.isSafeInteger(dim) || dim < 0) throw bad(`${what} has the shape entry ${shown(JSON.stringify(dim), 40)}, not a non-negative integer`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2) throw bad(`${what} has no data_offsets pair`);
    const [begin, end] = offsets;
    for (const offset of offsets) {
      if (!Number.isSafeInteger(offset) || offset < 0) throw bad(`${what} has the data offset ${shown(JSON.stringify(offset), 40)}, not a non-negative integer below 2^53`);
    }
    if (end < begin) throw bad(`${what}'s data offsets [${count(begin)}, ${count(end)}] run backwards`);
    if (end > dataLength) throw bad(`${what}'s data offsets [${count(begin)}, ${count(end)}] run past the end of the file (${count(dataLength)} data bytes)`);
    const itemsize = ITEMSIZE[dtype];
    const needed = shape.reduce((p, d) => p * BigInt(d), 1n) * BigInt(itemsize);
    if (needed !== BigInt(end - begin)) {
      throw bad(`${what} of shape [${shape.join(', ')}] and dtype ${dtype} needs ${count(needed)} bytes, but its data offsets give ${count(end - begin)}`);
    }
    entries.push({ name, dtype, shape: shape.slice(), begin, end });
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  // In order of offsets, each tensor begins at or after the furthest end so far.
  let furthest = null;
  for (const entry of entries) {
    if (furthest && entry.begin < furthest.end) throw bad(`the data of tensors ${shown(furthest.name)} and ${shown(entry.name)} overlap`);
    if (!furthest || entry.end > furthest.end) furthest = entry;
  }
  const tensors = new Map();
  for (const { name, dtype, shape, begin, end } of entries) {
    tensors.set(name, { dtype, shape, data: bytes.subarray(dataStart + begin, dataStart + end) });
  }
  return { format: 'safetensors', tensors, metadata };
}

// ---------------------------------------------------------------------------------------------
// The zip archive of torch.save. An npm zip package is of no use here: fflate's unzipSync (like
// the others) copies every entry into a new buffer, so a 440 MB checkpoint would be held twice,
// and it would inflate whatever a crafted file asks. torch.save stores every entry uncompressed
// (method 0, data 64-byte aligned, zip64 end records), so a strict reader of the central directory
// is short, and every entry's data is a view of the file's bytes.

const SIG = { local: 0x04034b50, central: 0x02014b50, eocd: 0x06054b50, eocd64: 0x06064b50, locator64: 0x07064b50 };

function readZip(bytes, file) {
  const bad = (what) => refuse(`${file} is not a usable PyTorch checkpoint: ${what}.`);
  const length = bytes.length;
  if (length < 22) throw bad(`at ${count(length)} bytes it is too short for a zip archive (the file is truncated)`);
  // The end-of-central-directory record: the last 22 bytes, or earlier when a comment follows.
  let eocd = -1;
  for (let i = length - 22, stop = Math.max(0, length - 22 - 0xffff); i >= stop; i--) {
    if (bytes[i] === 0x50 && bytes[i + 1] === 0x4b && bytes[i + 2] === 5 && bytes[i + 3] === 6 && i + 22 + u16(bytes, i + 20) === length) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw bad('its zip end-of-central-directory record is missing (the file is truncated, or not a zip archive)');
  let disk = u16(bytes, eocd + 4), cdDisk = u16(bytes, eocd + 6);
  let diskEntries = u16(bytes, eocd + 8), entryCount = u16(bytes, eocd + 10);
  let cdSize = u32(bytes, eocd + 12), cdOffset = u32(bytes, eocd + 16);
  let endRecords = eocd; // where the central directory must end at the latest
  if (eocd >= 20 && u32(bytes, eocd - 20) === SIG.locator64) {
    const locator = eocd - 20;
    if (u32(bytes, locator + 4) !== 0 || u32(bytes, locator + 16) > 1) throw bad('it is a zip archive split over several disks');
    const at = u64(bytes, locator + 8);
    if (at + 56 > locator) throw bad('its zip64 end record lies outside the archive');
    if (u32(bytes, at) !== SIG.eocd64) throw bad('its zip64 end record is missing where the locator points');
    const size = u64(bytes, at + 4);
    if (size < 44 || at + 12 + size > locator) throw bad('its zip64 end record has a bad size');
    const z = { disk: u32(bytes, at + 16), cdDisk: u32(bytes, at + 20), diskEntries: u64(bytes, at + 24), entryCount: u64(bytes, at + 32), cdSize: u64(bytes, at + 40), cdOffset: u64(bytes, at + 48) };
    // The 32-bit fields are either saturated or equal to the zip64 ones.
    const agree = (small, big, max) => small === max || small === big;
    if (!agree(disk, z.disk, 0xffff) || !agree(cdDisk, z.cdDisk, 0xffff) || !agree(diskEntries, z.diskEntries, 0xffff) || !agree(entryCount, z.entryCount, 0xffff) || !agree(cdSize, z.cdSize, 0xffffffff) || !agree(cdOffset, z.cdOffset, 0xffffffff)) {
      throw bad('its zip end records disagree');
    }
    ({ disk, cdDisk, diskEntries, entryCount, cdSize, cdOffset } = z);
    endRecords = at;
  } else if (diskEntries === 0xffff || entryCount === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    throw bad('its zip end record asks for zip64 records that are not there');
  }
  if (disk !== 0 || cdDisk !== 0 || diskEntries !== entryCount) throw bad('it is a zip archive split over several disks');
  if (entryCount > LIMITS.zipEntries) throw bad(`its zip archive has ${count(entryCount)} entries, more than the ${count(LIMITS.zipEntries)} read here`);
  if (cdOffset + cdSize > endRecords) throw bad('its zip central directory runs past the end records (the file is truncated or damaged)');

  const entries = new Map();
  const ranges = [];
  let pos = cdOffset;
  const cdEnd = cdOffset + cdSize;
  for (let k = 0; k < entryCount; k++) {
    if (pos + 46 > cdEnd || u32(bytes, pos) !== SIG.central) throw bad(`its zip central directory is damaged at entry ${count(k + 1)} of ${count(entryCount)}`);
    const flags = u16(bytes, pos + 8);
    const method = u16(bytes, pos + 10);
    let compressed = u32(bytes, pos + 20), size = u32(bytes, pos + 24);
    const nameLength = u16(bytes, pos + 28), extraLength = u16(bytes, pos + 30), commentLength = u16(bytes, pos + 32);
    let startDisk = u16(bytes, pos + 34);
    let local = u32(bytes, pos + 42);
    const next = pos + 46 + nameLength + extraLength + commentLength;
    if (next > cdEnd) throw bad(`its zip central directory is damaged at entry ${count(k + 1)} of ${count(entryCount)}`);
    let name;
    try {
      name = utf8.decode(bytes.subarray(pos + 46, pos + 46 + nameLength));
    } catch {
      throw bad(`entry ${count(k + 1)} of its zip archive has a name that is not UTF-8`);
    }
    // zip64 extended information: the saturated fields, in this order.
    if (size === 0xffffffff || compressed === 0xffffffff || local === 0xffffffff || startDisk === 0xffff) {
      let e = pos + 46 + nameLength;
      const extraEnd = e + extraLength;
      let found = false;
      while (e + 4 <= extraEnd) {
        const id = u16(bytes, e), fieldLength = u16(bytes, e + 2);
        const body = e + 4, bodyEnd = body + fieldLength;
        if (bodyEnd > extraEnd) break;
        if (id === 1) {
          let f = body;
          const take8 = () => {
            if (f + 8 > bodyEnd) throw bad(`zip entry ${shown(name)} has a short zip64 field`);
            const v = u64(bytes, f);
            f += 8;
            return v;
          };
          if (size === 0xffffffff) size = take8();
          if (compressed === 0xffffffff) compressed = take8();
          if (local === 0xffffffff) local = take8();
          if (startDisk === 0xffff) {
            if (f + 4 > bodyEnd) throw bad(`zip entry ${shown(name)} has a short zip64 field`);
            startDisk = u32(bytes, f);
          }
          found = true;
          break;
        }
        e = bodyEnd;
      }
      if (!found) throw bad(`zip entry ${shown(name)} asks for a zip64 field that is not there`);
    }
    if (name.includes('\\') || name.includes('\0')) throw bad(`its zip entry ${shown(name)} has a backslash or NUL in its name`);
    if (name.startsWith('/')) throw bad(`its zip entry ${shown(name)} has an absolute name (a leading /)`);
    const segments = name.split('/');
    if (segments.some((s) => s === '..' || s === '.')) throw bad(`its zip entry ${shown(name)} has a '..' or '.' path segment`);
    if (name === '' || segments.slice(0, -1).some((s) => s === '')) throw bad(`its zip entry ${shown(name)} has an empty path segment`);
    if (entries.has(name)) throw bad(`its zip archive has the entry ${shown(name)} twice`);
    if (flags & 0x41) throw bad(`its zip entry ${shown(name)} is encrypted`);
    if (method !== 0) {
      const methodName = { 8: 'deflate', 9: 'deflate64', 12: 'bzip2', 14: 'lzma', 93: 'zstd', 95: 'xz' }[method];
      throw bad(`its zip entry ${shown(name)} is compressed (method ${method}${methodName ? `, ${methodName}` : ''}); torch.save stores entries uncompressed, and only stored (method 0) entries are read here`);
    }
    if (compressed !== size) throw bad(`its zip entry ${shown(name)} is stored, but its two sizes differ`);
    if (startDisk !== 0) throw bad('it is a zip archive split over several disks');
    // The local header, whose name and extra field come before the data.
    if (local + 30 > cdOffset || u32(bytes, local) !== SIG.local) throw bad(`its zip entry ${shown(name)} has no local header where the central directory says`);
    if (u16(bytes, local + 8) !== 0) throw bad(`its zip entry ${shown(name)} is compressed in its local header`);
    const localName = u16(bytes, local + 26), localExtra = u16(bytes, local + 28);
    const dataStart = local + 30 + localName + localExtra;
    if (localName !== nameLength || dataStart > cdOffset) throw bad(`its zip entry ${shown(name)} has a local header that does not match the central directory`);
    for (let i = 0; i < nameLength; i++) {
      if (bytes[local + 30 + i] !== bytes[pos + 46 + i]) throw bad(`its zip entry ${shown(name)} has a local header that does not match the central directory`);
    }
    const dataEnd = dataStart + size;
    if (dataEnd > length) throw bad(`the data of its zip entry ${shown(name)} runs past the end of the archive (the file is truncated)`);
    if (dataEnd > cdOffset) throw bad(`the data of its zip entry ${shown(name)} overlaps the zip central directory`);
    ranges.push({ name, begin: local, end: dataEnd });
    entries.set(name, bytes.subarray(dataStart, dataEnd));
    pos = next;
  }
  if (pos !== cdEnd) throw bad('its zip central directory has more bytes than its entries');
  ranges.sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i].begin < ranges[i - 1].end) throw bad(`its zip entries ${shown(ranges[i - 1].name)} and ${shown(ranges[i].name)} overlap`);
  }
  return entries;
}

// ---------------------------------------------------------------------------------------------
// The restricted pickle machine. Values: str -> string, int -> number (BigInt past 2^53),
// float -> PyFloat, bool/None -> boolean/null, and the classes below. Nothing is ever called:
// a REDUCE of an allowed global builds a plain description.

class PyFloat { constructor(value) { this.value = value; } }
class PyTuple { constructor(items) { this.items = items; } }
class PyList { constructor() { this.items = []; } }
class PyDict {
  constructor(ordered) {
    this.ordered = ordered;
    this.map = new Map();
    this.state = null; // what BUILD set (torch's _metadata)
  }
}
class PyGlobal { constructor(module, name, role) { this.module = module; this.name = name; this.role = role; } }
// A storage's data is set when it is known: at once for a zip entry, after the last pickle for a
// legacy file (whose storages follow the pickles). A tensor is a byte range of its storage, made
// into a view of the file by tensorData once the data is there. A storage's label is how a message
// names it (data/0 in a zip archive).
class Storage { constructor(key, label, dtype, numel, data) { this.key = key; this.label = label; this.dtype = dtype; this.numel = numel; this.data = data; this.views = new Map(); } }
class Tensor { constructor(dtype, shape, storage, begin, length) { this.dtype = dtype; this.shape = shape; this.storage = storage; this.begin = begin; this.length = length; } }

// Tied weights (the decoder and the word embeddings) share one storage: they get one view.
function tensorData({ storage, begin, length }) {
  const viewKey = `${begin}:${length}`;
  let data = storage.views.get(viewKey);
  if (!data) {
    data = storage.data.subarray(begin, begin + length);
    storage.views.set(viewKey, data);
  }
  return data;
}

// The globals a state_dict's pickle may name, and what each is.
const STORAGE_DTYPES = { FloatStorage: 'F32', HalfStorage: 'F16', BFloat16Storage: 'BF16', LongStorage: 'I64', IntStorage: 'I32', DoubleStorage: 'F64' };
const TORCH_DTYPES = { float32: 'F32', float16: 'F16', bfloat16: 'BF16', float64: 'F64', int64: 'I64', int32: 'I32', int16: 'I16', int8: 'I8', uint8: 'U8', bool: 'BOOL' };
const ALLOWED_GLOBALS = new Map([
  ['collections OrderedDict', { kind: 'OrderedDict' }],
  ['torch._utils _rebuild_tensor_v2', { kind: 'rebuild_tensor' }],
  ['torch._utils _rebuild_parameter', { kind: 'rebuild_parameter' }],
  ['torch.storage UntypedStorage', { kind: 'storage', dtype: null }],
  ['torch UntypedStorage', { kind: 'storage', dtype: null }],
  ...Object.entries(STORAGE_DTYPES).map(([name, dtype]) => [`torch ${name}`, { kind: 'storage', dtype }]),
  ...Object.entries(TORCH_DTYPES).map(([name, dtype]) => [`torch ${name}`, { kind: 'dtype', dtype }]),
]);
export const ACCEPTED_GLOBALS = Object.freeze([...ALLOWED_GLOBALS.keys()].map((k) => k.replace(' ', '.')));

const OPCODE_NAMES = {
  0x28: 'MARK', 0x2e: 'STOP', 0x30: 'POP', 0x31: 'POP_MARK', 0x32: 'DUP', 0x46: 'FLOAT', 0x49: 'INT', 0x4a: 'BININT', 0x4b: 'BININT1',
  0x4c: 'LONG', 0x4d: 'BININT2', 0x4e: 'NONE', 0x50: 'PERSID', 0x51: 'BINPERSID', 0x52: 'REDUCE', 0x53: 'STRING', 0x54: 'BINSTRING',
  0x55: 'SHORT_BINSTRING', 0x56: 'UNICODE', 0x58: 'BINUNICODE', 0x61: 'APPEND', 0x62: 'BUILD', 0x63: 'GLOBAL', 0x64: 'DICT',
  0x7d: 'EMPTY_DICT', 0x65: 'APPENDS', 0x67: 'GET', 0x68: 'BINGET', 0x69: 'INST', 0x6a: 'LONG_BINGET', 0x6c: 'LIST', 0x5d: 'EMPTY_LIST',
  0x6f: 'OBJ', 0x70: 'PUT', 0x71: 'BINPUT', 0x72: 'LONG_BINPUT', 0x73: 'SETITEM', 0x74: 'TUPLE', 0x29: 'EMPTY_TUPLE', 0x75: 'SETITEMS',
  0x47: 'BINFLOAT', 0x80: 'PROTO', 0x81: 'NEWOBJ', 0x82: 'EXT1', 0x83: 'EXT2', 0x84: 'EXT4', 0x85: 'TUPLE1', 0x86: 'TUPLE2',
  0x87: 'TUPLE3', 0x88: 'NEWTRUE', 0x89: 'NEWFALSE', 0x8a: 'LONG1', 0x8b: 'LONG4', 0x42: 'BINBYTES', 0x43: 'SHORT_BINBYTES',
  0x8c: 'SHORT_BINUNICODE', 0x8d: 'BINUNICODE8', 0x8e: 'BINBYTES8', 0x8f: 'EMPTY_SET', 0x90: 'ADDITEMS', 0x91: 'FROZENSET',
  0x92: 'NEWOBJ_EX', 0x93: 'STACK_GLOBAL', 0x94: 'MEMOIZE', 0x95: 'FRAME', 0x96: 'BYTEARRAY8', 0x97: 'NEXT_BUFFER', 0x98: 'READONLY_BUFFER',
};
export const ACCEPTED_OPCODES = Object.freeze([
  'PROTO', 'FRAME', 'EMPTY_DICT', 'EMPTY_LIST', 'EMPTY_TUPLE', 'TUPLE', 'TUPLE1', 'TUPLE2', 'TUPLE3', 'MARK', 'SETITEM', 'SETITEMS',
  'APPEND', 'APPENDS', 'BINUNICODE', 'SHORT_BINUNICODE', 'BINUNICODE8', 'BINSTRING', 'SHORT_BINSTRING', 'BININT', 'BININT1', 'BININT2',
  'LONG1', 'BINFLOAT', 'NEWTRUE', 'NEWFALSE', 'NONE', 'BINPUT', 'LONG_BINPUT', 'MEMOIZE', 'BINGET', 'LONG_BINGET', 'GLOBAL',
  'STACK_GLOBAL', 'REDUCE', 'BINPERSID', 'BUILD', 'STOP',
]);

const isInt = (v) => (typeof v === 'number' && Number.isSafeInteger(v)) || typeof v === 'bigint';
const isCount = (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function typeName(v) {
  if (v === null) return 'None';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'boolean') return 'a bool';
  if (isInt(v)) return 'an int';
  if (v instanceof PyFloat) return 'a float';
  if (v instanceof PyTuple) return 'a tuple';
  if (v instanceof PyList) return 'a list';
  if (v instanceof PyDict) return v.ordered ? 'an OrderedDict' : 'a dict';
  if (v instanceof PyGlobal) return `the global ${v.module}.${v.name}`;
  if (v instanceof Storage) return 'a storage';
  if (v instanceof Tensor) return 'a tensor';
  return 'an unknown value';
}

// A pickle value as plain JS (for metadata), bounded in depth and size; cycles hit the depth bound.
function plain(value, budget, depth, bad) {
  if (depth > LIMITS.metadataDepth) throw bad(`its metadata is nested more than ${LIMITS.metadataDepth} levels deep`);
  if (++budget.nodes > LIMITS.metadataNodes) throw bad(`its metadata has more than ${count(LIMITS.metadataNodes)} values`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
  if (value instanceof PyFloat) return value.value;
  if (value instanceof PyTuple || value instanceof PyList) return value.items.map((v) => plain(v, budget, depth + 1, bad));
  if (value instanceof PyDict) return Object.fromEntries([...value.map].map(([k, v]) => [String(k), plain(v, budget, depth + 1, bad)]));
  if (value instanceof Tensor) return { tensor: { dtype: value.dtype, shape: value.shape.slice() } };
  return typeName(value);
}

// The storages of a zip archive: persistent ids ('storage', type, key, location, numel[, dtype])
// whose data is the entry <prefix>/data/<key>.
function zipStorages(prefix, entries) {
  const storages = new Map();
  return (pid, { bad, refused }) => {
    if (!(pid instanceof PyTuple) || pid.items.length < 5 || pid.items.length > 6 || pid.items[0] !== 'storage') {
      throw bad(`has a persistent id that is ${typeName(pid)}${pid instanceof PyTuple ? ` of ${pid.items.length} items` : ''}, not ('storage', type, key, location, numel)`);
    }
    const [, type, key, location, numel, extra] = pid.items;
    if (!(type instanceof PyGlobal) || (type.role.kind !== 'storage' && type.role.kind !== 'dtype')) throw bad(`has a persistent id whose storage type is ${typeName(type)}`);
    if (typeof key !== 'string') throw bad(`has a persistent id whose key is ${typeName(key)}, not a string`);
    // torch names its storages 0, 1, 2, ...; anything like a path is refused.
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(key) || key.includes('..') || key === '.') {
      throw refused(`its persistent id points at data/${shown(key)}, which is not a plain storage name inside the archive`);
    }
    if (typeof location !== 'string') throw bad(`has a persistent id whose location is ${typeName(location)}, not a string`);
    if (!isCount(numel)) throw bad(`has a persistent id whose size is ${typeName(numel)}, not a count`);
    let dtype = type.role.dtype;
    let elements = numel;
    if (type.role.kind === 'storage' && dtype === null) {
      // An untyped storage counts bytes; a dtype global after it says what its elements are.
      dtype = 'U8';
      if (extra !== undefined) {
        if (!(extra instanceof PyGlobal) || extra.role.kind !== 'dtype') throw bad(`has a persistent id whose dtype is ${typeName(extra)}`);
        dtype = extra.role.dtype;
        if (numel % ITEMSIZE[dtype] !== 0) throw bad(`has an untyped storage of ${count(numel)} bytes, not a whole number of ${dtype} values`);
        elements = numel / ITEMSIZE[dtype];
      }
    } else if (extra !== undefined) {
      throw bad('has a persistent id with an extra item after a typed storage');
    }
    const data = entries.get(`${prefix}/data/${key}`);
    if (!data) throw bad(`has a persistent id that points at data/${shown(key)}, which the archive does not have`);
    const bytesNeeded = elements * ITEMSIZE[dtype];
    if (data.length < bytesNeeded) {
      throw bad(`says storage data/${shown(key)} holds ${count(elements)} ${dtype} values (${count(bytesNeeded)} bytes), but that entry has ${count(data.length)} bytes`);
    }
    const known = storages.get(key);
    if (known) {
      if (known.dtype !== dtype || known.numel !== elements) throw bad(`uses storage data/${shown(key)} as two different storages`);
      return known;
    }
    const storage = new Storage(key, `data/${shown(key)}`, dtype, elements, data.subarray(0, bytesNeeded));
    storages.set(key, storage);
    return storage;
  };
}

// Reads one pickle of pkl from byte start. where: the pickle as a message names it. Options:
//   persistent(pid, {bad, refused}): what a BINPERSID's id stands for (a Storage); without it,
//     BINPERSID is refused;
//   globals: false refuses every GLOBAL (the legacy format's small pickles name none);
//   stream: true reads a pickle that other bytes follow, and returns {value, end}; otherwise the
//     pickle must end at pkl's end, and its value is returned;
//   budget: {ops}, shared by the pickles of one file.
function unpickle(pkl, { file, where, start = 0, persistent = null, globals = true, stream = false, budget = { ops: 0 } }) {
  const refused = (what) => refuse(`${file} was refused: ${what}; nothing in the file was run.`);
  const bad = (what) => refuse(`${file} is not a usable PyTorch checkpoint: ${where} ${what}.`);
  const end = pkl.length;
  const view = new DataView(pkl.buffer, pkl.byteOffset, pkl.byteLength);
  const stack = [];
  const marks = [];
  const memo = new Map();
  let pos = start;

  const need = (n, what) => {
    if (pos + n > end) throw bad(`ends inside ${what} (the file is truncated or damaged)`);
  };
  const floor = () => (marks.length ? marks[marks.length - 1] : 0);
  const push = (v) => {
    if (stack.length >= LIMITS.stack) throw bad(`holds more than ${count(LIMITS.stack)} values at once`);
    stack.push(v);
  };
  const pop = (what) => {
    if (stack.length <= floor()) throw bad(`has ${what} with too few values before it`);
    return stack.pop();
  };
  const top = (what) => {
    if (stack.length <= floor()) throw bad(`has ${what} with nothing to apply it to`);
    return stack[stack.length - 1];
  };
  const popMark = (what) => {
    if (!marks.length) throw bad(`has ${what} without a MARK`);
    return stack.splice(marks.pop());
  };
  const readString = (n, what) => {
    need(n, what);
    const slice = pkl.subarray(pos, pos + n);
    pos += n;
    try {
      return utf8.decode(slice);
    } catch {
      throw bad(`has a ${what} that is not UTF-8`);
    }
  };
  const latin1 = (n, what) => {
    need(n, what);
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(pkl[pos + i]);
    pos += n;
    return s;
  };
  const readLine = (what) => {
    let i = pos;
    const stop = Math.min(end, pos + LIMITS.globalLine + 1);
    while (i < stop && pkl[i] !== 0x0a) i++;
    if (i >= stop) throw bad(stop === end ? `ends inside a GLOBAL's ${what} (the file is truncated or damaged)` : `has a GLOBAL whose ${what} is not a short line`);
    const s = readString(i - pos, `GLOBAL's ${what}`);
    pos = i + 1;
    return s;
  };
  const memoPut = (index, value) => {
    if (!memo.has(index) && memo.size >= LIMITS.memo) throw bad(`memoizes more than ${count(LIMITS.memo)} values`);
    memo.set(index, value);
  };
  const memoGet = (index) => {
    if (!memo.has(index)) throw bad(`refers to memo entry ${count(index)}, which was never stored`);
    return memo.get(index);
  };

  const lookupGlobal = (module, name) => {
    const role = ALLOWED_GLOBALS.get(`${module} ${name}`);
    if (!role) throw refused(`its pickle names the global ${shown(`${module}.${name}`, 200)}, which a plain state_dict never uses`);
    if (!globals) throw refused(`${where} names the global ${shown(`${module}.${name}`, 200)}, which torch.save never writes there`);
    return new PyGlobal(module, name, role);
  };
  const persistentLoad = (pid) => {
    if (!persistent) throw refused(`${where} has a persistent id (BINPERSID), which torch.save writes only in the state_dict's pickle`);
    return persistent(pid, { bad, refused });
  };

  const emptyHooks = (hooks) => hooks === null || (hooks instanceof PyDict && hooks.map.size === 0);

  const rebuildTensor = (args) => {
    if (args.length !== 6 && args.length !== 7) throw bad(`calls _rebuild_tensor_v2 with ${args.length} arguments, not 6 or 7`);
    const [storage, offset, size, stride, requiresGrad, hooks] = args;
    if (!(storage instanceof Storage)) throw refused(`its pickle calls _rebuild_tensor_v2 on ${typeName(storage)}, not a storage from the archive`);
    if (!isCount(offset)) throw bad(`calls _rebuild_tensor_v2 with a storage offset that is ${typeName(offset)}, not a count`);
    if (!(size instanceof PyTuple) || !(stride instanceof PyTuple)) throw bad('calls _rebuild_tensor_v2 without size and stride tuples');
    if (size.items.length !== stride.items.length) throw bad('calls _rebuild_tensor_v2 with size and stride of different lengths');
    if (size.items.length > LIMITS.dims) throw bad(`builds a tensor of ${size.items.length} dimensions`);
    if (typeof requiresGrad !== 'boolean') throw bad('calls _rebuild_tensor_v2 with requires_grad that is not a bool');
    if (!emptyHooks(hooks)) throw refused('its pickle gives a tensor backward hooks, which a plain state_dict never has');
    const shape = size.items;
    for (const dim of shape) if (!isCount(dim)) throw bad(`builds a tensor whose size has ${typeName(dim)}, not a count`);
    for (const s of stride.items) if (!isCount(s)) throw bad(`builds a tensor whose stride has ${typeName(s)}, not a count`);
    const numel = shape.reduce((p, d) => p * BigInt(d), 1n);
    if (numel > 1n) {
      let expected = 1n;
      for (let d = shape.length - 1; d >= 0; d--) {
        if (shape[d] !== 1 && BigInt(stride.items[d]) !== expected) {
          throw bad(`builds a tensor of size (${shape.join(', ')}) with stride (${stride.items.join(', ')}), which is not contiguous row-major; only contiguous tensors are read`);
        }
        expected *= BigInt(shape[d]);
      }
    }
    if (BigInt(offset) + numel > BigInt(storage.numel)) {
      throw bad(`builds a tensor of size (${shape.join(', ')}) at offset ${count(offset)} of storage ${storage.label}, which holds ${count(storage.numel)} values: the storage is shorter than the tensor claims`);
    }
    const itemsize = ITEMSIZE[storage.dtype];
    return new Tensor(storage.dtype, shape.slice(), storage, offset * itemsize, Number(numel) * itemsize);
  };

  const reduce = (callable, args) => {
    if (!(callable instanceof PyGlobal)) throw refused(`its pickle applies REDUCE to ${typeName(callable)}, not to a known function`);
    if (!(args instanceof PyTuple)) throw bad(`calls ${callable.module}.${callable.name} with ${typeName(args)} as its arguments`);
    const { kind } = callable.role;
    const items = args.items;
    if (kind === 'OrderedDict') {
      const empty = items.length === 0 || (items.length === 1 && ((items[0] instanceof PyList || items[0] instanceof PyTuple) ? items[0].items.length === 0 : items[0] instanceof PyDict && items[0].map.size === 0));
      if (!empty) throw refused('its pickle calls collections.OrderedDict with arguments, where torch.save writes an empty OrderedDict and fills it with SETITEMS');
      return new PyDict(true);
    }
    if (kind === 'rebuild_tensor') return rebuildTensor(items);
    if (kind === 'rebuild_parameter') {
      if (items.length !== 3 || !(items[0] instanceof Tensor) || typeof items[1] !== 'boolean') throw bad('calls _rebuild_parameter without (tensor, requires_grad, hooks)');
      if (!emptyHooks(items[2])) throw refused('its pickle gives a parameter backward hooks, which a plain state_dict never has');
      return items[0];
    }
    throw refused(`its pickle calls ${callable.module}.${callable.name} with REDUCE, which a plain state_dict never does (it only names it)`);
  };

  for (;;) {
    if (++budget.ops > LIMITS.opcodes) throw bad(`has more than ${count(LIMITS.opcodes)} opcodes`);
    if (pos >= end) throw bad('ends without STOP (the file is truncated or damaged)');
    const at = pos;
    const op = pkl[pos++];
    switch (op) {
      case 0x80: { // PROTO
        need(1, 'PROTO');
        const protocol = pkl[pos++];
        if (protocol < 2 || protocol > 5) throw bad(`says it is pickle protocol ${protocol}; protocols 2 to 5 are read`);
        break;
      }
      case 0x95: { // FRAME: a length hint; only checked
        need(8, 'FRAME');
        const n = u64(pkl, pos);
        pos += 8;
        if (pos + n > end) throw bad('has a FRAME longer than the rest of the pickle (the file is truncated or damaged)');
        break;
      }
      case 0x7d: push(new PyDict(false)); break; // EMPTY_DICT
      case 0x5d: push(new PyList()); break; // EMPTY_LIST
      case 0x29: push(new PyTuple([])); break; // EMPTY_TUPLE
      case 0x74: push(new PyTuple(popMark('TUPLE'))); break; // TUPLE
      case 0x85: case 0x86: case 0x87: { // TUPLE1, TUPLE2, TUPLE3
        const n = op - 0x84;
        if (stack.length - floor() < n) throw bad(`has ${OPCODE_NAMES[op]} with too few values before it`);
        push(new PyTuple(stack.splice(stack.length - n)));
        break;
      }
      case 0x28: // MARK
        if (marks.length >= LIMITS.marks) throw bad(`has more than ${count(LIMITS.marks)} open MARKs`);
        marks.push(stack.length);
        break;
      case 0x73: { // SETITEM
        const value = pop('SETITEM');
        const key = pop('SETITEM');
        setItems(top('SETITEM'), [key, value]);
        break;
      }
      case 0x75: { // SETITEMS
        const items = popMark('SETITEMS');
        if (items.length % 2) throw bad('has SETITEMS with an odd number of values');
        setItems(top('SETITEMS'), items);
        break;
      }
      case 0x61: { // APPEND
        const value = pop('APPEND');
        const list = top('APPEND');
        if (!(list instanceof PyList)) throw bad(`appends to ${typeName(list)}, not a list`);
        list.items.push(value);
        break;
      }
      case 0x65: { // APPENDS
        const items = popMark('APPENDS');
        const list = top('APPENDS');
        if (!(list instanceof PyList)) throw bad(`appends to ${typeName(list)}, not a list`);
        for (const item of items) list.items.push(item);
        break;
      }
      case 0x58: { need(4, 'BINUNICODE'); const n = u32(pkl, pos); pos += 4; push(readString(n, 'string')); break; }
      case 0x8c: { need(1, 'SHORT_BINUNICODE'); const n = pkl[pos++]; push(readString(n, 'string')); break; }
      case 0x8d: { need(8, 'BINUNICODE8'); const n = u64(pkl, pos); pos += 8; push(readString(n, 'string')); break; }
      case 0x54: { // BINSTRING (Python 2's str), as torch.load reads it: bytes as Latin-1
        need(4, 'BINSTRING');
        const n = view.getInt32(pos, true);
        pos += 4;
        if (n < 0) throw bad('has a BINSTRING of negative length');
        push(latin1(n, 'string'));
        break;
      }
      case 0x55: { need(1, 'SHORT_BINSTRING'); const n = pkl[pos++]; push(latin1(n, 'string')); break; }
      case 0x4a: need(4, 'BININT'); push(view.getInt32(pos, true)); pos += 4; break;
      case 0x4b: need(1, 'BININT1'); push(pkl[pos++]); break;
      case 0x4d: need(2, 'BININT2'); push(u16(pkl, pos)); pos += 2; break;
      case 0x8a: { // LONG1: n bytes, little-endian two's complement
        need(1, 'LONG1');
        const n = pkl[pos++];
        need(n, 'LONG1');
        let v = 0n;
        for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(pkl[pos + i]);
        if (n && pkl[pos + n - 1] & 0x80) v -= 1n << BigInt(8 * n);
        pos += n;
        push(v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);
        break;
      }
      case 0x47: need(8, 'BINFLOAT'); push(new PyFloat(view.getFloat64(pos, false))); pos += 8; break;
      case 0x88: push(true); break; // NEWTRUE
      case 0x89: push(false); break; // NEWFALSE
      case 0x4e: push(null); break; // NONE
      case 0x71: need(1, 'BINPUT'); memoPut(pkl[pos++], top('BINPUT')); break;
      case 0x72: need(4, 'LONG_BINPUT'); memoPut(u32(pkl, pos), top('LONG_BINPUT')); pos += 4; break;
      case 0x94: memoPut(memo.size, top('MEMOIZE')); break;
      case 0x68: need(1, 'BINGET'); push(memoGet(pkl[pos++])); break;
      case 0x6a: need(4, 'LONG_BINGET'); push(memoGet(u32(pkl, pos))); pos += 4; break;
      case 0x63: { // GLOBAL
        const module = readLine('module');
        const name = readLine('name');
        push(lookupGlobal(module, name));
        break;
      }
      case 0x93: { // STACK_GLOBAL
        const name = pop('STACK_GLOBAL');
        const module = pop('STACK_GLOBAL');
        if (typeof module !== 'string' || typeof name !== 'string') throw bad('has STACK_GLOBAL without two strings');
        push(lookupGlobal(module, name));
        break;
      }
      case 0x52: { // REDUCE
        const args = pop('REDUCE');
        const callable = pop('REDUCE');
        push(reduce(callable, args));
        break;
      }
      case 0x51: push(persistentLoad(pop('BINPERSID'))); break; // BINPERSID
      case 0x62: { // BUILD: only an OrderedDict's or tensor's state, kept aside and never applied
        const state = pop('BUILD');
        const target = top('BUILD');
        if (!((target instanceof PyDict && target.ordered) || target instanceof Tensor)) throw refused(`its pickle applies BUILD to ${typeName(target)}, which a plain state_dict never does`);
        if (!(state === null || state instanceof PyDict || (state instanceof PyTuple && state.items.length === 0))) throw bad(`has BUILD with ${typeName(state)} as its state`);
        if (target instanceof PyDict) target.state = state;
        break;
      }
      case 0x2e: { // STOP
        if (marks.length) throw bad('stops with a MARK still open');
        if (stack.length !== 1) throw bad(`stops with ${stack.length} values on its stack instead of one`);
        if (stream) return { value: stack[0], end: pos };
        if (pos !== end) throw bad(`has ${count(end - pos)} bytes after STOP`);
        return stack[0];
      }
      default: {
        const name = OPCODE_NAMES[op];
        const what = name ? `the opcode ${name} (0x${op.toString(16).padStart(2, '0')})` : `the unknown opcode 0x${op.toString(16).padStart(2, '0')}`;
        throw refused(`its pickle uses ${what} at byte ${count(at)}, which a plain state_dict never needs`);
      }
    }
  }

  function setItems(dict, items) {
    if (!(dict instanceof PyDict)) throw bad(`sets items on ${typeName(dict)}, not a dict`);
    for (let i = 0; i < items.length; i += 2) {
      const key = items[i];
      if (!(key === null || typeof key === 'string' || typeof key === 'boolean' || isInt(key))) throw bad(`has a dict key that is ${typeName(key)}`);
      dict.map.set(key, items[i + 1]);
    }
  }
}

// The tensors of a state_dict (the top object of torch.save's pickle) and the module metadata its
// OrderedDict's BUILD set; every storage's data must be known by now.
function stateDict(root, bad) {
  if (!(root instanceof PyDict)) throw bad(`its pickle's top object is ${typeName(root)}, not a dict of tensors (a state_dict)`);
  const tensors = new Map();
  for (const [key, value] of root.map) {
    if (typeof key !== 'string') throw bad(`its state_dict has a key that is ${typeName(key)}, not a string`);
    if (!(value instanceof Tensor)) throw bad(`its state_dict's entry ${JSON.stringify(key.length > 200 ? `${key.slice(0, 200)}…` : key)} is ${typeName(value)}, not a tensor`);
    tensors.set(key, { dtype: value.dtype, shape: value.shape.slice(), data: tensorData(value) });
  }
  let moduleMetadata = null;
  if (root.state instanceof PyDict) {
    const state = root.state.map.has('_metadata') ? root.state.map.get('_metadata') : root.state;
    moduleMetadata = plain(state, { nodes: 0 }, 0, bad);
  }
  return { tensors, moduleMetadata };
}

// pytorch_model.bin in either of torch.save's formats, told apart by the first bytes: a zip
// archive (PK\x03\x04) or the legacy format's pickle of its magic number (PROTO, LONG1).
export function readTorchCheckpoint(input, { file = 'pytorch_model.bin' } = {}) {
  const bytes = asBytes(input, file);
  if (looksLikeLegacyTorch(bytes)) return readLegacyTorch(bytes, file);
  if (!startsWith(bytes, ZIP_MAGIC)) {
    throw refuse(foreign(bytes, file, 'pytorch') ?? `${file} is not a PyTorch checkpoint: it starts neither like a zip archive (torch.save's format since PyTorch 1.6) nor like torch.save's legacy format (a pickle of its magic number).`);
  }
  const entries = readZip(bytes, file);
  const bad = (what) => refuse(`${file} is not a usable PyTorch checkpoint: ${what}.`);
  // All entries share one top-level folder, often 'archive' or the file's stem.
  let prefix = null;
  for (const name of entries.keys()) {
    const slash = name.indexOf('/');
    if (slash <= 0) throw bad(`its zip entry ${shown(name)} is not inside a folder, as torch.save writes them`);
    const first = name.slice(0, slash);
    if (prefix === null) prefix = first;
    else if (first !== prefix) throw bad(`its zip entries lie in two top-level folders (${shown(prefix)} and ${shown(first)})`);
  }
  if (prefix === null) throw bad('its zip archive is empty');
  const pkl = entries.get(`${prefix}/data.pkl`);
  if (!pkl) throw bad(`it has no ${shown(prefix)}/data.pkl, so it was not written by torch.save`);
  const small = (name) => {
    const data = entries.get(`${prefix}/${name}`);
    if (!data) return null;
    if (data.length > 64) throw bad(`its ${shown(prefix)}/${name} entry is ${count(data.length)} bytes long`);
    return String.fromCharCode(...data).trim();
  };
  const byteorder = small('byteorder');
  if (byteorder !== null && byteorder !== 'little') throw bad(`its byteorder entry says ${shown(byteorder)}; only little-endian checkpoints are read`);
  const version = small('version');

  const root = unpickle(pkl, { file, where: `its pickle (${prefix}/data.pkl)`, persistent: zipStorages(prefix, entries) });
  const { tensors, moduleMetadata } = stateDict(root, bad);
  return { format: 'pytorch', tensors, metadata: { serialization: 'zip', archive: prefix, version, byteorder, _metadata: moduleMetadata } };
}

// ---------------------------------------------------------------------------------------------
// torch.save's legacy format (torch/serialization.py's _legacy_save and _legacy_load): five pickles
// back to back,
//   1. the magic number 0x1950a86a20f9469cfc6c,   2. the protocol version 1001,
//   3. sys_info: {protocol_version: 1001, little_endian: True, type_sizes: {short, int, long}},
//   4. the state_dict, whose storages are persistent ids
//      ('storage', FloatStorage etc., key, location, numel, view_metadata),
//   5. the list of the storage keys, in the order of their data,
// then for each key of that list its storage: an int64 little-endian element count, then
// count * itemsize bytes, unaligned. Each pickle is read by the same restricted machine; only the
// state_dict's may name globals (the same ones as in a zip archive) or persistent ids. Every
// storage of the state_dict must be in the list and every key of the list in the state_dict, each
// once; each count must equal the state_dict's numel and fit in the file; the storages follow one
// another to the file's end (so none overlaps another). view_metadata (a storage view, written
// only by PyTorch before 0.4, whose files also use globals refused here) is refused.

const VIEW_REFUSED = 'only PyTorch before 0.4 wrote storage views; such files are not read here; save the state_dict again with a current torch.save, or as safetensors';

// The storages of a legacy file's state_dict, gathered into storages (key -> Storage without data).
function legacyStorages(storages) {
  return (pid, { bad }) => {
    if (!(pid instanceof PyTuple) || pid.items.length !== 6 || pid.items[0] !== 'storage') {
      throw bad(`has a persistent id that is ${typeName(pid)}${pid instanceof PyTuple ? ` of ${pid.items.length} items` : ''}, not ('storage', type, key, location, numel, view_metadata)`);
    }
    const [, type, key, location, numel, viewMetadata] = pid.items;
    if (!(type instanceof PyGlobal) || type.role.kind !== 'storage' || type.role.dtype === null) throw bad(`has a persistent id whose storage type is ${typeName(type)}, not a typed storage such as torch.FloatStorage`);
    if (typeof key !== 'string') throw bad(`has a persistent id whose key is ${typeName(key)}, not a string`);
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(key)) throw bad(`has a persistent id whose storage key ${shown(key)} is not a plain storage name`);
    if (typeof location !== 'string') throw bad(`has a persistent id whose location is ${typeName(location)}, not a string`);
    if (!isCount(numel)) throw bad(`has a persistent id whose size is ${typeName(numel)}, not a count`);
    if (viewMetadata !== null) throw bad(`describes storage ${shown(key)} with view_metadata (${typeName(viewMetadata)}, a view of another storage); ${VIEW_REFUSED}`);
    const dtype = type.role.dtype;
    const known = storages.get(key);
    if (known) {
      if (known.dtype !== dtype || known.numel !== numel) throw bad(`uses storage ${shown(key)} as two different storages (${known.dtype} of ${count(known.numel)} values, then ${dtype} of ${count(numel)})`);
      return known;
    }
    const storage = new Storage(key, shown(key), dtype, numel, null);
    storages.set(key, storage);
    return storage;
  };
}

function hexInt(v) {
  const n = BigInt(v);
  return `${n < 0n ? '-' : ''}0x${(n < 0n ? -n : n).toString(16)}`;
}

function checkSysInfo(info, bad) {
  if (!(info instanceof PyDict)) throw bad(`its sys_info is ${typeName(info)}, not a dict`);
  const field = (dict, key, what) => {
    if (!dict.map.has(key)) throw bad(`its sys_info has no ${what}`);
    return dict.map.get(key);
  };
  const version = field(info, 'protocol_version', 'protocol_version');
  if (version !== LEGACY_PROTOCOL) throw bad(`its sys_info says protocol_version ${isInt(version) ? count(version) : typeName(version)}, not ${LEGACY_PROTOCOL}`);
  const little = field(info, 'little_endian', 'little_endian');
  if (little === false) throw bad('its sys_info says it was written on a big-endian machine (little_endian is False); only little-endian checkpoints are read');
  if (little !== true) throw bad(`its sys_info's little_endian is ${typeName(little)}, not True`);
  const sizes = field(info, 'type_sizes', 'type_sizes');
  if (!(sizes instanceof PyDict)) throw bad(`its sys_info's type_sizes is ${typeName(sizes)}, not a dict`);
  // C's short, int and long in bytes; long is 4 on Windows. Nothing read here depends on them
  // (storage counts are int64), so they are only checked for sense.
  const typeSizes = {};
  for (const [name, allowed] of [['short', [2]], ['int', [4]], ['long', [4, 8]]]) {
    const size = field(sizes, name, `type_sizes.${name}`);
    if (!allowed.includes(size)) throw bad(`its sys_info says a C ${name} is ${isInt(size) ? `${count(size)} bytes` : typeName(size)}, not ${allowed.join(' or ')}`);
    typeSizes[name] = size;
  }
  return typeSizes;
}

function readLegacyTorch(bytes, file) {
  const bad = (what) => refuse(`${file} is not a usable PyTorch checkpoint (torch.save's legacy format): ${what}.`);
  const budget = { ops: 0 };
  let pos = 0;
  const next = (part, options = {}) => {
    const { value, end } = unpickle(bytes, {
      file, where: `its ${part} pickle (torch.save's legacy format, from byte ${count(pos)})`, start: pos, stream: true, globals: false, budget, ...options,
    });
    pos = end;
    return value;
  };
  const magic = next('magic-number');
  if (magic !== LEGACY_MAGIC) {
    throw bad(`its magic number is ${isInt(magic) ? hexInt(magic) : typeName(magic)}, not torch.save's 0x${LEGACY_MAGIC.toString(16)} (the file is damaged, or not a PyTorch checkpoint)`);
  }
  const protocol = next('protocol-version');
  if (protocol !== LEGACY_PROTOCOL) throw bad(`its protocol version is ${isInt(protocol) ? count(protocol) : typeName(protocol)}, not ${LEGACY_PROTOCOL}, the only one of torch.save's legacy format`);
  const typeSizes = checkSysInfo(next('sys_info'), bad);
  const storages = new Map();
  const root = next('state_dict', { globals: true, persistent: legacyStorages(storages) });
  const keys = next('storage-key-list');
  if (!(keys instanceof PyList)) throw bad(`its storage key list is ${typeName(keys)}, not a list`);
  const listed = new Set();
  for (const key of keys.items) {
    if (typeof key !== 'string') throw bad(`its storage key list holds ${typeName(key)}, not a storage key`);
    if (listed.has(key)) throw bad(`its storage key list names storage ${shown(key)} twice`);
    if (!storages.has(key)) throw bad(`its storage key list names storage ${shown(key)}, which its state_dict does not use`);
    listed.add(key);
  }
  for (const key of storages.keys()) {
    if (!listed.has(key)) throw bad(`its state_dict uses storage ${shown(key)}, which its storage key list lacks (the file has no data for it)`);
  }
  // The storages, back to back in the list's order: each one's count, then its values.
  for (const key of keys.items) {
    const storage = storages.get(key);
    const what = `storage ${shown(key)}`;
    if (pos + 8 > bytes.length) throw bad(`it ends before the element count of ${what} (the file is truncated)`);
    const n = BigInt.asIntN(64, u64big(bytes, pos));
    pos += 8;
    const itemsize = ITEMSIZE[storage.dtype];
    const left = bytes.length - pos;
    if (n < 0n) throw bad(`the element count of ${what} is negative (${count(n)})`);
    if (n * BigInt(itemsize) > BigInt(left)) {
      throw bad(`the element count of ${what} says ${count(n)} ${storage.dtype} values (${count(n * BigInt(itemsize))} bytes), but only ${count(left)} bytes are left in the file (the file is truncated, or the count is damaged)`);
    }
    if (n !== BigInt(storage.numel)) throw bad(`the element count of ${what} is ${count(n)}, but its state_dict says the storage holds ${count(storage.numel)} values`);
    const length = storage.numel * itemsize;
    storage.data = bytes.subarray(pos, pos + length);
    pos += length;
  }
  if (pos !== bytes.length) throw bad(`it has ${count(bytes.length - pos)} bytes after its last storage`);
  const { tensors, moduleMetadata } = stateDict(root, bad);
  return {
    format: 'pytorch',
    tensors,
    metadata: { serialization: 'legacy', archive: null, version: null, byteorder: 'little', protocol_version: LEGACY_PROTOCOL, type_sizes: typeSizes, _metadata: moduleMetadata },
  };
}

// ---------------------------------------------------------------------------------------------
// A tensor's values as float32. F32 is a view where the data is 4-byte aligned (little-endian
// platforms, which every browser runs on), else a copy; F16 and BF16 are widened exactly.

let halfTable = null;
function halfToFloatBits() {
  if (halfTable) return halfTable;
  halfTable = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    let mant = h & 0x3ff;
    let bits;
    if (exp === 0x1f) bits = sign | 0x7f800000 | (mant << 13); // inf, NaN (payload kept)
    else if (exp !== 0) bits = sign | ((exp + 112) << 23) | (mant << 13);
    else if (mant === 0) bits = sign; // ±0
    else { // subnormal: normalise
      let e = 113;
      while ((mant & 0x400) === 0) { mant <<= 1; e--; }
      bits = sign | (e << 23) | ((mant & 0x3ff) << 13);
    }
    halfTable[h] = bits >>> 0;
  }
  return halfTable;
}

export function toFloat32(tensor) {
  const { dtype, data } = tensor ?? {};
  if (!(data instanceof Uint8Array)) throw refuse('A tensor without data bytes cannot be read as float32 values.');
  const itemsize = ITEMSIZE[dtype];
  if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16') throw refuse(`A tensor of dtype ${shown(dtype, 40)} cannot be read as float32 values; only F32, F16 and BF16 are.`);
  if (data.length % itemsize) throw refuse(`A ${dtype} tensor has ${count(data.length)} bytes, not a whole number of values.`);
  const n = data.length / itemsize;
  if (dtype === 'F32') {
    if (data.byteOffset % 4 === 0) return new Float32Array(data.buffer, data.byteOffset, n);
    const out = new Float32Array(n);
    new Uint8Array(out.buffer).set(data);
    return out;
  }
  const out = new Float32Array(n);
  const bits = new Uint32Array(out.buffer);
  if (dtype === 'BF16') {
    for (let i = 0, j = 0; i < n; i++, j += 2) bits[i] = ((data[j] << 16) | (data[j + 1] << 24)) >>> 0;
  } else {
    const table = halfToFloatBits();
    for (let i = 0, j = 0; i < n; i++, j += 2) bits[i] = table[data[j] | (data[j + 1] << 8)];
  }
  return out;
}
