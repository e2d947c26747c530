// <attention-contribution>: attention paid beside contribution made. For the selected word, the
// word is masked and, for every head, the figure sets the weight that head's row puts on its
// top token beside what removing that head (its attention probabilities multiplied by 0, Hugging
// Face head_mask semantics) does to the masked-LM head's probability of the word that was there.
// The table sorts by either, so a reader sees whether the heads that attend most are the heads
// that matter most. A chosen head's row is also shown value-weighted (a_ij * ||W_O^h v_j||,
// Kobayashi et al. 2020, "Attention is not only a weight"), renormalised to sum to 1 for display.
// Attention is read from the masked sentence, the one whose prediction is measured.
// Attributes as <attention-prediction>'s (sentence, word, autoload); `sort`: attention|effect|head.
import { AttentionFigure, ATTRIBUTES, define, Latest } from './base.js';
import { isSuperseded } from '../engine/engine.js';
import { attentionRow, ROLE } from '../engine/result.js';
import { CONTROLS_CSS, TokenChips } from './controls.js';
import { h, scrollBox, setText } from './dom.js';
import { fmt, fmtProbability, fmtWeight, headShort, signed, thousands } from './format.js';
import { lacksHead, MASK_TEXT, NO_HEAD_NOTE, PREDICTION_CSS, startWhenAsked, withVocabularyProgress } from './attention-prediction.js';


// A token the figure can measure: an ordinary token that is a whole word (one wordpiece), so
// that writing [MASK] in its place masks exactly that position.
export function wholeWord(result, i) {
  if (!(i >= 0 && i < result.n) || result.roles[i] !== ROLE.ordinary) return false;
  const w = result.tokens[i].word;
  return result.tokens.filter((t) => t.word === w).length === 1;
}

export const maskedText = (result, i) => result.text.slice(0, result.tokens[i].start) + MASK_TEXT + result.text.slice(result.tokens[i].end);

// The value-weighted reading of row `token` of head (layer, head): a_ij * ||W_O^h v_j||, and the
// same renormalised to sum to 1.
export function valueWeightedRow(analysis, layer, head, token) {
  const { n, heads } = analysis;
  const row = attentionRow(analysis, layer, head, token);
  const norms = analysis.value_norms.subarray((layer * heads + head) * n, (layer * heads + head + 1) * n);
  const raw = Array.from(row, (a, j) => a * norms[j]);
  const total = raw.reduce((s, x) => s + x, 0);
  return { raw, normalised: raw.map((x) => (total > 0 ? x / total : 0)), norms: Array.from(norms) };
}

// Everything the figure shows for one word, computed by the engine: the masked analysis (its
// attention and value norms), the unablated prediction, and for every head the exact
// probability of the original word with that head alone removed (over the whole vocabulary, as
// the set statistics measure it). effect = p(removed) - p(full); top1 = the best entry after
// removal.
export async function measureContribution(engine, result, token, { onStatus = () => {} } = {}) {
  if (!wholeWord(result, token)) throw new Error(`\u201c${result.tokens[token]?.text ?? ''}\u201d is not a whole word; choose a word that is one token.`);
  const t0 = performance.now();
  const text = result.text;
  const original = result.tokens[token];
  const probability = (removed) => engine.probability(text, token, original.id, { masked: true, removed });
  // On the split model the first prediction fetches the vocabulary table (with progress); after
  // that every pass is sent at once, so that the worker never waits for the page between them.
  let stats = null;
  try {
    stats = await engine.shardStats?.();
  } catch {
    stats = null;
  }
  const first = stats && stats.count > 0 && stats.loaded < stats.count
    ? await withVocabularyProgress(engine, () => engine.predict(text, token, 1, { masked: true }), onStatus)
    : null;
  const t1 = performance.now();
  const jobs = [];
  for (let layer = 0; layer < result.layers; ++layer) {
    for (let head = 0; head < result.heads; ++head) {
      jobs.push(probability(`${layer + 1}.${head + 1}`).then((q) => ({ layer, head, q })));
    }
  }
  const [best, full, masked, ...removals] = await Promise.all([
    first ?? engine.predict(text, token, 1, { masked: true }),
    probability(''),
    engine.analyzeAblated(maskedText(result, token), { valueNorms: true }),
    ...jobs,
  ]);
  if (masked.n !== result.n || masked.tokens[token].text !== MASK_TEXT) throw new Error('Masking this word changed the tokens; choose another word.');
  const ms = performance.now() - t1;
  const p0 = full.probability;
  const heads = removals.map(({ layer, head, q }) => {
    const row = attentionRow(masked, layer, head, token);
    let argmax = 0;
    for (let j = 1; j < row.length; ++j) if (row[j] > row[argmax]) argmax = j;
    return {
      layer, head, argmax, attention: row[argmax], target: masked.tokens[argmax].text,
      p: q.probability, rank: q.rank, effect: q.probability - p0, top1: { id: q.top1, text: q.top1_text }, survives: q.top1 === full.top1,
    };
  });
  return { text, token, original, base: { top1: best[0], p: p0, rank: full.rank }, heads, masked, ms, totalMs: performance.now() - t0 };
}

// Spearman's rank correlation of two equal-length arrays (average ranks for ties); NaN when
// either is constant.
export function spearman(x, y) {
  const ranks = (v) => {
    const order = v.map((value, i) => ({ value, i })).sort((a, b) => a.value - b.value);
    const r = new Array(v.length);
    for (let k = 0; k < order.length;) {
      let m = k;
      while (m + 1 < order.length && order[m + 1].value === order[k].value) ++m;
      for (let q = k; q <= m; ++q) r[order[q].i] = (k + m) / 2 + 1;
      k = m + 1;
    }
    return r;
  };
  const rx = ranks(x);
  const ry = ranks(y);
  const mean = (v) => v.reduce((s, a) => s + a, 0) / v.length;
  const mx = mean(rx);
  const my = mean(ry);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < x.length; ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) ** 2;
    syy += (ry[i] - my) ** 2;
  }
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : NaN;
}

const CSS = `
  .sorts { display: flex; flex-wrap: wrap; gap: 0.3em; align-items: center; margin: 0.4em 0; }
  .sorts button[aria-pressed="true"] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); }
  .contrib { width: 100%; border-collapse: collapse; font-size: 0.9em; }
  .contrib th, .contrib td { padding: 0.15em 0.3em; border-bottom: 1px solid var(--attn-line); text-align: left; overflow-wrap: anywhere; }
  .contrib td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  .contrib tr { cursor: pointer; }
  .contrib tr.chosen td, .contrib tr.chosen th { background: color-mix(in srgb, var(--attn-bar) 14%, var(--attn-bg)); }
  /* The head's name is the row's button: it chooses the head whose row is read below. */
  .contrib th button { font: inherit; color: inherit; background: none; border: 0; padding: 0; cursor: pointer; text-decoration: underline dotted; white-space: nowrap; }
  .contrib th button[aria-pressed="true"] { font-weight: 700; text-decoration: none; }
  .vw caption { text-align: left; font-weight: 600; margin-bottom: 0.2em; }
  .contrib .bar-track { display: inline-block; width: 4em; height: 0.55em; background: var(--attn-line); border-radius: 3px; overflow: hidden; vertical-align: middle; margin-right: 0.3em; }
  .contrib .bar { display: block; height: 100%; background: var(--attn-bar); }
  .contrib .bar.down { background: var(--attn-bar-down); }
  .contrib .col-target, .contrib .col-top { max-width: 7em; }
  @container (max-width: 480px) { .contrib .bar-track { display: none; } .contrib .col-top { display: none; } }
  .vw { display: grid; grid-template-columns: repeat(auto-fit, minmax(14em, 1fr)); gap: 0.8em; margin-top: 0.6em; }
  .vw table { width: 100%; border-collapse: collapse; font-size: 0.85em; }
  .vw td, .vw th { padding: 0.05em 0.3em; text-align: left; overflow-wrap: anywhere; }
  .vw td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .vw .bar-track { display: block; height: 0.5em; background: var(--attn-line); border-radius: 3px; overflow: hidden; min-width: 3em; }
  .vw .bar { display: block; height: 100%; background: var(--attn-bar); }
  .timing { font-size: 0.85em; }
`;

class AttentionContribution extends AttentionFigure {
  // What the reader asked it to compute would be lost by a redraw: it keeps its drawing when far.
  static releasable = false;
  static css = CONTROLS_CSS + PREDICTION_CSS + CSS;

  static placeholderHeight = '24em';

  constructor() {
    super();
    this._measureLatest = new Latest();
    this._armed = false;
    this._chosenHead = null;
  }

  get sort() {
    return this.attributeValue(ATTRIBUTES.sort, 'attention');
  }

  attributeChangedCallback(name, old, value) {
    super.attributeChangedCallback(name, old, value);
    if (name === ATTRIBUTES.sort && this._measured) this.drawTable();
  }

  render(view) {
    if (!this.hasResult(view)) {
      this._parts = null;
      return;
    }
    if (!this._parts) {
      const sortButton = (key, text) => h('button', { type: 'button', dataset: { sort: key }, 'aria-pressed': 'false', text, on: { click: () => this.setAttribute(ATTRIBUTES.sort, key) } });
      const p = {
        // One tab stop, as in the prediction figure: the arrow keys choose without measuring.
        chips: new TokenChips({
          label: 'Tokens of the sentence: choose a word to mask and measure. Arrow keys move between them.', roving: true,
          onSelect: (patch) => { this._armed = true; this.select(patch); },
          onKey: (event, i) => { const token = this._parts?.chips.step(event, i); if (token !== undefined) this.select({ token }); },
        }),
        masked: h('p.masked-line'),
        start: h('button.primary', { type: 'button', hidden: true, on: { click: (event) => { this._armed = true; event.currentTarget.hidden = true; this.measureNow(); } } }),
        note: h('p.vocab-note.muted', { role: 'status' }),
        summary: h('p.summary'),
        sorts: h('div.sorts', { role: 'group', 'aria-label': 'Sort the heads' }, h('span', { text: 'Sort by ' }),
          sortButton('attention', 'attention on the top token'), sortButton('effect', 'effect of removal'), sortButton('head', 'head')),
        table: h('div.table-slot'),
        vw: h('div.vw-slot'),
        timing: h('p.timing.muted'),
      };
      this.bodyEl.replaceChildren(p.chips.scroller, p.masked, p.start, p.note, p.summary, p.sorts, p.table, p.vw, p.timing);
      this._parts = p;
    }
    const p = this._parts;
    const { result, token } = view;
    p.chips.update(result, token, view.showSpecial);
    if (view.inputError) setText(p.note, view.inputError);
    if (!wholeWord(result, token)) {
      setText(p.masked, 'Click a word above (a whole word, not a piece of one) to mask it and measure every head.');
      return;
    }
    p.masked.replaceChildren(result.text.slice(0, result.tokens[token].start), h('span.mask', { text: MASK_TEXT }), result.text.slice(result.tokens[token].end));
  }

  // A live view of a whole word: measures at once when asked, else offers the button.
  viewDrawn(view) {
    startWhenAsked(this, view, { can: wholeWord, label: (word) => `Measure every head for \u201c${word}\u201d`, what: 'measurement', run: () => this.measureNow() });
  }

  async measureNow() {
    const view = this._view;
    const p = this._parts;
    if (!view?.result || !p || view.mode !== 'live' || !wholeWord(view.result, view.token)) return;
    const ticket = this._measureLatest.next();
    const engine = await this.figureEngine();
    if (lacksHead(engine)) {
      setText(p.note, NO_HEAD_NOTE);
      return;
    }
    let measured;
    try {
      measured = await measureContribution(engine, view.result, view.token, { onStatus: (text) => { if (this._measureLatest.current(ticket)) setText(p.note, text); } });
    } catch (error) {
      if (isSuperseded(error) || !this._measureLatest.current(ticket)) return;
      setText(p.note, `The measurement failed: ${error.message}`);
      return;
    }
    if (!this._measureLatest.current(ticket)) return;
    this._measured = measured;
    // The head whose row is shown value-weighted: the reader's choice, else the most-attending.
    const best = measured.heads.reduce((a, b) => (b.attention > a.attention ? b : a));
    if (!this._chosenHead || this._chosenHead.text !== measured.text || this._chosenHead.token !== measured.token) {
      this._chosenHead = { text: measured.text, token: measured.token, layer: best.layer, head: best.head };
    }
    const { original, base } = measured;
    const most = best;
    const consequential = measured.heads.reduce((a, b) => (Math.abs(b.effect) > Math.abs(a.effect) ? b : a));
    p.summary.dataset.p0 = String(base.p);
    p.summary.dataset.top1 = String(base.top1.id);
    setText(p.summary, `With \u201c${original.text}\u201d masked, the model\u2019s best guess is \u201c${base.top1.text}\u201d (p = ${fmt(base.top1.probability, 3)}); `
      + `\u201c${original.text}\u201d itself has p = ${fmtProbability(base.p)} (number ${thousands(base.rank)}). `
      + `Most attention on one token: ${headShort(most.layer, most.head)}; largest effect of removal: ${headShort(consequential.layer, consequential.head)}`
      + `${most === consequential ? ', the same head.' : ', a different head.'}`);
    // The note held the download's progress or an earlier failure; a refused sentence's reason stays.
    if (!view.inputError) setText(p.note, '');
    const drawStart = performance.now();
    this.drawTable();
    const ms = measured.ms + (performance.now() - drawStart);
    p.timing.dataset.ms = String(ms);
    setText(p.timing, `Updated in ${Math.round(ms)} ms (n = ${view.result.n}): the prediction without removal, the masked sentence\u2019s analysis and ${measured.heads.length} predictions with one head removed each, all in the engine\u2019s worker, and this table drawn.`);
    this.dataset.ready = 'true';
    this.dataset.ms = String(Math.round(ms));
  }

  drawTable() {
    const m = this._measured;
    const p = this._parts;
    if (!m || !p) return;
    const sort = this.sort;
    for (const b of p.sorts.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b.dataset.sort === sort));
    const rows = m.heads.slice();
    if (sort === 'attention') rows.sort((a, b) => b.attention - a.attention);
    else if (sort === 'effect') rows.sort((a, b) => Math.abs(b.effect) - Math.abs(a.effect));
    const biggest = Math.max(1e-12, ...m.heads.map((x) => Math.abs(x.effect)));
    const chosen = this._chosenHead;
    p.table.replaceChildren(scrollBox('div.table-scroll', 'Every head\u2019s attention and effect of removal', h('table.contrib', { dataset: { sort, text: m.text, token: String(m.token) } },
      h('caption.visually-hidden', { text: `Every head for \u201c${m.original.text}\u201d: attention on its top token and the change in p(\u201c${m.original.text}\u201d) when it is removed` }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Head' }), h('th.col-target', { scope: 'col', text: 'Attends most to' }),
        h('th', { scope: 'col', text: 'Weight', style: { 'white-space': 'nowrap' } }), h('th', { scope: 'col', text: `Change in p(${m.original.text})` }), h('th.col-top', { scope: 'col', text: 'Best guess without it' }))),
      h('tbody', { on: { click: (event) => {
        const tr = event.target.closest?.('tr[data-layer]');
        if (!tr) return;
        const layer = Number(tr.dataset.layer);
        const head = Number(tr.dataset.head);
        this._chosenHead = { text: m.text, token: m.token, layer, head };
        this.drawTable();
        // The rows are drawn again: the focus goes back to the head the reader chose.
        this.shadowRoot.querySelector(`table.contrib tr[data-layer="${layer}"][data-head="${head}"] th button`)?.focus({ preventScroll: true });
      } } }, rows.map((x) => {
        const isChosen = chosen?.layer === x.layer && chosen?.head === x.head;
        return h('tr', {
          class: isChosen ? 'chosen' : undefined,
          dataset: { layer: String(x.layer), head: String(x.head), attention: String(x.attention), argmax: String(x.argmax), effect: String(x.effect), p: String(x.p), top1: String(x.top1.id), survives: String(x.survives) },
        },
      h('th', { scope: 'row' }, h('button', { type: 'button', 'aria-pressed': String(isChosen), 'aria-label': `${headShort(x.layer, x.head)}: read its row below`, text: headShort(x.layer, x.head) })),
      h('td.col-target', { text: x.target }),
      h('td.num', {}, h('span.bar-track', {}, h('span.bar', { style: { width: `${(100 * x.attention).toFixed(1)}%` } })), fmtWeight(x.attention, 3, { short: true })),
      h('td.num', {}, h('span.bar-track', {}, h(`span.bar${x.effect < 0 ? '.down' : ''}`, { style: { width: `${((100 * Math.abs(x.effect)) / biggest).toFixed(1)}%` } })), signed(x.effect)),
      h('td.col-top', { text: `${x.top1.text}${x.survives ? '' : ' (changed)'}` }));
      }))),
    null));
    this.drawValueWeighted();
  }

  // The chosen head's row of the masked word: raw weights beside the value-weighted reading.
  drawValueWeighted() {
    const m = this._measured;
    const c = this._chosenHead;
    const p = this._parts;
    if (!m || !c) return;
    const raw = attentionRow(m.masked, c.layer, c.head, m.token);
    const vw = valueWeightedRow(m.masked, c.layer, c.head, m.token);
    const list = (title, values, kind) => h('div', {},
      h('table', { dataset: { kind, layer: String(c.layer), head: String(c.head) } },
        h('caption', { text: title }),
        h('thead.visually-hidden', {}, h('tr', {}, h('th', { scope: 'col', text: 'Token' }), h('th', { scope: 'col', text: 'Bar' }), h('th', { scope: 'col', text: 'Weight' }))),
        h('tbody', {}, m.masked.tokens.map((t, j) => h('tr', { dataset: { value: String(values[j]) } },
        h('th', { scope: 'row', text: t.text }),
        h('td', {}, h('span.bar-track', {}, h('span.bar', { style: { width: `${(100 * values[j]).toFixed(1)}%` } }))),
        h('td.num', { text: fmtWeight(values[j], 3, { short: true }) }))))));
    p.vw.replaceChildren(h('p', { text: `The row of ${MASK_TEXT} (in place of \u201c${m.original.text}\u201d) in ${headShort(c.layer, c.head)}, read two ways (click a row of the table to choose another head):` }),
      h('div.vw', {}, list('Attention weights a_ij', Array.from(raw), 'raw'),
        list('Value-weighted: a_ij \u00b7 \u2016W_O v_j\u2016, renormalised to sum to 1', vw.normalised, 'value-weighted')));
  }
}

define('contribution', AttentionContribution);
