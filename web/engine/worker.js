// The page's engine thread: a module worker that loads and runs every engine of the page (the
// page's model, and the precision figure's other files) so that an analysis never blocks the
// page. web/engine/client.js starts it (from a same-origin Blob that imports this module by its
// absolute URL, which works when the widgets are embedded in another site) and talks to it in
// the messages ./protocol.js lists; the operations are its OPERATIONS table. The worker keeps no
// results (the page memoises them), and imports only the in-thread engine, not the page's client.
import { EngineError } from './errors.js';
import { createEngine } from './local.js';
import { hostOperation } from './protocol.js';
// What local.js imports, named here as well so that the worker asks for every module of its
// graph as soon as it has read this one: one round trip for all of them instead of one per level
// of imports (a worker has no modulepreload; on a phone's 40 ms latency each level cost ~100 ms).
import './files.js';
import './result.js';

const engines = new Map();  // engine id -> AttentionEngine
let nextId = 0;

const describe = (error) => ({
  kind: error instanceof EngineError ? error.kind : 'engine',
  message: String(error?.message ?? error),
});

function transferList(result) {
  return Object.values(result).filter((v) => ArrayBuffer.isView(v)).map((v) => v.buffer);
}

const loads = new Map();  // request id -> AbortController of a load in progress

async function handle(data) {
  const { id, op } = data;
  const engine = engines.get(data.engine);
  if (op === 'cancel') {
    loads.get(data.target)?.abort();
    return;
  }
  try {
    if (op === 'load') {
      // The page's answer for the model file, if it asked first (files.js, startDownload).
      const given = data.options.early;
      const early = given ? { url: given.url, response: new Response(given.body, { status: given.status, statusText: given.statusText, headers: given.headers }) } : null;
      const controller = new AbortController();
      loads.set(id, controller);
      const loaded = await createEngine({ ...data.options, early, signal: controller.signal, memoBytes: 0, onProgress: (progress) => postMessage({ id, progress }) })
        .finally(() => loads.delete(id));
      const key = ++nextId;
      engines.set(key, loaded);
      postMessage({ id, ok: { id: key, info: loaded.info, timings: loaded.timings } });
      return;
    }
    // The worker's engines keep no results (memoBytes 0), so every result's buffers can move to
    // the page.
    const result = await hostOperation(engines, data.engine, op, data);
    postMessage({ id, ok: result }, result && typeof result === 'object' && !Array.isArray(result) ? transferList(result) : []);
  } catch (error) {
    postMessage({ id, error: describe(error), trapped: Boolean(engine?.failed && !engine.closed) });
  }
}

addEventListener('message', (event) => {
  handle(event.data);
});

postMessage({ op: 'ready' });
