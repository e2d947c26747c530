// A Hugging Face BERT checkpoint (config.json, vocab.txt, tokenizer_config.json if any, and
// model.safetensors or pytorch_model.bin) made into the engine's model file, in the reader's
// browser (the engine's worker) or in Node. The files are read by ./tensor_files.js, which
// never runs anything a file contains; the names, the config's rules and the tokenizer's
// settings come from ./bert_checkpoint.json, the table scripts/model/convert_model.py (to-attn)
// applies too; the tensors' engine names, shapes and order come from the core
// (module.expectedTensors, wasm/core/tensor_table.h). The model file is written in f32 (an f16
// or bf16 checkpoint is widened exactly, as the converter does), so the engine gets the same
// model as from `convert_model to-attn` of the same folder. The core then validates it like any
// model file. No DOM here.
import { EngineError } from './errors.js';
import { fetchJson } from './files.js';
import { CHECKPOINT_CONVERTER } from './result.js';
import { readSafetensors, readTorchCheckpoint, sniffWeightsFormat, toFloat32 } from './tensor_files.js';

const TABLE_URL = new URL('./bert_checkpoint.json', import.meta.url).href;
let table = null;

// The table (./bert_checkpoint.json), read once per thread.
export function checkpointTable() {
  table ??= fetchJson(TABLE_URL).catch((error) => {
    table = null;
    throw error;
  });
  return table;
}

const refuse = (message) => new EngineError('model', message);
const utf8 = new TextDecoder('utf-8', { fatal: false });

// A JSON file of the checkpoint as an object, or a refusal that names the file.
export function parseJsonFile(bytes, file) {
  let value;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch (error) {
    throw refuse(`${file} is not valid JSON (${error.message}); is this a Hugging Face checkpoint?`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw refuse(`${file} is not a JSON object.`);
  return value;
}

// config.json's fields the model file keeps ({vocab_size, ..., layer_norm_eps as an f32}), or a
// refusal naming what the engine cannot run (the rules of the table's "config").
export function checkConfig(config, rules, file = 'config.json') {
  const cannot = (what) => refuse(`${file}: ${what}; the engine runs only plain BERT encoders (Hugging Face BertModel semantics).`);
  const { defaults } = rules;
  // A key's value, or the default where the key is absent (as Python's dict.get): a null given
  // is a value, and refused where it is not one the engine takes.
  const given = (key) => (Object.hasOwn(config, key) ? config[key] : defaults[key]);
  const type = given('model_type');
  if (!rules.model_types.includes(type)) {
    const architectures = Array.isArray(config.architectures) ? ` (${config.architectures.map(String).join(', ').slice(0, 200)})` : '';
    throw cannot(`model_type is ${JSON.stringify(type)}${architectures}, not 'bert'`);
  }
  for (const [key, [only, why]] of Object.entries(rules.only)) {
    const value = given(key);
    if (value !== only) throw cannot(`${key} is ${JSON.stringify(value)}; ${why}`);
  }
  if (rules.refused_flags.some((flag) => config[flag])) throw cannot(`it is configured as a decoder (${rules.refused_flags.join(' / ')})`);
  const missing = rules.required.filter((key) => !(key in config));
  if (missing.length) throw refuse(`${file} lacks ${missing.join(', ')}.`);
  const out = {};
  for (const key of [...rules.required, 'type_vocab_size']) {
    const value = given(key);
    if (!Number.isSafeInteger(value) || value <= 0) throw refuse(`${file}: ${key} is ${JSON.stringify(value)}; expected a positive integer.`);
    out[key] = value;
  }
  const eps = given('layer_norm_eps');
  if (typeof eps !== 'number' || !Number.isFinite(eps) || eps <= 0) throw refuse(`${file}: layer_norm_eps is ${JSON.stringify(eps)}; expected a positive number.`);
  out.layer_norm_eps = Math.fround(eps);
  return out;
}

// The tokenizer's settings as the model file's header word (model_data/README.md: bit 0
// do_lower_case false, bits 1-2 strip_accents null/true/false, bit 3 tokenize_chinese_chars
// false) from tokenizer_config.json's object (null: none, BertTokenizer's defaults).
export function tokenizerWord(settings, rules, file = 'tokenizer_config.json') {
  if (settings === null || settings === undefined) return 0;
  const kind = settings.tokenizer_class;
  if (kind !== undefined && kind !== null && !rules.classes.includes(kind)) {
    throw refuse(`${file}: tokenizer_class is ${JSON.stringify(kind)}; this engine has BERT's WordPiece tokenizer only (BertTokenizer).`);
  }
  for (const [key, text] of Object.entries(rules.special_tokens)) {
    let value = Object.hasOwn(settings, key) ? settings[key] : text;
    if (value && typeof value === 'object') value = value.content;  // {"content": "[CLS]", ...}
    if (value !== text) throw refuse(`${file}: ${key} is ${JSON.stringify(value)}; this engine's tokenizer uses ${text}.`);
  }
  const flag = (key, fallback, allowNull = false) => {
    const value = settings[key] === undefined ? fallback : settings[key];
    if (value === null && allowNull) return null;
    if (typeof value !== 'boolean') throw refuse(`${file}: ${key} is ${JSON.stringify(value)}; expected true or false${allowNull ? ' or null' : ''}.`);
    return value;
  };
  const lower = flag('do_lower_case', true);
  const accents = flag('strip_accents', null, true);
  const chinese = flag('tokenize_chinese_chars', true);
  return (lower ? 0 : 1) | ((accents === null ? 0 : accents ? 1 : 2) << 1) | (chinese ? 0 : 8);
}

// vocab.txt as the model file keeps it, byte for byte as convert_model.py writes it: '\r\n'
// as '\n', and a '\n' after the last entry; nothing else changes (a byte-order mark or invalid
// UTF-8 stays, for the core to judge).
export function vocabularyBytes(bytes) {
  const out = new Uint8Array(bytes.length + 1);
  let n = 0;
  for (let i = 0; i < bytes.length; ++i) {
    if (bytes[i] === 0x0D && bytes[i + 1] === 0x0A) continue;
    out[n++] = bytes[i];
  }
  if (n > 0 && out[n - 1] !== 0x0A) out[n++] = 0x0A;
  return out.slice(0, n);
}

// The checkpoint's tensors under the engine's names (the table's "names"): the `bert.` prefix
// stripped, old LayerNorm names renamed, buffers and the next-sentence head left out, and the
// masked-LM decoder checked to be tied to the word embeddings, then dropped (the model file
// keeps it tied). Returns {weights: Map, dropped: [checkpoint names]}.
export function engineWeights(tensors, rules, file) {
  const weights = new Map();
  const dropped = [];
  for (const [key, tensor] of tensors) {
    let name = key.startsWith(rules.strip_prefix) ? key.slice(rules.strip_prefix.length) : key;
    for (const [from, to] of rules.renames) name = name.split(from).join(to);
    if (rules.ignored_suffixes.some((suffix) => name.endsWith(suffix))) continue;
    if (rules.dropped_prefixes.some((prefix) => name.startsWith(prefix))) {
      dropped.push(key);
      continue;
    }
    if (weights.has(name)) throw refuse(`${file} holds ${name} twice (with and without the ${rules.strip_prefix} prefix).`);
    weights.set(name, { ...tensor, key });
  }
  for (const [copy, original] of rules.tied) {
    const tied = weights.get(copy);
    if (!tied) continue;
    weights.delete(copy);
    const kept = weights.get(original);
    if (!kept || !sameValues(tied, kept)) {
      throw refuse(`${file}: ${copy} differs from ${original}; the model file stores the masked-LM decoder tied to it (as Hugging Face does), so an untied head cannot be loaded without losing it.`);
    }
  }
  return { weights, dropped };
}

function sameValues(a, b) {
  if (a.shape.length !== b.shape.length || a.shape.some((v, i) => v !== b.shape[i])) return false;
  if (a.data === b.data) return true;
  const x = toFloat32(a);
  const y = toFloat32(b);
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; ++i) if (x[i] !== y[i]) return false;
  return true;
}

// The model file (.attn, format version 1, every tensor f32) for the engine's tensors.
//   expected: [{name, shape}] from module.expectedTensors, in file order
//   weights: Map name -> tensor (./tensor_files.js's {dtype, shape, data})
export function writeModelFile({ config, tokenizer, name, provenance, vocabulary, expected, weights, file }) {
  const known = new Set(expected.map((e) => e.name));
  const unknown = [...weights.keys()].filter((n) => !known.has(n));
  if (unknown.length) {
    throw refuse(`${file}: tensors the engine has no place for: ${unknown.slice(0, 5).map((n) => weights.get(n).key).join(', ')}${unknown.length > 5 ? ' ...' : ''}; only BertModel, its pooler and the masked-LM head are read (a task head, a classifier or a question-answering one, is left out).`);
  }
  for (const { name: tensorName, shape } of expected) {
    const tensor = weights.get(tensorName);
    if (!tensor) throw refuse(`${file}: missing tensor ${tensorName} (expected shape [${shape.join(', ')}] from config.json).`);
    if (tensor.shape.length !== shape.length || tensor.shape.some((v, i) => v !== shape[i])) {
      throw refuse(`${file}: ${tensor.key} has shape [${tensor.shape.join(', ')}], config.json implies [${shape.join(', ')}].`);
    }
    if (!['F32', 'F16', 'BF16'].includes(tensor.dtype)) throw refuse(`${file}: ${tensor.key} is ${tensor.dtype}; the engine reads float weights (F32, F16 or BF16).`);
  }
  const encoder = new TextEncoder();
  const nameBytes = encoder.encode(name);
  const provenanceBytes = encoder.encode(provenance);
  const align = (value, to) => Math.ceil(value / to) * to;
  const nameAt = 256;
  const provenanceAt = nameAt + nameBytes.length;
  const vocabularyAt = provenanceAt + provenanceBytes.length;
  const tableAt = align(vocabularyAt + vocabulary.length, 8);
  const tableBytes = 128 * expected.length;
  const dataAt = align(tableAt + tableBytes, 64);
  const offsets = [];
  let dataBytes = 0;
  for (const { shape } of expected) {
    dataBytes = align(dataBytes, 64);
    offsets.push(dataBytes);
    dataBytes += 4 * shape.reduce((a, b) => a * b, 1);
  }
  const size = dataAt + dataBytes;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(nameBytes, nameAt);
  out.set(provenanceBytes, provenanceAt);
  out.set(vocabulary, vocabularyAt);
  expected.forEach(({ name: tensorName, shape }, k) => {
    const entry = tableAt + 128 * k;
    const encoded = encoder.encode(tensorName);
    if (encoded.length > 64) throw refuse(`${file}: the tensor name ${tensorName} is longer than the model file allows.`);
    out.set(encoded, entry);
    view.setUint32(entry + 64, 0, true);  // f32
    view.setUint32(entry + 68, shape.length, true);
    shape.forEach((v, i) => view.setUint32(entry + 72 + 4 * i, v, true));
    view.setBigUint64(entry + 88, BigInt(offsets[k]), true);
    const numel = shape.reduce((a, b) => a * b, 1);
    view.setBigUint64(entry + 96, BigInt(4 * numel), true);
    const tensor = weights.get(tensorName);
    const at = dataAt + offsets[k];
    if (tensor.dtype === 'F32') out.set(tensor.data, at);
    else new Float32Array(out.buffer, at, numel).set(toFloat32(tensor));
  });
  out.set(encoder.encode('ATTNBERT'), 0);
  view.setUint32(8, 1, true);
  view.setUint32(12, 256, true);
  ['vocab_size', 'hidden_size', 'num_hidden_layers', 'num_attention_heads', 'intermediate_size', 'max_position_embeddings', 'type_vocab_size']
    .forEach((key, i) => view.setUint32(16 + 4 * i, config[key], true));
  view.setFloat32(44, config.layer_norm_eps, true);
  view.setUint32(48, expected.length, true);
  view.setUint32(52, 0, true);
  [[nameAt, nameBytes.length], [provenanceAt, provenanceBytes.length], [vocabularyAt, vocabulary.length], [tableAt, tableBytes], [dataAt, dataBytes]]
    .forEach(([offset, bytes], i) => {
      view.setBigUint64(56 + 16 * i, BigInt(offset), true);
      view.setBigUint64(64 + 16 * i, BigInt(bytes), true);
    });
  view.setBigUint64(136, BigInt(size), true);
  view.setUint32(152, tokenizer, true);
  view.setUint32(144, crc32(out, 256), true);
  return out;
}

let crcTable = null;
// zlib's CRC-32 of bytes[from..], as the core checks it.
export function crc32(bytes, from = 0) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; ++n) {
      let c = n;
      for (let k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xFFFFFFFF;
  for (let i = from; i < bytes.length; ++i) crc = crcTable[(crc ^ bytes[i]) & 0xFF] ^ (crc >>> 8);
  return (crc ^ 0xFFFFFFFF) >>> 0;
}

// The checkpoint's files ({name: Uint8Array}) as a model file, with the core's table of
// expected tensors (expectedTensors(config, withPooler, withMaskedLmHead), the wasm module's).
//   name: what the page calls the model (the repository's id); source: where it came from, for
//   the provenance ('hf:ID@COMMIT' or 'files on this computer'); hashes: {file: the hub's
//   SHA-256 of an LFS file or git blob id of another};
//   license: the weights' licence as the repository states it (its card's), or null.
// Returns {bytes, config, maskedLm, dropped}.
export async function modelFileFromCheckpoint(files, { expectedTensors, name, source, hashes = {}, license = null }) {
  const rules = await checkpointTable();
  const { files: names } = rules;
  const need = (file) => {
    if (!files[file]) throw refuse(`The checkpoint has no ${file}${file === names.vocabulary ? ' (the WordPiece vocabulary is required)' : ''}.`);
    return files[file];
  };
  const config = checkConfig(parseJsonFile(need(names.config), names.config), rules.config, names.config);
  const tokenizer = tokenizerWord(files[names.tokenizer] ? parseJsonFile(files[names.tokenizer], names.tokenizer) : null, rules.tokenizer, names.tokenizer);
  const vocabulary = vocabularyBytes(need(names.vocabulary));
  const weightsFile = names.weights.find((file) => files[file]);
  if (!weightsFile) {
    const sharded = names.sharded_indexes.find((file) => files[file]);
    throw refuse(sharded ? `The checkpoint's weights are split into several files (${sharded}); the page reads one ${names.weights.join(' or ')}.` : `The checkpoint has no ${names.weights.join(' or ')}.`);
  }
  const bytes = files[weightsFile];
  const format = sniffWeightsFormat(bytes);
  // A .bin is PyTorch's (whose reader names any other format it finds); otherwise the bytes say.
  const read = format === 'pytorch' || weightsFile.endsWith('.bin') ? readTorchCheckpoint : readSafetensors;
  const { tensors } = read(bytes, { file: weightsFile });
  const { weights, dropped } = engineWeights(tensors, rules.names, weightsFile);
  const groups = rules.names.optional_groups;
  const has = (prefix) => [...weights.keys()].some((n) => n.startsWith(prefix));
  const maskedLm = has(groups.masked_lm_head);
  const expected = expectedTensors(config, has(groups.pooler), maskedLm);
  if (!Array.isArray(expected)) throw refuse(`${names.config}: ${expected?.error ?? 'the engine cannot run this shape'}.`);
  const provenance = JSON.stringify({
    converter: CHECKPOINT_CONVERTER, source, files: hashes, weights: weightsFile, ...(license ? { license } : {}), ...(dropped.length ? { dropped_tensors: dropped } : {}),
  });
  return { bytes: writeModelFile({ config, tokenizer, name, provenance, vocabulary, expected, weights, file: weightsFile }), config, maskedLm, dropped, weightsFile };
}
