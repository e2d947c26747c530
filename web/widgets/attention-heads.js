// <attention-heads>: the selected token's row in every layer and head as small multiples on
// one shared scale (0 to 1), so that the reader sees sixteen heads that were never trained to
// agree. Each panel names the token that head favours and its ratio to uniform; clicking a
// panel selects that head for the other figures.
import { AttentionFigure, define } from './base.js';
import { attentionRow, headLabel, isSpecial } from '../engine/result.js';
import { headsForToken } from './data.js';
import { rowPanel } from './bars.js';
import { fmt, h, headName, headShort, svg } from './dom.js';

const WIDTH = 100;
const HEIGHT = 40;

class AttentionHeads extends AttentionFigure {
  static css = `
  .multiples { display: grid; gap: 0.5em; grid-template-columns: repeat(2, minmax(0, 1fr)); }
  @container (min-width: 520px) { .multiples { grid-template-columns: repeat(var(--heads), minmax(0, 1fr)); } }
  .multiple {
    text-align: left; padding: 0.35em 0.45em; border: 2px solid var(--attn-line); border-radius: 6px;
    background: var(--attn-bg); min-width: 0; display: block; width: 100%;
  }
  .multiple[aria-pressed="true"] { border-color: var(--attn-bar); }
  .multiple .title { display: flex; justify-content: space-between; gap: 0.3em; font-size: 0.78em; color: var(--attn-muted); }
  .multiple .title b { color: var(--attn-fg); }
  .multiple .fav { font-size: 0.82em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .multiple svg { display: block; width: 100%; height: auto; margin: 0.2em 0; }
  .multiple .col { fill: var(--attn-bar); }
  .multiple .col.self { fill: var(--attn-muted); }
  .multiple .uniform { stroke: var(--attn-uniform); stroke-width: 1; stroke-dasharray: 3 2; vector-effect: non-scaling-stroke; }
  .multiple .base { stroke: var(--attn-line); vector-effect: non-scaling-stroke; }
  `;

  static placeholderHeight = '20em';

  render(view) {
    if (!this.hasResult(view)) return;
    const { result, token, layer, head } = view;
    const n = result.n;
    const heads = headsForToken(result, token);
    const word = result.tokens[token].text;
    const visible = result.tokens.map((_, j) => view.showSpecial || !isSpecial(result.roles, j));
    const columns = visible.map((v, j) => (v ? j : -1)).filter((j) => j >= 0);
    const step = WIDTH / columns.length;
    const uniformY = HEIGHT * (1 - 1 / n);
    const focused = this.shadowRoot.activeElement?.dataset?.index;
    const panels = heads.map((x, k) => {
      const row = attentionRow(result, x.layer, x.head, token);
      const chart = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', 'aria-hidden': 'true' },
        columns.map((j, c) => svg('rect', {
          class: j === token ? 'col self' : 'col',
          x: c * step + step * 0.1, width: step * 0.8, y: HEIGHT * (1 - row[j]), height: HEIGHT * row[j],
        })),
        svg('line', { class: 'base', x1: 0, x2: WIDTH, y1: HEIGHT, y2: HEIGHT }),
        svg('line', { class: 'uniform', x1: 0, x2: WIDTH, y1: uniformY, y2: uniformY }));
      const on = x.layer === layer && x.head === head;
      const profile = headLabel(result, x.layer, x.head);
      return h('button.multiple', {
        type: 'button', 'aria-pressed': String(on), dataset: { index: String(k), layer: String(x.layer), head: String(x.head), ratio: String(x.ratio_to_uniform) },
        'aria-label': `${headName(x.layer, x.head)}: favours ${result.tokens[x.argmax].text} with ${fmt(x.max, 3)}, ratio to uniform ${fmt(x.ratio_to_uniform, 2)}`,
        on: { click: () => this.select({ layer: x.layer, head: x.head }) },
      },
      h('span.title', {}, h('b', { text: headShort(x.layer, x.head) }), h('span', { text: `\u00d7${fmt(x.ratio_to_uniform, 1)}` })),
      chart,
      h('span.fav', { text: `\u2192 ${result.tokens[x.argmax].text} ${fmt(x.max, 2)}`, title: profile ? `head profile over the sentence: ${profile}` : undefined }));
    });
    const table = h('table.values', {},
      h('caption.visually-hidden', { text: `The row of \u201c${word}\u201d in each head; columns are the tokens` }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Head' }), h('th', { scope: 'col', text: 'Ratio' }),
        result.tokens.map((t) => h('th', { scope: 'col', text: t.text })))),
      h('tbody', {}, heads.map((x) => h('tr', {},
        h('th', { scope: 'row', text: headShort(x.layer, x.head) }),
        h('td', { text: fmt(x.ratio_to_uniform, 2) }),
        Array.from(attentionRow(result, x.layer, x.head, token), (v) => h('td', { text: fmt(v, 3) }))))));
    this.bodyEl.replaceChildren(
      h('div.multiples', { role: 'group', 'aria-label': `The row of ${word} in all ${heads.length} heads`, style: { '--heads': String(result.heads) } }, panels),
      h('div.legend', { 'aria-hidden': 'true' },
        h('span', { text: `Columns: the ${columns.length} tokens in order, height = weight from 0 to 1 (grey: \u201c${word}\u201d itself).` }),
        h('span', {}, h('span.swatch-line'), `uniform 1/${n}`)),
      h('details.data', {}, h('summary', { text: 'All sixteen rows as a table' }), h('div.table-scroll', {}, table)));
    if (focused !== undefined) this.bodyEl.querySelector(`[data-index="${focused}"]`)?.focus();
  }

  exportTitle(view) {
    return `The row of \u201c${view.result.tokens[view.token].text}\u201d in all ${view.result.layers * view.result.heads} heads`;
  }

  exportLines(view) {
    return [...this.contextLines(view), `Token \u201c${view.result.tokens[view.token].text}\u201d, ${view.token + 1} of ${view.result.n}; selected: ${headName(view.layer, view.head)}`];
  }

  exportPanels(view) {
    const { result, token } = view;
    return {
      columns: result.heads,
      panels: headsForToken(result, token).map((x) => rowPanel({
        tokens: result.tokens, roles: result.roles, row: attentionRow(result, x.layer, x.head, token), selected: token,
        showSpecial: view.showSpecial, scaleMax: 1, title: `${headShort(x.layer, x.head)} \u00d7${fmt(x.ratio_to_uniform, 1)}`,
      })),
      note: 'Every panel on one scale from 0 to 1; dashed line: the uniform share 1/n; \u00d7: ratio to uniform.',
    };
  }
}

define('heads', AttentionHeads);
