// Downloading, checking and caching the engine's files: the one read-verify-cache path
// (fetchVerified) that the wasm, the model file and its shards all go through, the manifest
// (read once per page) and its entries. No engine and no DOM here: the page, the worker and
// Node all use it.
import { EngineError } from './errors.js';

const HERE = import.meta.url;
const CACHE_NAME = 'attention-explainer';

export const DEFAULT_MANIFEST_URL = new URL('../models/manifest.json', HERE).href;

// The largest model file handed to the engine: the core holds the file's bytes and the
// decoded f32 weights at once, in a 32-bit memory it shares with the page, and refuses more
// than 768 MiB of weights anyway (MemoryBudget in wasm/core/model_file.h).
export const MAX_MODEL_FILE_BYTES = 1024 * 1024 * 1024;

// The most a download reads when neither a manifest (its size and SHA-256) nor the server (a
// Content-Length) says how long the file is: a model-src address whose server streams without a
// length. The compact and f32 files of bert-mini are below it; a larger file needs its server to
// send a Content-Length. Without this bound a broken or hostile server could fill the reader's
// memory up to MAX_MODEL_FILE_BYTES before anything refused it (security review 4, F5).
export const MAX_UNDECLARED_BYTES = 64 * 1024 * 1024;

export const isFileUrl = (url) => url.startsWith('file:');

async function readFileUrl(url) {
  const { readFile } = await import('node:fs/promises');
  try {
    return new Uint8Array(await readFile(new URL(url)));
  } catch (error) {
    throw new EngineError('network', `Could not read ${url}: ${error.code ?? error.message}.`, { cause: error });
  }
}

export async function openCache() {
  try {
    return typeof caches === 'undefined' ? null : await caches.open(CACHE_NAME);
  } catch {
    return null;  // private windows and file: pages may refuse the Cache API; load without it
  }
}

// Downloads the host page's Content-Security-Policy refused (connect-src): a refused fetch fails
// as a network error would, so the policy's own report tells the two apart. Recorded in the page
// and in the engine's worker (both are event targets of securitypolicyviolation).
const refusedByPolicy = [];
globalThis.addEventListener?.('securitypolicyviolation', (event) => {
  if (/^connect-src/.test(event.effectiveDirective ?? event.violatedDirective ?? '')) refusedByPolicy.push(event.blockedURI);
});

// The error for a fetch that failed before any answer: the page's policy, when its report says
// so, else the network.
async function fetchFailure(url, error) {
  const origin = await policyRefused(url);
  if (origin) {
    return new EngineError('csp', `Could not download ${url}: the page's Content-Security-Policy does not allow it (connect-src). The page's author adds ${origin} to connect-src, e.g. connect-src 'self' ${origin}.`, { cause: error });
  }
  return new EngineError('network', `Could not download ${url}: the network request failed (${error.message}). Check the connection and the address, then retry.`, { cause: error });
}

async function policyRefused(url) {
  // The report is dispatched as a task of its own, around when the fetch fails.
  await new Promise((resolve) => setTimeout(resolve, 0));
  let origin = '';
  try {
    origin = new URL(url, globalThis.location?.href).origin;
  } catch {
    return null;
  }
  return refusedByPolicy.some((blocked) => blocked === url || blocked.startsWith(origin)) ? origin : null;
}

// The response for url: from the cache under cacheKey when it is there, else the answer the page
// already has (early: a Response, see startDownload), else from the network; with reload,
// straight from the server, past the cache and the browser's HTTP cache.
async function openResponse(url, cacheKey, { reload = false, early = null, signal } = {}) {
  const cache = cacheKey ? await openCache() : null;
  let response = cache && !reload ? await cache.match(cacheKey) : undefined;
  const fromCache = Boolean(response);
  if (early && (fromCache || reload)) early.body?.cancel().catch(() => {});
  else if (early) response = early;
  const fromPage = response === early && Boolean(early);
  if (!response) {
    try {
      response = await fetch(url, { cache: reload ? 'reload' : 'no-cache', signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw await fetchFailure(url, error);
    }
    if (!response.ok) {
      response.body?.cancel().catch(() => {});
      throw Object.assign(new EngineError('http', `Could not download ${url}: the server answered ${response.status} ${response.statusText}.`.replace(' .', '.')), { status: response.status });
    }
  }
  return { response, fromCache, fromPage, cache };
}

// A download's progress is reported once per this many bytes (and at its end): a throttled or
// slow network delivers a body in pieces of a few kilobytes (1,766 of them for the 4.97 MB core
// under a phone's emulated network), and a report per piece is a message from the worker to the
// page per piece.
const PROGRESS_STEP = 1 << 16;

// Reads a response body chunk by chunk, reporting progress. Returns the bytes, or null as soon as
// more than limit bytes have come (the rest is not read), so that a wrong or huge file never
// fills the memory (security review F5).
async function readBody(url, response, { total, fromCache, onProgress, limit }) {
  const chunks = [];
  let loaded = 0;
  let reported = 0;
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
        if (loaded - reported < PROGRESS_STEP) continue;
        reported = loaded;
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
export function checksumOf(entry) {
  return typeof entry?.sha256 === 'string' && /^[0-9a-f]{64}$/.test(entry.sha256) ? { sha256: entry.sha256, bytes: entry.bytes } : null;
}

// Bytes (a digest) as lower-case hex.
export const hex = (digest) => Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
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
    return `its SHA-256 does not match ${checksum.from ?? 'the manifest'}`;
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
// early: the page's own answer for url (startDownload), used for the first attempt. `from` says
// where the bytes used came from: 'cache', 'page' (early) or 'network'. signal: an AbortSignal
// that stops the download. keep: 'later' caches nothing itself and returns keep(), which caches
// the bytes (a file that is only part of a model: cached once the whole model has loaded).
export async function fetchVerified(url, { what, kind, cacheKey = null, checksum = null, limit = MAX_MODEL_FILE_BYTES, onProgress = () => {}, contentType = 'application/octet-stream', early = null, signal, keep = 'now' }, use) {
  const most = Math.min(limit, Number.isInteger(checksum?.bytes) && checksum.bytes > 0 ? checksum.bytes : limit);
  const tooLarge = most < limit ? `got more than ${most} bytes, expected ${most}` : `it is more than ${limit} bytes, more than this engine loads`;
  const attempts = cacheKey && !isFileUrl(url) ? [false, true] : [false];
  let failure = null;
  for (const reload of attempts) {
    let bytes;
    let fromCache = false;
    let fromPage = false;
    let cache = null;
    let type = contentType;
    if (isFileUrl(url)) {
      bytes = await readFileUrl(url);
      if (bytes.length > most) bytes = null;
      else onProgress({ loaded: bytes.length, total: bytes.length, percent: 100, fromCache: false });
    } else {
      let response;
      ({ response, fromCache, fromPage, cache } = await openResponse(url, cacheKey, { reload, early: reload ? null : early, signal }));
      type = response.headers.get('content-type');
      // A compressed answer's length is the compressed one (a lower bound of the file's): the
      // progress counts the file's own bytes, so it goes by the manifest's size then.
      const encoded = Boolean(response.headers.get('content-encoding'));
      const declared = Number(response.headers.get('content-length'));
      if (declared > limit) {
        response.body?.cancel().catch(() => {});
        throw new EngineError(kind, `The ${what} ${url} is ${declared} bytes, more than this engine loads (${limit}); use a smaller or compact ${what}.`);
      }
      // Neither the manifest nor the server gives the length: read at most MAX_UNDECLARED_BYTES.
      const undeclared = !checksum && !(declared > 0 && !encoded) && most > MAX_UNDECLARED_BYTES;
      bytes = await readBody(url, response, { total: (encoded ? 0 : declared) || checksum?.bytes || 0, fromCache, onProgress, limit: undeclared ? MAX_UNDECLARED_BYTES : most });
      if (!bytes && undeclared) {
        throw new EngineError(kind, `The ${what} ${url} came without a Content-Length and passed ${MAX_UNDECLARED_BYTES / 2 ** 20} MiB, the most this page reads of a file whose length nobody states; its server should send a Content-Length (or the site list the file in its manifest with its size and SHA-256).`);
      }
    }
    const problem = bytes ? await problemWith(bytes, type, checksum) : tooLarge;
    const used = problem ? null : await use(bytes);
    if (used && !used.refusal) {
      // Whether the bytes are now in the cache (false where it is full or refuses them).
      const put = () => cache.put(cacheKey, new Response(bytes, { headers: { 'content-type': contentType } })).then(() => true, () => false);
      const from = fromCache ? 'cache' : fromPage ? 'page' : 'network';
      if (keep === 'later') return { value: used.value, bytes: bytes.length, from, keep: cache && !fromCache ? put : null };
      // Not awaited: the bytes are here, and a full or refused cache only costs the next visit
      // a download.
      if (cache && !fromCache) put();
      return { value: used.value, bytes: bytes.length, from };
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
export async function fetchWasmModule(url, { onProgress, cacheKey, checksum }) {
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

export async function fetchJson(url) {
  if (isFileUrl(url)) return JSON.parse(new TextDecoder().decode(await readFileUrl(url)));
  let response;
  try {
    response = await fetch(url, { cache: 'no-cache' });
  } catch (error) {
    throw await fetchFailure(url, error);
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
export function remembered(map, key, make, promiseOf = (value) => value) {
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

// For tests: forget the manifests read so far.
export const forgetManifests = () => manifests.clear();

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

// The model file the engine downloads for a choice (createEngine's model, modelUrl and single
// against a manifest whose address is base): {entry, split, file, url, checksum, cacheKey}, or
// null when the manifest has no such model. split is the entry when it is in the split layout
// (build_site.mjs: the core file, and the shards beside it), whose core is then the file.
export function modelSource({ manifest, base, model, modelUrl, single = false }) {
  const entry = modelUrl ? null : manifestModel(manifest, model ?? manifest?.default);
  if (!modelUrl && !entry) return null;
  const split = !modelUrl && isSplit(entry, single) ? entry : null;
  const file = split ? entry.core : entry;
  const url = new URL(modelUrl ?? file.file, base).href;
  const checksum = checksumOf(file);
  return { entry, split, file, url, checksum, cacheKey: checksum ? `${url}?sha256=${checksum.sha256}` : null };
}

// Whether the engine loads a model entry in the split layout: its core at the start, the rows
// of its table of word embeddings as sentences need them (single: the whole file instead).
const isSplit = (entry, single = false) => Boolean(!single && entry.core && entry.shards);

// How many bytes the engine's start downloads for a choice (modelSource's, from the manifest):
// the engine's WebAssembly and the model file, or only its core where the model is split. The
// loader's "of ... MB" is this, what is fetched, not the size of the whole file; 0 where the
// manifest does not say (a model file named by its address, a checkpoint).
export function startBytes(manifest, { model, modelUrl, checkpoint, single = false } = {}) {
  const entry = modelUrl || checkpoint ? null : manifestModel(manifest, model ?? manifest?.default);
  if (!entry || !manifest.engine?.bytes) return 0;
  return manifest.engine.bytes + (isSplit(entry, single) ? entry.core.bytes : entry.bytes);
}

// The page's own request for the model file, made as soon as it has the manifest, while its
// engine's worker is still starting: on bench_load's phone the worker's own request, after the
// worker's script and modules, went out 1.3 s after navigation. The answer
// ({url, response}) goes to the worker with its body as a transferred stream, and the worker
// reads, checks and caches it as any download (fetchVerified's early). Null, and the worker
// downloads the file itself as before, where there is nothing to gain or no way to hand it
// over: a file the Cache API holds already, a file: address, a browser that cannot transfer a
// stream to a worker (unless the head asked for the file: below), or a failed request (whose
// error the worker's own request then reports).
// A page that starts the engine asks for the default model's first file in its head already
// (<link rel="preload">, scripts/site/module_graph.mjs): this request takes that answer up.
// A browser that cannot transfer a stream lets the worker download the file, as before: the
// head's answer is taken up and dropped at once (the worker's download then competes with
// less than a second of it).
export async function startDownload(source) {
  if (!source || isFileUrl(source.url)) return null;
  if (!canTransferStreams()) {
    dropPreload(source.url);
    return null;
  }
  // A copy kept by an earlier visit: no request (the worker reads it). Where the head has asked
  // for the file already (on a later visit the service worker answers that from the same kept
  // copy: web/sw.js), its answer is taken up and dropped, so that the browser does not warn of
  // a preload never used.
  const cache = source.cacheKey ? await openCache() : null;
  if (cache && await cache.match(source.cacheKey).catch(() => null)) {
    dropPreload(source.url);
    return null;
  }
  try {
    preloadsTaken.add(source.url);
    const response = await fetch(source.url, { cache: 'no-cache' });
    if (response.ok && response.body) {
      // Read on as it comes until the worker takes it (an unread body stops the download once
      // the browser's buffer is full): the chunks wait in this stream's queue, however many.
      const body = response.body.pipeThrough(new TransformStream(undefined, undefined, { highWaterMark: Infinity }));
      return { url: source.url, response: new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers }) };
    }
    response.body?.cancel().catch(() => {});
  } catch {
    // The worker's own request says why.
  }
  return null;
}

// Whether the page's head preloads the file at url (as module_graph.mjs writes it) and no request
// of this page has taken that answer up yet (the first that asks for it does; a later engine of
// the same file, the precision figure's, finds the file in the cache and asks for nothing).
const preloadsTaken = new Set();
function dropPreload(url) {
  if (preloadedInHead(url)) fetch(url, { cache: 'no-cache' }).then((answer) => answer.body?.cancel(), () => {});
}
function preloadedInHead(url) {
  if (typeof document === 'undefined' || preloadsTaken.has(url)) return false;
  const listed = [...document.head.querySelectorAll('link[rel="preload"][as="fetch"]')].some((link) => link.href === url);
  if (listed) preloadsTaken.add(url);
  return listed;
}

let transferable = null;
export function canTransferStreams() {
  if (transferable === null) {
    try {
      const stream = new ReadableStream();
      structuredClone(stream, { transfer: [stream] });
      transferable = true;
    } catch {
      transferable = false;
    }
  }
  return transferable;
}

// The largest shard file the engine reads: 32 rows of bert-large's 1024 values in f32 and their
// coding are far below it.
const SHARD_LIMIT = 4 * 1024 * 1024;

// Shard k of a split model ({baseUrl, coreSha, digestOf}): from the Cache API if an earlier visit
// kept it, else downloaded; the caller caches it once the core has accepted it. digestOf(k)
// gives the shard's SHA-256 from the manifest's list (its `digests` file), which the bytes must
// match before anything uses them: a wrong copy (cached, or altered on its way) is deleted and
// fetched once more straight from the server (cache: 'reload'); a second wrong copy is the
// error, naming the file.
export async function fetchShard(shards, k) {
  const url = new URL(`${String(k).padStart(5, '0')}.bin`, shards.baseUrl).href;
  const cacheKey = `${url}?core=${shards.coreSha}`;
  const cache = await openCache();
  const sha256 = shards.digestOf ? await shards.digestOf(k) : null;
  const checksum = sha256 ? { sha256, from: 'the manifest\u2019s list of shard checksums' } : null;
  const hit = cache ? await cache.match(cacheKey) : undefined;
  let problem = null;
  if (hit) {
    const bytes = new Uint8Array(await hit.arrayBuffer());
    problem = await problemWith(bytes, 'application/octet-stream', checksum);
    if (!problem) return { url, cacheKey, cache, cached: true, bytes };
    await cache.delete(cacheKey).catch(() => {});
  }
  for (const reload of hit || isFileUrl(url) ? [true] : [false, true]) {
    let bytes;
    let type = 'application/octet-stream';
    if (isFileUrl(url)) {
      bytes = await readFileUrl(url);
    } else {
      const { response } = await openResponse(url, null, { reload });
      type = response.headers.get('content-type');
      bytes = await readBody(url, response, { total: 0, fromCache: false, onProgress: () => {}, limit: SHARD_LIMIT });
    }
    problem = bytes && bytes.length <= SHARD_LIMIT ? await problemWith(bytes, type, checksum) : `it is more than ${SHARD_LIMIT} bytes`;
    if (!problem) return { url, cacheKey, cache, cached: false, bytes };
  }
  throw new EngineError('model', `The word-embedding rows ${url} could not be used: ${problem}${isFileUrl(url) ? '' : ', also when fetched again from the server'}. The site serves a wrong or damaged file; its author rebuilds it (scripts/site/build_site.mjs).`);
}

// The manifest's list of shard checksums (a split model's `shards.digests`: 32 bytes per shard),
// downloaded once per engine and checked against its own SHA-256: digestOf(k) for fetchShard,
// or null where the manifest names no list.
export function shardDigests(url, entry, count) {
  const checksum = checksumOf(entry);
  if (!checksum) return null;
  let list = null;
  const load = () => {
    list ??= fetchVerified(url, { what: 'list of shard checksums', kind: 'model', cacheKey: `${url}?sha256=${checksum.sha256}`, checksum, limit: 32 * count },
      (bytes) => (bytes.length === 32 * count ? { value: bytes } : { refusal: new EngineError('model', `The list of shard checksums ${url} has ${bytes.length} bytes, not 32 for each of ${count} shards.`) }))
      .then(({ value }) => value, (error) => {
        list = null;
        throw error;
      });
    return list;
  };
  return async (k) => hex((await load()).subarray(32 * k, 32 * k + 32));
}

