// One loaded model in this thread (AttentionEngine) and how it is made (createEngine): the glue,
// the wasm and the model download at once, the core reads the file, and analyses are memoised
// per sentence. Used by Node tests and scripts, by the page's worker (./worker.js), and by a page
// where no worker can start. Text limits and the result schema's check are here too.
import { HEAD_LABELS, ROLE, ROW_STAT, ROW_STAT_FIELDS } from './result.js';
import { describeWasmFailure, EngineError, thousands } from './errors.js';
import { checksumOf, DEFAULT_MANIFEST_URL, fetchShard, fetchVerified, fetchWasmModule, loadManifest, modelSource, shardDigests } from './files.js';

const HERE = import.meta.url;
// Longer texts are refused before they reach the tokenizer: the model reads at most 512
// positions anyway, and a reader's paste of a whole book should fail clearly, not slowly.
export const MAX_TEXT_CHARS = 20000;
// The analysis memo holds at most this many bytes of results per engine, the least recently used
// going first. One result at 512 tokens on the 4-layer, 4-head default model is about 18 MB
// (attention alone is 4 * 4 * 512 * 512 float32 = 16.8 MB; hidden states, queries, keys, values
// and the heads' contexts add 11 MB when asked for), so 64 MB keeps the last three long texts (two
// with vectors), or hundreds of the page's sentences, and three engines (the precision figure's)
// stay under 200 MB.
export const MEMO_BYTES = 64 * 1024 * 1024;

const now = () => (typeof performance === 'undefined' ? Date.now() : performance.now());
// Milliseconds since 1970 by this thread's clock, comparable across the page and its worker.
const epoch = () => (typeof performance === 'undefined' ? Date.now() : performance.timeOrigin + performance.now());

// What a result costs the memo: the bytes of its typed arrays (tokens and profiles are small).
function resultBytes(result) {
  let bytes = 0;
  for (const value of Object.values(result)) if (ArrayBuffer.isView(value)) bytes += value.byteLength;
  return bytes;
}

// The analyses of one engine by text, bounded in bytes, the least recently used going first.
// The newest result stays even when it alone is over the bound; a bound of 0 keeps nothing.
export class Memo {
  constructor(limit) {
    this.limit = limit;
    this.map = new Map();
    this.bytes = 0;
  }

  get size() {
    return this.map.size;
  }

  // The result for text (with vectors, if asked), made the most recently used.
  get(text, vectors = false) {
    const kept = this.map.get(text);
    if (!kept || (vectors && !kept.queries)) return undefined;
    this.map.delete(text);
    this.map.set(text, kept);
    return kept;
  }

  set(text, result) {
    if (this.limit <= 0) return;
    this.delete(text);
    this.map.set(text, result);
    this.bytes += resultBytes(result);
    while (this.bytes > this.limit && this.map.size > 1) this.delete(this.map.keys().next().value);
  }

  delete(text) {
    const result = this.map.get(text);
    if (!result) return;
    this.map.delete(text);
    this.bytes -= resultBytes(result);
  }
}

// Why a text longer than MAX_TEXT_CHARS is refused, or null: what checkText throws, and what a
// sentence box says before it asks the engine.
export function tooLong(text, maxPositions = null) {
  if (text.length <= MAX_TEXT_CHARS) return null;
  const reads = maxPositions ? `the model reads at most ${maxPositions} tokens` : 'far more than the model reads';
  return `The text is ${thousands(text.length)} characters long; the page takes at most ${thousands(MAX_TEXT_CHARS)} (${reads}; a text under that length but longer than the model reads is cut, and the figures say where).`;
}

export function checkText(text, info) {
  if (typeof text !== 'string') throw new EngineError('input', 'The text to analyse must be a string.');
  const refusal = tooLong(text, info.max_positions);
  if (refusal) throw new EngineError('input', refusal);
}

// Text as the core receives it: a lone surrogate (a JS string may hold one; UTF-8 cannot) becomes
// U+FFFD, one code unit for one, so the tokens' offsets still index the caller's string. The
// tokenizer then drops U+FFFD as BERT's cleaning step does.
export function wellFormed(text) {
  if (typeof text.toWellFormed === 'function') return text.toWellFormed();
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

// The wasm module's own names for its enums must be the ones ./result.js reads results with; a
// stale engine file next to a newer page is refused here, not misread later.
function checkSchema(module) {
  const schema = typeof module.schema === 'function' ? module.schema() : null;
  const same = (a, b) => JSON.stringify(Array.from(a ?? [])) === JSON.stringify(Array.from(b));
  if (!schema || module.ROW_STAT_FIELDS !== ROW_STAT_FIELDS || !same(schema.row_stats, Object.keys(ROW_STAT))
      || !same(schema.roles, Object.keys(ROLE)) || !same(schema.head_labels, HEAD_LABELS)) {
    throw new EngineError('engine', 'The engine file does not match this page\u2019s result schema (web/engine/result.js). Rebuild it with scripts/build.sh wasm.');
  }
}

// One loaded model in this thread. analyze() returns a frozen plain object of copied typed
// arrays in the result schema (read it through ./result.js); hidden_states, queries, keys, values
// and contexts are requested from the core and copied only for analyze(text, {vectors: true}).
// The core refused word-embedding rows (a shard or the all-rows file) it was handed.
const rowsRefused = (url, message) => new EngineError('model', `The word-embedding rows ${url} could not be used: ${message}. Retry; if it happens again, the site serves a damaged or mismatched file.`);

// A native answer as a frozen result that owns its buffers (with `fields` first): every typed
// array of the answer is a view into wasm memory, valid until the next call, so it is copied
// here (the worker then transfers the copies to the page).
function ownedResult(raw, fields) {
  const result = { ...fields };
  for (const [key, value] of Object.entries(raw)) result[key] = ArrayBuffer.isView(value) ? value.slice() : value;
  return Object.freeze(result);
}

export class AttentionEngine {
  constructor(module, native, info, timings, memoBytes = MEMO_BYTES, shards = null) {
    this._module = module;
    this._native = native;
    // The split layout: {baseUrl, coreSha, count}; null for a single model file.
    this._shards = shards;
    this.shardStats = { requests: 0, bytes: 0 };
    this._memo = new Memo(memoBytes);
    this._loadedShards = new Set();  // the split model's shards the core holds
    this._current = null;  // {text, vectors} of the analysis the native side holds
    this._failure = null;
    this._closed = false;
    this.info = info;
    this.timings = timings;
  }

  // The split model's shards: {requests, bytes} fetched so far, how many are here, how many
  // there are and their total size (all zero for a single model file).
  get shardSummary() {
    return { ...this.shardStats, loaded: this._loadedShards.size, count: this._shards?.count ?? 0, total: this._shards?.bytes ?? 0 };
  }

  // Whether the instance has the test build's hooks (bindings.cc, ATTN_TEST_HOOKS).
  get hasTestHooks() {
    return typeof this._native.trap === 'function';
  }

  // True once the instance trapped: every later call gets the same error.
  get failed() {
    return Boolean(this._failure);
  }

  // True once close() freed the instance.
  get closed() {
    return this._closed;
  }

  // Executes wasm's `unreachable` in the test build (the recovery test); the engine readers
  // get has no such hook and refuses.
  trap() {
    if (!this.hasTestHooks) throw new EngineError('input', 'This engine has no test hooks: only the test build (scripts/build.sh wasm-test) can be made to trap.');
    return this._nativeCall('trap');
  }

  analyze(text, { vectors = false } = {}) {
    checkText(text, this.info);
    // An entry without vectors is analysed again when they are asked for, and replaced.
    const result = this._memo.get(text, vectors) ?? this._run(text, vectors);
    this._memo.set(text, result);
    return result;
  }

  _run(text, vectors) {
    const m = this._module;
    const outputs = vectors ? m.OUTPUT_HIDDEN_STATES | m.OUTPUT_QUERIES | m.OUTPUT_KEYS | m.OUTPUT_VALUES : 0;
    let raw;
    if (this._failure) throw this._failure;
    try {
      raw = this._native.analyze(wellFormed(text), 0, outputs);
    } catch (error) {
      // The instance cannot be trusted after a trap: every later call gets the same error, and
      // the shared-engine cache forgets this engine so that a retry starts a fresh instance.
      this._current = null;
      this._failure = describeWasmFailure(error);
      this.onFailure?.(this);
      throw this._failure;
    }
    this._current = { text, vectors };
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    return ownedResult(raw, { text });
  }

  // A model in the split layout analyses a text only once the word-embedding rows of its tokens
  // are in: this fetches the shards that are missing (six at a time; from the Cache API when a
  // visit already fetched them) and hands each to the core, which checks it against the core
  // file. all: every shard (the masked-LM head scores the whole vocabulary); when more than half
  // of them are missing and the manifest names the all-rows file, that one file comes instead of
  // hundreds of requests. A shard is cached only after the core accepted it. A no-op for a
  // single model file.
  // The shards of the split model that the text's tokens need and the core does not hold yet,
  // in increasing order (none for a single model file). The core keeps the text's encoding for
  // its analysis, which then does not tokenize it again.
  missingShards(text) {
    return this._shards ? Array.from(this._nativeCall('missingShards', text, 0)) : [];
  }

  async ensureRows(text, { all = false, onProgress = () => {} } = {}) {
    if (!this._shards) return;
    checkText(text ?? '', this.info);
    const missing = all
      ? Array.from({ length: this._shards.count }, (_, k) => k).filter((k) => !this._loadedShards.has(k))
      : this.missingShards(text);
    if (all && this._shards.all && missing.length > this._shards.count / 2) {
      // Figures that predict at once share one download (a failed one is tried afresh next time).
      this._allRows ??= this.loadAllRows(onProgress).catch((error) => {
        this._allRows = null;
        throw error;
      });
      await this._allRows;
      return;
    }
    let done = 0;
    const queue = missing.slice();
    const worker = async () => {
      while (queue.length) {
        const k = queue.shift();
        await this.loadShard(k);
        onProgress({ phase: 'rows', loaded: ++done, total: missing.length, percent: (100 * done) / missing.length });
      }
    };
    await Promise.all(Array.from({ length: Math.min(6, missing.length) }, worker));
  }

  // The all-rows file (every shard back to back): checked against the manifest's SHA-256, handed
  // to the core, which checks each shard against the core file as it does a single one, and
  // cached (one entry) only once accepted; a bad copy is fetched once more (fetchVerified).
  async loadAllRows(onProgress = () => {}) {
    const { url, checksum } = this._shards.all;
    const use = (bytes) => {
      const message = this._nativeCall('loadShards', bytes);
      return message
        ? { refusal: rowsRefused(url, message) }
        : { value: true };
    };
    let fromCache = false;
    const { bytes } = await fetchVerified(url, {
      what: 'word-embedding rows', kind: 'model', cacheKey: `${url}?sha256=${checksum.sha256}`, checksum,
      onProgress: (p) => {
        fromCache = p.fromCache;
        onProgress({ phase: 'rows', loaded: p.loaded, total: p.total, percent: p.percent ?? 0, fromCache });
      },
    }, use);
    for (let k = 0; k < this._shards.count; ++k) this._loadedShards.add(k);
    if (!fromCache) {
      this.shardStats.requests += 1;
      this.shardStats.bytes += bytes;
    }
  }

  // Shard k handed to the core (prefetched: a promise of it, already on its way), cached once
  // the core accepted it; a no-op for a shard already in.
  async loadShard(k, prefetched = null) {
    if (this._loadedShards.has(k)) return;
    const shard = await (prefetched ?? fetchShard(this._shards, k));
    if (!shard.cached) {
      this.shardStats.requests += 1;
      this.shardStats.bytes += shard.bytes.length;
    }
    const message = this._nativeCall('loadShard', shard.bytes);
    if (message) {
      throw rowsRefused(shard.url, message);
    }
    this._loadedShards.add(k);
    if (shard.cache && !shard.cached) {
      // Not awaited (as fetchVerified's): the rows are in, and the next shard need not wait for
      // the cache's write. A full or refused cache only costs the next visit a download.
      shard.cache.put(shard.cacheKey, new Response(shard.bytes, { headers: { 'content-type': 'application/octet-stream' } })).catch(() => {});
    }
  }

  // Heads removed ("L.H,...", counted from 1) and value norms: an analysis that is not memoised.
  analyzeAblated(text, { removed = '', valueNorms = false } = {}) {
    checkText(text, this.info);
    const outputs = valueNorms ? this._module.OUTPUT_VALUE_NORMS : 0;
    const raw = this._nativeCall('analyzeAblated', text, 0, outputs, String(removed));
    this._current = null;
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    this._current = { text, removed };
    return ownedResult(raw, { text, removed });
  }

  // The masked-LM head's k most likely tokens at one position of text; masked: that position is
  // replaced by [MASK] before the forward pass; removed: heads to remove as in analyzeAblated.
  predict(text, position, k = 5, { masked = false, removed = '' } = {}) {
    checkText(text, this.info);
    if (masked || removed) {
      const raw = this._nativeCall('predictMasked', text, position, k, Boolean(masked), String(removed));
      this._current = null;
      if (!Array.isArray(raw)) throw new EngineError('input', raw.error);
      return raw;
    }
    if (this._current?.text !== text || this._current?.removed) this._run(text, false);
    const list = this._native.topPredictions(position, k);
    if (!Array.isArray(list)) throw new EngineError('input', list.error);
    return list;
  }

  // The exact probability of entry `id` at one position of text, over the whole vocabulary, with
  // its rank (from 1) and the most probable entry: {probability, rank, top1, top1_text}. Options
  // as predict's (masked, removed).
  probability(text, position, id, { masked = false, removed = '' } = {}) {
    checkText(text, this.info);
    const raw = this._nativeCall('probabilityMasked', text, position, id, Boolean(masked), String(removed));
    this._current = null;
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    return { probability: raw.probability, rank: raw.rank, top1: raw.top1, top1_text: raw.top1_text };
  }

  // The lenses of text (wasm/core/lenses.h; docs/ARCHITECTURE.md, "Lenses"): {text, n, layers,
  // heads, weighted (L, H, n, n), weighted_layer, mixing, alti (L, n, n), mixing_ratio (L, n),
  // alti_rollout, rollout (n, n), flow and flow_normalized (row flowRow, n), value_zeroing (row
  // zeroingRow in every layer, (L, n))}; masked: a position replaced by [MASK] first; row: the
  // one token whose weighted_layer, mixing, mixing_ratio and alti rows are computed (-1: all,
  // and alti_rollout). A flow or zeroing row left at -1 is not computed (flow is n max-flow
  // problems, value zeroing n reruns of each layer).
  lenses(text, { masked = -1, row = -1, flowRow = -1, zeroingRow = -1 } = {}) {
    checkText(text, this.info);
    const raw = this._nativeCall('lenses', text, Number(masked), -1, Number(row), Number(flowRow), Number(zeroingRow));
    this._current = null;
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    return ownedResult(raw, { text });
  }

  // Which lens agrees with what the model did at one position: {text, target, masked, n,
  // top1, top1_text, logprob, occlusion (n, NaN where undefined), faithfulness {lens: rho}} with
  // the lenses' names of wasm/core/lenses.h (FaithfulnessLensName). masked: the position itself
  // is [MASK], so that the masked-LM predicts it.
  faithfulness(text, target, { masked = true } = {}) {
    checkText(text, this.info);
    const raw = this._nativeCall('lenses', text, masked ? Number(target) : -1, Number(target), -1, -1, -1);
    this._current = null;
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    return {
      text, target: raw.target, masked: Boolean(masked), n: raw.n, top1: raw.target_top1, top1_text: raw.target_top1_text,
      logprob: raw.target_logprob, occlusion: raw.occlusion.slice(), faithfulness: { ...raw.faithfulness },
    };
  }

  // Frees the instance's engine; every later call fails with a closed engine's error. The wasm
  // memory goes with the instance once nothing refers to the module.
  close() {
    if (this._closed) return;
    this._closed = true;
    this._failure = new EngineError('engine', 'This engine was closed.');
    this._memo = new Memo(0);
    try {
      this._native.delete();
    } catch {
      // An instance that trapped may refuse even this; it is dropped all the same.
    }
    this._native = null;
    this._module = null;
  }

  // The core's memory ({allocated_bytes, heap_bytes}) and the memo's (memo_bytes, memo_entries).
  memoryInfo() {
    return { ...this._native.memoryInfo(), memo_bytes: this._memo.bytes, memo_entries: this._memo.size };
  }

  // The tokenizer alone: {tokens, truncated, full_length}, as analyze reports them.
  tokenize(text, maxLength = 0) {
    checkText(text, this.info);
    const out = this._nativeCall('tokenize', text, maxLength);
    if (out.error !== undefined) throw new EngineError('input', out.error);
    return out;
  }

  // The token ids of many texts, in one call (the vocabulary post types all 30,522 entries).
  tokenizeMany(texts, maxLength = 0) {
    if (!Array.isArray(texts)) throw new EngineError('input', 'tokenizeMany takes an array of texts.');
    return texts.map((text) => this.tokenize(text, maxLength).tokens.map((t) => t.id));
  }

  // The model's vocabulary, one entry per id.
  vocabulary() {
    if (!this._vocabulary) {
      const list = this._nativeCall('vocabulary');
      if (!Array.isArray(list)) throw new EngineError('engine', list?.error ?? 'The engine gave no vocabulary.');
      this._vocabulary = list;
    }
    return this._vocabulary;
  }

  _nativeCall(name, ...args) {
    if (this._failure) throw this._failure;
    if (typeof this._native[name] !== 'function') {
      throw new EngineError('engine', `This engine file has no ${name}(); rebuild it with scripts/build.sh wasm.`);
    }
    try {
      return this._native[name](...args.map((arg) => (typeof arg === 'string' ? wellFormed(arg) : arg)));
    } catch (error) {
      this._current = null;
      this._failure = describeWasmFailure(error);
      this.onFailure?.(this);
      throw this._failure;
    }
  }
}

// The engine's files, as scripts/site/build_site.mjs names them next to each other: the glue,
// the wasm, and the same engine with relaxed SIMD (its matrix products in f32x4.relaxed_madd,
// fused multiply-adds where the hardware has them), which the same glue drives.
export const ENGINE_FILES = Object.freeze({ glue: 'attention_engine.js', wasm: 'attention_engine.wasm', relaxed: 'attention_engine.relaxed.wasm' });

// A module whose one function is three i32x4.splat and an f32x4.relaxed_madd: it validates
// where the browser runs relaxed SIMD (Chromium since 114); elsewhere the plain wasm is used.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,  // magic, version
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00,              // one type: [] -> []
  0x03, 0x02, 0x01, 0x00,                          // one function of it
  0x0a, 0x14, 0x01, 0x12, 0x00,                    // its body: no locals,
  0x41, 0x00, 0xfd, 0x11, 0x41, 0x00, 0xfd, 0x11, 0x41, 0x00, 0xfd, 0x11,  // 3x i32.const 0, i32x4.splat
  0xfd, 0x85, 0x02, 0x1a, 0x0b,                    // f32x4.relaxed_madd, drop, end
]);
let relaxedSimd = null;
export const hasRelaxedSimd = () => (relaxedSimd ??= WebAssembly.validate(RELAXED_SIMD_PROBE));

async function importGlue(glueUrl) {
  try {
    return (await import(glueUrl)).default;
  } catch (error) {
    throw new EngineError('network', `Could not load the engine script ${glueUrl} (${error.message}).`, { cause: error });
  }
}

// An instance of the compiled module through the glue, with nothing downloaded again.
async function instantiate(createModule, compiled) {
  let failInstantiation;
  const instantiationFailed = new Promise((_, reject) => { failInstantiation = reject; });
  let module;
  try {
    module = await Promise.race([
      createModule({
        instantiateWasm(imports, receive) {
          WebAssembly.instantiate(compiled, imports).then((instance) => receive(instance, compiled), failInstantiation);
          return {};
        },
        print: () => {},
        printErr: () => {},
      }),
      instantiationFailed,
    ]);
  } catch (error) {
    throw describeWasmFailure(error);
  }
  checkSchema(module);
  return module;
}

// What a checkpoint is called where a model file's address would be: hf:ID@REVISION, or the
// files' label.
const checkpointLabel = (checkpoint) => (checkpoint.files ? `files:${checkpoint.label ?? 'chosen'}` : checkpoint.local ? `local:${checkpoint.local}` : `hf:${checkpoint.id}@${checkpoint.revision ?? 'main'}`);

// A checkpoint (createEngine's option) downloaded or read, made into a model file, and loaded
// by loadModel (createEngine's, which answers {value} or {refusal}). A download's files, each
// checked already, go into the Cache API before the core reads the model (so that their bytes
// need not stay in memory meanwhile) and out again if it refuses it; files from the computer
// are kept once the model has loaded. Answers as fetchVerified does ({value, bytes, from}) with
// what was loaded: {hub, id, commit, weights, bytes, kept} or {label, local}.
async function checkpointModel(checkpoint, { instance, signal, onProgress, loadModel }) {
  const [made, hub] = await Promise.all([import('./checkpoint.js'), import('./hub.js')]);
  const rules = await made.checkpointTable();
  let files;
  let hashes = {};
  let keep = null;
  let name;
  let sourceText;
  let license = null;
  let forget = null;
  let loaded;
  if (checkpoint.files || checkpoint.local) {
    // Files the reader chose, or ones this browser kept when they were chosen (local=KEY).
    const kept = checkpoint.local ? await hub.readKeptFiles(checkpoint.local) : null;
    files = kept?.files ?? await hub.readLocalFiles(checkpoint.files, rules.files);
    name = String(kept?.label ?? checkpoint.label ?? 'a model from this computer').slice(0, 100);
    sourceText = 'files opened on the reader\u2019s computer';
    loaded = { label: name, local: checkpoint.local ?? null };
    if (!checkpoint.local) keep = async () => { loaded.local = await hub.keepFiles(files, name); };
  } else {
    const info = await hub.hubModelInfo(checkpoint.hub, checkpoint, { signal });
    const plan = hub.checkpointFiles(info, rules.files);
    const weights = plan.files.find((f) => f.name === plan.weights);
    // The config comes first: a repository that is not a BERT, one too large for this engine's
    // memory (the core's budget, through expectedTensors), or one whose weights file is far
    // larger than its config implies, is refused before the weights are downloaded.
    const checkConfig = async (bytes) => {
      const config = made.checkConfig(made.parseJsonFile(bytes, rules.files.config), rules.config, rules.files.config);
      const expected = (await instance).expectedTensors(config, true, true);
      if (!Array.isArray(expected)) throw new EngineError('model', `${info.id}'s ${rules.files.config}: ${expected?.error ?? 'the engine cannot run this shape'}.`);
      const floats = expected.reduce((sum, t) => sum + t.shape.reduce((a, b) => a * b, 1), 0);
      // f32 at most, and the masked-LM decoder stored untied besides.
      const most = 4 * (floats + config.vocab_size * config.hidden_size) + (1 << 20);
      if (weights.size > most) throw new EngineError('model', `${info.id}'s ${weights.name} is ${thousands(weights.size)} bytes, more than its config.json implies (at most ${thousands(most)}); the page does not download it.`);
    };
    ({ files, hashes, keep, forget } = await hub.downloadCheckpoint(checkpoint.hub, info, plan, { signal, onProgress, checkConfig }));
    name = info.id;
    sourceText = `hf:${info.id}@${info.commit}`;
    license = info.license;
    loaded = { hub: checkpoint.hub, id: info.id, commit: info.commit, weights: plan.weights, bytes: plan.bytes };
  }
  if (signal?.aborted) throw hub.cancelled();
  const module = await instance;
  const { bytes } = await made.modelFileFromCheckpoint(files, { expectedTensors: (c, p, m) => module.expectedTensors(c, p, m), name, source: sourceText, hashes, license });
  if (signal?.aborted) throw hub.cancelled();
  // A download's files go into the cache now, checked already, so that their bytes need not
  // stay in memory while the core reads the model file; a model the core refuses takes them
  // out again. Files from the computer are kept only once the model has loaded.
  if (forget) {
    loaded.kept = await keep();
    keep = null;
    files = null;
  }
  const used = await loadModel(bytes);
  if (used.refusal) {
    await forget?.();
    throw used.refusal;
  }
  if (keep) await keep();
  files = null;
  return { value: used.value, bytes: bytes.length, from: 'checkpoint', checkpoint: loaded };
}

// Loads a model with an explicit configuration, in this thread (tests, scripts, the worker).
//   manifestUrl: models/manifest.json, naming the engine files and the models with checksums
//   manifest: the parsed manifest, when the caller has read it already (the worker gets the
//     page's copy, so that the page makes one request for it)
//   model: a key of manifest.models (default: manifest.default), or modelUrl: a model file's URL
//   engineUrl: a folder holding ENGINE_FILES, instead of the manifest's (with modelUrl as well,
//     no manifest is read at all)
//   simd: which wasm: 'auto' (the manifest's relaxed-SIMD one where this browser runs it, else
//     the plain one; from a folder, the plain one), 'relaxed' or 'plain'
//   early: {url, response}, the page's own answer for the model file (startDownload in files.js)
//   onProgress({phase: 'engine'|'model', loaded, total, percent})
// The glue, the wasm and the model download at once; the wasm compiles while it arrives and is
// instantiated while the model is still downloading, so that what is left after the model's
// last byte is the core reading the file (LoadedModel::FromBuffer).
//   checkpoint: a Hugging Face checkpoint instead of a model file: {hub, id, revision} (a
//     repository on the hub, ./hub.js), {files: [{name, blob}], label} (files the reader chose,
//     which this browser then keeps: the loaded info's checkpoint.local names them) or {local:
//     KEY} (files kept so); made into a model file in this thread (./checkpoint.js)
//   signal: an AbortSignal that cancels a checkpoint's download
export async function createEngine({ manifestUrl = DEFAULT_MANIFEST_URL, manifest: given, model, modelUrl, engineUrl, checkpoint = null, signal, simd = 'auto', single = false, early = null, onProgress = () => {}, memoBytes = MEMO_BYTES } = {}) {
  const t0 = now();
  const manifest = engineUrl && (modelUrl || checkpoint) ? null : given ?? await loadManifest(manifestUrl);
  const base = new URL(manifestUrl, typeof location === 'undefined' ? HERE : location.href).href;
  // The split layout's core, or the single file (`single: true` asks for that one); a
  // checkpoint has neither.
  const source = checkpoint ? { entry: null, split: null, file: null, checksum: null, url: checkpointLabel(checkpoint), cacheKey: null }
    : modelSource({ manifest, base, model, modelUrl, single });
  if (!source) throw new EngineError('model', `The manifest ${manifestUrl} has no model named ${model ?? manifest.default}.`);
  const { entry, split, file: modelFile, checksum: modelChecksum, url: resolvedModelUrl } = source;
  // The page's own request for this file (startDownload), if it made one.
  if (early && early.url !== resolvedModelUrl) early.response.body?.cancel().catch(() => {});
  const shardBase = split ? new URL(entry.shards.folder, base).href : null;
  if (!['auto', 'relaxed', 'plain'].includes(simd)) throw new EngineError('engine', `simd is 'auto', 'relaxed' or 'plain', not ${JSON.stringify(simd)}.`);
  const folder = engineUrl && (engineUrl.endsWith('/') ? engineUrl : `${engineUrl}/`);
  const relaxedEntry = folder ? null : manifest.engine.relaxed ?? null;
  if (simd === 'relaxed' && !folder && !relaxedEntry) throw new EngineError('engine', `The manifest ${manifestUrl} names no relaxed-SIMD engine.`);
  const relaxed = simd === 'relaxed' || (simd === 'auto' && Boolean(relaxedEntry) && hasRelaxedSimd());
  const glueUrl = new URL(folder ? ENGINE_FILES.glue : manifest.engine.glue, folder || base).href;

  const marks = {};
  const glue = importGlue(glueUrl);
  // One build's wasm, downloaded, checked and compiled. The manifest's checksum only vouches for
  // the manifest's own engine files.
  const compile = (useRelaxed) => {
    const engineEntry = folder ? null : useRelaxed ? relaxedEntry : manifest.engine;
    const url = new URL(folder ? ENGINE_FILES[useRelaxed ? 'relaxed' : 'wasm'] : engineEntry.wasm, folder || base).href;
    const checksum = checksumOf(engineEntry);
    return fetchWasmModule(url, {
      cacheKey: checksum ? `${url}?sha256=${checksum.sha256}` : null,
      checksum,
      onProgress: (p) => onProgress({ phase: 'engine', ...p }),
    }).then((c) => ({ ...c, url }));
  };
  // Chosen by 'auto', a relaxed-SIMD wasm that does not arrive or compile (a host that did not
  // upload it, a browser that validates the probe but not the module) gives way to the plain one.
  const compiled = compile(relaxed).catch((error) => (simd === 'auto' && relaxed ? compile(false) : Promise.reject(error))).then((c) => {
    marks.compiled = now();
    return c;
  });
  const instance = Promise.all([glue, compiled]).then(([createModule, c]) => instantiate(createModule, c.module)).then((m) => {
    marks.instantiated = now();
    return m;
  });
  // The core reads the model file as soon as both are here. A file it refuses counts as a wrong
  // download: fetchVerified fetches it once more before the refusal is final, and caches it only
  // once the core has accepted it.
  const loadModel = async (bytes) => {
    marks.model = now();
    marks.modelEpoch = epoch();
    const module = await instance;
    const tReady = now();
    // Each engine has an instance of its own: a failed load discards it with everything it
    // allocated, so no other engine's memory is ever touched by a bad file.
    const native = new module.Engine();
    let message;
    try {
      message = native.load(bytes);
    } catch (error) {
      throw describeWasmFailure(error, { loading: resolvedModelUrl });
    }
    if (message) {
      native.delete();
      return { refusal: new EngineError('model', `The model file ${resolvedModelUrl} could not be loaded: ${message}`) };
    }
    return { value: { module, native, tReady, t3: now() } };
  };
  const modelLoad = checkpoint
    ? checkpointModel(checkpoint, { instance, signal, onProgress: (p) => onProgress({ phase: 'model', ...p }), loadModel })
    : fetchVerified(resolvedModelUrl, {
      what: 'model file',
      kind: 'model',
      cacheKey: source.cacheKey,
      checksum: modelChecksum,
      early: early?.url === resolvedModelUrl ? early.response : null,
      onProgress: (p) => onProgress({ phase: 'model', ...p }),
    }, loadModel);
  // The opening sentence's rows come with the core, in parallel, asked for after it: over
  // HTTP/1.1 a browser opens six connections to a host, and the core, the largest file, takes
  // one of them first.
  const digestOf = split && entry.shards.digests ? shardDigests(new URL(entry.shards.digests.file, base).href, entry.shards.digests, entry.shards.count) : null;
  const shardSource = split ? { baseUrl: shardBase, coreSha: entry.core.sha256, digestOf } : null;
  const preloaded = split ? (entry.shards.preload ?? []).map((k) => fetchShard(shardSource, k).then((shard) => [k, shard], () => null)) : [];
  // Promise.all watches every promise, so a second failure is never left unhandled.
  const [{ value: { module, native, tReady, t3 }, bytes: modelBytes, from: modelFrom, checkpoint: loadedCheckpoint }, { bytes: wasmBytes, url: wasmUrl }] = await Promise.all([modelLoad, compiled, instance]);
  const info = { ...native.info(), url: resolvedModelUrl, sha256: modelFile?.sha256 ?? null, wasm: wasmUrl, ...(loadedCheckpoint ? { checkpoint: loadedCheckpoint } : {}) };
  const t4 = now();
  const allRows = split && checksumOf(entry.shards.all) ? { url: new URL(entry.shards.all.file, base).href, checksum: checksumOf(entry.shards.all) } : null;
  const shards = split ? { baseUrl: shardBase, coreSha: entry.core.sha256, digestOf, count: entry.shards.count, bytes: entry.shards.bytes ?? 0, all: allRows } : null;
  const engine = new AttentionEngine(module, native, info, {
    // fetchMs: until both files are here (and checked); compileMs: the wasm's download and
    // compilation; parseMs: the core reading the model file; totalMs: the whole.
    fetchMs: Math.max(marks.model, marks.compiled) - t0,
    compileMs: marks.compiled - t0,
    instantiatedMs: marks.instantiated - t0,
    modelMs: marks.model - t0,
    parseMs: t3 - tReady,
    infoMs: t4 - t3,
    // From the model's last byte to a loaded engine (waiting for the wasm, if it came later,
    // and the core reading the file), and when that last byte came (ms since 1970).
    afterModelMs: t4 - marks.model,
    modelDoneAt: marks.modelEpoch,
    totalMs: t4 - t0,
    // modelFrom: 'cache', 'page' (the page's own request, whose bytes are then in the page's
    // resource timing) or 'network'.
    wasmBytes, modelBytes, modelFrom,
  }, memoBytes, shards);
  // A preloaded shard that failed to arrive is fetched again when a sentence needs it.
  for (const item of await Promise.all(preloaded)) {
    if (item) await engine.loadShard(item[0], Promise.resolve(item[1]));
  }
  return engine;
}

