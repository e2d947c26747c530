// <attention-row>: the instrument's row view, small enough to embed in someone else's article.
// The sentence's tokens as chips (click one to read its row), a menu of every layer and head,
// and the selected token's attention row as labelled bars with its sum, the uniform share 1/n,
// the ratio to uniform and the entropy.
import { AttentionFigure, define } from './base.js';
import { attentionRow, rowStat } from '../engine/result.js';
import { CONTROLS_CSS, headMenu, tokenChips } from './controls.js';
import { fmt, h, headName } from './dom.js';
import { barLegend, barScale, rowChart, selectedRowPanels, specialShare } from './bars.js';

class AttentionRow extends AttentionFigure {
  static css = CONTROLS_CSS;

  static placeholderHeight = '16em';

  static frameHeight = 640;

  render(view) {
    if (!this.hasResult(view)) return;
    const { result, token, layer, head } = view;
    const word = result.tokens[token].text;
    const row = attentionRow(result, layer, head, token);
    const s = rowStat(result, layer, head, token);
    const scaleMax = barScale(row);
    const chart = rowChart({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial: view.showSpecial, scaleMax,
      caption: `How \u201c${word}\u201d (token ${token + 1} of ${result.n}) reads the sentence in ${headName(layer, head)}.`,
    });
    Object.assign(chart.dataset, { layer: String(layer), head: String(head), token: String(token), sentence: result.text });
    const hiddenShare = view.showSpecial ? null : specialShare(row, result.roles);
    this.bodyEl.replaceChildren(
      tokenChips(result, token, view.showSpecial, (patch) => this.select(patch), 'Tokens of the sentence: choose whose row to read'),
      headMenu(result, layer, head, (patch) => this.select(patch)),
      chart,
      barLegend(row, scaleMax),
      h('div.facts', { 'aria-live': 'polite' },
        h('span', {}, 'Row sum ', h('b.row-sum', { text: fmt(s.sum, 6) })),
        h('span', {}, 'ratio to uniform ', h('b.ratio', { text: fmt(s.ratio_to_uniform, 2) })),
        h('span', {}, 'entropy ', h('b', { text: fmt(s.entropy, 3) }), ` of at most ${fmt(Math.log(result.n), 3)} nats`),
        hiddenShare === null ? null : h('span.muted', { text: `[CLS] and [SEP] hidden; they hold ${fmt(hiddenShare, 4)}.` })));
  }

  exportTitle(view) {
    return `The attention row of \u201c${view.result.tokens[view.token].text}\u201d`;
  }

  exportPanels(view) {
    return selectedRowPanels(view);
  }
}

define('row', AttentionRow);
