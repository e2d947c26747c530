// What the series' posts share: the page's engine (the article's getEngine, so one download
// serves every page and figure), a status line with download progress, the state in the URL
// hash (read as data only, never as markup), and the head statistics every post computes from
// the loaded model's results. Text always reaches the page as text nodes (h() from dom.js).
import { getEngine, onEngineProgress } from '../engine/engine.js';
import { headLabel, ROLE, rowStat } from '../engine/result.js';
import { describeModel } from '../widgets/data.js';
import { fmt, h, megabytes } from '../widgets/dom.js';

// The state a post keeps in its hash: a few short, bounded strings and small integers.
export const MAX_SENTENCE = 2000;
export function readHash(keys) {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  const out = {};
  for (const [name, kind] of Object.entries(keys)) {
    const value = params.get(name);
    if (value === null) continue;
    if (kind === 'text' && value.length <= MAX_SENTENCE) out[name] = value;
    if (kind === 'index' && /^\d{1,4}$/.test(value)) out[name] = Number(value);
  }
  return out;
}

export function writeHash(state, { push = false } = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(state)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const hash = `#${params.toString()}`;
  if (hash !== location.hash) history[push ? 'pushState' : 'replaceState'](null, '', hash);
}

// The engine, with the download's progress and the model's description in `status` (an element).
export async function loadEngine(status) {
  const say = (text, state) => {
    status.textContent = text;
    status.dataset.state = state;
  };
  say('Loading the engine and the model\u2026', 'loading');
  const stop = onEngineProgress((p) => {
    if (status.dataset.state === 'loading') say(`Loading the model: ${megabytes(p.loaded)}${p.total ? ` of ${megabytes(p.total)}` : ''}\u2026`, 'loading');
  });
  try {
    const engine = await getEngine();
    const model = describeModel(engine.info);
    say(`Computed in your browser by ${model.name} (${model.note}).`, 'live');
    return { engine, model };
  } catch (error) {
    say(`The model did not load: ${error.message} Reload the page to try again.`, 'error');
    throw error;
  } finally {
    stop();
  }
}

// Every result of `texts`, in order (the engine queues them; a memo answers repeats).
export async function analyzeAll(engine, texts) {
  const out = [];
  for (const text of texts) out.push(await engine.analyze(text));
  return out;
}

// The categories of a row's largest weight, as the core counts them for head profiles
// (wasm/core/analysis.cc, HeadProfile::Add): one row may fall in several.
export const CATEGORIES = Object.freeze(['previous_token', 'next_token', 'sink', 'self', 'punctuation']);
const CATEGORY_LABEL = { previous_token: 'previous-token', next_token: 'next-token', sink: '[CLS]/[SEP] sink', self: 'self', punctuation: 'punctuation' };

// Counts, per head, over the rows of several results: rows, the categories above, the word rows
// (rows of ordinary tokens, the words a reader clicks) and how many of those fall on the previous
// or next token, and the sums of entropy, normalised entropy and ratio to uniform.
export function headCounts(results) {
  const first = results[0];
  const counts = [];
  for (let layer = 0; layer < first.layers; ++layer) {
    for (let head = 0; head < first.heads; ++head) {
      const c = { layer, head, rows: 0, words: 0, wordNext: 0, wordPrevious: 0, entropy: 0, normalized_entropy: 0, ratio_to_uniform: 0 };
      for (const k of CATEGORIES) c[k] = 0;
      for (const r of results) {
        for (let i = 0; i < r.n; ++i) {
          const s = rowStat(r, layer, head, i);
          const j = s.argmax;
          c.rows += 1;
          c.previous_token += j === i - 1;
          c.next_token += j === i + 1;
          c.sink += r.roles[j] === ROLE.cls || r.roles[j] === ROLE.sep;
          c.self += j === i;
          c.punctuation += r.roles[j] === ROLE.punctuation;
          c.entropy += s.entropy;
          c.normalized_entropy += s.normalized_entropy;
          c.ratio_to_uniform += s.ratio_to_uniform;
          if (r.roles[i] === ROLE.ordinary) {
            c.words += 1;
            c.wordNext += j === i + 1;
            c.wordPrevious += j === i - 1;
          }
        }
      }
      counts.push(c);
    }
  }
  return counts;
}

// The core's label rule (wasm/core/analysis.h, HeadProfile::Label), applied to counts over
// any number of sentences: broad when the mean normalised entropy is at least 0.9, else the
// category with the most rows (earlier in CATEGORIES on a tie) if it has at least half of them,
// else mixed. For one sentence it gives the core's own label (the posts' tests check that).
export function labelOf(c) {
  if (c.rows === 0) return 'mixed';
  if (c.normalized_entropy / c.rows >= 0.9) return 'broad';
  let best = CATEGORIES[0];
  for (const k of CATEGORIES) if (c[k] > c[best]) best = k;
  return c[best] / c.rows >= 0.5 ? CATEGORY_LABEL[best] : 'mixed';
}

// The labels that say where a head looks, not what it reads.
export const POSITIONAL = new Set(['previous-token', 'next-token']);

// A visible label chip (never only a hover title).
export function labelChip(label) {
  const kind = POSITIONAL.has(label) ? 'positional' : label === 'self' || label === '[CLS]/[SEP] sink' ? 'fixed' : 'content';
  return h('span.label', { dataset: { kind, label } , text: label });
}

export const share = (count, total) => (total ? count / total : 0);
export const percent = (value, digits = 1) => `${(100 * value).toFixed(digits)}%`;
export const headTag = (layer, head) => `L${layer + 1} H${head + 1}`;
export { fmt, h, headLabel };

// English words for the small counts a title states ("Sixteen heads").
const WORDS = ['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve',
  'Thirteen', 'Fourteen', 'Fifteen', 'Sixteen', 'Seventeen', 'Eighteen', 'Nineteen', 'Twenty'];
export const countWord = (n, lower = false) => {
  const word = WORDS[n] ?? n.toLocaleString('en-US');
  return lower ? word.toLowerCase() : word;
};

// Fills every [data-fact] element under root from facts (as text).
export function fillFacts(root, facts) {
  for (const el of root.querySelectorAll('[data-fact]')) {
    const value = facts[el.dataset.fact];
    if (value !== undefined && el.textContent !== String(value)) el.textContent = String(value);
  }
}

// A sentence box with a submit button; `onSubmit(text)` gets what the reader typed, as data. An
// empty text, or one longer than a post's link holds (MAX_SENTENCE), is refused in `error` (the
// caller places it), with `emptyMessage` or the length, and onSubmit is not called; nothing the
// reader pasted is cut.
export function sentenceForm({ value, label = 'Your sentence', onSubmit, emptyMessage }) {
  const error = h('p.error-line', { role: 'status' });
  const input = h('input', { type: 'text', id: 'sentence', value, autocomplete: 'off', spellcheck: 'false' });
  const submit = (e) => {
    e.preventDefault();
    if (!input.value.trim()) {
      error.textContent = emptyMessage;
      return;
    }
    if (input.value.length > MAX_SENTENCE) {
      error.textContent = `This text is ${input.value.length.toLocaleString('en-US')} characters long; a post takes sentences of up to ${MAX_SENTENCE.toLocaleString('en-US')} (its link holds the sentence). The table below still shows the last one.`;
      return;
    }
    onSubmit(input.value);
  };
  const form = h('form.sentence', { on: { submit } },
    h('label', { for: 'sentence', text: label }), h('span.row', {}, input, h('button', { type: 'submit', text: 'Analyse' })));
  return { form, input, error };
}

// The reader's own sentence in a post: a sentence box bound to the hash's `s` (default: the first
// sentence of the set), and that sentence's analysis. An empty submission is refused in `error`
// (sentenceForm's; the caller shows it); a refused analysis puts the engine's message in `slot`. Returns null
// when there is nothing to draw, or when current() says a newer call has taken over.
export async function analyzeReadersSentence({ engine, hash, slot, redraw, current, fallback }) {
  const sentence = readHash(hash).s ?? fallback;
  const { form, error } = sentenceForm({
    value: sentence,
    emptyMessage: 'Type a sentence first: an empty one has no words, only [CLS] and [SEP]. The table below still shows the last one.',
    onSubmit: (text) => {
      writeHash({ s: text }, { push: true });
      redraw();
    },
  });
  let result;
  try {
    result = await engine.analyze(sentence);
  } catch (e) {
    if (current()) slot.replaceChildren(form, h('p.error-line', { role: 'status', text: e.message }));
    return null;
  }
  return current() ? { sentence, form, error, result } : null;
}
