// The article's state: which sentence, which token's row, which layer and head, whether [CLS]
// and [SEP] are shown, which figure the reader last used, and whether the live engine drives
// the figures. One small store; the
// widgets never read it directly, article.js hands them a view of it.

// Preset sentences for the sentence box (also read by scripts/site/make_examples.mjs, so the
// precomputed example and the live page start from the same sentence).
export const PRESETS = [
  'The animal did not cross the street because it was too tired.',
  'She poured the milk into the cup until it was full.',
  'Unbelievably, the embeddings were tokenized into wordpieces.',
  'The keys to the cabinet are on the table.',
];

// The word whose row the page opens on, for the first preset.
export const DEFAULT_WORD_TEXT = 'it';

export const DEFAULT_STATE = Object.freeze({
  sentence: PRESETS[0],
  token: -1,  // index into the sentence's tokens; -1 picks the default word
  layer: -1,  // -1 picks the sharpest head for the token
  head: -1,
  showSpecial: true,
  view: '',  // the data-figure name of the figure the reader last used; '' for none
  live: false,
});

// What a permalink holds; a key it leaves out takes this value when the link is opened.
export const PERMALINK_DEFAULTS = Object.freeze({
  sentence: DEFAULT_STATE.sentence, token: -1, layer: -1, head: -1, showSpecial: true, view: '',
});

export function createStore(initial) {
  let state = { ...initial };
  const listeners = new Set();
  return {
    get: () => state,
    set(patch) {
      const next = { ...state, ...patch };
      const changed = Object.keys(patch).filter((key) => next[key] !== state[key]);
      if (!changed.length) return;
      state = next;
      for (const listener of listeners) listener(state, changed);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

// The URL hash holds sentence, token, layer, head, whether specials are shown and the figure in
// view. It is read as data only: every value is parsed, bounded and never interpreted as markup.
const HASH_KEYS = { sentence: 's', token: 't', layer: 'l', head: 'h', showSpecial: 'special', view: 'v' };
const MAX_HASH_SENTENCE = 2000;

function parseIndex(value) {
  if (value === null || !/^\d{1,4}$/.test(value)) return undefined;
  return Number(value);
}

export function parseHash(hash) {
  const params = new URLSearchParams(String(hash ?? '').replace(/^#/, ''));
  const out = {};
  const sentence = params.get(HASH_KEYS.sentence);
  if (sentence !== null && sentence.length <= MAX_HASH_SENTENCE) out.sentence = sentence;
  for (const key of ['token', 'layer', 'head']) {
    const value = parseIndex(params.get(HASH_KEYS[key]));
    if (value !== undefined) out[key] = value;
  }
  const special = params.get(HASH_KEYS.showSpecial);
  if (special === '0' || special === '1') out.showSpecial = special === '1';
  const view = params.get(HASH_KEYS.view);
  if (view !== null && /^[a-z]{1,20}$/.test(view)) out.view = view;
  return out;
}

export function formatHash(state) {
  const params = new URLSearchParams();
  params.set(HASH_KEYS.sentence, state.sentence);
  if (state.token >= 0) params.set(HASH_KEYS.token, String(state.token));
  if (state.layer >= 0) params.set(HASH_KEYS.layer, String(state.layer));
  if (state.head >= 0) params.set(HASH_KEYS.head, String(state.head));
  if (!state.showSpecial) params.set(HASH_KEYS.showSpecial, '0');
  if (state.view) params.set(HASH_KEYS.view, state.view);
  return `#${params.toString()}`;
}
