// The page's engine thread: a module worker that loads and runs every engine of the page (the
// page's model, and the precision figure's other files) so that an analysis never blocks the
// page. web/engine/engine.js starts it (from a same-origin Blob that imports this module by its
// absolute URL, which works when the widgets are embedded in another site) and talks to it:
//   page -> worker: {id, op: 'load', options}           options as createEngine's, with the
//                                                        page's parsed manifest
//                   {id, op: 'analyze', engine, text, vectors}
//                   {id, op: 'analyzeAblated', engine, text, removed, valueNorms}
//                   {id, op: 'predict', engine, text, position, k, masked, removed}
//                   {id, op: 'probability', engine, text, position, entry, masked, removed}
//                   {id, op: 'shardStats', engine}
//                   {id, op: 'memory', engine}
//                   {id, op: 'tokenize', engine, text, maxLength}, {id, op: 'tokenizeMany',
//                   engine, texts, maxLength}, {id, op: 'vocabulary', engine}
//                   {id, op: 'close', engine}: frees that engine (the precision figure's side
//                   engines, when a page is done with them)
//   worker -> page: {op: 'ready'} once, then per request {id, progress} while loading,
//                   and {id, ok} or {id, error: {kind, message}, trapped}
// A result's typed arrays are transferred, not copied. The worker keeps no results (the page
// memoises them); `trapped` says the engine's instance trapped, and the page then ends this
// worker and starts another for its next request.
import { createEngine, EngineError, hostOperation } from './engine.js';

const engines = new Map();  // engine id -> AttentionEngine
let nextId = 0;

const describe = (error) => ({
  kind: error instanceof EngineError ? error.kind : 'engine',
  message: String(error?.message ?? error),
});

function transferList(result) {
  return Object.values(result).filter((v) => ArrayBuffer.isView(v)).map((v) => v.buffer);
}

async function handle(data) {
  const { id, op } = data;
  const engine = engines.get(data.engine);
  try {
    if (op === 'load') {
      const loaded = await createEngine({ ...data.options, memoBytes: 0, onProgress: (progress) => postMessage({ id, progress }) });
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
    postMessage({ id, error: describe(error), trapped: Boolean(engine?.failed && !engine._closed) });
  }
}

addEventListener('message', (event) => {
  handle(event.data);
});

postMessage({ op: 'ready' });
