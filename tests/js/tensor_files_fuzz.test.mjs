// A seeded random-mutation fuzz of web/engine/tensor_files.js over good checkpoint files (written
// by torch.save and the safetensors writers via tests/js/make_torch_files.py, and small ones built
// here): bit flips, interesting bytes and words, truncations, duplicated and removed ranges, and
// length/offset fields set to huge values; for torch archives also mutations of the pickle alone,
// re-packed into a valid zip so that they reach the pickle machine; for torch.save's legacy format
// (five pickles, then each storage's element count and data) the same, with its element counts as
// the fields, and mutations of one pickle at a time re-joined with the others and the data. Every call must return a
// result whose tensors are views inside the input with sizes that agree with their shapes, or
// throw an EngineError of kind 'model' with a message; any other exception, or a call slower than
// CALL_LIMIT_MS, fails the test with the seed and the iteration.
//
//   TENSOR_FILES_FUZZ_SEED=<uint32|random>  TENSOR_FILES_FUZZ_COUNT=<files per kind>  node --test tests/js/tensor_files_fuzz.test.mjs
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { EngineError } from '../../web/engine/errors.js';
import { readSafetensors, readTorchCheckpoint, sniffWeightsFormat, toFloat32 } from '../../web/engine/tensor_files.js';
import { concatBytes, fromBase64, handPickle, makeTorchFiles, mulberry32, safetensorsBytes, zipBytes } from './tensor_files_fixtures.mjs';

const seedSetting = process.env.TENSOR_FILES_FUZZ_SEED ?? '3054711229';
const SEED = seedSetting === 'random' ? (Math.random() * 2 ** 32) >>> 0 : Number(seedSetting) >>> 0;
const COUNT = Number(process.env.TENSOR_FILES_FUZZ_COUNT ?? 10000);
const CALL_LIMIT_MS = 2000;
const ITEMSIZE = { BOOL: 1, U8: 1, I8: 1, I16: 2, U16: 2, F16: 2, BF16: 2, I32: 4, U32: 4, F32: 4, I64: 8, U64: 8, F64: 8 };
console.log(`tensor_files fuzz: seed ${SEED} (TENSOR_FILES_FUZZ_SEED=${SEED} reproduces it), ${COUNT} files per kind`);

let files;
before(() => { files = makeTorchFiles(); });
after(() => files?.cleanup());

const INTERESTING8 = [0, 0xff, 0x7f, 0x80, 0x01, 0xfe];
const HUGE64 = [2n ** 64n - 1n, 2n ** 63n, 2n ** 63n - 1n, 2n ** 53n, 2n ** 32n, 2n ** 32n - 1n, 100_000_001n, 3_000_000_000n];

function mutate(input, rng, { hot, fields }) {
  let bytes = input.slice();
  const ops = [];
  const position = () => {
    if (bytes.length === 0) return 0;
    if (rng.next() < 0.6 && hot.length) {
      const [a, b] = rng.pick(hot);
      const lo = Math.min(a, bytes.length - 1), hi = Math.min(b, bytes.length);
      if (hi > lo) return lo + rng.int(hi - lo);
    }
    return rng.int(bytes.length);
  };
  const u32 = (at, value) => { if (at + 4 <= bytes.length) new DataView(bytes.buffer).setUint32(at, value >>> 0, true); };
  const u64 = (at, value) => { if (at + 8 <= bytes.length) new DataView(bytes.buffer).setBigUint64(at, value, true); };
  const steps = 1 + rng.int(3);
  for (let s = 0; s < steps; s++) {
    const kind = rng.int(10);
    const p = position();
    if (kind === 0 && bytes.length) { bytes[p] ^= 1 << rng.int(8); ops.push(`flip@${p}`); }
    else if (kind === 1 && bytes.length) { const v = rng.pick(INTERESTING8); bytes[p] = v; ops.push(`byte@${p}=${v}`); }
    else if (kind === 2 && bytes.length) { const v = rng.int(256); bytes[p] = v; ops.push(`rand@${p}=${v}`); }
    else if (kind === 3) {
      const v = rng.pick([0, 0xffffffff, 0x7fffffff, 0x80000000, 0xffff, 0x10000, bytes.length, bytes.length + 1, rng.int(2 ** 32)]);
      u32(p, v); ops.push(`u32@${p}=${v}`);
    } else if (kind === 4) { const v = rng.pick(HUGE64); u64(p, v); ops.push(`u64@${p}=${v}`); }
    else if (kind === 5) { const n = rng.int(bytes.length + 1); bytes = bytes.slice(0, n); ops.push(`truncate=${n}`); }
    else if (kind === 6 && bytes.length) { // duplicate a range
      const n = 1 + rng.int(Math.min(256, bytes.length - p));
      const at = rng.int(bytes.length + 1);
      const out = new Uint8Array(bytes.length + n);
      out.set(bytes.subarray(0, at));
      out.set(bytes.subarray(p, p + n), at);
      out.set(bytes.subarray(at), at + n);
      bytes = out;
      ops.push(`dup[${p},+${n})@${at}`);
    } else if (kind === 7 && bytes.length) { // remove a range
      const n = 1 + rng.int(Math.min(256, bytes.length - p));
      const out = new Uint8Array(bytes.length - n);
      out.set(bytes.subarray(0, p));
      out.set(bytes.subarray(p + n), p);
      bytes = out;
      ops.push(`remove[${p},+${n})`);
    } else if (kind >= 8) { // a length, count or offset field set to a huge or odd value
      const targets = fields(bytes);
      if (!targets.length) continue;
      const [at, width] = rng.pick(targets);
      const value = rng.pick(HUGE64.concat([0n, 1n, BigInt(bytes.length), BigInt(rng.int(bytes.length + 64))]));
      if (width === 8) u64(at, value);
      else if (width === 4) u32(at, Number(value & 0xffffffffn));
      else if (at + 2 <= bytes.length) new DataView(bytes.buffer).setUint16(at, Number(value & 0xffffn), true);
      ops.push(`field@${at}/${width}=${value}`);
    }
  }
  return { bytes, ops };
}

// The length fields of a safetensors file: the header length.
const safetensorsFields = () => [[0, 8]];

// A zip's length, count and offset fields: the end records, every central entry's and local header's.
function zipFields(bytes) {
  const out = [];
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i + 4 <= bytes.length; i++) {
    if (bytes[i] !== 0x50 || bytes[i + 1] !== 0x4b) continue;
    const sig = v.getUint32(i, true);
    if (sig === 0x06054b50) out.push([i + 8, 2], [i + 10, 2], [i + 12, 4], [i + 16, 4], [i + 20, 2]);
    else if (sig === 0x06064b50) out.push([i + 4, 8], [i + 24, 8], [i + 32, 8], [i + 40, 8], [i + 48, 8]);
    else if (sig === 0x07064b50) out.push([i + 8, 8], [i + 16, 4]);
    else if (sig === 0x02014b50) out.push([i + 10, 2], [i + 20, 4], [i + 24, 4], [i + 28, 2], [i + 30, 2], [i + 32, 2], [i + 42, 4]);
    else if (sig === 0x04034b50) out.push([i + 8, 2], [i + 26, 2], [i + 28, 2]);
  }
  return out;
}

// Returns a description of what is wrong with one call's outcome, or null.
function judge(read, input) {
  let result;
  const started = performance.now();
  try {
    result = read(input);
  } catch (error) {
    const ms = performance.now() - started;
    if (ms > CALL_LIMIT_MS) return { ms, problem: `took ${ms.toFixed(0)} ms` };
    if (!(error instanceof EngineError)) return { ms, problem: `threw ${error?.constructor?.name}: ${error?.stack ?? error}` };
    if (error.kind !== 'model') return { ms, problem: `threw an EngineError of kind ${error.kind}` };
    if (typeof error.message !== 'string' || !error.message.trim()) return { ms, problem: 'threw an EngineError without a message' };
    return { ms, refused: true };
  }
  const ms = performance.now() - started;
  if (ms > CALL_LIMIT_MS) return { ms, problem: `took ${ms.toFixed(0)} ms` };
  if (!result || !(result.tensors instanceof Map)) return { ms, problem: 'returned no tensors Map' };
  for (const [name, tensor] of result.tensors) {
    const { dtype, shape, data } = tensor;
    if (typeof name !== 'string') return { ms, problem: 'a tensor name is not a string' };
    if (!Object.hasOwn(ITEMSIZE, dtype)) return { ms, problem: `${name}: dtype ${dtype}` };
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) return { ms, problem: `${name}: shape ${shape}` };
    if (!(data instanceof Uint8Array) || data.buffer !== input.buffer) return { ms, problem: `${name}: data is not a view of the input` };
    if (data.byteOffset < input.byteOffset || data.byteOffset + data.byteLength > input.byteOffset + input.byteLength) return { ms, problem: `${name}: data outside the input` };
    const numel = shape.reduce((p, d) => p * d, 1);
    if (data.byteLength !== numel * ITEMSIZE[dtype]) return { ms, problem: `${name}: ${data.byteLength} bytes for shape [${shape}] of ${dtype}` };
    if (dtype === 'F32' || dtype === 'F16' || dtype === 'BF16') {
      try {
        if (toFloat32(tensor).length !== numel) return { ms, problem: `${name}: toFloat32 length` };
      } catch (error) {
        return { ms, problem: `${name}: toFloat32 threw ${error?.stack ?? error}` };
      }
    }
  }
  return { ms, refused: false };
}

function fuzz(kind, seeds, read, { fields, hotOf, repack = null }) {
  const rng = mulberry32(SEED ^ [...kind].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619), 2166136261));
  const stats = { calls: 0, refused: 0, accepted: 0, maxMs: 0 };
  const failures = [];
  const started = performance.now();
  for (let i = 0; i < COUNT; i++) {
    const seed = seeds[i % seeds.length];
    let input, ops;
    if (repack) {
      ({ bytes: input, ops } = repack(seed, rng));
    } else {
      ({ bytes: input, ops } = mutate(seed.bytes, rng, { hot: hotOf(seed.bytes, seed), fields: (bytes) => fields(bytes, seed) }));
    }
    // Sometimes at an odd offset of a larger buffer, as a worker's views may be.
    if (rng.next() < 0.25) {
      const shifted = new Uint8Array(input.length + 3).subarray(1 + rng.int(2), 1 + input.length + 1);
      shifted.set(input);
      input = shifted.subarray(0, input.length);
    }
    const format = sniffWeightsFormat(input);
    if (![null, 'pytorch', 'safetensors'].includes(format)) failures.push({ i, seed: seed.name, ops, problem: `sniffWeightsFormat gave ${format}` });
    for (const [which, fn] of [['read', read], ['other reader', read === readSafetensors ? readTorchCheckpoint : readSafetensors]]) {
      const verdict = judge(fn, input);
      stats.calls++;
      stats.maxMs = Math.max(stats.maxMs, verdict.ms);
      if (verdict.problem) {
        failures.push({ i, seed: seed.name, ops, which, problem: verdict.problem, input: input.length <= 4096 ? Buffer.from(input).toString('base64') : `${input.length} bytes` });
      } else if (which === 'read') {
        stats[verdict.refused ? 'refused' : 'accepted']++;
      }
    }
    if (failures.length >= 5) break;
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`${kind}: ${COUNT} mutated files (${stats.accepted} read, ${stats.refused} refused), ${stats.calls} calls in ${seconds.toFixed(1)} s, slowest call ${stats.maxMs.toFixed(1)} ms`);
  assert.deepEqual(failures, [], `seed ${SEED}: ${kind} failed at iteration(s) ${failures.map((f) => f.i).join(', ')}:\n${JSON.stringify(failures, null, 1)}`);
  assert.ok(stats.refused > 0);
  return stats;
}

const zipHot = (bytes) => [[0, 2048], [Math.max(0, bytes.length - 8192), bytes.length]];

test('safetensors: mutated files are read within bounds or refused with an EngineError', () => {
  const seeds = ['small.safetensors', 'bf16.safetensors'].map((name) => ({ name, bytes: files.good(name) }));
  const data = new Uint8Array(64).map((_, i) => i * 7);
  seeds.push({ name: 'hand1', bytes: safetensorsBytes({ __metadata__: { format: 'pt' }, a: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] }, ids: { dtype: 'I64', shape: [3], data_offsets: [16, 40] }, h: { dtype: 'F16', shape: [3], data_offsets: [40, 46] }, b: { dtype: 'BF16', shape: [], data_offsets: [46, 48] } }, data.subarray(0, 48)) });
  seeds.push({ name: 'hand2', bytes: safetensorsBytes({ x: { dtype: 'U8', shape: [0], data_offsets: [0, 0] }, y: { dtype: 'F64', shape: [1, 1], data_offsets: [0, 8] } }, data.subarray(0, 8)) });
  const hotOf = (bytes) => {
    const n = bytes.length >= 8 ? Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true)) : 0;
    return [[0, Math.min(bytes.length, 8 + n)]];
  };
  fuzz('safetensors', seeds, readSafetensors, { fields: safetensorsFields, hotOf });
});

test('pytorch: mutated archives are read within bounds or refused with an EngineError', () => {
  const names = ['small.bin', 'small_p4.bin', 'linear.bin', 'sequential_metadata.bin', 'parameters.bin', 'crafted.bin', 'crafted_untyped.bin', 'bert_like.bin'];
  const seeds = names.map((name) => ({ name, bytes: files.good(name) }));
  const values = new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer);
  const entries = [{ name: 'hand/data.pkl', data: handPickle([['a', 0, [2, 3]], ['b', 2, [2, 2]], ['c', 5, []]], 6) }, { name: 'hand/data/0', data: values }, { name: 'hand/version', data: new TextEncoder().encode('3\n') }];
  seeds.push({ name: 'hand-zip64-fields', bytes: zipBytes(entries, { zip64Fields: true }) });
  seeds.push({ name: 'hand-comment', bytes: zipBytes(entries, { zip64End: false, comment: 'hi', align: 1 }) });
  fuzz('pytorch', seeds, readTorchCheckpoint, { fields: zipFields, hotOf: zipHot });
});

test('pytorch pickles: mutated data.pkl re-packed into valid archives is read within bounds or refused', () => {
  const seeds = Object.entries(files.manifest.entries).map(([name, map]) => ({
    name, entries: Object.entries(map).map(([entry, data]) => ({ name: entry, data: fromBase64(data) })),
  }));
  const values = new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer);
  seeds.push({ name: 'hand', entries: [{ name: 'hand/data.pkl', data: handPickle([['a', 0, [2, 3]], ['b', 2, [2, 2]], ['c', 5, []]], 6) }, { name: 'hand/data/0', data: values }] });
  const repack = (seed, rng) => {
    const pkl = seed.entries.find((e) => e.name.endsWith('/data.pkl'));
    const { bytes, ops } = mutate(pkl.data, rng, { hot: [], fields: () => [] });
    return { bytes: zipBytes(seed.entries.map((e) => (e === pkl ? { name: e.name, data: bytes } : e))), ops };
  };
  const stats = fuzz('pytorch pickles', seeds, readTorchCheckpoint, { repack });
  assert.ok(stats.accepted > 0, 'some mutated pickles should still read');
});

// A legacy file's fields: each storage's int64 element count (offsets from make_torch_files.py).
const legacySeeds = (names) => names.map((name) => ({ name, bytes: files.good(name), counts: files.manifest.legacy_parts[name].counts }));
const legacyFields = (bytes, seed) => seed.counts.map((at) => [at, 8]);
const legacyHot = (bytes, seed) => [[0, seed.counts[0] ?? bytes.length], ...seed.counts.map((at) => [at, at + 8]), [Math.max(0, bytes.length - 64), bytes.length]];

test('pytorch legacy: mutated legacy files are read within bounds or refused with an EngineError', () => {
  const seeds = legacySeeds(['small_legacy.bin', 'small_legacy_p4.bin', 'parameters_legacy.bin', 'crafted_legacy.bin', 'bert_like_legacy.bin', 'bert_like_f16_legacy.bin']);
  for (const seed of seeds) assert.equal(readTorchCheckpoint(seed.bytes).metadata.serialization, 'legacy', seed.name);
  fuzz('pytorch legacy', seeds, readTorchCheckpoint, { fields: legacyFields, hotOf: legacyHot });
});

test('pytorch legacy pickles: one mutated pickle re-joined with the others and the data is read within bounds or refused', () => {
  const seeds = Object.entries(files.manifest.legacy_parts).map(([name, { pickles, data }]) => ({ name, pickles: pickles.map(fromBase64), data: fromBase64(data) }));
  assert.ok(seeds.length >= 6);
  const repack = (seed, rng) => {
    // Mostly the state_dict's pickle (the fourth), else any of the five.
    const index = rng.next() < 0.6 ? 3 : rng.int(5);
    const { bytes, ops } = mutate(seed.pickles[index], rng, { hot: [], fields: () => [] });
    return { bytes: concatBytes([...seed.pickles.slice(0, index), bytes, ...seed.pickles.slice(index + 1), seed.data]), ops: [`pickle ${index + 1}`, ...ops] };
  };
  const stats = fuzz('pytorch legacy pickles', seeds, readTorchCheckpoint, { repack });
  assert.ok(stats.accepted > 0, 'some mutated pickles should still read');
});
