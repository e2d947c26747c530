// What widgets use: an engine as a promise-returning client (EngineClient) on the page's one
// host (a Web Worker, ./worker.js, where one starts; this thread otherwise), and the page's
// registry of shared engines (getEngine, getSideEngine) with their download's progress.
import { describeWasmFailure, EngineError } from './errors.js';
import { DEFAULT_MANIFEST_URL, forgetManifests, loadManifest, modelSource, remembered, startDownload } from './files.js';
import { checkText, createEngine, Memo, MEMO_BYTES } from './local.js';
import { hostOperation, operationArgs, OPERATIONS } from './protocol.js';

const HERE = import.meta.url;
// The worker's module, found from this module's URL: web/engine/client.js and the bundle in
// web/dist/ are both one folder below web/.
export const WORKER_URL = new URL('../engine/worker.js', HERE).href;

// In this thread: Node, or a page where no worker could start.
class LocalHost {
  constructor() {
    this.thread = 'main';
    this.engines = new Map();
    this.clients = new Set();
    this.next = 0;
  }

  async load(options, onProgress, early = null, signal = undefined) {
    const engine = await createEngine({ ...options, early, signal, memoBytes: 0, onProgress });
    const id = ++this.next;
    this.engines.set(id, engine);
    return { id, info: engine.info, timings: engine.timings };
  }

  async call(id, op, args) {
    const engine = this.engines.get(id);
    try {
      return await hostOperation(this.engines, id, op, args);
    } catch (error) {
      if (engine?.failed && !engine.closed) error.trapped = true;
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

  // signal: an AbortSignal that cancels the request in the worker (a checkpoint's download).
  send(message, onProgress, transfer = [], signal = undefined) {
    if (this.dead) return Promise.reject(this.dead);
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.worker.postMessage({ ...message, id }, transfer);
      signal?.addEventListener('abort', () => {
        if (this.pending.has(id)) this.worker.postMessage({ op: 'cancel', target: id });
      }, { once: true });
    });
  }

  // early (startDownload's answer) goes along with its body as a transferred stream.
  load(options, onProgress, early = null, signal = undefined) {
    if (!early) return this.send({ op: 'load', options }, onProgress, [], signal);
    const { response } = early;
    if (this.dead) {
      response.body?.cancel().catch(() => {});
      return Promise.reject(this.dead);
    }
    const answer = { url: early.url, status: response.status, statusText: response.statusText, headers: [...response.headers], body: response.body };
    return this.send({ op: 'load', options: { ...options, early: answer } }, onProgress, [response.body]);
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
    for (const client of this.clients) client.fail(this.dead);
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
    this.fail(new EngineError('engine', 'This engine was closed.'));
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
        if (error.trapped) this.fail(error);
        for (const w of entry.waiters) w.reject(error);
      }).finally(() => {
        this._running = null;
        this._pump();
      });
    }
  }

  // After a trap: this engine is unusable, and the shared-engine cache forgets it, so that a
  // retry starts a fresh one.
  fail(error) {
    if (this._failure) return;
    this._failure = error;
    for (const entry of this._queue) for (const w of entry.waiters) w.reject(error);
    this._queue = [];
    this._host.clients.delete(this);
    this.onFailure?.(this);
  }

  // The core's memory ({allocated_bytes, heap_bytes}) and this memo's (memo_bytes, memo_entries).
  async memoryInfo() {
    const core = await this._call('memory', {});
    return { ...core, memo_bytes: this._memo.bytes, memo_entries: this._memo.size };
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
      if (error.trapped) this.fail(error);
      throw error;
    }
  }
}

// The rest of EngineClient's methods come from the operation table (./protocol.js): one method
// per operation, named as the table says, its parameters as declared there, a text checked here
// before it is sent, and the call made in the host. The methods the class writes out itself
// are kept: analyze queues, memoises and supersedes, memoryInfo adds the memo's figures,
// vocabulary is fetched once.
for (const [op, spec] of Object.entries(OPERATIONS)) {
  const name = spec.method ?? op;
  if (Object.hasOwn(EngineClient.prototype, name)) continue;
  Object.defineProperty(EngineClient.prototype, name, {
    configurable: true,
    writable: true,
    value: async function operation(...values) {
      const args = operationArgs(op, values);
      if (spec.text) checkText(args.text, this.info);
      return this._call(op, args);
    },
  });
}

const absolute = (url) => (url === undefined ? undefined : new URL(url, typeof location === 'undefined' ? HERE : location.href).href);

// Loads a model on the page's host. The manifest is read here (one request per page, shared
// with the figures that read it) while the worker starts, and the model file is requested as
// soon as the manifest names it (startDownload); the worker then fetches the glue and the wasm
// and reads the model's answer.
// checkpoint: a Hugging Face checkpoint in place of a model file (createEngine's option), whose
// download signal cancels.
async function loadClient({ manifestUrl = DEFAULT_MANIFEST_URL, model, modelUrl, engineUrl, checkpoint }, onProgress, signal = undefined) {
  const options = { manifestUrl: absolute(manifestUrl), model, modelUrl: absolute(modelUrl), engineUrl: absolute(engineUrl), ...(checkpoint ? { checkpoint } : {}) };
  const hostPromise = engineHost();
  const manifest = options.engineUrl && (options.modelUrl || checkpoint) ? null : await loadManifest(options.manifestUrl);
  const early = checkpoint ? null : startDownload(modelSource({ manifest, base: options.manifestUrl, model, modelUrl: options.modelUrl })).catch(() => null);
  const host = await hostPromise;
  const { id, info, timings } = await host.load({ ...options, manifest }, onProgress, await early, signal);
  return new EngineClient(host, id, info, timings);
}

// An engine of its own for options (getEngine's), not shared: the model chooser's, which loads
// a checkpoint beside the page's engine (whose figures go on meanwhile) and can be cancelled
// with signal.
export function loadEngine(options, { onProgress = () => {}, signal } = {}) {
  return loadClient(options, onProgress, signal);
}

// The page's shared engines: every widget calls getEngine() and all who ask for the same
// manifest, engine and model get the same promise, so each is downloaded once. Progress goes
// to every subscriber. getEngine() without options means the engine the page asked for first.
const shared = new Map();  // key of the options -> promise of an EngineClient
const progressListeners = new Set();
// The last report of each phase (the engine's files, the model's), replayed to a listener that
// comes late: the page may start its engine before its figures listen (web/start-engine.js).
const lastProgress = new Map();

export function onEngineProgress(listener) {
  progressListeners.add(listener);
  for (const p of lastProgress.values()) listener(p);
  return () => progressListeners.delete(listener);
}

function engineKey({ manifestUrl = DEFAULT_MANIFEST_URL, model = '', modelUrl = '', engineUrl = '', checkpoint = null }) {
  // A checkpoint by its hub, id and revision, or by its kept files' key (files just chosen go
  // through loadEngine, never shared).
  const from = checkpoint ? [checkpoint.hub ?? '', checkpoint.id ?? '', checkpoint.revision ?? '', checkpoint.local ?? ''] : [];
  return JSON.stringify([manifestUrl, model, modelUrl, engineUrl, ...from]);
}

export function getEngine(options = {}) {
  const asked = Object.values(options).some((v) => v !== undefined);
  if (!asked && shared.size) return shared.values().next().value;
  return remembered(shared, engineKey(options), () => loadClient(options, (p) => {
    lastProgress.set(p.phase ?? 'all', p);
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
  forgetManifests();
  lastProgress.clear();
  const slot = globalThis[HOST_KEY];
  if (slot) {
    delete globalThis[HOST_KEY];
    slot.host?.close();
  }
}
