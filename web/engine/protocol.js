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

// Each operation of the engine, declared once: its parameters in call order (a name; [name,
// default]; or, last, an options object {name: default}), whether its first is a text the client
// checks before sending (`text`), which word-embedding rows a split model fetches first (`rows`:
// the text's, or 'all' for the masked-LM head, which scores the whole vocabulary), and, where
// the method of AttentionEngine and EngineClient is named otherwise, its name (`method`), and
// where it is not the same call at all, what a host does (`run`). EngineClient's methods
// (./client.js) are made from this table; a host runs an operation with the same named
// arguments, which the worker's messages carry.
export const OPERATIONS = Object.freeze({
  // the analysis (web/engine/result.js reads it); the client queues, memoises and supersedes
  analyze: { params: ['text', { vectors: false }], text: true, rows: 'text' },
  // an analysis with heads removed ("L.H,...", counted from 1) and value norms; not memoised
  analyzeAblated: { params: ['text', { removed: '', valueNorms: false }], text: true, rows: 'text' },
  // the masked-LM head's k best entries at one position
  predict: { params: ['text', 'position', ['k', 5], { masked: false, removed: '' }], text: true, rows: 'all' },
  // one entry's exact probability and rank at one position: {probability, rank, top1, top1_text}
  probability: { params: ['text', 'position', 'entry', { masked: false, removed: '' }], text: true, rows: 'all' },
  // the lenses of wasm/core/lenses.h (what a token used, beside what it attended to): every
  // layer's arrays for the token `row` (-1: every token), the row flowRow of attention flow and
  // zeroingRow of value zeroing (-1: none); masked: a position replaced by [MASK] first (-1:
  // none). Not memoised.
  lenses: { params: ['text', { masked: -1, row: -1, flowRow: -1, zeroingRow: -1 }], text: true, rows: 'text' },
  // occlusion at one position (each other token replaced by [MASK] in turn: the drop in the
  // log-probability of the masked-LM's top entry there) and each lens's Spearman rho against
  // it; masked: the position itself is [MASK] (the default)
  faithfulness: { params: ['text', 'target', { masked: true }], text: true, rows: 'all' },
  // what the split layout has fetched: {requests, bytes, loaded, count, total}
  shardStats: { params: [], run: (engine) => engine.shardSummary },
  // the core's memory ({allocated_bytes, heap_bytes}) and the memo's
  memory: { params: [], method: 'memoryInfo' },
  // the tokenizer alone ({tokens, truncated, full_length}), for one text and for many (ids only)
  tokenize: { params: ['text', ['maxLength', 0]], text: true },
  tokenizeMany: { params: ['texts', ['maxLength', 0]] },
  // the model's vocabulary, one string per id
  vocabulary: { params: [] },
  // a real trap of the instance, for the recovery test; only the test build (scripts/build.sh
  // wasm-test) has it, and the engine readers get refuses
  trap: { params: [] },
});

// The named arguments of a call `op(...values)`, defaults filled in where a value is undefined.
export function operationArgs(op, values) {
  const args = {};
  OPERATIONS[op].params.forEach((param, k) => {
    if (typeof param === 'string') {
      args[param] = values[k];
    } else if (Array.isArray(param)) {
      args[param[0]] = values[k] === undefined ? param[1] : values[k];
    } else {
      for (const [name, fallback] of Object.entries(param)) args[name] = values[k]?.[name] === undefined ? fallback : values[k][name];
    }
  });
  return args;
}

// The call's values again, in the declared order, from its named arguments.
export function operationValues(op, args) {
  return OPERATIONS[op].params.map((param) => {
    if (typeof param === 'string') return args[param];
    if (Array.isArray(param)) return args[param[0]];
    return Object.fromEntries(Object.keys(param).map((name) => [name, args[name]]));
  });
}

export async function runEngineOperation(engine, op, args) {
  if (!Object.hasOwn(OPERATIONS, op)) throw new EngineError('engine', `Unknown engine operation ${op}.`);
  const spec = OPERATIONS[op];
  if (spec.rows) await engine.ensureRows(args.text, { all: spec.rows === 'all' });
  return spec.run ? spec.run(engine, args) : engine[spec.method ?? op](...operationValues(op, args));
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

