// Page state and the URL hash, once for every host: the article's state and its store, the one
// codec every page's hash goes through, and the one writer of history.
import { MAX_TEXT_CHARS } from '../engine/engine.js';
import { PAIR_PRESETS, PRESETS } from '../content.js';
import { DEFAULT_LENS, isLens } from '../engine/lenses.js';
import { MODEL_HASH_KEYS } from '../engine/model_address.js';

// The article's state: which sentence, which token's row, which layer and head, whether [CLS]
// and [SEP] are shown, which figure the reader last used, and whether the live engine drives
// the figures. The widgets never read it: the session hands them a view of it.
export const DEFAULT_STATE = Object.freeze({
  sentence: PRESETS[0],
  token: -1,  // index into the sentence's tokens; -1 picks the default word
  layer: -1,  // -1 picks the head the selection rule gives the token (SELECTION_RULE)
  head: -1,
  showSpecial: true,
  lens: DEFAULT_LENS,  // what the row figures show (web/engine/lenses.js)
  view: '',  // the data-figure name of the figure the reader last used; '' for none
  live: false,
  // The two-sentence figure's sentences and its word (an index into the first sentence's tokens,
  // -1 for the default word); its head is the one above. Not in the URL.
  pairSentence: PAIR_PRESETS[0][0],
  pairAgainst: PAIR_PRESETS[0][1],
  pairToken: -1,
});

// What a permalink holds; a key it leaves out takes this value when the link is opened.
export const PERMALINK_DEFAULTS = Object.freeze({
  sentence: DEFAULT_STATE.sentence, token: -1, layer: -1, head: -1, showSpecial: true, lens: DEFAULT_LENS, view: '',
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

// Every page's state in its URL hash goes through one codec: readHashState(hash, keys) with keys
// {name: kind}, and formatHashState({name: value}). It is read as data only: every value is
// parsed and bounded by its kind, never interpreted as markup. A text is kept up to
// MAX_LINK_TEXT characters, the longest text the engine takes, so whatever a page writes into
// its link reads back (nothing longer is ever analysed).
export const MAX_LINK_TEXT = MAX_TEXT_CHARS;
const HASH_KINDS = Object.freeze({
  text: (v) => (v.length <= MAX_LINK_TEXT ? v : undefined),
  index: (v) => (/^\d{1,4}$/.test(v) ? Number(v) : undefined),
  flag: (v) => (v === '0' || v === '1' ? v === '1' : undefined),
  name: (v) => (/^[a-z]{1,20}$/.test(v) ? v : undefined),
});

export function readHashState(hash, keys) {
  const params = new URLSearchParams(String(hash ?? '').replace(/^#/, ''));
  const out = {};
  for (const [name, kind] of Object.entries(keys)) {
    const raw = params.get(name);
    const value = raw === null ? undefined : HASH_KINDS[kind](raw);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

// '#' and the values that are set (undefined, null and '' are left out), in the order given.
export function formatHashState(values) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined || value === null || value === '') continue;
    params.set(name, typeof value === 'boolean' ? (value ? '1' : '0') : String(value));
  }
  return `#${params.toString()}`;
}

// The state a page keeps in its hash: keys {name: 'text' | 'index' | 'flag' | 'name'}.
export const readHash = (keys) => readHashState(location.hash, keys);

// The one writer of history: `hash` (a string from formatHash, or values for formatHashState)
// replaces the current entry, or with push adds one; the same hash again writes nothing.
// The page's model (MODEL_HASH_KEYS: a checkpoint the reader chose) stays in the hash whatever
// a page writes, unless it names the key itself.
export function writeHash(hash, { push = false } = {}) {
  const params = new URLSearchParams((typeof hash === 'string' ? hash : formatHashState(hash)).replace(/^#/, ''));
  const current = new URLSearchParams(location.hash.replace(/^#/, ''));
  for (const key of MODEL_HASH_KEYS) if (!params.has(key) && current.get(key)) params.set(key, current.get(key));
  const text = `#${params.toString()}`;
  if (text !== location.hash) history[push ? 'pushState' : 'replaceState'](null, '', text);
}

// The article's keys: sentence, token, layer, head, whether specials are shown, the row figures'
// lens, the figure in view.
const ARTICLE_KEYS = Object.freeze({ s: 'text', t: 'index', l: 'index', h: 'index', special: 'flag', lens: 'name', v: 'name' });

export function parseHash(hash) {
  const v = readHashState(hash, ARTICLE_KEYS);
  const out = { sentence: v.s, token: v.t, layer: v.l, head: v.h, showSpecial: v.special, lens: isLens(v.lens) ? v.lens : undefined, view: v.v };
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key];
  return out;
}

export function formatHash(state) {
  const index = (value) => (value >= 0 ? value : undefined);
  return formatHashState({
    s: state.sentence, t: index(state.token), l: index(state.layer), h: index(state.head),
    special: state.showSpecial ? undefined : false, lens: state.lens === DEFAULT_LENS ? undefined : state.lens, v: state.view,
  });
}
