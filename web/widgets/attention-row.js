// <attention-row>: the instrument's row view, small enough to embed in someone else's article.
// The sentence's tokens as chips (click one to read its row), a menu of every layer and head,
// and the selected token's attention row as labelled bars with its sum, the uniform share 1/n,
// the ratio to uniform and the entropy. A lens switch reads the row another way (what the
// token used, not only what it paid: web/engine/lenses.js), with the share of the token's new
// vector that came from other tokens, and a live score of which lens agrees with the model.
import { AttentionFigure, define } from './base.js';
import { LENSES, lensLegend, lensReading, lensRowOf, mixingRatio } from '../engine/lenses.js';
import { rowSummary } from './data.js';
import { CONTROLS_CSS, HeadMenu, TokenChips } from './controls.js';
import { h, setText } from './dom.js';
import { fmt } from './format.js';
import { barLegend, FULL_SCALE, RowChart, selectedRowPanels, specialShare } from './bars.js';
import { FaithfulnessPanel, LENS_CSS, LensSwitch, MixingBar } from './lens-panel.js';

class AttentionRow extends AttentionFigure {
  static css = CONTROLS_CSS + LENS_CSS;

  static showsLenses = true;

  static placeholderHeight = '16em';

  // Built once, then updated in place: a new selection changes the pressed chip, the menu's
  // value, the bars and the facts; a new sentence rebuilds the chips and the chart's rows.
  render(view) {
    if (!this.hasResult(view)) {
      this._parts = null;
      return;
    }
    if (!this._parts) {
      const f = { sum: h('b.row-sum'), ratio: h('b.ratio'), entropy: h('b'), ceiling: document.createTextNode(''), hidden: h('span.muted') };
      this._parts = {
        chips: new TokenChips({ label: 'Tokens of the sentence: choose whose row to read', onSelect: (patch) => this.select(patch) }),
        menu: new HeadMenu((patch) => this.select(patch)),
        lenses: new LensSwitch((patch) => this.select(patch)),
        mixing: new MixingBar(),
        faithfulness: new FaithfulnessPanel(this),
        chart: new RowChart({ track: true }),
        legend: h('div'),
        facts: f,
        scaleMax: null,
      };
      const p = this._parts;
      this.bodyEl.replaceChildren(p.chips.scroller, p.menu.el, p.lenses.el, p.chart.el, p.legend,
        h('div.facts', { 'aria-live': 'polite', 'aria-atomic': 'true' },
          h('span', {}, 'Row sum ', f.sum),
          h('span', {}, 'ratio to uniform ', f.ratio),
          h('span', {}, 'entropy ', f.entropy, f.ceiling),
          f.hidden),
        p.mixing.el, p.faithfulness.el);
    }
    const p = this._parts;
    const { result, token, layer, head, showSpecial } = view;
    const word = result.tokens[token].text;
    const { lens, row, note } = lensRowOf(view);
    const s = rowSummary(row);
    // On the scale from 0 to 1, each bar on its track: the row's budget is in view.
    const scaleMax = FULL_SCALE;
    p.chips.update(result, token, showSpecial);
    p.menu.update(result, layer, head);
    p.lenses.update(view.lens ?? lens, note);
    p.chart.update({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial, scaleMax,
      caption: `How \u201c${word}\u201d (token ${token + 1} of ${result.n}) reads the sentence ${lensReading(lens, layer, head)}.`,
    });
    Object.assign(p.chart.table.dataset, { layer: String(layer), head: String(head), token: String(token), sentence: result.text, lens });
    p.mixing.update(mixingRatio(result, view.lenses, layer, token), layer, word);
    p.faithfulness.update(view);
    const legendKey = `${scaleMax}/${result.n}/${lens}`;
    if (p.scaleMax !== legendKey) {
      p.scaleMax = legendKey;
      p.legend.replaceChildren(barLegend(row, scaleMax, lensLegend(lens), { track: true }));
    }
    const f = p.facts;
    setText(f.sum, fmt(s.sum, 6));
    setText(f.ratio, fmt(s.ratio_to_uniform, 2));
    setText(f.entropy, fmt(s.entropy, 3));
    f.ceiling.nodeValue = ` of at most ${fmt(Math.log(result.n), 3)} nats`;
    f.hidden.hidden = showSpecial;
    if (!showSpecial) setText(f.hidden, `[CLS] and [SEP] hidden; they hold ${fmt(specialShare(row, result.roles), 4)}.`);
  }

  exportTitle(view) {
    return `The row of \u201c${view.result.tokens[view.token].text}\u201d: ${LENSES[lensRowOf(view).lens].name}`;
  }

  exportPanels(view) {
    return selectedRowPanels(view);
  }
}

define('row', AttentionRow);
