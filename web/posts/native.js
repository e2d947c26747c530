// The bindings' engine object (wasm/bindings/bindings.cc) for what the page's engine does not
// offer through its API yet: the tokenizer alone, the vocabulary, and value norms
// (analyzeAblated with OUTPUT_VALUE_NORMS). An engine of this thread (createEngine's
// AttentionEngine) has it as `_native`; the page's engine may run in a worker, and then one more
// engine of the same model (the same cached files) is started on this thread, once per page.
import { createEngine } from '../engine/engine.js';

let local = null;

export async function nativeOf(engine) {
  if (engine?._native) return { native: engine._native, module: engine._module, where: 'the engine on this thread' };
  local ??= createEngine({ memoBytes: 0 });
  const made = await local;
  return { native: made._native, module: made._module, where: 'an engine of the same model on the page\u2019s main thread' };
}

// ||W_O^h v_j|| for every layer, head and token of text: (L, H, n), [l][h][j], copied out of
// wasm memory, or null when this engine build has no value norms.
export async function valueNorms(engine, text) {
  const { native, module } = await nativeOf(engine);
  if (typeof native.analyzeAblated !== 'function' || !module.OUTPUT_VALUE_NORMS) return null;
  const raw = native.analyzeAblated(text, 0, module.OUTPUT_VALUE_NORMS, '');
  if (raw.error !== undefined) throw new Error(raw.error);
  return { n: raw.n, layers: raw.layers, heads: raw.heads, value_norms: raw.value_norms.slice() };
}
