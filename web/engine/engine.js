// The page's one attention engine: downloads the WebAssembly core and the model file (with
// progress), keeps both in the Cache API under keys that include their checksums, creates one
// engine per page however many widgets ask, memoises analyses per sentence, and turns every
// failure into an Error whose message can be shown to a reader. Works in browsers and Node 20.

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

// Thrown for every failure; `kind` lets a page choose its wording or offer a retry.
export class EngineError extends Error {
  constructor(kind, message, options) {
    super(message, options);
    this.name = 'EngineError';
    this.kind = kind;  // 'network' | 'http' | 'model' | 'engine' | 'memory' | 'input'
  }
}

const isFileUrl = (url) => url.startsWith('file:');

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

// Streams url into one Uint8Array, reporting {loaded, total, percent} as bytes arrive.
// cacheKey (a URL that names the content's checksum) serves a second visit from the cache.
export async function fetchBytes(url, { onProgress = () => {}, cacheKey = null, expectedBytes = 0 } = {}) {
  if (isFileUrl(url)) {
    const bytes = await readFileUrl(url);
    onProgress({ loaded: bytes.length, total: bytes.length, percent: 100, fromCache: false });
    return bytes;
  }
  const cache = cacheKey ? await openCache() : null;
  let response = cache ? await cache.match(cacheKey) : undefined;
  const fromCache = Boolean(response);
  if (!response) {
    try {
      response = await fetch(url, { cache: 'no-cache' });
    } catch (error) {
      throw new EngineError('network', `Could not download ${url}: the network request failed (${error.message}). Check the connection and the address, then retry.`, { cause: error });
    }
    if (!response.ok) {
      throw new EngineError('http', `Could not download ${url}: the server answered ${response.status} ${response.statusText}.`.replace(' .', '.'));
    }
  }
  const total = Number(response.headers.get('content-length')) || expectedBytes || 0;
  const chunks = [];
  let loaded = 0;
  try {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      onProgress({ loaded, total, percent: total ? Math.min(100, (100 * loaded) / total) : null, fromCache });
    }
  } catch (error) {
    throw new EngineError('network', `The download of ${url} broke off after ${loaded} bytes (${error.message}). Retry.`, { cause: error });
  }
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  onProgress({ loaded, total: loaded, percent: 100, fromCache });
  if (cache && !fromCache) {
    try {
      await cache.put(cacheKey, new Response(bytes, { headers: { 'content-type': 'application/octet-stream' } }));
    } catch {
      // A full or refused cache only costs the next visit a download.
    }
  }
  return bytes;
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
// An engine that trapped (AttentionEngine.onFailure) is forgotten the same way.
function remembered(map, key, make, promiseOf = (value) => value) {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
    const forget = () => {
      if (map.get(key) === value) map.delete(key);
    };
    promiseOf(value).then((made) => {
      if (made instanceof AttentionEngine) made.onFailure = forget;
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

// Copies a typed-array view out of wasm memory: views die at the engine's next call.
const copy = (view) => view.slice();

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

// The outputs a caller may ask for beyond the defaults (OUTPUT_* bits of the wasm module).
const VECTORS = ['hidden_states', 'queries', 'keys'];

// What a result costs the memo: the bytes of its typed arrays (tokens and profiles are small).
function resultBytes(result) {
  let bytes = 0;
  for (const value of Object.values(result)) if (ArrayBuffer.isView(value)) bytes += value.byteLength;
  return bytes;
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

// One loaded model. analyze() returns a frozen plain object of copied typed arrays in the
// result schema (read it through ./result.js); hidden_states, queries and keys are requested
// from the core and copied only for analyze(text, {vectors: true}).
export class AttentionEngine {
  constructor(module, native, info, timings) {
    this._module = module;
    this._native = native;
    this._memo = new Map();  // text -> result, least recently used first
    this._memoBytes = 0;
    this.info = info;
    this.timings = timings;
  }

  analyze(text, { vectors = false } = {}) {
    if (typeof text !== 'string') throw new EngineError('input', 'The text to analyse must be a string.');
    if (text.length > MAX_TEXT_CHARS) {
      throw new EngineError('input', `The text is ${text.length} characters long; the instrument takes at most ${MAX_TEXT_CHARS} (the model reads at most ${this.info.max_positions} tokens).`);
    }
    const kept = this._memo.get(text);
    if (kept) this._forget(text);
    // An entry without vectors is analysed again when they are asked for, and replaced.
    const result = kept && (!vectors || kept.queries) ? kept : this._run(text, vectors);
    this._remember(text, result);
    return result;
  }

  _run(text, vectors) {
    const m = this._module;
    const outputs = vectors ? m.OUTPUT_HIDDEN_STATES | m.OUTPUT_QUERIES | m.OUTPUT_KEYS : 0;
    let raw;
    if (this._failure) throw this._failure;
    try {
      raw = this._native.analyze(text, 0, outputs);
    } catch (error) {
      // The instance cannot be trusted after a trap: every later call gets the same error, and
      // the shared-engine cache forgets this engine so that a retry starts a fresh instance.
      this._failure = describeWasmFailure(error);
      this.onFailure?.(this);
      throw this._failure;
    }
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    const result = {
      text,
      tokens: raw.tokens,
      n: raw.n,
      layers: raw.layers,
      heads: raw.heads,
      hidden: raw.hidden,
      truncated: raw.truncated,
      full_length: raw.full_length,
      attention: copy(raw.attention),
      rollout: copy(raw.rollout),
      row_stats: copy(raw.row_stats),
      roles: copy(raw.roles),
      head_profiles: raw.head_profiles,
    };
    if (vectors) for (const name of VECTORS) result[name] = copy(raw[name]);
    return Object.freeze(result);
  }

  _remember(text, result) {
    this._memo.set(text, result);
    this._memoBytes += resultBytes(result);
    // The newest result stays even when it alone is over the bound.
    while (this._memoBytes > MEMO_BYTES && this._memo.size > 1) this._forget(this._memo.keys().next().value);
  }

  _forget(text) {
    const result = this._memo.get(text);
    if (!result) return;
    this._memo.delete(text);
    this._memoBytes -= resultBytes(result);
  }

  // The masked-LM head's k most likely tokens at one position of text.
  predict(text, position, k = 5) {
    this._ensureCurrent(text);
    const list = this._native.topPredictions(position, k);
    if (!Array.isArray(list)) throw new EngineError('input', list.error);
    return list;
  }

  // The core's memory ({allocated_bytes, heap_bytes}) and the memo's (memo_bytes, memo_entries).
  memoryInfo() {
    return { ...this._native.memoryInfo(), memo_bytes: this._memoBytes, memo_entries: this._memo.size };
  }

  // The native side keeps the activations of its last analysis; predictions read them.
  _ensureCurrent(text) {
    const vectors = Boolean(this._memo.get(text)?.queries);
    this._forget(text);
    this.analyze(text, { vectors });
  }
}

// The engine's two files, as scripts/site/build_site.mjs names them next to each other.
export const ENGINE_FILES = Object.freeze({ glue: 'attention_engine.js', wasm: 'attention_engine.wasm' });

// Loads a model with an explicit configuration (tests and pages that want several models).
//   manifestUrl: models/manifest.json, naming the engine files and the models with checksums
//   model: a key of manifest.models (default: manifest.default), or modelUrl: a model file's URL
//   engineUrl: a folder holding ENGINE_FILES, instead of the manifest's (with modelUrl as well,
//     no manifest is read at all)
//   onProgress({phase: 'engine'|'model', loaded, total, percent})
export async function createEngine({ manifestUrl = DEFAULT_MANIFEST_URL, model, modelUrl, engineUrl, onProgress = () => {} } = {}) {
  const t0 = now();
  const manifest = engineUrl && modelUrl ? null : await loadManifest(manifestUrl);
  const base = new URL(manifestUrl, typeof location === 'undefined' ? HERE : location.href).href;
  const entry = modelUrl ? null : manifest.models?.[model ?? manifest.default];
  if (!modelUrl && !entry) throw new EngineError('model', `The manifest ${manifestUrl} has no model named ${model ?? manifest.default}.`);
  const resolvedModelUrl = new URL(modelUrl ?? entry.file, base).href;
  // The manifest's checksum only vouches for the manifest's own engine files.
  const engineEntry = engineUrl ? null : manifest.engine;
  const folder = engineUrl && (engineUrl.endsWith('/') ? engineUrl : `${engineUrl}/`);
  const glueUrl = new URL(folder ? ENGINE_FILES.glue : manifest.engine.glue, folder || base).href;
  const wasmUrl = new URL(folder ? ENGINE_FILES.wasm : manifest.engine.wasm, folder || base).href;

  const [wasmBytes, modelBytes] = await Promise.all([
    fetchBytes(wasmUrl, {
      cacheKey: engineEntry ? `${wasmUrl}?sha256=${engineEntry.sha256}` : null,
      expectedBytes: engineEntry?.bytes ?? 0,
      onProgress: (p) => onProgress({ phase: 'engine', ...p }),
    }),
    fetchBytes(resolvedModelUrl, {
      cacheKey: entry ? `${resolvedModelUrl}?sha256=${entry.sha256}` : null,
      expectedBytes: entry?.bytes ?? 0,
      onProgress: (p) => onProgress({ phase: 'model', ...p }),
    }),
  ]);
  const t1 = now();

  let createModule;
  try {
    createModule = (await import(glueUrl)).default;
  } catch (error) {
    throw new EngineError('network', `Could not load the engine script ${glueUrl} (${error.message}).`, { cause: error });
  }
  let compiled;
  try {
    compiled = await WebAssembly.compile(wasmBytes);
  } catch (error) {
    throw new EngineError('engine', `The engine file ${wasmUrl} is not valid WebAssembly (${error.message}). Rebuild it with scripts/build.sh wasm.`, { cause: error });
  }
  const t2 = now();
  let module;
  let failInstantiation;
  const instantiationFailed = new Promise((_, reject) => { failInstantiation = reject; });
  try {
    module = await Promise.race([
      createModule({
        // The bytes are already here (downloaded with progress) and compiled (timed apart).
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
  if (modelBytes.length > MAX_MODEL_FILE_BYTES) {
    throw new EngineError('model', `The model file ${resolvedModelUrl} is ${modelBytes.length} bytes, more than this engine loads (${MAX_MODEL_FILE_BYTES}); use a smaller or compact model file.`);
  }
  // Each engine has an instance of its own: a failed load discards it with everything it
  // allocated, so no other engine's memory is ever touched by a bad file.
  const native = new module.Engine();
  let message;
  try {
    message = native.load(modelBytes);
  } catch (error) {
    throw describeWasmFailure(error, { loading: resolvedModelUrl });
  }
  if (message) {
    native.delete();
    throw new EngineError('model', `The model file ${resolvedModelUrl} could not be loaded: ${message}`);
  }
  const t3 = now();
  const info = { ...native.info(), url: resolvedModelUrl, sha256: entry?.sha256 ?? null };
  return new AttentionEngine(module, native, info, {
    fetchMs: t1 - t0, compileMs: t2 - t1, parseMs: t3 - t2, totalMs: t3 - t0,
    wasmBytes: wasmBytes.length, modelBytes: modelBytes.length,
  });
}

function now() {
  return typeof performance === 'undefined' ? Date.now() : performance.now();
}

// The page's shared engines: every widget calls getEngine() and all who ask for the same
// manifest, engine and model get the same promise, so each is downloaded once. Progress goes
// to every subscriber. getEngine() without options means the engine the page asked for first.
const shared = new Map();  // key of the options -> promise of an AttentionEngine
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
  return remembered(shared, engineKey(options), () => createEngine({
    ...options,
    onProgress: (p) => {
      lastProgress = p;
      for (const listener of progressListeners) listener(p);
    },
  }));
}

// The page's engine if one was asked for (the first getEngine call's promise), else null.
export function currentEngine() {
  return shared.size ? shared.values().next().value : null;
}

// Engines a figure loads for itself beside the page's one (the precision figure's f32 reference
// and naive files): shared by every figure that asks for the same model, with their own progress
// reports, so that they never show up as the page's download.
const side = new Map();  // key of the options -> {promise, listeners, last}

export function getSideEngine(options, onProgress = () => {}) {
  const entry = remembered(side, engineKey(options), () => {
    const made = { listeners: new Set(), last: null };
    made.promise = createEngine({
      ...options,
      onProgress: (p) => {
        made.last = p;
        for (const listener of made.listeners) listener(p);
      },
    });
    return made;
  }, (made) => made.promise);
  entry.listeners.add(onProgress);
  if (entry.last) onProgress(entry.last);
  return entry.promise;
}

// For tests: forget the shared engines.
export function resetSharedEngine() {
  shared.clear();
  side.clear();
  manifests.clear();
  lastProgress = null;
}
