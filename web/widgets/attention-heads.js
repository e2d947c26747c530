// <attention-heads>: the selected token's row in every layer and head as small multiples on
// one shared scale (0 to 1), so that the reader sees sixteen heads that were never trained to
// agree. Each panel names the token that head favours and its ratio to uniform; clicking a
// panel selects that head for the other figures.
import { AttentionFigure, define } from './base.js';
import { attentionRow, headLabel, isSpecial } from '../engine/result.js';
import { headsForToken, labelledHeadName, shortHeadLabel } from './data.js';
import { rowPanel } from './bars.js';
import { fmt, h, headShort, setText, svg } from './dom.js';

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
  .multiple .title .label { flex: 1 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .multiple .fav { font-size: 0.82em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .multiple svg { display: block; width: 100%; height: auto; margin: 0.2em 0; }
  .multiple .col { fill: var(--attn-bar); transform-box: fill-box; transform-origin: bottom; }
  .multiple .col.self { fill: var(--attn-muted); }
  .multiple .uniform { stroke: var(--attn-uniform); stroke-width: 1; stroke-dasharray: 3 2; vector-effect: non-scaling-stroke; }
  .multiple .base { stroke: var(--attn-line); vector-effect: non-scaling-stroke; }
  `;

  static placeholderHeight = '20em';

  // The 16 panels and their columns are built once per sentence; a new token moves the columns'
  // heights and rewrites the panels' labels, a new head only moves the pressed panel.
  render(view) {
    if (!this.hasResult(view)) {
      this._built = null;
      return;
    }
    const { result, token, layer, head, showSpecial } = view;
    if (!this._built || this._built.result !== result || this._built.showSpecial !== showSpecial) this.build(result, showSpecial);
    const b = this._built;
    if (b.token !== token) {
      const heads = headsForToken(result, token);
      const word = result.tokens[token].text;
      heads.forEach((x, k) => {
        const panel = b.panels[k];
        if (b.token >= 0) panel.rects[b.columns.indexOf(b.token)]?.setAttribute('class', 'col');
        panel.rects[b.columns.indexOf(token)]?.setAttribute('class', 'col self');
        panel.button.dataset.ratio = String(x.ratio_to_uniform);
        panel.button.setAttribute('aria-label', `${labelledHeadName(result, x.layer, x.head)}: favours ${result.tokens[x.argmax].text} with ${fmt(x.max, 3)}, ratio to uniform ${fmt(x.ratio_to_uniform, 2)}`);
        setText(panel.ratio, `\u00d7${fmt(x.ratio_to_uniform, 1)}`);
        setText(panel.fav, `\u2192 ${result.tokens[x.argmax].text} ${fmt(x.max, 2)}`);
      });
      b.group.setAttribute('aria-label', `The row of ${word} in all ${heads.length} heads`);
      setText(b.legendText, `Columns: the ${b.columns.length} tokens in order, height = weight from 0 to 1 (grey: \u201c${word}\u201d itself).`);
      b.token = token;
      b.tableFor = -1;
      b.drawnToken = -1;
    }
    this.drawColumns();
    const selected = layer * result.heads + head;
    if (b.selected !== selected) {
      b.panels[b.selected]?.button.setAttribute('aria-pressed', 'false');
      b.panels[selected]?.button.setAttribute('aria-pressed', 'true');
      b.selected = selected;
    }
    this.fillTable();
  }

  // The columns' heights (16 x n of them) are drawn when the figure is on screen: far off screen
  // (content-visibility: auto in the article) they wait until the reader scrolls near.
  drawColumns() {
    const b = this._built;
    if (!b || b.drawnToken === b.token || this._skipped) return;
    const { result, token } = b;
    headsForToken(result, token).forEach((x, k) => {
      const row = attentionRow(result, x.layer, x.head, token);
      b.panels[k].rects.forEach((rect, c) => {
        const w = row[b.columns[c]];
        rect.setAttribute('y', HEIGHT * (1 - w));
        rect.setAttribute('height', HEIGHT * w);
      });
    });
    b.drawnToken = token;
  }

  connectedCallback() {
    super.connectedCallback();
    if (this._watching) return;
    this._watching = true;
    this.addEventListener('contentvisibilityautostatechange', (event) => {
      this._skipped = event.skipped;
      this.drawColumns();
    });
  }

  build(result, showSpecial) {
    const n = result.n;
    const columns = [];
    for (let j = 0; j < n; ++j) if (showSpecial || !isSpecial(result.roles, j)) columns.push(j);
    const step = WIDTH / columns.length;
    const uniformY = HEIGHT * (1 - 1 / n);
    const panels = [];
    // One panel's chart is drawn, and cloned for the other heads.
    const first = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', 'aria-hidden': 'true' },
      columns.map((j, c) => svg('rect', { class: 'col', x: c * step + step * 0.1, width: step * 0.8, y: HEIGHT, height: 0 })),
      svg('line', { class: 'base', x1: 0, x2: WIDTH, y1: HEIGHT, y2: HEIGHT }),
      svg('line', { class: 'uniform', x1: 0, x2: WIDTH, y1: uniformY, y2: uniformY }));
    for (let layer = 0; layer < result.layers; ++layer) {
      for (let head = 0; head < result.heads; ++head) {
        const k = panels.length;
        const chart = k === 0 ? first : first.cloneNode(true);
        const rects = [...chart.querySelectorAll('rect')];
        const profile = headLabel(result, layer, head);
        const ratio = h('span');
        const fav = h('span.fav', { title: profile ? `head profile over the sentence: ${profile}` : undefined });
        const button = h('button.multiple', {
          type: 'button', 'aria-pressed': 'false', dataset: { index: String(k), layer: String(layer), head: String(head) },
        },
        h('span.title', {}, h('b', { text: headShort(layer, head) }), h('span.label', { text: shortHeadLabel(profile), title: profile || undefined }), ratio),
        chart,
        fav);
        panels.push({ button, rects, ratio, fav });
      }
    }
    const group = h('div.multiples', { role: 'group', style: { '--heads': String(result.heads) } }, panels.map((p) => p.button));
    group.addEventListener('click', (event) => {
      const button = event.target.closest?.('button.multiple');
      if (button) this.select({ layer: Number(button.dataset.layer), head: Number(button.dataset.head) });
    });
    const legendText = h('span');
    const tableSlot = h('div.table-scroll');
    const details = h('details.data', { on: { toggle: () => this.fillTable() } }, h('summary', { text: 'All sixteen rows as a table' }), tableSlot);
    const focused = this.shadowRoot.activeElement?.dataset?.index;
    this.bodyEl.replaceChildren(
      group,
      h('div.legend', { 'aria-hidden': 'true' }, legendText, h('span', {}, h('span.swatch-line'), `uniform 1/${n}`)),
      details);
    if (focused !== undefined) panels[Number(focused)]?.button.focus();
    this._built = { result, showSpecial, columns, panels, group, legendText, tableSlot, details, token: -1, selected: -1, tableFor: -1, drawnToken: -1 };
  }

  // Every head's row as a table, drawn only while it is open.
  fillTable() {
    const b = this._built;
    if (!b?.details.open || b.tableFor === b.token) return;
    b.tableFor = b.token;
    const { result } = b;
    const token = b.token;
    const word = result.tokens[token].text;
    const heads = headsForToken(result, token);
    b.tableSlot.replaceChildren(h('table.values', {},
      h('caption.visually-hidden', { text: `The row of \u201c${word}\u201d in each head; columns are the tokens` }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Head' }), h('th', { scope: 'col', text: 'Ratio' }),
        result.tokens.map((t) => h('th', { scope: 'col', text: t.text })))),
      h('tbody', {}, heads.map((x) => h('tr', {},
        h('th', { scope: 'row', text: headShort(x.layer, x.head) }),
        h('td', { text: fmt(x.ratio_to_uniform, 2) }),
        Array.from(attentionRow(result, x.layer, x.head, token), (v) => h('td', { text: fmt(v, 3) })))))));
  }

  exportTitle(view) {
    return `The row of \u201c${view.result.tokens[view.token].text}\u201d in all ${view.result.layers * view.result.heads} heads`;
  }

  exportLines(view) {
    return [...this.contextLines(view), `Token \u201c${view.result.tokens[view.token].text}\u201d, ${view.token + 1} of ${view.result.n}; selected: ${labelledHeadName(view.result, view.layer, view.head)}`];
  }

  exportPanels(view) {
    const { result, token } = view;
    return {
      columns: result.heads,
      panels: headsForToken(result, token).map((x) => rowPanel({
        tokens: result.tokens, roles: result.roles, row: attentionRow(result, x.layer, x.head, token), selected: token,
        showSpecial: view.showSpecial, scaleMax: 1, title: `${headShort(x.layer, x.head)} ${shortHeadLabel(headLabel(result, x.layer, x.head))} \u00d7${fmt(x.ratio_to_uniform, 1)}`.replace(/  +/g, ' '),
      })),
      note: 'Every panel on one scale from 0 to 1; dashed line: the uniform share 1/n; \u00d7: ratio to uniform.',
    };
  }
}

define('heads', AttentionHeads);
