// The page's one attention engine, as one import: downloads the WebAssembly core and the model
// file (with progress), keeps both in the Cache API under keys that include their checksums, runs
// the engine off the main thread in one Web Worker per page however many widgets ask, memoises
// analyses per sentence, and turns every failure into an Error whose message can be shown to a
// reader. Works in browsers and Node 20.
//
// Two ways in:
//   createEngine(options) -> AttentionEngine: the engine in this thread, analyze() synchronous
//     (Node tests, scripts, and the worker itself);
//   getEngine(options) / getSideEngine(options) -> EngineClient: what widgets use; analyze()
//     returns a promise, the work runs in the page's worker (./worker.js) where there is one
//     (browsers), in this thread otherwise (Node, or a page that refuses workers).
//
// The modules behind it, along their seams (docs/ARCHITECTURE.md, "Where the web code lives"):
//   errors.js    EngineError, and a trap of the instance in words
//   files.js     download, check against the manifest, cache: the one path every file takes
//   local.js     the in-thread engine (AttentionEngine, createEngine), text limits, the memo
//   protocol.js  the operations a host runs for a client: one table, used by the worker too
//   client.js    the hosts (worker or this thread), EngineClient, the page's shared engines
//   model_address.js  which model a page's address names (read at every page's start)
//   hub.js, checkpoint.js, tensor_files.js: a Hugging Face checkpoint (from the hub or the
//                reader's files) made into a model file, loaded only when one is chosen
// The worker imports errors, files, local and protocol only; this facade keeps every import
// path that names engine.js, and is the engine's public API (the modules' other exports are
// for each other).
export { describeWasmFailure, EngineError, isSuperseded, thousands } from './errors.js';
export { DEFAULT_MANIFEST_URL, loadManifest, manifestModel, MAX_MODEL_FILE_BYTES, notWasm, startBytes } from './files.js';
export { AttentionEngine, createEngine, ENGINE_FILES, hasRelaxedSimd, MAX_TEXT_CHARS, tooLong, wellFormed } from './local.js';
export { hostOperation, operationArgs, OPERATIONS, runEngineOperation } from './protocol.js';
export { currentEngine, EngineClient, getEngine, getSideEngine, loadEngine, onEngineProgress, resetSharedEngine, WORKER_URL } from './client.js';
