// What the series' posts share: the page's engine through the pages' one runtime
// (web/runtime/: one download serves every page and figure; progress; the state in the URL hash,
// read as data only, never as markup; only the newest request drawn), the sentence box's refusal
// of an empty or too long text (widgets/sentence-box.js), the set
// statistics the site build computed, and the core's head counts summed over the loaded model's
// results. Text always reaches the page as text nodes (h() from dom.js).
import { loadSetStatistics } from '../engine/sets.js';
import { DEFAULT_MANIFEST_URL, loadManifest, startBytes } from '../engine/engine.js';
import { keepForOffline } from '../offline.js';
import { EngineSession, ViewLoop } from '../runtime/session.js';
import { checkpointFromHash } from '../engine/model_address.js';
import { pinChosenCommit, wireModelChooser } from '../runtime/model-chooser.js';
import { readHash, writeHash } from '../runtime/state.js';
import { refuseLongPastes, textRefusal } from '../widgets/sentence-box.js';
import { Latest } from '../widgets/view.js';
import { headLabel } from '../engine/result.js';
import { describeModel, FIXED_LABELS, modelPhrase, POSITIONAL_LABELS } from '../widgets/data.js';
import { fillFacts, h, scrollBox } from '../widgets/dom.js';
import { fmt, headShort, progressText, thousands } from '../widgets/format.js';

export { fillFacts, Latest, readHash, writeHash };

// The engine, with the download's progress and the model's description in `status` (an element);
// a failure says so there with a button that tries again. Resolves once the engine is ready with
// {engine, model, loop}: loop is the post's ViewLoop (web/runtime/session.js) for the reader's
// own sentence. After a trap the session starts a new engine (status says so meanwhile) and then
// calls loop.onRestart, which the post sets to draw the reader's sentence again.
export function loadEngine(status) {
  return new Promise((resolve) => {
    const say = (text, state, retry = null) => {
      status.replaceChildren(text, ...(retry ? [' ', h('button', { type: 'button', text: 'Retry', on: { click: retry } })] : []));
      status.dataset.state = state;
    };
    const live = (engine) => say(`Computed in your browser by ${modelPhrase(describeModel(engine.info))}.`, 'live');
    let loop = null;
    let restarting = false;
    // The download's size as the article's loader says it (startBytes), once the manifest that
    // the page's engine asked for first is here: the progress line's total does not jump.
    let manifest = null;
    loadManifest(DEFAULT_MANIFEST_URL).then((m) => { manifest = m; }, () => {});
    // The model the reader chose (a checkpoint in the hash), else the default. The set
    // statistics were computed when the site was built, with the default: under another model
    // the post says so where it starts.
    const checkpoint = checkpointFromHash();
    const options = checkpoint ? { checkpoint } : {};
    wireModelChooser();
    if (options.checkpoint) status.after(h('p.post-note.set-note', { role: 'note', text: 'You chose another model: the parts of this post that use your own sentences run it, but the statistics over the post’s sentence sets (its tables, intervals and their charts) were computed when the site was built, with the model the site ships with, and are that model’s, not this one’s. Computing them for a model chosen here is not built yet.' }));
    const session = new EngineSession({
      options,
      expectedBytes: () => (options.checkpoint ? 0 : startBytes(manifest)),
      onChange: (s) => {
        if (s.error) {
          say(`The model did not load: ${s.error.message}`, 'error', attempt);
        } else if (!s.engine) {
          restarting ||= Boolean(s.restarting);
          say(s.restarting ?? progressText(s.progress), 'loading');
        } else if (restarting) {
          restarting = false;
          live(s.engine);
          loop?.onRestart?.();
        }
      },
    });
    const attempt = async () => {
      const engine = await session.start();
      if (!engine) return;
      pinChosenCommit(engine.info);
      live(engine);
      loop ??= new ViewLoop(session, { channel: 'post' });
      resolve({ engine, model: describeModel(engine.info), loop });
      loadManifest(DEFAULT_MANIFEST_URL).then(keepForOffline, () => {});
    };
    attempt();
  });
}

// The labels that say where a head looks, not what it reads.
export const POSITIONAL = new Set(POSITIONAL_LABELS);

// A visible label chip (never only a hover title).
export function labelChip(label) {
  const kind = POSITIONAL.has(label) ? 'positional' : FIXED_LABELS.includes(label) ? 'fixed' : 'content';
  return h('span.label', { dataset: { kind, label } , text: label });
}

// How far the file the page runs departs from the f32 file the set was computed with, over the
// set's sentences (the site build's attention-cli compare): {attention, predictions} as prose,
// or null when the page runs the set's own file.
export function pageFidelity(set) {
  const c = set.page;
  if (!c) return null;
  return {
    attention: `over the set\u2019s sentences its attention weights differ from the f32 file\u2019s by at most ${c.attention_max_abs.toPrecision(3)} (${c.attention_mean_abs.toPrecision(2)} on average), and a row\u2019s largest weight moves to another token in ${thousands(c.argmax_changed_rows)} of ${thousands(c.rows)} rows`,
    predictions: c.masked_positions
      ? `over ${thousands(c.masked_positions)} masked positions of the set\u2019s sentences, its top guess is the f32 file\u2019s in ${(100 * c.masked_lm_top1_agreement).toFixed(1)}% of them`
      : null,
  };
}

// A bootstrap estimate {value, low, high} as "12.3% (95% interval 10.1 to 14.0%)".
export function withInterval(estimate, format, level = 0.95) {
  return `${format(estimate.value)} (${Math.round(100 * level)}% interval ${format(estimate.low)} to ${format(estimate.high)})`;
}

// Shares of a partition, as percentages to `digits` decimals that sum to exactly 100 (largest
// remainders round up), so a row of them never reads 99.9% or 100.1%.
export function partitionPercents(counts, digits = 1) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (!total) return counts.map(() => 0);
  const unit = 10 ** digits;
  const exact = counts.map((c) => (100 * unit * c) / total);
  const floors = exact.map(Math.floor);
  let left = 100 * unit - floors.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - floors[i], i]).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) {
    if (left <= 0) break;
    floors[i] += 1;
    left -= 1;
  }
  return floors.map((f) => f / unit);
}

export const share = (count, total) => (total ? count / total : 0);
export const percent = (value, digits = 1) => `${(100 * value).toFixed(digits)}%`;
export { fmt, h, headLabel, headShort, loadSetStatistics, scrollBox };

// English words for the small counts a title states ("Four heads").
const WORDS = ['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve',
  'Thirteen', 'Fourteen', 'Fifteen', 'Sixteen', 'Seventeen', 'Eighteen', 'Nineteen', 'Twenty'];
export const countWord = (n, lower = false) => {
  const word = WORDS[n] ?? thousands(n);
  return lower ? word.toLowerCase() : word;
};

// Replaces a slot's content. Where the reader's focus was inside it (the sentence box they just
// submitted, a word link they followed), it goes to the new content's counterpart (the element
// with the same id, else the link with the same address) instead of falling to the page's body.
export function replaceKeepingFocus(slot, ...children) {
  const active = document.activeElement;
  let key = null;
  if (active && active !== document.body && slot.contains(active)) {
    if (active.id) key = `#${CSS.escape(active.id)}`;
    else if (active.localName === 'a' && active.getAttribute('href')) key = `a[href="${CSS.escape(active.getAttribute('href'))}"]`;
  }
  slot.replaceChildren(...children);
  if (key) slot.querySelector(key)?.focus({ preventScroll: true });
}

// A sentence box with a submit button; `onSubmit(text)` gets what the reader typed, as data. An
// empty text, or one longer than the engine takes and a link holds, is refused in `error` (the
// caller places it) in the sentence box's words (widgets/sentence-box.js) followed by `keeps` (what stays on screen), and
// onSubmit is not called; nothing the reader typed is cut (a paste that long is refused whole:
// refuseLongPastes).
export function sentenceForm({ value, label = 'Your sentence', onSubmit, keeps = 'The table below still shows the last one.' }) {
  const error = h('p.error-line', { role: 'status' });
  const input = h('input', { type: 'text', id: 'sentence', value, autocomplete: 'off', spellcheck: 'false' });
  refuseLongPastes(input, (message) => { error.textContent = message; }, keeps);
  const submit = (e) => {
    e.preventDefault();
    const refusal = textRefusal(input.value, keeps);
    error.textContent = refusal ?? '';
    if (!refusal) onSubmit(input.value);
  };
  const form = h('form.sentence', { on: { submit } },
    h('label', { for: 'sentence', text: label }), h('span.row', {}, input, h('button', { type: 'submit', text: 'Analyse' })));
  return { form, input, error };
}

// The reader's own sentence in a post: a sentence box bound to the hash's `s` (default: the first
// sentence of the set), and that sentence's analysis. An empty submission is refused in `error`
// (sentenceForm's; the caller shows it); a refused analysis puts the engine's message in `slot`.
// The analysis goes through the post's ViewLoop (`loop`, from loadEngine). Returns null when there
// is nothing to draw: a refusal, a newer call that took over, or a trap (the loop's engine
// restarts and loop.onRestart draws again).
export async function analyzeReadersSentence({ loop, hash, slot, redraw, fallback }) {
  const sentence = readHash(hash).s ?? fallback;
  const { form, error } = sentenceForm({
    value: sentence,
    onSubmit: (text) => {
      writeHash({ s: text }, { push: true });
      redraw();
    },
  });
  const view = await loop.view(true, { sentence, selection: { token: -1, layer: -1, head: -1 }, wordText: '' });
  if (!view) return null;
  if (!view.result || view.inputError) {
    replaceKeepingFocus(slot, form, h('p.error-line', { role: 'status', text: view.inputError ?? view.error?.message ?? '' }));
    return null;
  }
  return { sentence, form, error, result: view.result };
}
