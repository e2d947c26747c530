// The page's one attention engine: downloads the WebAssembly core and the model file (with
// progress), keeps both in the Cache API under keys that include their checksums, runs the
// engine off the main thread in one Web Worker per page however many widgets ask, memoises
// analyses per sentence, and turns every failure into an Error whose message can be shown to a
// reader. Works in browsers and Node 20.
//
// Two ways in:
//   createEngine(options) -> AttentionEngine: the engine in this thread, analyze() synchronous
//     (Node tests, scripts, and the worker itself);
//   getEngine(options) / getSideEngine(options) -> EngineClient: what widgets use; analyze()
//     returns a promise, the work runs in the page's worker (./worker.js) where there is one
//     (browsers), in this thread otherwise (Node, or a page that refuses workers).

import { HEAD_LABELS, ROLE, ROW_STAT, ROW_STAT_FIELDS } from './result.js';

const HERE = import.meta.url;
const CACHE_NAME = 'attention-explainer';
// Longer texts are refused before they reach the tokenizer: the model reads at most 512
// positions anyway, and a reader's paste of a whole book should fail clearly, not slowly.
export const MAX_TEXT_CHARS = 20000;
// The analysis memo holds at most this many bytes of results per engine, the least recently used
// going first. One result at 512 tokens on the 4-layer, 4-head default model is about 18 MB
// (attention alone is 4 * 4 * 512 * 512 float32 = 16.8 MB; hidden states, queries and keys add
// 7 MB when asked for), so 64 MB keeps the last three long texts, or hundreds of the page's
// sentences, and three engines (the precision figure's) stay under 200 MB.
const MEMO_BYTES = 64 * 1024 * 1024;

export const DEFAULT_MANIFEST_URL = new URL('../models/manifest.json', HERE).href;
// The worker's module, found from this module's URL: web/engine/engine.js and the bundle in
// web/dist/ are both one folder below web/.
export const WORKER_URL = new URL('../engine/worker.js', HERE).href;

// Thrown for every failure; `kind` lets a page choose its wording or offer a retry.
export class EngineError extends Error {
  constructor(kind, message, options) {
    super(message, options);
    this.name = 'EngineError';
    // 'network' | 'http' | 'model' | 'engine' | 'memory' | 'input', and 'superseded' for an
    // analysis that a newer request of the same caller replaced before it ran.
    this.kind = kind;
  }
}

export const isSuperseded = (error) => error?.kind === 'superseded';

const isFileUrl = (url) => url.startsWith('file:');
const now = () => (typeof performance === 'undefined' ? Date.now() : performance.now());
// Milliseconds since 1970 by this thread's clock, comparable across the page and its worker.
const epoch = () => (typeof performance === 'undefined' ? Date.now() : performance.timeOrigin + performance.now());

async function readFileUrl(url) {
  const { readFile } = await import('node:fs/promises');
  try {
    return new Uint8Array(await readFile(new URL(url)));
  } catch (error) {
    throw new EngineError('network', `Could not read ${url}: ${error.code ?? error.message}.`, { cause: error });
  }
}

async function openCache() {
  try {
    return typeof caches === 'undefined' ? null : await caches.open(CACHE_NAME);
  } catch {
    return null;  // private windows and file: pages may refuse the Cache API; load without it
  }
}

// The response for url: from the cache under cacheKey when it is there, else from the network;
// with reload, straight from the server, past the cache and the browser's HTTP cache.
async function openResponse(url, cacheKey, { reload = false } = {}) {
  const cache = cacheKey ? await openCache() : null;
  let response = cache && !reload ? await cache.match(cacheKey) : undefined;
  const fromCache = Boolean(response);
  if (!response) {
    try {
      response = await fetch(url, { cache: reload ? 'reload' : 'no-cache' });
    } catch (error) {
      throw new EngineError('network', `Could not download ${url}: the network request failed (${error.message}). Check the connection and the address, then retry.`, { cause: error });
    }
    if (!response.ok) {
      throw new EngineError('http', `Could not download ${url}: the server answered ${response.status} ${response.statusText}.`.replace(' .', '.'));
    }
  }
  return { response, fromCache, cache };
}

// Reads a response body chunk by chunk, reporting progress. Returns the bytes, or null as soon as
// more than limit bytes have come (the rest is not read), so that a wrong or huge file never
// fills the memory (security review F5).
async function readBody(url, response, { total, fromCache, onProgress, limit }) {
  const chunks = [];
  let loaded = 0;
  if (response.body) {
    try {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        loaded += value.length;
        if (loaded > limit) {
          reader.cancel().catch(() => {});
          return null;
        }
        chunks.push(value);
        onProgress({ loaded, total, percent: total ? Math.min(100, (100 * loaded) / total) : null, fromCache });
      }
    } catch (error) {
      throw new EngineError('network', `The download of ${url} broke off after ${loaded} bytes (${error.message}). Retry.`, { cause: error });
    }
  }
  onProgress({ loaded, total: loaded, percent: 100, fromCache });
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

// What a manifest entry vouches for a file: its length and its SHA-256, or null where it gives
// no checksum (a model-src address, an engine-src folder, a hand-written test manifest).
function checksumOf(entry) {
  return typeof entry?.sha256 === 'string' && /^[0-9a-f]{64}$/.test(entry.sha256) ? { sha256: entry.sha256, bytes: entry.bytes } : null;
}

const hex = (digest) => Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
const HTML_START = /^\s*<(!doctype|html|head|body|!--|\?xml)/i;

// Why bytes are not the file a manifest entry names (checksum), or null when they are (or when
// there is no checksum: the core judges such a file itself). A page served where the file should
// be (a captive portal's login, a proxy's error) is said as such. Without crypto.subtle (a page
// on plain HTTP away from localhost) the SHA-256 is not checked; such a page has no Cache API
// either, so nothing wrong can be kept, and whoever can alter its files in transit can alter its
// scripts as well.
async function problemWith(bytes, contentType, checksum) {
  if (!checksum) return null;
  if (/^text\/html\b/i.test(contentType ?? '') || HTML_START.test(new TextDecoder().decode(bytes.subarray(0, 64)))) {
    return 'got an HTML page instead of the file';
  }
  if (Number.isInteger(checksum.bytes) && checksum.bytes > 0 && bytes.length !== checksum.bytes) {
    return `got ${bytes.length} bytes, expected ${checksum.bytes}`;
  }
  if (globalThis.crypto?.subtle && hex(await crypto.subtle.digest('SHA-256', bytes)) !== checksum.sha256) {
    return 'its SHA-256 does not match the manifest';
  }
  return null;
}

// Downloads url and hands its bytes to use(bytes), which returns {value} or, when the bytes
// cannot be used (the core refuses the model file, the wasm does not compile), {refusal: an
// EngineError}. Returns {value, bytes: the length}.
// Where the manifest vouches for the file (checksum), its bytes are checked against it before
// use, and they are cached under cacheKey only once checked and used: one bad answer (a captive
// portal's page, a proxy's or a broken edge's) must never be kept and served to every later
// visit (security review F2). A cached or downloaded file that fails is not final: its cache
// entry is deleted and it is fetched once more straight from the server; the second failure is
// the error. A file over limit is refused before its body is read where the server says its
// length, and as soon as more than limit bytes have come otherwise (F5).
async function fetchVerified(url, { what, kind, cacheKey = null, checksum = null, limit = MAX_MODEL_FILE_BYTES, onProgress = () => {}, contentType = 'application/octet-stream' }, use) {
  const most = Math.min(limit, Number.isInteger(checksum?.bytes) && checksum.bytes > 0 ? checksum.bytes : limit);
  const tooLarge = most < limit ? `got more than ${most} bytes, expected ${most}` : `it is more than ${limit} bytes, more than this engine loads`;
  const attempts = cacheKey && !isFileUrl(url) ? [false, true] : [false];
  let failure = null;
  for (const reload of attempts) {
    let bytes;
    let fromCache = false;
    let cache = null;
    let type = contentType;
    if (isFileUrl(url)) {
      bytes = await readFileUrl(url);
      if (bytes.length > most) bytes = null;
      else onProgress({ loaded: bytes.length, total: bytes.length, percent: 100, fromCache: false });
    } else {
      let response;
      ({ response, fromCache, cache } = await openResponse(url, cacheKey, { reload }));
      type = response.headers.get('content-type');
      const declared = Number(response.headers.get('content-length'));
      if (declared > limit) {
        response.body?.cancel().catch(() => {});
        throw new EngineError(kind, `The ${what} ${url} is ${declared} bytes, more than this engine loads (${limit}); use a smaller or compact ${what}.`);
      }
      bytes = await readBody(url, response, { total: declared || checksum?.bytes || 0, fromCache, onProgress, limit: most });
    }
    const problem = bytes ? await problemWith(bytes, type, checksum) : tooLarge;
    const used = problem ? null : await use(bytes);
    if (used && !used.refusal) {
      if (cache && !fromCache) {
        // Not awaited: the bytes are here, and a full or refused cache only costs the next visit
        // a download.
        cache.put(cacheKey, new Response(bytes, { headers: { 'content-type': contentType } })).catch(() => {});
      }
      return { value: used.value, bytes: bytes.length };
    }
    const advice = problem === tooLarge && !checksum ? `Use a smaller or compact ${what}.` : 'Retry; if it happens again, the site serves a wrong or damaged file.';
    failure = used?.refusal ?? new EngineError(kind, `The ${what} ${url} could not be used: ${problem}${reload ? ', also when fetched again from the server' : ''}. ${advice}`);
    if (cache) await cache.delete(cacheKey).catch(() => {});
  }
  throw failure;
}

// Why the engine's wasm did not compile, in words for whoever can act on it: the page's
// Content-Security-Policy (its author adds 'wasm-unsafe-eval'), a browser without WebAssembly
// SIMD (the reader), or a file that is not the engine (whoever built the site; a file whose
// sha256 matched the manifest is the one the site meant, so then the browser is the cause).
export function notWasm(url, error, { verified = false } = {}) {
  const said = String(error?.message ?? error);
  if (/content.security.policy|\bcsp\b|unsafe-eval/i.test(said)) {
    return new EngineError('engine', `This page\u2019s Content-Security-Policy does not allow WebAssembly, so the live model cannot start (${said}). `
      + 'The page\u2019s author adds \'wasm-unsafe-eval\' to its script-src (the README\u2019s "Content-Security-Policy" gives the whole policy).', { cause: error });
  }
  if (verified) {
    return new EngineError('engine', `This browser could not compile the engine (${said}). The engine needs WebAssembly with SIMD: `
      + 'Chrome or Edge 91, Firefox 89, Safari 16.4 or any later version.', { cause: error });
  }
  return new EngineError('engine', `The engine file ${url} is not valid WebAssembly (${said}). Whoever built the site rebuilds it with scripts/build.sh wasm.`, { cause: error });
}

// Downloads the engine's wasm and compiles it. The bytes are read, checked and then compiled
// (not compiled while they stream in), so that nothing unchecked runs or is cached
// (fetchVerified); the model's download, five times longer, hides the compilation anyway.
async function fetchWasmModule(url, { onProgress, cacheKey, checksum }) {
  const compile = async (bytes) => {
    try {
      return { value: await WebAssembly.compile(bytes) };
    } catch (error) {
      return { refusal: notWasm(url, error, { verified: Boolean(checksum) }) };
    }
  };
  const { value: module, bytes } = await fetchVerified(url, { what: 'engine file', kind: 'engine', cacheKey, checksum, onProgress, contentType: 'application/wasm' }, compile);
  return { module, bytes };
}

async function fetchJson(url) {
  if (isFileUrl(url)) return JSON.parse(new TextDecoder().decode(await readFileUrl(url)));
  let response;
  try {
    response = await fetch(url, { cache: 'no-cache' });
  } catch (error) {
    throw new EngineError('network', `Could not download ${url}: the network request failed (${error.message}).`, { cause: error });
  }
  if (!response.ok) throw new EngineError('http', `Could not download ${url}: the server answered ${response.status}.`);
  try {
    return await response.json();
  } catch (error) {
    throw new EngineError('model', `${url} is not valid JSON (${error.message}).`, { cause: error });
  }
}

// A promise kept in map under key until it fails: a failed request or load is forgotten, so
// that a retry starts afresh. promiseOf finds the promise in what make() returns.
// An engine that trapped (its onFailure) is forgotten the same way.
function remembered(map, key, make, promiseOf = (value) => value) {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
    const forget = () => {
      if (map.get(key) === value) map.delete(key);
    };
    promiseOf(value).then((made) => {
      if (made && typeof made === 'object' && 'onFailure' in made) made.onFailure = forget;
    }, forget);
  }
  return value;
}

// Every reader of one manifest in a page gets one request: the engines and the figures that
// read its other entries (the precision figure).
const manifests = new Map();  // URL -> promise of the parsed manifest

export function loadManifest(url = DEFAULT_MANIFEST_URL) {
  return remembered(manifests, url, () => fetchJson(url));
}

// The manifest's entry for a model's key, or undefined. A key can come from a link (?model=), so
// only the manifest's own entries count: `__proto__`, `constructor` or `toString` would find
// Object.prototype's members and send the engine after models/undefined (security review F11).
export function manifestModel(manifest, key) {
  const models = manifest?.models;
  return models && typeof key === 'string' && Object.hasOwn(models, key) ? models[key] : undefined;
}

// A trap inside the engine (an abort, a failed allocation, an out-of-bounds access) leaves its
// instance unusable; the message says what the reader can do. During a model load the file is
// the likely cause (too large, or crafted), not the page.
export function describeWasmFailure(error, { loading = null } = {}) {
  const text = String(error?.message ?? error).trim().replace(/[.\s]+$/, '');
  const memory = /memory|alloc|OOM|Aborted/i.test(text);
  if (loading) {
    return new EngineError(memory ? 'memory' : 'engine', `The engine stopped while loading the model file ${loading} (${text}). The file is too large for this engine or damaged; try another model file.`, { cause: error });
  }
  if (memory) {
    return new EngineError('memory', `The engine ran out of memory (${text}). Try a shorter text, or reload the page.`, { cause: error });
  }
  return new EngineError('engine', `The engine failed (${text}). Reload the page to start it again.`, { cause: error });
}

// The largest model file handed to the engine: the core holds the file's bytes and the
// decoded f32 weights at once, in a 32-bit memory it shares with the page, and refuses more
// than 768 MiB of weights anyway (MemoryBudget in wasm/core/model_file.h).
export const MAX_MODEL_FILE_BYTES = 1024 * 1024 * 1024;

// What a result costs the memo: the bytes of its typed arrays (tokens and profiles are small).
function resultBytes(result) {
  let bytes = 0;
  for (const value of Object.values(result)) if (ArrayBuffer.isView(value)) bytes += value.byteLength;
  return bytes;
}

// The analyses of one engine by text, bounded in bytes, the least recently used going first.
// The newest result stays even when it alone is over the bound; a bound of 0 keeps nothing.
class Memo {
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
  return `The text is ${text.length.toLocaleString('en-US')} characters long; the page takes at most ${MAX_TEXT_CHARS.toLocaleString('en-US')} (${reads}; a text under that length but longer than the model reads is cut, and the figures say where).`;
}

function checkText(text, info) {
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

// Shard k of a split model ({baseUrl, coreSha}): from the Cache API if an earlier visit kept it,
// else downloaded. The caller caches it once the core has accepted it.
async function fetchShard(shards, k) {
  const url = new URL(`${String(k).padStart(5, '0')}.bin`, shards.baseUrl).href;
  const cacheKey = `${url}?core=${shards.coreSha}`;
  const cache = await openCache();
  const hit = cache ? await cache.match(cacheKey) : undefined;
  const bytes = hit ? new Uint8Array(await hit.arrayBuffer()) : (await fetchVerified(url, { what: 'word-embedding rows', kind: 'model' }, (value) => ({ value }))).value;
  return { url, cacheKey, cache, cached: Boolean(hit), bytes };
}

// One loaded model in this thread. analyze() returns a frozen plain object of copied typed
// arrays in the result schema (read it through ./result.js); hidden_states, queries and keys are
// requested from the core and copied only for analyze(text, {vectors: true}).
export class AttentionEngine {
  constructor(module, native, info, timings, memoBytes = MEMO_BYTES, shards = null) {
    this._module = module;
    this._native = native;
    // The split layout: {baseUrl, coreSha, count}; null for a single model file.
    this._shards = shards;
    this.shardStats = { requests: 0, bytes: 0 };
    this._memo = new Memo(memoBytes);
    this._current = null;  // {text, vectors} of the analysis the native side holds
    this._failure = null;
    this.info = info;
    this.timings = timings;
  }

  // The split model's shards: {requests, bytes} fetched so far, how many are here, how many
  // there are and their total size (all zero for a single model file).
  get shardSummary() {
    return { ...this.shardStats, loaded: this._loadedShards?.size ?? 0, count: this._shards?.count ?? 0, total: this._shards?.bytes ?? 0 };
  }

  // Whether the instance has the test build's hooks (bindings.cc, ATTN_TEST_HOOKS).
  get hasTestHooks() {
    return typeof this._native.trap === 'function';
  }

  // True once the instance trapped: every later call gets the same error.
  get failed() {
    return Boolean(this._failure);
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
    const outputs = vectors ? m.OUTPUT_HIDDEN_STATES | m.OUTPUT_QUERIES | m.OUTPUT_KEYS : 0;
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
    // Every typed array is a view into wasm memory, valid until the next call: copied here,
    // so that a result owns its buffers (the worker transfers them to the page).
    const result = { text };
    for (const [key, value] of Object.entries(raw)) result[key] = ArrayBuffer.isView(value) ? value.slice() : value;
    return Object.freeze(result);
  }

  // A model in the split layout analyses a text only once the word-embedding rows of its tokens
  // are in: this fetches the shards that are missing (six at a time; from the Cache API when a
  // visit already fetched them) and hands each to the core, which checks it against the core
  // file. all: every shard (the masked-LM head scores the whole vocabulary). A shard is cached
  // only after the core accepted it. A no-op for a single model file.
  async ensureRows(text, { all = false, onProgress = () => {} } = {}) {
    if (!this._shards) return;
    checkText(text ?? '', this.info);
    const missing = all
      ? Array.from({ length: this._shards.count }, (_, k) => k).filter((k) => !this._loadedShards?.has(k))
      : Array.from(this._nativeCall('missingShards', text, 0));
    let done = 0;
    const queue = missing.slice();
    const worker = async () => {
      while (queue.length) {
        const k = queue.shift();
        await this._loadShard(k);
        onProgress({ phase: 'rows', loaded: ++done, total: missing.length, percent: (100 * done) / missing.length });
      }
    };
    await Promise.all(Array.from({ length: Math.min(6, missing.length) }, worker));
  }

  async _loadShard(k, prefetched = null) {
    this._loadedShards ??= new Set();
    if (this._loadedShards.has(k)) return;
    const shard = await (prefetched ?? fetchShard(this._shards, k));
    if (!shard.cached) {
      this.shardStats.requests += 1;
      this.shardStats.bytes += shard.bytes.length;
    }
    const message = this._nativeCall('loadShard', shard.bytes);
    if (message) {
      throw new EngineError('model', `The word-embedding rows ${shard.url} could not be used: ${message}. Retry; if it happens again, the site serves a damaged or mismatched file.`);
    }
    this._loadedShards.add(k);
    if (shard.cache && !shard.cached) {
      try {
        await shard.cache.put(shard.cacheKey, new Response(shard.bytes, { headers: { 'content-type': 'application/octet-stream' } }));
      } catch {
        // A full or refused cache only costs the next visit a download.
      }
    }
  }

  // Heads removed ("L.H,...", counted from 1) and value norms: an analysis that is not memoised.
  analyzeAblated(text, { removed = '', valueNorms = false } = {}) {
    checkText(text, this.info);
    const outputs = valueNorms ? this._module.OUTPUT_VALUE_NORMS : 0;
    const raw = this._nativeCall('analyzeAblated', text, 0, outputs, String(removed));
    this._current = null;
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    const result = { text, removed };
    for (const [key, value] of Object.entries(raw)) result[key] = ArrayBuffer.isView(value) ? value.slice() : value;
    this._current = { text, removed };
    return Object.freeze(result);
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

// What the page's engine thread (./worker.js) and the in-thread host do for a request: the
// operations an EngineClient can ask of its engine.
export async function runEngineOperation(engine, op, args) {
  switch (op) {
    case 'analyze':
      await engine.ensureRows(args.text);
      return engine.analyze(args.text, { vectors: args.vectors });
    case 'analyzeAblated':
      await engine.ensureRows(args.text);
      return engine.analyzeAblated(args.text, { removed: args.removed, valueNorms: args.valueNorms });
    case 'predict':
      await engine.ensureRows(args.text, { all: true });
      return engine.predict(args.text, args.position, args.k, { masked: args.masked, removed: args.removed });
    case 'probability':
      await engine.ensureRows(args.text, { all: true });
      return engine.probability(args.text, args.position, args.entry, { masked: args.masked, removed: args.removed });
    case 'shardStats': return engine.shardSummary;
    case 'memory': return engine.memoryInfo();
    case 'tokenize': return engine.tokenize(args.text, args.maxLength);
    case 'tokenizeMany': return engine.tokenizeMany(args.texts, args.maxLength);
    case 'vocabulary': return engine.vocabulary();
    // A real trap of the instance, for the recovery test (bindings.cc, Engine::Trap): only the
    // test build (scripts/build.sh wasm-test) has it; the engine readers get refuses.
    case 'trap':
      if (!engine.hasTestHooks) throw new EngineError('input', 'This engine has no test hooks: only the test build (scripts/build.sh wasm-test) can be made to trap.');
      return engine._nativeCall('trap');
    default: throw new EngineError('engine', `Unknown engine operation ${op}.`);
  }
}

// What a host (LocalHost here, or the worker) does with a request for its engine `id`: `close`
// forgets the engine and frees its instance; `memory` adds how many engines the host holds;
// everything else is the engine's own operation.
export async function hostOperation(engines, id, op, args) {
  const engine = engines.get(id);
  if (!engine) throw new EngineError('engine', 'This engine is gone. Reload the page to start it again.');
  if (op === 'close') {
    engines.delete(id);
    engine.close();
    return true;
  }
  const result = await runEngineOperation(engine, op, args);
  return op === 'memory' ? { ...result, host_engines: engines.size } : result;
}

// The engine's two files, as scripts/site/build_site.mjs names them next to each other.
export const ENGINE_FILES = Object.freeze({ glue: 'attention_engine.js', wasm: 'attention_engine.wasm' });

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

// Loads a model with an explicit configuration, in this thread (tests, scripts, the worker).
//   manifestUrl: models/manifest.json, naming the engine files and the models with checksums
//   manifest: the parsed manifest, when the caller has read it already (the worker gets the
//     page's copy, so that the page makes one request for it)
//   model: a key of manifest.models (default: manifest.default), or modelUrl: a model file's URL
//   engineUrl: a folder holding ENGINE_FILES, instead of the manifest's (with modelUrl as well,
//     no manifest is read at all)
//   onProgress({phase: 'engine'|'model', loaded, total, percent})
// The glue, the wasm and the model download at once; the wasm compiles while it arrives and is
// instantiated while the model is still downloading, so that what is left after the model's
// last byte is the core reading the file (LoadedModel::FromBuffer).
export async function createEngine({ manifestUrl = DEFAULT_MANIFEST_URL, manifest: given, model, modelUrl, engineUrl, single = false, onProgress = () => {}, memoBytes = MEMO_BYTES } = {}) {
  const t0 = now();
  const manifest = engineUrl && modelUrl ? null : given ?? await loadManifest(manifestUrl);
  const base = new URL(manifestUrl, typeof location === 'undefined' ? HERE : location.href).href;
  const entry = modelUrl ? null : manifestModel(manifest, model ?? manifest.default);
  if (!modelUrl && !entry) throw new EngineError('model', `The manifest ${manifestUrl} has no model named ${model ?? manifest.default}.`);
  // The split layout (build_site.mjs): the core file, and the shards next to it; `single: true`
  // asks for the single file instead.
  const split = !modelUrl && !single && entry.core && entry.shards ? entry : null;
  const resolvedModelUrl = new URL(modelUrl ?? (split ? entry.core.file : entry.file), base).href;
  const shardBase = split ? new URL(entry.shards.folder, base).href : null;
  // The manifest's checksum only vouches for the manifest's own engine files.
  const engineEntry = engineUrl ? null : manifest.engine;
  const folder = engineUrl && (engineUrl.endsWith('/') ? engineUrl : `${engineUrl}/`);
  const glueUrl = new URL(folder ? ENGINE_FILES.glue : manifest.engine.glue, folder || base).href;
  const wasmUrl = new URL(folder ? ENGINE_FILES.wasm : manifest.engine.wasm, folder || base).href;

  const marks = {};
  const glue = importGlue(glueUrl);
  const engineChecksum = checksumOf(engineEntry);
  const compiled = fetchWasmModule(wasmUrl, {
    cacheKey: engineChecksum ? `${wasmUrl}?sha256=${engineChecksum.sha256}` : null,
    checksum: engineChecksum,
    onProgress: (p) => onProgress({ phase: 'engine', ...p }),
  }).then((c) => {
    marks.compiled = now();
    return c;
  });
  const instance = Promise.all([glue, compiled]).then(([createModule, c]) => instantiate(createModule, c.module)).then((m) => {
    marks.instantiated = now();
    return m;
  });
  const modelFile = split ? entry.core : entry;
  const modelChecksum = checksumOf(modelFile);
  // The opening sentence's rows come with the core, in parallel.
  const shardSource = split ? { baseUrl: shardBase, coreSha: entry.core.sha256 } : null;
  const preloaded = split ? (entry.shards.preload ?? []).map((k) => fetchShard(shardSource, k).then((shard) => [k, shard], () => null)) : [];
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
  const modelLoad = fetchVerified(resolvedModelUrl, {
    what: 'model file',
    kind: 'model',
    cacheKey: modelChecksum ? `${resolvedModelUrl}?sha256=${modelChecksum.sha256}` : null,
    checksum: modelChecksum,
    onProgress: (p) => onProgress({ phase: 'model', ...p }),
  }, loadModel);
  // Promise.all watches every promise, so a second failure is never left unhandled.
  const [{ value: { module, native, tReady, t3 }, bytes: modelBytes }, { bytes: wasmBytes }] = await Promise.all([modelLoad, compiled, instance]);
  const info = { ...native.info(), url: resolvedModelUrl, sha256: modelFile?.sha256 ?? null };
  const t4 = now();
  const shards = split ? { baseUrl: shardBase, coreSha: entry.core.sha256, count: entry.shards.count, bytes: entry.shards.bytes ?? 0 } : null;
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
    wasmBytes, modelBytes,
  }, memoBytes, shards);
  // A preloaded shard that failed to arrive is fetched again when a sentence needs it.
  for (const item of await Promise.all(preloaded)) {
    if (item) await engine._loadShard(item[0], Promise.resolve(item[1]));
  }
  return engine;
}

// ---- Where the page's engines run ----

// In this thread: Node, or a page where no worker could start.
class LocalHost {
  constructor() {
    this.thread = 'main';
    this.engines = new Map();
    this.clients = new Set();
    this.next = 0;
  }

  async load(options, onProgress) {
    const engine = await createEngine({ ...options, memoBytes: 0, onProgress });
    const id = ++this.next;
    this.engines.set(id, engine);
    return { id, info: engine.info, timings: engine.timings };
  }

  async call(id, op, args) {
    const engine = this.engines.get(id);
    try {
      return await hostOperation(this.engines, id, op, args);
    } catch (error) {
      if (engine?.failed && !engine._closed) error.trapped = true;
      throw error;
    }
  }

  close() {}
}

// The page's worker (./worker.js): loads and runs every engine of the page. On the widgets' own
// origin it is started from its URL; embedded in another site it is started from a Blob of the
// host's origin that imports the worker module by its absolute URL, since a page cannot start a
// worker from another origin's URL (under a Content-Security-Policy such a host allows blob:
// and the widgets' origin in worker-src; README, "Embedding"). A trap in any engine ends the
// worker: every engine it held is forgotten, and the next request starts a new worker.
class WorkerHost {
  static start(url) {
    return new Promise((resolve, reject) => {
      const sameOrigin = typeof location !== 'undefined' && new URL(url).origin === location.origin;
      const source = sameOrigin ? url
        : URL.createObjectURL(new Blob([`import ${JSON.stringify(url)};\n`], { type: 'text/javascript' }));
      const release = () => { if (!sameOrigin) URL.revokeObjectURL(source); };
      let worker;
      try {
        worker = new Worker(source, { type: 'module', name: 'attention-engine' });
      } catch (error) {
        release();
        reject(error);
        return;
      }
      const started = (event) => {
        if (event.data?.op !== 'ready') return;
        worker.removeEventListener('message', started);
        worker.removeEventListener('error', failed);
        release();
        resolve(new WorkerHost(worker));
      };
      const failed = (event) => {
        event.preventDefault?.();
        worker.removeEventListener('message', started);
        worker.terminate();
        release();
        reject(new Error(event.message || `the engine's worker (${url}) did not start`));
      };
      worker.addEventListener('message', started);
      worker.addEventListener('error', failed);
    });
  }

  constructor(worker) {
    this.thread = 'worker';
    this.worker = worker;
    this.pending = new Map();  // request id -> {resolve, reject, onProgress}
    this.clients = new Set();
    this.next = 0;
    this.dead = null;
    worker.addEventListener('message', (event) => this.receive(event.data));
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.kill(describeWasmFailure(new Error(event.message || 'the engine\u2019s worker stopped')));
    });
    worker.addEventListener('messageerror', () => this.kill(new EngineError('engine', 'A result from the engine could not be read. Reload the page to start it again.')));
  }

  send(message, onProgress, transfer = []) {
    if (this.dead) return Promise.reject(this.dead);
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.worker.postMessage({ ...message, id }, transfer);
    });
  }

  load(options, onProgress) {
    return this.send({ op: 'load', options }, onProgress);
  }

  call(engine, op, args) {
    return this.send({ op, engine, ...args });
  }

  receive(data) {
    const request = this.pending.get(data?.id);
    if (!request) return;
    if (data.progress) {
      request.onProgress?.(data.progress);
      return;
    }
    this.pending.delete(data.id);
    if (!data.error) {
      request.resolve(data.ok);
      return;
    }
    const error = new EngineError(data.error.kind, data.error.message);
    if (data.trapped) {
      error.trapped = true;
      request.reject(error);
      this.kill(error);
    } else {
      request.reject(error);
    }
  }

  // Ends the worker after a trap: the engine that trapped keeps its error, every other engine
  // and request gets one that says so, and the page's next request starts a new worker.
  kill(cause) {
    if (this.dead) return;
    this.dead = cause.trapped ? new EngineError(cause.kind, `The engine stopped after a failure (${cause.message}) and was restarted; retry.`) : cause;
    this.worker.terminate();
    if (globalThis[HOST_KEY]?.host === this) delete globalThis[HOST_KEY];
    for (const request of this.pending.values()) request.reject(this.dead);
    this.pending.clear();
    for (const client of this.clients) client._fail(this.dead);
  }

  close() {
    this.kill(new EngineError('engine', 'The engine was closed.'));
  }
}

// One host per page, even when the article's modules and the embedding bundle (two copies of
// this module) meet in one page.
const HOST_KEY = Symbol.for('attention-explainer.engine-host');

function engineHost() {
  let slot = globalThis[HOST_KEY];
  if (!slot) {
    slot = { promise: null, host: null };
    globalThis[HOST_KEY] = slot;
    slot.promise = (async () => {
      let host;
      if (typeof Worker === 'function' && typeof Blob === 'function' && typeof URL.createObjectURL === 'function') {
        try {
          host = await WorkerHost.start(WORKER_URL);
        } catch (error) {
          // A page that refuses workers (a strict Content-Security-Policy) still gets its
          // figures: the engine runs in the page.
          console.warn(`attention engine: no worker (${error.message}); the engine runs on the page's main thread.`);
        }
      }
      slot.host = host ?? new LocalHost();
      return slot.host;
    })();
  }
  return slot.promise;
}

const superseded = () => new EngineError('superseded', 'A newer request replaced this analysis before it ran.');

// A loaded engine as widgets see it, wherever it runs. analyze() returns a promise of the
// same frozen result an AttentionEngine gives. Requests are queued, one analysis in flight at a
// time; a request for a text already queued or running joins it; and a request that names a
// `channel` (one per caller: a figure, the article) removes that caller's older requests that
// have not started yet, which then reject with kind 'superseded'. Results are memoised here,
// bounded in bytes, so that a click or a head switch on the same sentence never waits.
export class EngineClient {
  constructor(host, id, info, timings) {
    this._host = host;
    this._id = id;
    this._memo = new Memo(MEMO_BYTES);
    this._queue = [];      // {text, vectors, waiters: [{channel, resolve, reject}]}, oldest first
    this._running = null;  // the analysis in flight, same shape
    this._failure = null;
    this.info = info;
    this.timings = timings;
    this.thread = host.thread;
    this.onFailure = null;
    host.clients.add(this);
  }

  // True once the engine trapped (its worker was ended) or was closed: a new getEngine() or
  // getSideEngine() call loads afresh.
  get failed() {
    return Boolean(this._failure);
  }

  // Frees the engine in its host (the worker keeps nothing of it) and makes the shared-engine
  // caches forget it. Calls after this fail; pending ones are rejected.
  async close() {
    if (this._failure) return;
    this._fail(new EngineError('engine', 'This engine was closed.'));
    this._memo = new Memo(0);
    try {
      await this._host.call(this._id, 'close', {});
    } catch {
      // A host that is gone holds nothing of it either.
    }
  }

  // The memoised result for text, if there is one (no request is made).
  peek(text, { vectors = false } = {}) {
    return this._memo.get(text, vectors);
  }

  analyze(text, { vectors = false, channel = null } = {}) {
    return new Promise((resolve, reject) => {
      checkText(text, this.info);
      if (this._failure) throw this._failure;
      if (channel !== null) this._supersede(channel);
      const kept = this._memo.get(text, vectors);
      if (kept) {
        resolve(kept);
        return;
      }
      const waiter = { channel, resolve, reject };
      const running = this._running;
      if (running && running.text === text && (running.vectors || !vectors)) {
        running.waiters.push(waiter);
        return;
      }
      const queued = this._queue.find((e) => e.text === text);
      if (queued) {
        queued.vectors ||= vectors;
        queued.waiters.push(waiter);
      } else {
        this._queue.push({ text, vectors, waiters: [waiter] });
      }
      this._pump();
    });
  }

  _supersede(channel) {
    for (const entry of this._queue) {
      entry.waiters = entry.waiters.filter((w) => {
        if (w.channel !== channel) return true;
        w.reject(superseded());
        return false;
      });
    }
    this._queue = this._queue.filter((e) => e.waiters.length);
  }

  _pump() {
    while (!this._running && this._queue.length) {
      const entry = this._queue.shift();
      const kept = this._memo.get(entry.text, entry.vectors);
      if (kept) {
        for (const w of entry.waiters) w.resolve(kept);
        continue;
      }
      this._running = entry;
      this._host.call(this._id, 'analyze', { text: entry.text, vectors: entry.vectors }).then((raw) => {
        const result = Object.isFrozen(raw) ? raw : Object.freeze(raw);
        this._memo.set(entry.text, result);
        for (const w of entry.waiters) w.resolve(result);
      }, (error) => {
        if (error.trapped) this._fail(error);
        for (const w of entry.waiters) w.reject(error);
      }).finally(() => {
        this._running = null;
        this._pump();
      });
    }
  }

  // After a trap: this engine is unusable, and the shared-engine cache forgets it, so that a
  // retry starts a fresh one.
  _fail(error) {
    if (this._failure) return;
    this._failure = error;
    for (const entry of this._queue) for (const w of entry.waiters) w.reject(error);
    this._queue = [];
    this._host.clients.delete(this);
    this.onFailure?.(this);
  }

  // The masked-LM head's k most likely tokens at one position of text.
  // The masked-LM head's k best entries at one position; options as AttentionEngine.predict's
  // (masked, removed). A split model first fetches the rest of its word-embedding table.
  async predict(text, position, k = 5, { masked = false, removed = '' } = {}) {
    checkText(text, this.info);
    if (this._failure) throw this._failure;
    return this._call('predict', { text, position, k, masked, removed });
  }

  // The exact probability of entry `id` at one position: {probability, rank, top1, top1_text}; options as
  // predict's. A split model first fetches the rest of its word-embedding table.
  async probability(text, position, id, { masked = false, removed = '' } = {}) {
    checkText(text, this.info);
    if (this._failure) throw this._failure;
    return this._call('probability', { text, position, entry: id, masked, removed });
  }

  // Heads removed ("L.H,...", counted from 1) and value norms; not memoised.
  async analyzeAblated(text, { removed = '', valueNorms = false } = {}) {
    checkText(text, this.info);
    if (this._failure) throw this._failure;
    return this._call('analyzeAblated', { text, removed, valueNorms });
  }

  // What the split layout has fetched: {requests, bytes, loaded, count, total (the manifest's
  // bytes of all shards)}.
  async shardStats() {
    return this._call('shardStats', {});
  }

  // The core's memory ({allocated_bytes, heap_bytes}) and this memo's (memo_bytes, memo_entries).
  async memoryInfo() {
    const core = await this._call('memory', {});
    return { ...core, memo_bytes: this._memo.bytes, memo_entries: this._memo.size };
  }

  // The tokenizer alone: {tokens, truncated, full_length}.
  async tokenize(text, maxLength = 0) {
    checkText(text, this.info);
    return this._call('tokenize', { text, maxLength });
  }

  // The token ids of many texts ([[id, ...], ...]), in one request.
  async tokenizeMany(texts, maxLength = 0) {
    return this._call('tokenizeMany', { texts, maxLength });
  }

  // The model's vocabulary (one string per id), fetched once.
  vocabulary() {
    this._vocabulary ??= this._call('vocabulary', {}).catch((error) => {
      this._vocabulary = null;
      throw error;
    });
    return this._vocabulary;
  }

  async _call(op, args) {
    if (this._failure) throw this._failure;
    try {
      return await this._host.call(this._id, op, args);
    } catch (error) {
      if (error.trapped) this._fail(error);
      throw error;
    }
  }
}

const absolute = (url) => (url === undefined ? undefined : new URL(url, typeof location === 'undefined' ? HERE : location.href).href);

// Loads a model on the page's host. The manifest is read here (one request per page, shared
// with the figures that read it) while the worker starts; the worker then fetches the glue,
// the wasm and the model at once.
async function loadClient({ manifestUrl = DEFAULT_MANIFEST_URL, model, modelUrl, engineUrl }, onProgress) {
  const options = { manifestUrl: absolute(manifestUrl), model, modelUrl: absolute(modelUrl), engineUrl: absolute(engineUrl) };
  const hostPromise = engineHost();
  const manifest = options.engineUrl && options.modelUrl ? null : await loadManifest(options.manifestUrl);
  const host = await hostPromise;
  const { id, info, timings } = await host.load({ ...options, manifest }, onProgress);
  return new EngineClient(host, id, info, timings);
}

// The page's shared engines: every widget calls getEngine() and all who ask for the same
// manifest, engine and model get the same promise, so each is downloaded once. Progress goes
// to every subscriber. getEngine() without options means the engine the page asked for first.
const shared = new Map();  // key of the options -> promise of an EngineClient
const progressListeners = new Set();
let lastProgress = null;

export function onEngineProgress(listener) {
  progressListeners.add(listener);
  if (lastProgress) listener(lastProgress);
  return () => progressListeners.delete(listener);
}

function engineKey({ manifestUrl = DEFAULT_MANIFEST_URL, model = '', modelUrl = '', engineUrl = '' }) {
  return JSON.stringify([manifestUrl, model, modelUrl, engineUrl]);
}

export function getEngine(options = {}) {
  const asked = Object.values(options).some((v) => v !== undefined);
  if (!asked && shared.size) return shared.values().next().value;
  return remembered(shared, engineKey(options), () => loadClient(options, (p) => {
    lastProgress = p;
    for (const listener of progressListeners) listener(p);
  }));
}

// The page's engine if one was asked for (the first getEngine call's promise), else null.
export function currentEngine() {
  return shared.size ? shared.values().next().value : null;
}

// Engines a figure loads for itself beside the page's one (the precision figure's f32 reference
// and naive files): shared by every figure that asks for the same model, with their own progress
// reports, so that they never show up as the page's download. They run on the same host.
const side = new Map();  // key of the options -> {promise, listeners, last}

export function getSideEngine(options, onProgress = () => {}) {
  const entry = remembered(side, engineKey(options), () => {
    const made = { listeners: new Set(), last: null };
    made.promise = loadClient(options, (p) => {
      made.last = p;
      for (const listener of made.listeners) listener(p);
    });
    return made;
  }, (made) => made.promise);
  entry.listeners.add(onProgress);
  if (entry.last) onProgress(entry.last);
  return entry.promise;
}

// For tests: forget the shared engines (and end the page's worker, if any).
export function resetSharedEngine() {
  shared.clear();
  side.clear();
  manifests.clear();
  lastProgress = null;
  const slot = globalThis[HOST_KEY];
  if (slot) {
    delete globalThis[HOST_KEY];
    slot.host?.close();
  }
}
