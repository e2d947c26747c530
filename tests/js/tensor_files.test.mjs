// web/engine/tensor_files.js: the reader of model.safetensors and pytorch_model.bin.
// Good files are written at test time by the real tools (torch.save in its zip format and in its
// legacy format of _use_new_zipfile_serialization=False, the repository's safetensors writer;
// tests/js/make_torch_files.py) and every tensor is compared byte for byte and value for value
// with what Python wrote. Hostile files (pickles whose __reduce__ names os.system, builtins.eval,
// subprocess.Popen; path traversal; crafted zips, headers and legacy files) must each be refused
// with a message that names the thing, and nothing may run: the payloads fetch a canary URL on a
// loopback server of this test, which must receive no request.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { EngineError } from '../../web/engine/errors.js';
import {
  ACCEPTED_GLOBALS, ACCEPTED_OPCODES, readSafetensors, readTorchCheckpoint, sniffWeightsFormat, toFloat32,
} from '../../web/engine/tensor_files.js';
import { handPickle, hex, makeTorchFiles, safetensorsBytes, zipBytes } from './tensor_files_fixtures.mjs';

let server;
let port;
const requests = [];
let files;

before(async () => {
  server = http.createServer((request, response) => {
    requests.push(request.url);
    response.end('canary');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = server.address().port;
  files = makeTorchFiles(port);
});

after(() => {
  server?.close();
  files?.cleanup();
});

const readerOf = (format) => (format === 'pytorch' ? readTorchCheckpoint : readSafetensors);

// Refused with an EngineError of kind 'model' whose message starts with the file name and holds every word.
function assertRefused(fn, file, words) {
  let error;
  try {
    fn();
  } catch (caught) {
    error = caught;
  }
  assert.ok(error, `${file} was accepted`);
  assert.ok(error instanceof EngineError, `${file}: ${error?.constructor?.name} ${error?.message}`);
  assert.equal(error.kind, 'model');
  assert.ok(error.message.startsWith(file), `message does not start with ${file}: ${error.message}`);
  for (const word of words) assert.ok(error.message.includes(word), `${file}: message lacks ${JSON.stringify(word)}: ${error.message}`);
  return error;
}

function assertView(tensor, bytes, what) {
  assert.ok(tensor.data instanceof Uint8Array, `${what}: data is not a Uint8Array`);
  assert.equal(tensor.data.buffer, bytes.buffer, `${what}: data is not a view of the file's bytes`);
  assert.ok(tensor.data.byteOffset >= bytes.byteOffset && tensor.data.byteOffset + tensor.data.byteLength <= bytes.byteOffset + bytes.byteLength, `${what}: data outside the file`);
}

const f32bits = (array) => Array.from(new Uint32Array(array.buffer, array.byteOffset, array.length));

function checkGood(name, expected, bytes) {
  const result = readerOf(expected.format)(bytes, { file: name });
  assert.equal(result.format, expected.format);
  assert.deepEqual([...result.tensors.keys()], Object.keys(expected.tensors), `${name}: tensor names or order`);
  for (const [key, want] of Object.entries(expected.tensors)) {
    const tensor = result.tensors.get(key);
    const what = `${name}: ${key}`;
    assert.equal(tensor.dtype, want.dtype, `${what}: dtype`);
    assert.deepEqual(tensor.shape, want.shape, `${what}: shape`);
    assertView(tensor, bytes, what);
    assert.equal(hex(tensor.data), want.hex, `${what}: bytes`);
    if (['F32', 'F16', 'BF16'].includes(want.dtype)) {
      const values = toFloat32(tensor);
      assert.ok(values instanceof Float32Array);
      assert.deepEqual(f32bits(values), want.f32bits, `${what}: float32 values`);
    } else {
      assert.throws(() => toFloat32(tensor), (e) => e instanceof EngineError && e.kind === 'model' && e.message.includes(want.dtype));
    }
  }
  for (const [a, b] of expected.tied) {
    assert.equal(result.tensors.get(a).data, result.tensors.get(b).data, `${name}: ${a} and ${b} are tied; one view`);
  }
  return result;
}

test('every good file from torch.save and the safetensors writers is read exactly, as views', () => {
  const { manifest } = files;
  assert.ok(Object.keys(manifest.good).length >= 18);
  for (const [name, expected] of Object.entries(manifest.good)) {
    const bytes = files.good(name);
    assert.equal(sniffWeightsFormat(bytes), expected.format, `${name}: sniffed format`);
    const result = checkGood(name, expected, bytes);
    if (expected.metadata) {
      if (expected.format === 'safetensors') assert.deepEqual(result.metadata, expected.metadata);
      else assert.deepEqual(result.metadata._metadata, expected.metadata._metadata, `${name}: _metadata`);
    }
    if (expected.format === 'pytorch' && name.includes('legacy')) {
      assert.equal(result.metadata.serialization, 'legacy', name);
      assert.equal(result.metadata.protocol_version, 1001);
      assert.equal(result.metadata.version, null);
    } else if (expected.format === 'pytorch') {
      assert.equal(result.metadata.serialization, 'zip', name);
      assert.equal(result.metadata.version, '3');
      assert.equal(result.metadata.archive, name.replace(/\.bin$/, '').replace(/^crafted$/, 'archive').replace(/^crafted_untyped$/, 'model'));
    }
  }
});

test('the small state dict: f32, f16, bf16, int64 position_ids, a tied pair, a 0-D tensor, a view at an offset', () => {
  const result = readTorchCheckpoint(files.good('small.bin'), { file: 'small.bin' });
  const t = (key) => result.tensors.get(key);
  assert.equal(t('w_f16').dtype, 'F16');
  assert.equal(t('w_bf16').dtype, 'BF16');
  assert.deepEqual(t('w_bf16').shape, [3, 4]);
  assert.equal(t('embeddings.position_ids').dtype, 'I64');
  const ids = new DataView(t('embeddings.position_ids').data.buffer, t('embeddings.position_ids').data.byteOffset, 72);
  assert.deepEqual(Array.from({ length: 9 }, (_, i) => Number(ids.getBigInt64(8 * i, true))), [-3, -2, -1, 0, 1, 2, 3, 4, 5]);
  assert.deepEqual(t('scale').shape, []);
  assert.deepEqual(Array.from(toFloat32(t('scale'))), [0.125]);
  assert.deepEqual(Array.from(toFloat32(t('row'))), [0, 0.25, 0.5, 0.75]);
  // 'row' is base[4:8]: the same storage, 16 bytes further.
  assert.equal(t('row').data.byteOffset, t('base').data.byteOffset + 16);
  assert.equal(t('decoder.weight').data, t('embeddings.word_embeddings.weight').data);
  assert.deepEqual(t('empty').shape, [0, 3]);
  assert.equal(t('empty').data.length, 0);
  assert.equal(t('double').dtype, 'F64');
  assert.equal(t('count_i32').dtype, 'I32');
  const half = Array.from(toFloat32(t('w_f16')));
  assert.deepEqual(half.slice(0, 8), [0, -0, 1, -2.5, Infinity, -Infinity, NaN, 65504]);
  assert.ok(Object.is(half[1], -0));
});

test('the BertForMaskedLM-like OrderedDict (new zip serialization, _metadata, two tied pairs)', () => {
  for (const name of ['bert_like.bin', 'bert_like_f16.bin']) {
    const result = readTorchCheckpoint(files.good(name), { file: name });
    assert.equal(result.tensors.size, 45);
    assert.equal(result.tensors.get('bert.embeddings.position_ids').dtype, 'I64');
    assert.deepEqual(result.tensors.get('bert.encoder.layer.1.intermediate.dense.weight').shape, [16, 8]);
    assert.equal(result.tensors.get('cls.predictions.decoder.weight').data, result.tensors.get('bert.embeddings.word_embeddings.weight').data);
  }
  const meta = readTorchCheckpoint(files.good('bert_like.bin')).metadata;
  assert.deepEqual(meta._metadata['bert.embeddings'], { version: 1 });
});

test('legacy torch.save files (before PyTorch 1.6, _use_new_zipfile_serialization=False) read as the zip ones, as views', () => {
  const legacyNames = Object.keys(files.manifest.good).filter((name) => name.includes('legacy'));
  assert.deepEqual(legacyNames.sort(), ['bert_like_f16_legacy.bin', 'bert_like_legacy.bin', 'crafted_legacy.bin', 'parameters_legacy.bin', 'small_legacy.bin', 'small_legacy_p4.bin', 'small_legacy_py2_strings.bin']);
  for (const [legacy, zip] of [['small_legacy.bin', 'small.bin'], ['small_legacy_p4.bin', 'small_p4.bin'], ['small_legacy_py2_strings.bin', 'small.bin'], ['bert_like_legacy.bin', 'bert_like.bin'], ['bert_like_f16_legacy.bin', 'bert_like_f16.bin'], ['crafted_legacy.bin', 'crafted.bin']]) {
    const bytes = files.good(legacy);
    assert.equal(bytes[0], 0x80, `${legacy} is a pickle, not a zip`);
    assert.equal(sniffWeightsFormat(bytes), 'pytorch', legacy);
    const a = readTorchCheckpoint(bytes, { file: legacy });
    const b = readTorchCheckpoint(files.good(zip), { file: zip });
    assert.deepEqual([...a.tensors.keys()], [...b.tensors.keys()], legacy);
    for (const [key, tensor] of a.tensors) {
      const other = b.tensors.get(key);
      assert.equal(tensor.dtype, other.dtype, `${legacy}: ${key}`);
      assert.deepEqual(tensor.shape, other.shape, `${legacy}: ${key}`);
      assert.equal(hex(tensor.data), hex(other.data), `${legacy}: ${key}`);
      assertView(tensor, bytes, `${legacy}: ${key}`);
    }
    assert.deepEqual(a.metadata._metadata, b.metadata._metadata, `${legacy}: _metadata`);
    assert.deepEqual(a.metadata.type_sizes, { short: 2, int: 4, long: 4 });
  }
  const small = readTorchCheckpoint(files.good('small_legacy.bin'), { file: 'small_legacy.bin' });
  const t = (key) => small.tensors.get(key);
  assert.deepEqual(['w_f16', 'w_bf16', 'embeddings.position_ids', 'w_f32'].map((k) => t(k).dtype), ['F16', 'BF16', 'I64', 'F32']);
  const ids = new DataView(t('embeddings.position_ids').data.buffer, t('embeddings.position_ids').data.byteOffset, 72);
  assert.deepEqual(Array.from({ length: 9 }, (_, i) => Number(ids.getBigInt64(8 * i, true))), [-3, -2, -1, 0, 1, 2, 3, 4, 5]);
  assert.equal(t('decoder.weight').data, t('embeddings.word_embeddings.weight').data, 'the tied pair shares one view');
  assert.equal(t('row').data.byteOffset, t('base').data.byteOffset + 16, 'row is base[4:8] of one storage');
  assert.deepEqual(Array.from(toFloat32(t('row'))), [0, 0.25, 0.5, 0.75]);
  // Legacy storages are unaligned (an 8-byte count follows each pickle and storage): F32 is copied when it must be.
  assert.deepEqual(f32bits(toFloat32(t('w_f32'))), files.manifest.good['small_legacy.bin'].tensors.w_f32.f32bits);
  const bert = readTorchCheckpoint(files.good('bert_like_legacy.bin'), { file: 'bert_like_legacy.bin' });
  assert.equal(bert.tensors.size, 45);
  assert.equal(bert.tensors.get('cls.predictions.decoder.weight').data, bert.tensors.get('bert.embeddings.word_embeddings.weight').data);
  assert.equal(bert.tensors.get('cls.predictions.decoder.bias').data, bert.tensors.get('cls.predictions.bias').data);
  assert.deepEqual(bert.metadata._metadata['bert.embeddings'], { version: 1 });
  assert.deepEqual(Object.keys(bert.metadata._metadata), ['', 'bert', 'bert.embeddings', 'bert.encoder', 'cls', 'cls.predictions']);
  // readSafetensors names the format it was given.
  assertRefused(() => readSafetensors(files.good('small_legacy.bin'), { file: 'model.safetensors' }), 'model.safetensors', ["torch.save's legacy format", 'not a safetensors file']);
});

test('hostile legacy files are refused, naming the global, magic, sys_info, key, count or cut; nothing is run', () => {
  const legacy = files.manifest.hostile.filter(({ file }) => file.startsWith('legacy_') || file === 'pickle_no_magic.bin');
  const names = new Set(legacy.map(({ file }) => file));
  for (const name of ['legacy_evil_os_system.bin', 'legacy_evil_popen_p4.bin', 'legacy_evil_sys_info.bin', 'legacy_evil_key_list.bin', 'legacy_bad_magic.bin', 'legacy_protocol.bin', 'legacy_big_endian.bin', 'legacy_key_extra.bin', 'legacy_key_missing.bin', 'legacy_count_huge.bin', 'legacy_count_mismatch.bin', 'legacy_truncated.bin', 'legacy_truncated_pickle.bin', 'legacy_view_metadata.bin', 'legacy_tar.bin']) {
    assert.ok(names.has(name), name);
  }
  for (const { file, expect } of legacy) {
    const bytes = files.hostile(file);
    const started = performance.now();
    const error = assertRefused(() => readTorchCheckpoint(bytes, { file }), file, expect);
    assert.ok(performance.now() - started < 200, `${file} took long`);
    if (file.startsWith('legacy_evil_')) assert.match(error.message, /^\S+ was refused: its pickle names the global \S+, which a plain state_dict never uses; nothing in the file was run\.$/);
  }
  assert.equal(sniffWeightsFormat(files.hostile('legacy_bad_magic.bin')), 'pytorch', 'a wrong magic number is still told as a torch file, and named');
  assert.equal(sniffWeightsFormat(files.hostile('legacy_tar.bin')), null);
  assert.equal(sniffWeightsFormat(files.hostile('pickle_no_magic.bin')), null);
});

test('a legacy file cut at every byte is refused as truncated', () => {
  for (const name of ['crafted_legacy.bin', 'small_legacy.bin', 'small_legacy_p4.bin']) {
    const bytes = files.good(name);
    const step = name === 'crafted_legacy.bin' ? 1 : 7;
    for (let cut = 3; cut < bytes.length; cut += step) {
      assertRefused(() => readTorchCheckpoint(bytes.subarray(0, cut), { file: name }), name, ['truncated']);
    }
    assert.equal(readTorchCheckpoint(bytes.subarray(0, bytes.length), { file: name }).format, 'pytorch');
  }
});

test('an F32 tensor at an unaligned offset is copied by toFloat32; an aligned one is a view', () => {
  const bytes = files.good('small.safetensors');
  const shifted = new Uint8Array(bytes.length + 1).subarray(1);
  shifted.set(bytes);
  const aligned = readSafetensors(bytes).tensors.get('w_f32');
  const odd = readSafetensors(shifted).tensors.get('w_f32');
  assert.equal(odd.data.byteOffset % 4, (aligned.data.byteOffset + 1) % 4);
  const a = toFloat32(aligned);
  const b = toFloat32(odd);
  if (aligned.data.byteOffset % 4 === 0) assert.equal(a.buffer, bytes.buffer);
  assert.notEqual(b.buffer, shifted.buffer);
  assert.deepEqual(f32bits(a), f32bits(b));
  assert.deepEqual(f32bits(b), files.manifest.good['small.safetensors'].tensors.w_f32.f32bits);
});

test('toFloat32 widens all 65,536 F16 and BF16 bit patterns exactly as numpy and torch do', () => {
  const all = new Uint8Array(2 * 65536);
  for (let h = 0; h < 65536; h++) { all[2 * h] = h & 255; all[2 * h + 1] = h >> 8; }
  const f16 = toFloat32({ dtype: 'F16', shape: [65536], data: all });
  const bf16 = toFloat32({ dtype: 'BF16', shape: [65536], data: all.subarray(0) });
  assert.deepEqual(f32bits(f16), files.manifest.f16_to_f32_bits);
  assert.deepEqual(f32bits(bf16), files.manifest.bf16_to_f32_bits);
  // Unaligned F16 data too.
  const odd = new Uint8Array(all.length + 1).subarray(1);
  odd.set(all);
  assert.deepEqual(f32bits(toFloat32({ dtype: 'F16', shape: [65536], data: odd })), files.manifest.f16_to_f32_bits);
});

test('hostile torch archives are refused, naming the global, opcode, key or entry', () => {
  const { manifest } = files;
  assert.ok(manifest.hostile.length >= 35);
  const seen = new Set();
  for (const { file, expect } of manifest.hostile) {
    const error = assertRefused(() => readTorchCheckpoint(files.hostile(file), { file }), file, expect);
    seen.add(file);
    if (file.startsWith('evil_')) assert.match(error.message, /^\S+ was refused: its pickle names the global \S+, which a plain state_dict never uses; nothing in the file was run\.$/);
  }
  for (const name of ['evil_os_system.bin', 'evil_eval.bin', 'evil_popen.bin', 'evil_getattr.bin', 'reduce_ordereddict_args.bin', 'reduce_floatstorage.bin', 'pid_traversal.bin', 'pid_missing.bin', 'zip_dotdot.bin', 'short_storage.bin', 'deflated.bin']) {
    assert.ok(seen.has(name), name);
  }
  // The payloads' globals as the pickles spell them.
  const names = Object.fromEntries(manifest.hostile.map((h) => [h.file, h.expect.join(' ')]));
  assert.match(names['evil_os_system.bin'], /posix\.system/);
  assert.match(names['evil_eval_py3_names.bin'], /builtins\.eval/);
  assert.match(names['evil_popen_py3_names.bin'], /subprocess\.Popen/);
});

test('hand-built archives: zip64 extra fields, a comment, a hand-written pickle; and their refusals', () => {
  const values = new Float32Array([1, 2, 3, 4, 5, 6]);
  const storage = new Uint8Array(values.buffer);
  const entries = (pkl, extra = []) => [
    { name: 'archive/data.pkl', data: pkl }, { name: 'archive/data/0', data: storage }, { name: 'archive/version', data: new TextEncoder().encode('3\n') }, ...extra,
  ];
  const pkl = handPickle([['a', 0, [2, 3]], ['b', 2, [2, 2]], ['c', 5, []]], 6);
  for (const options of [{}, { zip64Fields: true }, { zip64End: false }, { comment: 'a comment', align: 1 }]) {
    const bytes = zipBytes(entries(pkl), options);
    const result = readTorchCheckpoint(bytes, { file: 'hand.bin' });
    assert.deepEqual([...result.tensors.keys()], ['a', 'b', 'c'], JSON.stringify(options));
    assert.deepEqual(Array.from(toFloat32(result.tensors.get('b'))), [3, 4, 5, 6]);
    assert.deepEqual(result.tensors.get('c').shape, []);
    assert.deepEqual(Array.from(toFloat32(result.tensors.get('c'))), [6]);
    for (const t of result.tensors.values()) assertView(t, bytes, 'hand.bin');
  }
  assertRefused(() => readTorchCheckpoint(zipBytes(entries(pkl), { method: 8 }), { file: 'm8.bin' }), 'm8.bin', ['compressed', 'method 8']);
  assertRefused(() => readTorchCheckpoint(zipBytes(entries(handPickle([['a', 2, [2, 3]]], 6))), { file: 'short.bin' }), 'short.bin', ['the storage is shorter than the tensor claims']);
  assertRefused(() => readTorchCheckpoint(zipBytes(entries(pkl, [{ name: 'archive/..', data: new Uint8Array(1) }])), { file: 'dots.bin' }), 'dots.bin', ['archive/..']);
  // Data that runs into the central directory.
  const bytes = zipBytes(entries(pkl));
  const cd = bytes.length - 22 - 20 - 56 - (46 * 3 + 'archive/data.pkl'.length + 'archive/data/0'.length + 'archive/version'.length);
  const grown = bytes.slice();
  const v = new DataView(grown.buffer);
  // the version entry's central record: sizes +100
  let at = cd;
  for (let i = 0; i < 2; i++) at += 46 + v.getUint16(at + 28, true);
  assert.equal(v.getUint32(at, true), 0x02014b50);
  v.setUint32(at + 20, 102, true);
  v.setUint32(at + 24, 102, true);
  assertRefused(() => readTorchCheckpoint(grown, { file: 'overlap.bin' }), 'overlap.bin', ['archive/version', 'overlaps the zip central directory']);
  // Too many entries.
  const many = zipBytes(Array.from({ length: 100_001 }, (_, i) => ({ name: `a/${i}`, data: new Uint8Array(0) })), { align: 1 });
  assertRefused(() => readTorchCheckpoint(many, { file: 'many.bin' }), 'many.bin', ['100,001 entries']);
  // Opcodes outside the list, each named.
  for (const [op, name] of [[0x30, 'POP'], [0x32, 'DUP'], [0x69, 'INST'], [0x6f, 'OBJ'], [0x92, 'NEWOBJ_EX'], [0x82, 'EXT1'], [0x43, 'SHORT_BINBYTES'], [0x8f, 'EMPTY_SET'], [0x50, 'PERSID'], [0x49, 'INT'], [0xff, '0xff']]) {
    const bad = new Uint8Array([0x80, 0x02, 0x7d, op, 0x2e]);
    assertRefused(() => readTorchCheckpoint(zipBytes(entries(bad)), { file: 'op.bin' }), 'op.bin', [name, 'nothing in the file was run']);
  }
  // BUILD on something other than an OrderedDict or tensor.
  const build = new Uint8Array([0x80, 0x02, 0x5d, 0x7d, 0x62, 0x2e]);
  assertRefused(() => readTorchCheckpoint(zipBytes(entries(build)), { file: 'build.bin' }), 'build.bin', ['BUILD', 'a list']);
  // A cyclic _metadata is bounded, not a stack overflow.
  const cyclic = new Uint8Array([0x80, 0x02, 0x63, ...new TextEncoder().encode('collections\nOrderedDict\n'), 0x29, 0x52, 0x7d, 0x58, 9, 0, 0, 0, ...new TextEncoder().encode('_metadata'), 0x5d, 0x71, 7, 0x68, 7, 0x61, 0x73, 0x62, 0x2e]);
  assertRefused(() => readTorchCheckpoint(zipBytes(entries(cyclic)), { file: 'cycle.bin' }), 'cycle.bin', ['nested more than 64 levels']);
});

test('safetensors files are refused for bad headers, overlaps, overflows and sizes, before anything is allocated', () => {
  const data = new Uint8Array(32);
  const cases = [
    ['overlap.safetensors', { a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] }, b: { dtype: 'F32', shape: [4], data_offsets: [8, 24] } }, data, ['a', 'b', 'overlap']],
    ['overflow.safetensors', '{"a":{"dtype":"F32","shape":[4],"data_offsets":[18446744073709551600,18446744073709551616]}}', data, ['data offset', 'below 2^53']],
    ['overflow2.safetensors', { a: { dtype: 'F32', shape: [4], data_offsets: [2 ** 53 - 1, 2 ** 53 - 1 + 16] } }, data, ['not a non-negative integer']],
    ['shape_overflow.safetensors', { a: { dtype: 'F32', shape: [2 ** 31, 2 ** 31, 2 ** 31, 2 ** 31], data_offsets: [0, 16] } }, data, ['needs 85,070,591,730,234,615,865,843,651,857,942,052,864 bytes']],
    ['huge.safetensors', { a: { dtype: 'F32', shape: [750_000_000], data_offsets: [0, 3_000_000_000] } }, data, ['run past the end of the file']],
    ['huge2.safetensors', { a: { dtype: 'F32', shape: [750_000_000], data_offsets: [0, 16] } }, data, ['needs 3,000,000,000 bytes']],
    ['backwards.safetensors', { a: { dtype: 'F32', shape: [0], data_offsets: [16, 8] } }, data, ['run backwards']],
    ['dtype.safetensors', { a: { dtype: 'F8_E9M9', shape: [1], data_offsets: [0, 1] } }, data, ['unknown dtype F8_E9M9']],
    ['missing.safetensors', { a: { dtype: 'F32', shape: [1] } }, data, ['no data_offsets']],
    ['negative.safetensors', { a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, data, ['shape entry -1']],
    ['fraction.safetensors', { a: { dtype: 'F32', shape: [1.5], data_offsets: [0, 4] } }, data, ['shape entry 1.5']],
    ['nodtype.safetensors', { a: { shape: [1], data_offsets: [0, 4] } }, data, ['no dtype']],
    ['entry.safetensors', { a: [1, 2] }, data, ['described by an array, not an object']],
    ['meta.safetensors', { __metadata__: { a: 1 } }, data, ['__metadata__', 'not a string']],
    ['array.safetensors', '[1, 2]', data, ['not a JSON object']],
    ['json.safetensors', '{"a": ', data, ['not UTF-8 JSON']],
  ];
  for (const [file, header, bytes, words] of cases) {
    const started = performance.now();
    assertRefused(() => readSafetensors(safetensorsBytes(header, bytes), { file }), file, words);
    assert.ok(performance.now() - started < 200, `${file} took long`);
  }
  assertRefused(() => readSafetensors(safetensorsBytes({}, data, { headerLength: 2n ** 63n }), { file: 'len.safetensors' }), 'len.safetensors', ['9,223,372,036,854,775,808 bytes', 'more than the 100,000,000']);
  assertRefused(() => readSafetensors(safetensorsBytes({}, data, { headerLength: 5000 }), { file: 'len.safetensors' }), 'len.safetensors', ['5,000 bytes', 'truncated']);
  // An integer dtype is listed (for the caller to skip by name); a 0-D tensor and an empty one too.
  const ids = new Uint8Array(24);
  ids[8] = 1;
  const listed = readSafetensors(safetensorsBytes({ position_ids: { dtype: 'I64', shape: [1, 3], data_offsets: [0, 24] }, s: { dtype: 'BF16', shape: [], data_offsets: [24, 26] }, e: { dtype: 'U8', shape: [0], data_offsets: [26, 26] } }, new Uint8Array(26)));
  assert.equal(listed.tensors.get('position_ids').dtype, 'I64');
  assert.deepEqual(listed.tensors.get('s').shape, []);
  assert.equal(listed.tensors.get('e').data.length, 0);
  assert.deepEqual(listed.metadata, {});
});

test('truncated, empty, HTML and mixed-up files are refused with a plain message', () => {
  const st = files.good('small.safetensors');
  const pt = files.good('small.bin');
  assertRefused(() => readSafetensors(st.subarray(0, st.length - 10), { file: 'model.safetensors' }), 'model.safetensors', ['run past the end of the file']);
  assertRefused(() => readSafetensors(st.subarray(0, 100), { file: 'model.safetensors' }), 'model.safetensors', ['only 92 bytes follow']);
  assertRefused(() => readSafetensors(st.subarray(0, 5)), 'model.safetensors', ['5 bytes, too short']);
  for (const cut of [pt.length - 1, Math.floor(pt.length / 2), 100, 21]) {
    assertRefused(() => readTorchCheckpoint(pt.subarray(0, cut)), 'pytorch_model.bin', [cut > 21 ? 'end-of-central-directory' : 'too short']);
  }
  const html = new TextEncoder().encode('<!doctype html>\n<html><head><title>404</title></head><body>Not found</body></html>');
  assertRefused(() => readSafetensors(html), 'model.safetensors', ['HTML']);
  assertRefused(() => readTorchCheckpoint(html), 'pytorch_model.bin', ['HTML']);
  assertRefused(() => readSafetensors(new Uint8Array(0)), 'model.safetensors', ['empty']);
  assertRefused(() => readTorchCheckpoint(new Uint8Array(0)), 'pytorch_model.bin', ['empty']);
  assertRefused(() => readSafetensors(pt), 'model.safetensors', ['zip archive']);
  assertRefused(() => readTorchCheckpoint(st), 'pytorch_model.bin', ['safetensors file']);
  assertRefused(() => readTorchCheckpoint('not bytes'), 'pytorch_model.bin', ['Uint8Array']);
  assert.equal(sniffWeightsFormat(html), null);
  assert.equal(sniffWeightsFormat(new Uint8Array(0)), null);
  assert.equal(sniffWeightsFormat(files.good('small_legacy.bin')), 'pytorch');
  assert.equal(sniffWeightsFormat(st), 'safetensors');
  assert.equal(sniffWeightsFormat(pt), 'pytorch');
  assert.equal(sniffWeightsFormat(pt.buffer.slice(pt.byteOffset, pt.byteOffset + pt.length)), 'pytorch');
});

test('the accepted globals and opcodes are the documented ones', () => {
  assert.ok(ACCEPTED_GLOBALS.includes('collections.OrderedDict'));
  assert.ok(ACCEPTED_GLOBALS.includes('torch._utils._rebuild_tensor_v2'));
  for (const refused of ['posix.system', 'os.system', 'builtins.eval', '__builtin__.getattr', 'subprocess.Popen', 'torch.load', 'torch.ByteStorage']) {
    assert.ok(!ACCEPTED_GLOBALS.includes(refused), refused);
  }
  for (const refused of ['INST', 'OBJ', 'NEWOBJ', 'NEWOBJ_EX', 'POP', 'DUP', 'EXT1', 'PERSID']) assert.ok(!ACCEPTED_OPCODES.includes(refused), refused);
});

test('the canary received no request: nothing in any file was run', async () => {
  // The server answers (so a payload that ran would have been heard) ...
  const probe = await fetch(`http://127.0.0.1:${port}/probe`);
  assert.equal(await probe.text(), 'canary');
  await new Promise((resolve) => setTimeout(resolve, 200));
  // ... and only the probe came.
  assert.deepEqual(requests, ['/probe']);
});
