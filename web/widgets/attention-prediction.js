// <attention-prediction>: BERT as what it was trained to be, a masked language model. Click a
// word of the sentence to mask it ([MASK] in its place) and read the masked-LM head's ten most
// likely tokens for that position with their probabilities, and the rank of the word that was
// there. Attributes as every figure's (sentence, word), plus `removed` (heads to remove, "L.H"
// counted from 1 and joined by commas, e.g. "2.3,4.1") and `autoload` (predict at once; without
// it the first prediction waits for the reader, since on the split model it needs the whole
// word-embedding table, about 15 MB, which is never fetched at page load).
import { AttentionFigure, ATTRIBUTES, define, Latest } from './base.js';
import { isSuperseded } from '../engine/engine.js';
import { ROLE } from '../engine/result.js';
import { CONTROLS_CSS, TokenChips } from './controls.js';
import { h, setText } from './dom.js';
import { fmt, fmtProbability, megabytes, thousands } from './format.js';

// A checkpoint without the masked-LM head (BertModel's names) runs every figure but the ones that
// guess a masked word: they say so instead of failing.
export const lacksHead = (engine) => engine?.info?.has_masked_lm_head === false;
export const NO_HEAD_NOTE = 'This model has no masked-LM head (the cls.predictions weights of a BertForMaskedLM checkpoint), so it cannot guess a masked word: its last layer\u2019s vectors are where it stops. The other figures run it; choose a checkpoint with the head for this one.';

// How many entries the figure shows; the original word's probability and rank are exact,
// over the whole vocabulary (engine.probability).
export const SHOWN = 10;
export const MASK_TEXT = '[MASK]';

export const PREDICTION_CSS = `
  .predictions { width: 100%; border-collapse: collapse; font-size: 0.92em; table-layout: fixed; }
  .predictions th, .predictions td { padding: 0.15em 0.35em; text-align: left; border-bottom: 1px solid var(--attn-line); overflow-wrap: anywhere; }
  .predictions td.num, .predictions th.num { text-align: right; font-variant-numeric: tabular-nums; width: 5.2em; }
  .predictions th.rank { width: 2.2em; }
  .predictions tr[data-original="true"] td { font-weight: bold; }
  .predictions .bar-track { display: block; height: 0.55em; background: var(--attn-line); border-radius: 3px; overflow: hidden; }
  .predictions .bar { display: block; height: 100%; background: var(--attn-bar); }
  .masked-line { margin: 0.3em 0 0.5em; overflow-wrap: anywhere; }
  .masked-line .mask { font-family: ui-monospace, monospace; background: var(--attn-bar); color: var(--attn-bg); padding: 0 0.25em; border-radius: 3px; }
  .vocab-note { margin: 0.4em 0; }
  .rank-line { margin: 0.5em 0 0; }
`;

// The vocabulary table: on the split model, predict() first fetches every shard; this says how
// far that has got while a prediction waits (the engine's worker answers between downloads).
// What the first prediction downloads, said before it starts: '' when nothing is left to fetch
// (a single model file, or every shard already here).
// The start of a figure that runs on demand (a prediction, a measurement of every head), for a
// live view of a token it `can` run on: at once when the reader has asked (the figure is
// `_armed`) or the author set autoload; else its start button offers it, with the size of what
// the first `what` fetches, from the engine's manifest.
export function startWhenAsked(figure, view, { can, label, what, run }) {
  const p = figure._parts;
  if (!p || view.mode !== 'live' || !can(view.result, view.token)) return;
  if (figure._armed || figure.hasAttribute(ATTRIBUTES.autoload)) {
    p.start.hidden = true;
    run();
    return;
  }
  const text = label(view.result.tokens[view.token].text);
  p.start.textContent = text;
  p.start.hidden = false;
  figure.figureEngine().then(vocabularyDownload).then((note) => {
    if (p.start.textContent === text && note) p.start.textContent = `${text} (the first ${what} ${note})`;
  }, () => {});
}

export async function vocabularyDownload(engine) {
  let stats = null;
  try {
    stats = await engine.shardStats?.();
  } catch {
    stats = null;
  }
  if (!stats?.count || stats.loaded >= stats.count) return '';
  return `downloads the model\u2019s vocabulary table once, ${megabytes(stats.total)}, kept for later visits`;
}

export async function withVocabularyProgress(engine, work, say) {
  let stats = null;
  try {
    stats = await engine.shardStats?.();
  } catch {
    stats = null;
  }
  const needed = stats && stats.count > 0 && stats.loaded < stats.count;
  const what = `Predictions need the whole vocabulary table (${thousands(stats?.count ?? 0)} pieces, ${megabytes(stats?.total ?? 0)}), downloaded once and kept for later visits`;
  let timer = null;
  // Set once the work is over: a report still on its way then (shardStats is a round trip to
  // the engine's worker) says nothing, so that the line does not keep "downloading" under the
  // finished prediction.
  let over = false;
  if (needed) {
    say(`${what}: ${thousands(stats.loaded)} of them are here\u2026`);
    timer = setInterval(async () => {
      try {
        const s = await engine.shardStats();
        if (!over) say(`${what}: ${thousands(s.loaded)} of them are here\u2026`);
      } catch {
        // The status line only.
      }
    }, 300);
  }
  try {
    return await work();
  } finally {
    over = true;
    if (timer) clearInterval(timer);
    if (needed) say('');
  }
}

// Whether the reader may mask token i: a token of the sentence other than [CLS] and [SEP].
export const maskable = (result, i) => i >= 0 && i < result.n && result.roles[i] !== ROLE.cls && result.roles[i] !== ROLE.sep;

class AttentionPrediction extends AttentionFigure {
  // What the reader asked it to compute would be lost by a redraw: it keeps its drawing when far.
  static releasable = false;
  static css = CONTROLS_CSS + PREDICTION_CSS;

  static placeholderHeight = '14em';

  constructor() {
    super();
    this._predictLatest = new Latest();
    this._armed = false;
  }

  get removed() {
    return this.attributeValue(ATTRIBUTES.removed, '');
  }

  render(view) {
    if (!this.hasResult(view)) {
      this._parts = null;
      return;
    }
    if (!this._parts) {
      const p = {
        // One tab stop; the arrow keys move along the chips and choose as they go, without
        // starting a prediction that was not asked for (a click or the button asks).
        chips: new TokenChips({
          label: 'Tokens of the sentence: choose one to mask. Arrow keys move between them.', roving: true,
          onSelect: (patch) => { this._armed = true; this.select(patch); },
          onKey: (event, i) => { const token = this._parts?.chips.step(event, i); if (token !== undefined) this.select({ token }); },
        }),
        masked: h('p.masked-line'),
        note: h('p.vocab-note.muted', { role: 'status' }),
        start: h('button.primary', { type: 'button', hidden: true, on: { click: (event) => { this._armed = true; event.currentTarget.hidden = true; this.predictNow(); } } }),
        table: h('div.table-slot'),
        rank: h('p.rank-line'),
      };
      this.bodyEl.replaceChildren(p.chips.scroller, p.masked, p.start, p.note, p.table, p.rank);
      this._parts = p;
    }
    const p = this._parts;
    p.chips.update(view.result, view.token, view.showSpecial);
    if (view.inputError) setText(p.note, view.inputError);
    const { result, token } = view;
    if (!maskable(result, token)) {
      setText(p.masked, 'Click a word above to mask it.');
      p.table.replaceChildren();
      setText(p.rank, '');
      return;
    }
    const before = result.text.slice(0, Math.max(0, result.tokens[token].start));
    const after = result.text.slice(Math.max(0, result.tokens[token].end));
    p.masked.replaceChildren(before, h('span.mask', { text: MASK_TEXT }), after);
    if (view.mode !== 'live') p.start.hidden = true;
  }

  // A live view of a maskable token: predicts at once when asked, else offers the button.
  viewDrawn(view) {
    startWhenAsked(this, view, { can: maskable, label: (word) => `Predict \u201c${word}\u201d`, what: 'prediction', run: () => this.predictNow() });
  }

  attributeChangedCallback(name, old, value) {
    super.attributeChangedCallback(name, old, value);
    if (name === ATTRIBUTES.removed && this._view?.mode === 'live' && old !== value) this.predictNow();
  }

  async predictNow() {
    const view = this._view;
    const p = this._parts;
    if (!view?.result || !p || view.mode !== 'live' || !maskable(view.result, view.token)) return;
    const { result, token } = view;
    const removed = this.removed;
    const ticket = this._predictLatest.next();
    const engine = await this.figureEngine();
    if (lacksHead(engine)) {
      setText(p.note, NO_HEAD_NOTE);
      return;
    }
    const original = result.tokens[token];
    let list;
    let found;
    const t0 = performance.now();
    const options = { masked: true, removed };
    try {
      [list, found] = await withVocabularyProgress(engine, () => Promise.all([
        engine.predict(result.text, token, SHOWN, options),
        engine.probability(result.text, token, original.id, options),
      ]), (text) => {
        if (this._predictLatest.current(ticket)) setText(p.note, text);
      });
    } catch (error) {
      if (isSuperseded(error) || !this._predictLatest.current(ticket)) return;
      setText(p.note, `The prediction failed: ${error.message}`);
      return;
    }
    if (!this._predictLatest.current(ticket)) return;
    const ms = performance.now() - t0;
    this._prediction = { text: result.text, token, removed, list, ms };
    const shown = list.slice(0, SHOWN);
    p.table.replaceChildren(h('table.predictions', { dataset: { text: result.text, token: String(token), removed } },
      h('caption.visually-hidden', { text: `The model's ${SHOWN} most likely tokens in place of \u201c${original.text}\u201d` }),
      h('thead', {}, h('tr', {}, h('th.rank', { scope: 'col', text: '#' }), h('th', { scope: 'col', text: 'Token' }),
        h('th', { scope: 'col', text: '' }), h('th.num', { scope: 'col', text: 'p' }))),
      h('tbody', {}, shown.map((x, k) => h('tr', { dataset: { id: String(x.id), probability: String(x.probability), original: String(x.id === original.id) } },
        h('td', { text: String(k + 1) }),
        h('td', { text: x.text }),
        // An absolute track from 0 to 1: a probability of 0.02 is a sliver, not a full bar.
        h('td', {}, h('span.bar-track', { 'aria-hidden': 'true' }, h('span.bar', { style: { width: `${(100 * x.probability).toFixed(1)}%` } }))),
        h('td.num', { text: fmt(x.probability, 3) }))))));
    const removedText = removed ? ` with head${removed.includes(',') ? 's' : ''} ${removed.split(',').map((x) => `L${x.replace('.', ' H')}`).join(', ')} removed` : '';
    p.rank.dataset.rank = String(found.rank);
    p.rank.dataset.probability = String(found.probability);
    setText(p.rank, `The word that was there, \u201c${original.text}\u201d, is number ${thousands(found.rank)} of ${thousands(engine.info.vocab_size)} with p = ${fmtProbability(found.probability)}${removedText}.`);
    // The note held the download's progress or an earlier failure; a refused sentence's reason stays.
    if (!view.inputError) setText(p.note, '');
    this.dataset.ready = 'true';
    this.dataset.ms = String(Math.round(ms));
  }
}

define('prediction', AttentionPrediction);
