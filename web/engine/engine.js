// The page's one attention engine: downloads the WebAssembly core and the model file (with
// progress), keeps both in the Cache API under keys that include their checksums, creates one
// engine per page however many widgets ask, memoises analyses per sentence, and turns every
// failure into an Error whose message can be shown to a reader. Works in browsers and Node 20.

const HERE = import.meta.url;
const CACHE_NAME = 'attention-explainer';
// Longer texts are refused before they reach the tokenizer: the model reads at most 512
// positions anyway, and a reader's paste of a whole book should fail clearly, not slowly.
export const MAX_TEXT_CHARS = 20000;
const MEMO_LIMIT = 64;

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

// Every reader of one manifest in a page gets one request: the engines and the figures that
// read its other entries (the precision figure). A failed request is forgotten, so a retry asks again.
const manifests = new Map();  // URL -> promise of the parsed manifest

export function loadManifest(url = DEFAULT_MANIFEST_URL) {
  if (!manifests.has(url)) {
    const request = fetchJson(url);
    manifests.set(url, request);
    request.catch(() => {
      if (manifests.get(url) === request) manifests.delete(url);
    });
  }
  return manifests.get(url);
}

// Copies a typed-array view out of wasm memory: views die at the engine's next call.
const copy = (view) => view.slice();

function describeWasmFailure(error) {
  const text = String(error?.message ?? error);
  if (/memory|alloc|OOM/i.test(text)) {
    return new EngineError('memory', `The engine ran out of memory (${text}). Try a shorter text or reload the page.`, { cause: error });
  }
  return new EngineError('engine', `The engine failed: ${text}. Reload the page to start it again.`, { cause: error });
}

// One loaded model. Results are plain objects of copied typed arrays:
//   tokens [{id, text, start, end, word}], n, layers, heads, hidden, truncated, fullLength,
//   attention (L*H*n*n, [l][h][i][j]), headAverage (L*n*n), rollout (n*n),
//   rowStats (L*H*n*ROW_STAT_FIELDS), roles (n), hiddenStates ((L+1)*n*d), queries, keys (L*n*d),
//   headProfiles [{label, previousToken, ...}] (L*H).
export class AttentionEngine {
  constructor(module, native, info, timings) {
    this._module = module;
    this._native = native;
    this._memo = new Map();
    this.info = info;
    this.timings = timings;
    this.rowStatFields = module.ROW_STAT_FIELDS;
  }

  analyze(text) {
    if (typeof text !== 'string') throw new EngineError('input', 'The text to analyse must be a string.');
    if (text.length > MAX_TEXT_CHARS) {
      throw new EngineError('input', `The text is ${text.length} characters long; the instrument takes at most ${MAX_TEXT_CHARS} (the model reads at most ${this.info.maxPositions} tokens).`);
    }
    const memo = this._memo.get(text);
    if (memo) {
      this._memo.delete(text);
      this._memo.set(text, memo);  // most recently used last
      return memo;
    }
    let raw;
    try {
      raw = this._native.analyze(text, 0);
    } catch (error) {
      throw describeWasmFailure(error);
    }
    if (raw.error !== undefined) throw new EngineError('input', raw.error);
    const result = Object.freeze({
      text,
      tokens: raw.tokens,
      n: raw.n,
      layers: raw.layers,
      heads: raw.heads,
      hidden: raw.hidden,
      truncated: raw.truncated,
      fullLength: raw.fullLength,
      attention: copy(raw.attention),
      headAverage: copy(raw.headAverage),
      rollout: copy(raw.rollout),
      rowStats: copy(raw.rowStats),
      roles: copy(raw.roles),
      hiddenStates: copy(raw.hiddenStates),
      queries: copy(raw.queries),
      keys: copy(raw.keys),
      headProfiles: raw.headProfiles,
    });
    this._memo.set(text, result);
    if (this._memo.size > MEMO_LIMIT) this._memo.delete(this._memo.keys().next().value);
    return result;
  }

  // The masked-LM head's k most likely tokens at one position of text.
  predict(text, position, k = 5) {
    this._ensureCurrent(text);
    const list = this._native.topPredictions(position, k);
    if (!Array.isArray(list)) throw new EngineError('input', list.error);
    return list;
  }

  memoryInfo() {
    return this._native.memoryInfo();
  }

  // The native side keeps the activations of its last analysis; predictions read them.
  _ensureCurrent(text) {
    this._memo.delete(text);
    this.analyze(text);
  }
}

// Helpers for reading results.
export function attentionRow(result, layer, head, row) {
  const n = result.n;
  const start = ((layer * result.heads + head) * n + row) * n;
  return result.attention.subarray(start, start + n);
}

export function rowStats(result, layer, head, row, fields) {
  const start = ((layer * result.heads + head) * result.n + row) * fields;
  const s = result.rowStats;
  return { max: s[start], argmax: s[start + 1], ratioToUniform: s[start + 2], entropy: s[start + 3], normalizedEntropy: s[start + 4], sum: s[start + 5] };
}

// The engine's two files, as scripts/build_site.mjs names them next to each other.
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
  const native = new module.Engine();
  let message;
  try {
    message = native.load(modelBytes);
  } catch (error) {
    native.delete();
    throw describeWasmFailure(error);
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
  const key = engineKey(options);
  if (!shared.has(key)) {
    const attempt = createEngine({
      ...options,
      onProgress: (p) => {
        lastProgress = p;
        for (const listener of progressListeners) listener(p);
      },
    });
    shared.set(key, attempt);
    // A failed load is forgotten so that a retry starts afresh.
    attempt.catch(() => {
      if (shared.get(key) === attempt) shared.delete(key);
    });
  }
  return shared.get(key);
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
  const key = engineKey(options);
  let entry = side.get(key);
  if (!entry) {
    entry = { listeners: new Set(), last: null };
    entry.promise = createEngine({
      ...options,
      onProgress: (p) => {
        entry.last = p;
        for (const listener of entry.listeners) listener(p);
      },
    });
    side.set(key, entry);
    entry.promise.catch(() => {
      if (side.get(key) === entry) side.delete(key);
    });
  }
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
