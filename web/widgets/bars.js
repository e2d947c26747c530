// One attention row as a labelled bar chart that is also a table: each token is a table row
// with its label, a bar and its value, and the uniform share 1/n is a dashed line through the
// bars. Every table row carries the full-precision weight in data-value. On the scale from 0 to
// 1 (FULL_SCALE) each bar lies on a faint track of the full length, so that the reader sees
// where 1 is: the whole of the row's budget, which its bars share.
import { h, scrollBox, setText } from './dom.js';
import { fmt, fmtWeight, signed as signedText } from './format.js';
import { isSpecial } from '../engine/result.js';
import { lensDefinition, lensReading, lensRowOf } from '../engine/lenses.js';
import { rowSummary } from './data.js';

// The top of the scale on which a row's bars are the share of its budget of 1, drawn with a
// track (Figure 1, <attention-row>, the exported pictures of them and of Figure 5).
export const FULL_SCALE = 1;

// The bar scale's top where a chart is scaled to its own row (Figure 4's panels): the row's
// largest weight (or 1/n) rounded up to a tenth.
export function barScale(row) {
  let max = 1 / row.length;
  for (const v of row) max = Math.max(max, v);
  return Math.min(1, Math.ceil(max * 10 - 1e-9) / 10) || 0.1;
}

// The scale of a chart of differences (RowChart's signed form): the largest difference's size,
// rounded up to 1, 2 or 5 times a power of ten, so that its bars fill half the track at most.
export function differenceScale(row) {
  let max = 0;
  for (const v of row) max = Math.max(max, Math.abs(v));
  if (!(max > 0)) return 0.001;
  const power = 10 ** Math.floor(Math.log10(max));
  const step = [1, 2, 5, 10].find((k) => k * power >= max - 1e-12);
  return Math.max(0.001, step * power);
}

// One attention row as a chart that stays on screen: the rows (one per token) are built once per
// sentence, and a new row of weights (another token, another head) changes only the bars'
// widths, the values and the selected and top marks. Long sentences scroll inside the chart
// (div.rows-scroll, bounded in height) instead of stretching the page; the selected token's
// row is scrolled into view there. track: draw the faint track of the full length behind every
// bar (for a chart on the scale from 0 to 1, where the track's end is the weight 1). signed: a
// row of differences (two rows subtracted), each bar drawn from the track's middle, to the right
// for a positive value and to the left for a negative one, on a scale from -scaleMax to
// scaleMax (differenceScale), its value written with its sign; no uniform line.
export class RowChart {
  constructor({ compact = false, digits = 4, track = false, signed = false } = {}) {
    this.digits = digits;
    this.signed = signed;
    // The caption changes with every selection: shown above the chart (where it stays in view
    // while the rows scroll), and kept in the table, out of its layout, for screen readers.
    this.caption = h('caption.visually-hidden');
    this.label = h('div.chart-caption', { 'aria-hidden': 'true' });
    this.body = h('tbody', { role: 'rowgroup' });
    // Laid out as flex rows (style.js), not as a table, so the table's roles are written out:
    // a browser may drop the semantics of a table whose display is changed.
    this.table = h(`table.bars${compact ? '.compact' : ''}${track ? '.tracked' : ''}${signed ? '.signed' : ''}`, { role: 'table' },
      this.caption,
      h('thead.visually-hidden', { role: 'rowgroup' }, h('tr', { role: 'row' },
        h('th', { scope: 'col', role: 'columnheader', text: 'Token' }), h('th', { scope: 'col', role: 'columnheader', text: 'Bar' }), h('th', { scope: 'col', role: 'columnheader', text: 'Weight' }))),
      this.body);
    // The uniform share 1/n is one dashed line over every row, placed on the bars' track.
    this.uniform = h('div.uniform-line', { 'aria-hidden': 'true', hidden: signed });
    this.frame = h('div.rows-frame', {}, this.table, this.uniform);
    this.scroller = scrollBox('div.rows-scroll', 'The row\u2019s weights, one bar per token', this.frame);
    this.el = h('div.chart', {}, this.label, this.scroller);
    this.rows = [];
    this.tokens = null;
    this.showSpecial = null;
    this.selected = -1;
    this.top = -1;
    this.scaleMax = null;
  }

  // The rows are kept from one sentence to the next: a new sentence rewrites the labels of the
  // rows it keeps (and clones the template for any more it needs), so that Chromium lays out the
  // changed text instead of a table of new rows (a 136-token sentence is about 1,200 new boxes to
  // style and lay out on a phone). Cloning one row is several times faster than building each
  // element by element, which a 512-token sentence notices.
  build(tokens, roles, showSpecial) {
    this.tokens = tokens;
    this.showSpecial = showSpecial;
    this.rows[this.selected]?.tr.classList.remove('selected');
    this.rows[this.top]?.tr.classList.remove('top');
    for (const r of this.rows.splice(tokens.length)) r.tr.remove();
    const fragment = document.createDocumentFragment();
    if (this.rows.length < tokens.length) {
      const template = h('tr', { role: 'row' },
        h('th', { scope: 'row', role: 'rowheader' }, h('span', {}, '')),
        h('td.track', { role: 'cell', 'aria-hidden': 'true' }, h('div.bar')),
        h('td.value', { role: 'cell' }, h('span', {}, '')));
      for (let j = this.rows.length; j < tokens.length; ++j) {
        const tr = template.cloneNode(true);
        const [th, track, cell] = tr.children;
        tr.dataset.token = String(j);
        fragment.append(tr);
        this.rows.push({ tr, th, label: th.firstChild.firstChild, bar: track.firstChild, value: cell.firstChild.firstChild, weight: NaN });
      }
    }
    tokens.forEach((token, j) => {
      const r = this.rows[j];
      const special = isSpecial(roles, j);
      if (r.th.className !== (special ? 'special' : '')) r.th.className = special ? 'special' : '';
      if (r.tr.hidden !== (special && !showSpecial)) r.tr.hidden = special && !showSpecial;
      if (r.label.nodeValue !== token.text) {
        r.label.nodeValue = token.text;
        r.th.title = token.text;
      }
      r.weight = NaN;
    });
    // The label column's width follows the longest label shown (style.js, .rows-frame).
    const longest = String(tokens.reduce((m, t, j) => (this.rows[j].tr.hidden ? m : Math.max(m, t.text.length)), 0));
    if (this.frame.style.getPropertyValue('--label-ch') !== longest) this.frame.style.setProperty('--label-ch', longest);
    this.body.append(fragment);
    this.selected = -1;
    this.top = -1;
    this.scaleMax = null;
  }

  update({ tokens, roles, row, selected = -1, showSpecial = true, caption, scaleMax = this.signed ? differenceScale(row) : barScale(row) }) {
    const rebuilt = this.tokens !== tokens || this.showSpecial !== showSpecial || this.rows.length !== row.length;
    if (rebuilt) this.build(tokens, roles, showSpecial);
    setText(this.caption, caption ?? '');
    setText(this.label, caption ?? '');
    this.label.hidden = !caption;
    const n = row.length;
    if (scaleMax !== this.scaleMax) {
      this.scaleMax = scaleMax;
      this.uniform.style.setProperty('--u', String(Math.min(1, 1 / n / scaleMax)));
      for (const r of this.rows) r.weight = NaN;  // every bar's width is relative to the scale
    }
    // The top mark: the largest weight, or in a signed chart the largest difference either way.
    const size = this.signed ? Math.abs : (v) => v;
    let top = 0;
    for (let j = 1; j < n; ++j) if (size(row[j]) > size(row[top])) top = j;
    for (let j = 0; j < n; ++j) {
      const r = this.rows[j];
      const w = row[j];
      if (r.weight === w) continue;
      r.weight = w;
      r.bar.style.transform = `scaleX(${w / scaleMax})`;
      if (this.signed && r.bar.classList.contains('down') !== w < 0) r.bar.classList.toggle('down', w < 0);
      // Text that reads the same is not written again (each write is laid out and shaped).
      const text = this.signed ? signedText(w) : fmtWeight(w, this.digits, { short: true });
      if (r.value.nodeValue !== text) r.value.nodeValue = text;
      r.tr.dataset.value = String(w);
    }
    if (top !== this.top) {
      this.rows[this.top]?.tr.classList.remove('top');
      this.rows[top].tr.classList.add('top');
      this.top = top;
    }
    if (selected !== this.selected) {
      this.rows[this.selected]?.tr.classList.remove('selected');
      this.rows[selected]?.tr.classList.add('selected');
      this.selected = selected;
      if (selected >= 0) revealRow(this.scroller, this.rows[selected].tr);
    }
  }
}

// Scrolls a bounded chart (not the page) so that row is in view, after the next layout.
// A figure far off screen (content-visibility: auto, web/css/article.css) is not touched now:
// reading its layout would lay it out. Its row is revealed when it comes into view.
const pendingReveal = new WeakMap();  // scroller -> the row to reveal once it is on screen
let revealObserver = null;

function revealNow(scroller, row) {
  if (!row.isConnected || scroller.scrollHeight <= scroller.clientHeight + 1) return;
  const s = scroller.getBoundingClientRect();
  const r = row.getBoundingClientRect();
  const head = scroller.querySelector('thead:not(.visually-hidden)')?.getBoundingClientRect().height ?? 0;
  if (r.top < s.top + head) scroller.scrollTop -= s.top + head - r.top;
  else if (r.bottom > s.bottom) scroller.scrollTop += r.bottom - s.bottom;
}

export function revealRow(scroller, row) {
  requestAnimationFrame(() => {
    if (!row.isConnected) return;
    const offScreen = typeof scroller.checkVisibility === 'function' && !scroller.checkVisibility({ contentVisibilityAuto: true });
    if (!offScreen || typeof IntersectionObserver !== 'function') {
      pendingReveal.delete(scroller);
      revealNow(scroller, row);
      return;
    }
    revealObserver ??= new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        const pending = pendingReveal.get(entry.target);
        pendingReveal.delete(entry.target);
        revealObserver.unobserve(entry.target);
        if (pending) requestAnimationFrame(() => revealNow(entry.target, pending));
      }
    });
    pendingReveal.set(scroller, row);
    revealObserver.observe(scroller);
  });
}

// The legend under a chart: what a bar's length is, and the uniform line. track: the chart
// draws its bars on tracks from 0 to 1 (RowChart's track).
export function barLegend(row, scaleMax = barScale(row), label = null, { track = false } = {}) {
  const text = label ?? (track
    ? 'weight from 0 to 1, the track\u2019s full length'
    : `weight (bars run from 0 to ${fmt(scaleMax, 1)})`);
  return h('div.legend', { 'aria-hidden': 'true' },
    h('span', {}, h(track ? 'span.swatch-track' : 'span.swatch-bar'), text),
    h('span', {}, h('span.swatch-line'), `uniform share 1/${row.length} = ${fmt(1 / row.length, 4)}`));
}

// The share of a row that lands on [CLS] and [SEP].
export function specialShare(row, roles) {
  let s = 0;
  for (let j = 0; j < row.length; ++j) if (isSpecial(roles, j)) s += row[j];
  return s;
}

// One row as a panel of the exported picture (export.js), without the hidden [CLS] and [SEP].
// track: its bars are drawn on tracks of the full length, as the figure draws them (for the full
// scale, 0 to 1).
export function rowPanel({ tokens, roles, row, selected = -1, showSpecial = true, title, scaleMax = barScale(row), track = false }) {
  const keep = [];
  for (let j = 0; j < row.length; ++j) {
    if (showSpecial || !isSpecial(roles, j)) keep.push(j);
  }
  return {
    title,
    labels: keep.map((j) => tokens[j].text),
    values: keep.map((j) => row[j]),
    selected: keep.indexOf(selected),
    uniform: 1 / row.length,
    scaleMax,
    track,
  };
}

// The picture of the selected token's row through the view's lens (the instrument and the row):
// the numbers drawn are the lens's (web/engine/lenses.js), and the title says which.
export function selectedRowPanels(view) {
  const { result, token, layer, head, showSpecial } = view;
  const { lens, row, total } = lensRowOf(view);
  const s = rowSummary(row);
  const hidden = showSpecial ? '' : ` [CLS] and [SEP] not drawn; they hold ${fmt(specialShare(row, result.roles), 4)}.`;
  const of = total === null ? '' : ` (shares of ${fmt(total, 4)}, the row's total vector length)`;
  return {
    panels: [rowPanel({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial, scaleMax: FULL_SCALE, track: true,
      title: `The row ${lensReading(lens, layer, head)}${of}: row sum ${fmt(s.sum, 6)}, ratio to uniform ${fmt(s.ratio_to_uniform, 2)}`,
    })],
    note: `${lensDefinition(lens)} Bars on a scale from 0 to 1, the grey track's full length. Dashed line: the uniform share 1/${result.n} = ${fmt(1 / result.n, 4)}.${hidden}`,
  };
}

