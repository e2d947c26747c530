// <attention-heads>: the selected token's row in every layer and head as small multiples on
// one shared scale (0 to 1), so that the reader sees every head, none of them trained to
// agree. Each panel names the token that head favours and its ratio to uniform, and its columns
// carry their tokens underneath (upright text turned a quarter, as small as the columns are
// narrow; a sentence too long for that has none, and the readout names them); the line under
// the grid reads out the column under the pointer or the last tapped; clicking a panel selects
// that head for the other figures.
import { AttentionFigure, define } from './base.js';
import { attentionRow, headLabel, isSpecial } from '../engine/result.js';
import { headsForToken, labelledHeadName, shortHeadLabel } from './data.js';
import { FULL_SCALE, rowPanel } from './bars.js';
import { h, MIN_LABEL_PX, scrollBox, setText, svg, thinLabels, unwatchWidth, watchWidth } from './dom.js';
import { fmt, fmtWeight, headShort } from './format.js';
import { CellReadout, partAt, wireProbe } from './readout.js';

const WIDTH = 100;
const HEIGHT = 40;
// Above this many columns a panel's token labels would be too small to read.
const MAX_LABELLED = 30;
// The tokens under the columns are drawn at MIN_LABEL_PX (dom.js) to MAX_AXIS_PX, every one
// where there is room, else thinned (thinLabels); where that would leave fewer than one in
// MAX_AXIS_STEP the strip is left out. The readout names any column's token.
const MAX_AXIS_PX = 14;
const MAX_AXIS_STEP = 3;
// On a wide screen a layer's heads are one row of panels, up to MAX_PER_ROW of them (a panel
// narrower than about 8em cuts its label and its reading); a layer with more heads takes two
// or more rows of equal length, so that every layer starts a row (12 heads: two rows of 6).
const MAX_PER_ROW = 8;
export function panelsPerRow(heads) {
  const rows = Math.ceil(heads / MAX_PER_ROW);
  for (let r = rows; r <= rows + 1; ++r) if (heads % r === 0) return heads / r;
  return Math.ceil(heads / rows);
}
const ordinal = (k) => ({ 2: 'second', 3: 'third' })[k] ?? `${k}th`;

class AttentionHeads extends AttentionFigure {
  static css = `
  .multiples { display: grid; gap: 0.5em; grid-template-columns: repeat(2, minmax(0, 1fr)); }
  @container (min-width: 520px) { .multiples { grid-template-columns: repeat(var(--per-row), minmax(0, 1fr)); } }
  .multiple {
    text-align: left; padding: 0.35em 0.45em; border: 2px solid var(--attn-line); border-radius: 6px;
    background: var(--attn-bg); min-width: 0; display: block; width: 100%;
  }
  .multiple[aria-pressed="true"] { border-color: var(--attn-bar); }
  .multiple .title { display: flex; justify-content: space-between; gap: 0.3em; font-size: max(12px, 0.78em); color: var(--attn-muted); }
  .multiple .title b { color: var(--attn-fg); }
  .multiple .title .label { flex: 1 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .multiple .fav { font-size: max(12px, 0.82em); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .multiple .plot { display: block; margin: 0.2em 0; container-type: inline-size; touch-action: manipulation; }
  .multiple svg { display: block; width: 100%; height: auto; }
  /* The columns' tokens, under their columns, read upwards and ending at the chart; the type is
     as large as a column is wide, from 12px to 14px (--axis-px, set when the panel's width is
     known), and thinned where columns are narrower; the strip keeps one height. */
  .multiple .axis {
    display: grid; grid-template-columns: repeat(var(--cols), minmax(0, 1fr)); align-items: start;
    font-size: var(--axis-px, 12px); height: 4.6em; overflow: hidden; padding-top: 1px;
  }
  .multiple .axis[hidden] { display: none; }
  .multiple .axis span {
    writing-mode: vertical-rl; transform: rotate(180deg); line-height: 1; white-space: nowrap; overflow: hidden;
    text-overflow: ellipsis; max-height: 4.5em; min-width: 0; justify-self: center; color: var(--attn-muted);
  }
  .multiple .axis .special { font-style: italic; }
  .multiple .axis .on { color: var(--attn-fg); font-weight: 700; }
  /* The readout sits under the panels and covers none of them; on a phone, where they are taller
     than the screen, the probed panel's own line says the weight read (showReadout). */
  .readout { padding: 0.3em 0.2em; border-top: 1px solid var(--attn-line); margin-top: 0.5em; }
  .multiple .fav.probed { color: var(--attn-fg); font-weight: 600; }
  .multiple .col { fill: var(--attn-bar); }
  .multiple .col.self { fill: var(--attn-muted); }
  .multiple .uniform { stroke: var(--attn-uniform); stroke-width: 1; stroke-dasharray: 3 2; vector-effect: non-scaling-stroke; }
  .multiple .base { stroke: var(--attn-line); vector-effect: non-scaling-stroke; }
  `;

  static placeholderHeight = '20em';

  // The panels (one per head) and their columns are built once per sentence; a new token moves the columns'
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
        panel.button.dataset.ratio = String(x.ratio_to_uniform);
        setText(panel.ratio, `\u00d7${fmt(x.ratio_to_uniform, 1)}`);
        panel.favText = `\u2192 ${result.tokens[x.argmax].text} ${fmt(x.max, 2)}`;
        if (b.echoed !== panel) setText(panel.fav, panel.favText);
        // The panel's name is its visible text (WCAG's "label in name"); its description says it in words.
        setText(panel.description, `${labelledHeadName(result, x.layer, x.head)}: favours ${result.tokens[x.argmax].text} with ${fmt(x.max, 3)}, ratio to uniform ${fmt(x.ratio_to_uniform, 2)}`);
      });
      b.group.setAttribute('aria-label', `The row of ${word} in all ${heads.length} heads`);
      // A column read for another token is not this token's: the readout goes back to the selection.
      if (b.token >= 0 && b.readout.probe?.source !== 'keyboard') b.readout.clear();
      b.word = word;
      b.token = token;
      this.writeLegend();
      b.fitAxis();
      b.tableFor = -1;
      b.drawnToken = -1;
    }
    this.drawColumns();
    const selected = layer * result.heads + head;
    if (b.selected !== selected) {
      const [was, now] = [b.panels[b.selected]?.button, b.panels[selected]?.button];
      was?.setAttribute('aria-pressed', 'false');
      now?.setAttribute('aria-pressed', 'true');
      if (was) was.tabIndex = -1;
      if (now) now.tabIndex = 0;
      b.selected = selected;
    }
    this.showReadout();
    this.fillTable();
  }

  // The columns (L x H x n of them) are drawn when the figure is on screen: far off screen
  // (content-visibility: auto in the article) they wait until the reader scrolls near. A panel's
  // columns are one path, and the selected token's column (grey) a second: two objects to lay out
  // per panel, where a rect per column made a new token lay out every column of every head.
  drawColumns() {
    const b = this._built;
    if (!b || b.drawnToken === b.token || this._skipped) return;
    const { result, token } = b;
    headsForToken(result, token).forEach((x, k) => {
      const row = attentionRow(result, x.layer, x.head, token);
      let others = '';
      let self = '';
      b.columns.forEach((j, c) => {
        const column = `M${b.columnX[c]} ${(HEIGHT * (1 - row[j])).toFixed(3)}h${b.columnWidth}V${HEIGHT}h-${b.columnWidth}z`;
        if (j === token) self = column;
        else others += column;
      });
      b.panels[k].columns.setAttribute('d', others);
      b.panels[k].self.setAttribute('d', self);
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

  // The legend under the panels: what a column is, and, where the panels carry no tokens under
  // their columns (too many, or too narrow to label at a legible size), how to read them.
  writeLegend() {
    const b = this._built;
    if (!b?.word) return;
    const step = b.axisStep ?? 1;
    const unlabelled = b.columns.length > MAX_LABELLED || step > MAX_AXIS_STEP
      ? ` (${b.columns.length > MAX_LABELLED ? 'too many' : 'too narrow here'} to label under the columns: point at or tap one to read its token)`
      : step > 1 ? ` (every ${ordinal(step)} one, counted from \u201c${b.word}\u201d, named under the columns, as there is room: point at or tap a column to read its token)` : '';
    setText(b.legendText, `Columns: the ${b.columns.length} tokens in order${unlabelled}, height = weight from 0 to 1 (grey: \u201c${b.word}\u201d itself).`);
  }

  build(result, showSpecial) {
    const n = result.n;
    const columns = [];
    for (let j = 0; j < n; ++j) if (showSpecial || !isSpecial(result.roles, j)) columns.push(j);
    const step = WIDTH / columns.length;
    const uniformY = HEIGHT * (1 - 1 / n);
    const panels = [];
    // One panel's chart is drawn, and cloned for the other heads.
    const chartTemplate = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', 'aria-hidden': 'true' },
      svg('path', { class: 'col', d: '' }),
      svg('path', { class: 'col self', d: '' }),
      svg('line', { class: 'base', x1: 0, x2: WIDTH, y1: HEIGHT, y2: HEIGHT }),
      svg('line', { class: 'uniform', x1: 0, x2: WIDTH, y1: uniformY, y2: uniformY }));
    // The chart and the tokens under its columns, cloned for the other heads.
    const labelled = columns.length <= MAX_LABELLED;
    const first = h('span.plot', {},
      chartTemplate,
      labelled ? h('span.axis', { 'aria-hidden': 'true', style: { '--cols': String(columns.length) } },
        columns.map((j) => h(`span${isSpecial(result.roles, j) ? '.special' : ''}`, { text: result.tokens[j].text }))) : null);
    for (let layer = 0; layer < result.layers; ++layer) {
      for (let head = 0; head < result.heads; ++head) {
        const k = panels.length;
        const chart = k === 0 ? first : first.cloneNode(true);
        const [columnPath, selfPath] = chart.querySelectorAll('path.col');
        const axis = chart.querySelector('.axis');
        const profile = headLabel(result, layer, head);
        const ratio = h('span');
        const fav = h('span.fav', { title: profile ? `head profile over the sentence: ${profile}` : undefined });
        const description = h('span.visually-hidden', { id: `${this.channel}-head-${k}` });
        const button = h('button.multiple', {
          type: 'button', tabindex: '-1', 'aria-pressed': 'false', 'aria-describedby': description.id, dataset: { index: String(k), layer: String(layer), head: String(head) },
        },
        h('span.title', {}, h('b', { text: headShort(layer, head) }), h('span.label', { text: shortHeadLabel(profile), title: profile || undefined }), ratio),
        chart,
        fav);
        panels.push({ button, description, columns: columnPath, self: selfPath, ratio, fav, plot: chart, labels: axis ? [...axis.children] : [] });
      }
    }
    const group = h('div.multiples', {
      role: 'group', 'aria-label': 'Every head\u2019s row. Arrow keys move between the heads and choose one.', style: { '--per-row': String(panelsPerRow(result.heads)) },
    }, panels.map((p) => p.button), panels.map((p) => p.description));
    unwatchWidth(this._axisPlot);
    this._axisPlot = labelled ? first : null;
    // The labels thinned for the columns' width, counted from the selected token's column; again
    // when the width or the token changes.
    let column = 0;
    const fitAxis = () => {
      const b = this._built;
      if (!column || b?.group !== group) return;
      const anchor = Math.max(0, columns.indexOf(b.token));
      let step = 1;
      for (const p of panels) {
        step = thinLabels(p.labels, column, anchor);
        p.plot.querySelector('.axis').hidden = step > MAX_AXIS_STEP;
      }
      if (b.axisStep !== step) {
        b.axisStep = step;
        this.writeLegend();
      }
    };
    if (labelled) {
      watchWidth(first, (width) => {
        column = width / columns.length;
        group.style.setProperty('--axis-px', `${Math.min(MAX_AXIS_PX, Math.max(MIN_LABEL_PX, column * 0.85)).toFixed(1)}px`);
        fitAxis();
      });
    }
    group.addEventListener('click', (event) => {
      const button = event.target.closest?.('button.multiple');
      if (button) this.select({ layer: Number(button.dataset.layer), head: Number(button.dataset.head) });
    });
    // One tab stop for the panels (the selected head's), as for the instrument's tiles: the arrow
    // keys move to the next head (left, right) or layer (up, down) and choose it.
    group.addEventListener('keydown', (event) => {
      const button = event.target.closest?.('button.multiple');
      const move = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[event.key];
      if (!button || !move) return;
      event.preventDefault();
      const layer = Math.min(result.layers - 1, Math.max(0, Number(button.dataset.layer) + move[0]));
      const head = Math.min(result.heads - 1, Math.max(0, Number(button.dataset.head) + move[1]));
      panels[layer * result.heads + head].button.focus();
      this.select({ layer, head });
    });
    // The readout: the column under the pointer (mouse, pen) or the one tapped, the head the
    // keyboard is on, else the selected head's largest weight.
    const readout = new CellReadout({ hint: 'point at or tap a column' });
    const probe = (event, source) => {
      const button = event.target.closest?.('button.multiple');
      const b = this._built;
      if (!button || !b) return;
      const panel = b.panels[Number(button.dataset.index)];
      const box = panel.plot.getBoundingClientRect();
      const c = partAt(box.left, box.width, columns.length, event.clientX);
      const layerHead = { layer: Number(button.dataset.layer), head: Number(button.dataset.head) };
      if (c >= 0) readout.set(result, { ...layerHead, column: columns[c], source });
      else if (source === 'pointer') readout.set(result, { ...layerHead, source });
      else return;
      this.showReadout();
    };
    wireProbe(group, probe, () => {
      readout.leave();
      this.showReadout();
    });
    group.addEventListener('focusin', (event) => {
      const button = event.target.closest?.('button.multiple');
      if (!button?.matches(':focus-visible')) return;
      readout.set(result, { layer: Number(button.dataset.layer), head: Number(button.dataset.head), source: 'keyboard' });
      this.showReadout();
    });
    const legendText = h('span');
    const tableSlot = scrollBox('div.table-scroll', 'Every head\u2019s row, as a table');
    const details = h('details.data', { on: { toggle: () => this.fillTable() } }, h('summary', { text: `All ${result.layers * result.heads} rows as a table` }), tableSlot);
    const focused = this.shadowRoot.activeElement?.dataset?.index;
    this.bodyEl.replaceChildren(
      group,
      readout.el,
      h('div.legend', { 'aria-hidden': 'true' }, legendText, h('span', {}, h('span.swatch-line'), `uniform 1/${n}`)),
      details);
    if (focused !== undefined) panels[Number(focused)]?.button.focus();
    const columnX = columns.map((j, c) => (c * step + step * 0.1).toFixed(3));
    this._built = { result, showSpecial, columns, columnX, columnWidth: (step * 0.8).toFixed(3), panels, group, legendText, tableSlot, details, readout, fitAxis, token: -1, selected: -1, tableFor: -1, drawnToken: -1 };
  }

  // The readout's line, and the token it reads in bold under the columns of its panel.
  showReadout() {
    const b = this._built;
    const v = this.view;
    if (!b || !v?.result) return;
    const reading = b.readout.render(b.result, v);
    const c = b.columns.indexOf(reading.column);
    const panel = b.panels[reading.layer * b.result.heads + reading.head];
    const label = panel?.labels[c] ?? null;
    // A probed column's weight also stands in its panel's line, where the eye is.
    const probed = b.readout.probe ? panel : null;
    if (b.echoed && b.echoed !== probed) {
      setText(b.echoed.fav, b.echoed.favText);
      b.echoed.fav.classList.remove('probed');
    }
    if (probed) {
      setText(probed.fav, `\u201c${b.result.tokens[reading.column].text}\u201d ${fmtWeight(reading.value, 3, { short: true })}`);
      probed.fav.classList.add('probed');
    }
    b.echoed = probed;
    if (b.boldLabel !== label) {
      b.boldLabel?.classList.remove('on');
      label?.classList.add('on');
      b.boldLabel = label;
    }
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
        Array.from(attentionRow(result, x.layer, x.head, token), (v) => h('td', { text: fmtWeight(v, 3, { short: true }) })))))));
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
        showSpecial: view.showSpecial, scaleMax: FULL_SCALE, track: true, title: `${headShort(x.layer, x.head)} ${shortHeadLabel(headLabel(result, x.layer, x.head))} \u00d7${fmt(x.ratio_to_uniform, 1)}`.replace(/  +/g, ' '),
      })),
      note: 'Every panel on one scale from 0 to 1; dashed line: the uniform share 1/n; \u00d7: ratio to uniform.',
    };
  }
}

define('heads', AttentionHeads);
