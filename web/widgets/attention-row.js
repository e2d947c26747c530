// <attention-row>: the instrument's row view, small enough to embed in someone else's article.
// The sentence's tokens as chips (click one to read its row), a menu of every layer and head,
// and the selected token's attention row as labelled bars with its sum, the uniform share 1/n,
// the ratio to uniform and the entropy.
import { AttentionFigure, define } from './base.js';
import { attentionRowOf, ROLE, rowSummary } from './data.js';
import { fmt, h, headName } from './dom.js';
import { barLegend, barScale, rowChart, selectedRowPanels, specialShare } from './bars.js';

class AttentionRow extends AttentionFigure {
  static css = `
  .controls { display: flex; flex-wrap: wrap; gap: 0.4em 0.8em; align-items: center; margin-bottom: 0.5em; }
  .controls select { max-width: 100%; padding: 0.2em 0.3em; border: 1px solid var(--attn-line); border-radius: 6px; background: var(--attn-bg); }
  .tokens { display: flex; flex-wrap: wrap; gap: 0.3em; margin: 0 0 0.7em; }
  .chip {
    min-height: 2em; min-width: 2em; padding: 0.1em 0.45em; border-radius: 5px; font-size: 0.92em;
    border: 1px solid var(--attn-line); background: var(--attn-bg); max-width: 100%; overflow-wrap: anywhere;
  }
  .chip.special { font-style: italic; color: var(--attn-muted); }
  .chip[aria-pressed="true"] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); font-style: normal; }
  `;

  static placeholderHeight = '16em';

  static frameHeight = 640;

  render(view) {
    if (!this.hasResult(view)) return;
    const { result, token, layer, head } = view;
    const word = result.tokens[token].text;
    const chips = result.tokens.map((t, i) => {
      const special = result.roles[i] === ROLE.cls || result.roles[i] === ROLE.sep;
      return h(`button.chip${special ? '.special' : ''}`, {
        type: 'button', 'aria-pressed': String(i === token), dataset: { token: String(i) },
        hidden: special && !view.showSpecial, text: t.text,
        on: { click: () => this.select({ token: i }) },
      });
    });
    const menu = h('select', {
      'aria-label': 'Layer and head',
      on: { change: (e) => { const [l, hd] = e.target.value.split(',').map(Number); this.select({ layer: l, head: hd }); } },
    });
    for (let l = 0; l < result.layers; ++l) {
      for (let hd = 0; hd < result.heads; ++hd) menu.append(h('option', { value: `${l},${hd}`, text: headName(l, hd) }));
    }
    menu.value = `${layer},${head}`;
    const row = attentionRowOf(result, layer, head, token);
    const s = rowSummary(row);
    const scaleMax = barScale(row);
    const chart = rowChart({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial: view.showSpecial, scaleMax,
      caption: `How \u201c${word}\u201d (token ${token + 1} of ${result.n}) reads the sentence in ${headName(layer, head)}.`,
    });
    Object.assign(chart.dataset, { layer: String(layer), head: String(head), token: String(token), sentence: result.text });
    const hiddenShare = view.showSpecial ? null : specialShare(row, result.roles);
    this.bodyEl.replaceChildren(
      h('div.tokens', { role: 'group', 'aria-label': 'Tokens of the sentence: choose whose row to read' }, chips),
      h('div.controls', {}, h('label', {}, 'Head ', menu)),
      chart,
      barLegend(row, scaleMax),
      h('div.facts', { 'aria-live': 'polite' },
        h('span', {}, 'Row sum ', h('b.row-sum', { text: fmt(s.sum, 6) })),
        h('span', {}, 'ratio to uniform ', h('b.ratio', { text: fmt(s.ratioToUniform, 2) })),
        h('span', {}, 'entropy ', h('b', { text: fmt(s.entropy, 3) }), ` of at most ${fmt(s.maxEntropy, 3)} nats`),
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
