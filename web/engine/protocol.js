// The engine's operations as one table: what a host (the page's worker, ./worker.js, or the page
// itself where no worker starts) does for each request an EngineClient (./client.js) sends. The
// messages between the page and the worker:
//   page -> worker: {id, op: 'load', options}  options as createEngine's, with the page's parsed manifest
//                   {id, op, engine, ...args}  op one of OPERATIONS' keys or 'close', args as listed there
//   worker -> page: {op: 'ready'} once, then per request {id, progress} while loading,
//                   and {id, ok} or {id, error: {kind, message}, trapped}
// A result's typed arrays are transferred, not copied; `trapped` says the engine's instance
// trapped, and the page then ends the worker and starts another for its next request.
import { EngineError } from './errors.js';

// op -> (engine, args) => its answer. A split model first fetches the word-embedding rows the
// operation needs (every row for the masked-LM head, which scores the whole vocabulary).
export const OPERATIONS = Object.freeze({
  // {text, vectors}: the analysis (web/engine/result.js reads it)
  analyze: async (engine, a) => {
    await engine.ensureRows(a.text);
    return engine.analyze(a.text, { vectors: a.vectors });
  },
  // {text, removed, valueNorms}: an analysis with heads removed, not memoised
  analyzeAblated: async (engine, a) => {
    await engine.ensureRows(a.text);
    return engine.analyzeAblated(a.text, { removed: a.removed, valueNorms: a.valueNorms });
  },
  // {text, position, k, masked, removed}: the masked-LM head's k best entries
  predict: async (engine, a) => {
    await engine.ensureRows(a.text, { all: true });
    return engine.predict(a.text, a.position, a.k, { masked: a.masked, removed: a.removed });
  },
  // {text, position, entry, masked, removed}: one entry's exact probability and rank
  probability: async (engine, a) => {
    await engine.ensureRows(a.text, { all: true });
    return engine.probability(a.text, a.position, a.entry, { masked: a.masked, removed: a.removed });
  },
  // {}: what the split layout has fetched
  shardStats: (engine) => engine.shardSummary,
  // {}: the core's memory and the memo's
  memory: (engine) => engine.memoryInfo(),
  // {text, maxLength}, {texts, maxLength}, {}: the tokenizer alone, and the vocabulary
  tokenize: (engine, a) => engine.tokenize(a.text, a.maxLength),
  tokenizeMany: (engine, a) => engine.tokenizeMany(a.texts, a.maxLength),
  vocabulary: (engine) => engine.vocabulary(),
  // {}: a real trap of the instance, for the recovery test; only the test build
  // (scripts/build.sh wasm-test) has it, and the engine readers get refuses
  trap: (engine) => engine.trap(),
});

export async function runEngineOperation(engine, op, args) {
  if (!Object.hasOwn(OPERATIONS, op)) throw new EngineError('engine', `Unknown engine operation ${op}.`);
  return OPERATIONS[op](engine, args);
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

