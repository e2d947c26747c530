// The engine's one error type and how a trap of the wasm instance is put into words. Every
// failure of the engine reaches a page as an EngineError whose message can be shown to a reader
// and whose `kind` lets the page choose a retry.

// Thrown for every failure; `kind` lets a page choose its wording or offer a retry.
export class EngineError extends Error {
  constructor(kind, message, options) {
    super(message, options);
    this.name = 'EngineError';
    // 'network' | 'http' | 'model' | 'engine' | 'memory' | 'input' (the text or a call's
    // arguments) | 'csp' | 'cancelled' (a download the reader stopped) | 'setup' (a figure's
    // page: an address it may not load, no driver), and 'superseded' for an
    // analysis that a newer request of the same caller replaced before it ran.
    this.kind = kind;
  }
}

export const isSuperseded = (error) => error?.kind === 'superseded';

// An integer as the pages and the engine's messages write counts: 12,345. Not toLocaleString:
// a page's first call of it sets up the browser's number formatting, about 90 ms of the main
// thread on a phone (Chromium, CPU 4x slower), inside whatever task first prints a count.
// Anything but an integer goes to toLocaleString as before.
export function thousands(value) {
  if (!Number.isSafeInteger(value) || Object.is(value, -0)) return Number(value).toLocaleString('en-US');
  return String(value).replace(/\B(?=(\d{3})+$)/g, ',');
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

