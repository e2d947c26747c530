// <attention-pair>: two sentences side by side through the same head. Made for a Winograd pair
// (two sentences that differ in one word, which changes what a pronoun refers to): the chosen
// word's attention row in each, and the difference of the two rows, first minus second, token by
// token (alignTokens: the tokens both sentences share are matched by place, the changed ones in
// order). The head is the one the other figures show; its menu chooses another for all of them.
// Its view is the first sentence's, with the second's result under `against` (PairLoop in
// web/runtime/session.js asks the engine for both).
import { AttentionFigure, define } from './base.js';
import { PAIR_PRESETS } from '../content.js';
import { attentionRow, rowStat } from '../engine/result.js';
import { alignTokens, labelledHeadName, rowDifference } from './data.js';
import { barLegend, differenceScale, FULL_SCALE, RowChart } from './bars.js';
import { CONTROLS_CSS, HeadMenu, TokenChips } from './controls.js';
import { h, setText } from './dom.js';
import { fmt, headName, signed } from './format.js';
import { refuseLongPastes, textRefusal } from './sentence-box.js';

const KEEPS = 'The figure still shows the last pair.';

const CSS = `
  form.pair { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: 0.35em 0.6em; align-items: center; margin-bottom: 0.4em; }
  form.pair input { min-width: 0; width: 100%; padding: 0.3em 0.45em; border: 1px solid var(--attn-line); border-radius: 6px; background: var(--attn-bg); }
  form.pair input:disabled { opacity: 0.7; }
  form.pair .actions { grid-column: 2; }
  .presets { display: flex; flex-wrap: wrap; gap: 0.35em; align-items: center; font-size: 0.86em; margin: 0 0 0.5em; min-width: 0; }
  .presets button { max-width: 100%; min-width: 0; overflow-wrap: anywhere; text-align: left; }
  .input-error { color: var(--attn-error); font-size: 0.9em; min-height: 0; }
  .input-error:empty { display: none; }
  .word-line { font-size: 0.9em; margin: 0.3em 0 0.2em; color: var(--attn-muted); }
  .chip:disabled { opacity: 0.45; cursor: not-allowed; }
  .panels { display: grid; gap: 1.1em; grid-template-columns: minmax(0, 1fr); margin-top: 0.4em; }
  @container (min-width: 660px) { .panels { grid-template-columns: repeat(3, minmax(0, 1fr)); } }
  .panel h3 { font-size: 0.95em; margin: 0 0 0.1em; }
  .panel .said { font-size: 0.86em; color: var(--attn-muted); margin: 0 0 0.3em; overflow-wrap: anywhere; }
  .panel .said q { color: var(--attn-fg); }
  .panel .missing { font-size: 0.9em; color: var(--attn-muted); border: 1px dashed var(--attn-line); border-radius: 6px; padding: 0.6em; }
  .pair-facts { display: flex; flex-wrap: wrap; gap: 0.2em 1.2em; margin-top: 0.6em; font-size: 0.92em; }
  .pair-facts b { font-weight: 650; }
`;

class AttentionPair extends AttentionFigure {
  static css = CONTROLS_CSS + CSS;

  static placeholderHeight = '22em';

  // Its view carries a second sentence (`against`), which the runtime asks for (PairLoop).
  static comparesSentences = true;

  bodyChanged(view, previous) {
    const a = view.against;
    const b = previous?.against;
    return super.bodyChanged(view, previous) || a?.result !== b?.result || a?.sentence !== b?.sentence || a?.error !== b?.error;
  }

  render(view) {
    if (!this.hasResult(view)) {
      this._parts = null;
      return;
    }
    if (!this._parts) this.build();
    this.update(view);
  }

  build() {
    const input = (id, label) => h('input', { type: 'text', id, name: id, autocomplete: 'off', spellcheck: 'false', 'aria-label': label });
    const first = input('first', 'First sentence');
    const second = input('second', 'Second sentence');
    const error = h('div.input-error', { role: 'status' });
    // What the line under the boxes says: a refusal of the boxes' own (empty, too long), or the
    // engine's refusal of a sentence, which the view carries.
    const say = (message) => {
      setText(error, message);
      this._parts.boxSaid = Boolean(message);
    };
    for (const box of [first, second]) refuseLongPastes(box, say, KEEPS);
    const submit = () => {
      const refusal = textRefusal(first.value, KEEPS) ?? textRefusal(second.value, KEEPS);
      say(refusal ?? '');
      if (!refusal) this.select({ sentence: first.value, against: second.value });
    };
    const presets = h('div.presets', { role: 'group', 'aria-label': 'Preset pairs' }, h('span.muted', { text: 'Pairs:' }),
      PAIR_PRESETS.map(([a, b]) => h('button', {
        type: 'button', title: `${a} / ${b}`, text: pairName(a, b),
        on: { click: () => { first.value = a; second.value = b; submit(); } },
      })));
    const form = h('form.pair', { on: { submit: (e) => { e.preventDefault(); submit(); } } },
      h('label', { for: 'first', text: 'First' }), first,
      h('label', { for: 'second', text: 'Second' }), second,
      h('div.actions', {}, h('button.primary', { type: 'submit', text: 'Compare' })));
    const chips = new TokenChips({ label: 'Tokens of the first sentence: choose the word whose rows are compared', onSelect: (patch) => this.select(patch) });
    const menu = new HeadMenu((patch) => this.select(patch));
    // Under each panel's title: its sentence, quoted (the difference's: its head and its bars).
    const panel = (kind, title, chart) => {
      const quote = h(kind === 'difference' ? 'span' : 'q');
      const said = h('p.said', {}, quote);
      const missing = h('p.missing', { hidden: true });
      const section = h('section.panel', { dataset: { kind } }, h('h3', { text: title }), said, missing, chart.el);
      return { section, said, quote, missing, chart };
    };
    const panels = {
      first: panel('first', 'First sentence', new RowChart({ compact: true, track: true, digits: 3 })),
      second: panel('second', 'Second sentence', new RowChart({ compact: true, track: true, digits: 3 })),
      difference: panel('difference', 'First minus second', new RowChart({ compact: true, signed: true })),
    };
    const facts = { sums: h('span'), largest: h('span') };
    const legend = h('div');
    this.bodyEl.replaceChildren(form, presets, error, menu.el, h('p.word-line', { text: 'The word whose rows are compared (tokens without a partner in the second sentence cannot be chosen):' }), chips.scroller,
      h('div.panels', {}, Object.values(panels).map((p) => p.section)), legend,
      h('div.pair-facts', { 'aria-live': 'polite', 'aria-atomic': 'true' }, facts.sums, facts.largest));
    this._parts = { first, second, error, boxSaid: false, chips, menu, panels, facts, legend, aligned: null, legendKey: null };
  }

  update(view) {
    const p = this._parts;
    const { result, token, layer, head, showSpecial } = view;
    const other = view.against?.result ?? null;
    const live = view.mode === 'live';
    // The boxes hold the sentences asked for (a refused one stays as typed until the next pair).
    const active = this.shadowRoot.activeElement;
    if (active !== p.first && p.first.value !== (view.sentence ?? result.text)) p.first.value = view.sentence ?? result.text;
    if (active !== p.second && view.against && p.second.value !== view.against.sentence) p.second.value = view.against.sentence;
    p.first.disabled = !live;
    p.second.disabled = !live;
    const refused = view.inputError ?? view.against?.error ?? '';
    if (refused || !p.boxSaid) {
      setText(p.error, refused);
      p.boxSaid = false;
    }
    p.menu.update(result, layer, head);
    // The alignment, once per pair of results.
    if (p.aligned?.first !== result || p.aligned?.second !== other) p.aligned = other ? { first: result, second: other, ...alignTokens(result, other) } : { first: result, second: null, pairs: null, partner: null };
    const a = p.aligned;
    p.chips.update(result, token, showSpecial);
    p.chips.chips.forEach((chip, i) => {
      const alone = Boolean(a.partner) && a.partner[i] < 0;
      if (chip.disabled !== alone) chip.disabled = alone;
    });
    const word = result.tokens[token].text;
    const partner = a.partner ? a.partner[token] : -1;
    const rowA = attentionRow(result, layer, head, token);
    const sumA = rowStat(result, layer, head, token).sum;
    const where = labelledHeadName(result, layer, head);
    const { first, second, difference } = p.panels;
    setText(first.quote, result.text);
    first.chart.update({ tokens: result.tokens, roles: result.roles, row: rowA, selected: token, showSpecial, scaleMax: FULL_SCALE, caption: `\u201c${word}\u201d in ${headName(layer, head)}` });
    Object.assign(first.chart.table.dataset, { sentence: result.text, token: String(token), layer: String(layer), head: String(head) });
    const comparable = other && partner >= 0 && layer < other.layers && head < other.heads;
    for (const panel of [second, difference]) {
      panel.chart.el.hidden = !comparable;
      panel.missing.hidden = Boolean(comparable);
    }
    setText(second.quote, other?.text ?? view.against?.sentence ?? '');
    if (!comparable) {
      const why = !other
        ? (view.against?.error ?? 'The second sentence has not been analysed yet.')
        : `\u201c${word}\u201d has no partner in the second sentence; choose a word both sentences have.`;
      setText(second.missing, why);
      setText(difference.missing, why);
      setText(p.facts.sums, `Row sum ${fmt(sumA, 6)} in the first sentence.`);
      setText(p.facts.largest, '');
      return;
    }
    const rowB = attentionRow(other, layer, head, partner);
    const sumB = rowStat(other, layer, head, partner).sum;
    second.chart.update({ tokens: other.tokens, roles: other.roles, row: rowB, selected: partner, showSpecial, scaleMax: FULL_SCALE, caption: `\u201c${other.tokens[partner].text}\u201d in ${headName(layer, head)}` });
    Object.assign(second.chart.table.dataset, { sentence: other.text, token: String(partner), layer: String(layer), head: String(head) });
    // The difference, over the aligned tokens: a token the two sentences share is named once,
    // a changed one by both its forms.
    if (!a.labels) {
      a.labels = a.pairs.map(({ a: i, b: j }) => {
        const ta = i >= 0 ? result.tokens[i].text : '\u2014';
        const tb = j >= 0 ? other.tokens[j].text : '\u2014';
        return { text: ta === tb ? ta : `${ta} / ${tb}` };
      });
      a.roles = Uint8Array.from(a.pairs, ({ a: i, b: j }) => (i >= 0 ? result.roles[i] : other.roles[j]));
    }
    const diff = rowDifference(a.pairs, rowA, rowB);
    const selected = a.pairs.findIndex((x) => x.a === token);
    difference.chart.update({ tokens: a.labels, roles: a.roles, row: diff, selected, showSpecial, caption: `\u201c${word}\u201d: first minus second` });
    let top = 0;
    for (let k = 1; k < diff.length; ++k) if (Math.abs(diff[k]) > Math.abs(diff[top])) top = k;
    Object.assign(difference.chart.table.dataset, { token: String(token), partner: String(partner), layer: String(layer), head: String(head) });
    setText(difference.quote, where);
    setText(p.facts.sums, `Row sums ${fmt(sumA, 6)} and ${fmt(sumB, 6)}.`);
    setText(p.facts.largest, `Largest difference: ${signed(diff[top])} on \u201c${a.labels[top].text}\u201d${diff[top] > 0 ? ' (more in the first sentence)' : diff[top] < 0 ? ' (more in the second)' : ''}.`);
    const scale = differenceScale(diff);
    const legendKey = `${result.n}/${scale}`;
    if (p.legendKey !== legendKey) {
      p.legendKey = legendKey;
      p.legend.replaceChildren(barLegend(rowA, FULL_SCALE, `weight from 0 to 1, the track\u2019s full length; a difference from the middle, right where the first sentence gives more weight, left where the second does, on a scale from \u2212${fmt(scale, 3)} to +${fmt(scale, 3)}`, { track: true }));
    }
  }
}

// A preset pair's button: the first sentence's words up to where the two part, then both
// endings ("The trophy doesn't fit ... too big / small.").
export function pairName(a, b) {
  const wa = a.split(' ');
  const wb = b.split(' ');
  let k = 0;
  while (k < wa.length && k < wb.length && wa[k] === wb[k]) ++k;
  const start = wa.slice(0, Math.min(k, 3)).join(' ');
  const gap = k > 3 ? ' \u2026 ' : ' ';
  return `${start}${gap}${wa.slice(k).join(' ')} / ${wb.slice(k).join(' ')}`;
}

define('pair', AttentionPair);
