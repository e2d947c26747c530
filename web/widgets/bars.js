// One attention row as a labelled bar chart that is also a table: each token is a table row
// with its label, a bar and its value, and the uniform share 1/n is a dashed line through the
// bars. Every table row carries the full-precision weight in data-value.
import { fmt, h, headName } from './dom.js';
import { attentionRow, isSpecial, rowStat } from '../engine/result.js';

// The bar scale's top: the row's largest weight (or 1/n) rounded up to a tenth.
export function barScale(row) {
  let max = 1 / row.length;
  for (const v of row) max = Math.max(max, v);
  return Math.min(1, Math.ceil(max * 10 - 1e-9) / 10) || 0.1;
}

export function rowChart({ tokens, roles, row, selected = -1, showSpecial = true, caption, compact = false, scaleMax = barScale(row), digits = 4 }) {
  const n = row.length;
  const uniformLeft = `${(100 / n) / scaleMax}%`;
  let top = 0;
  for (let j = 1; j < n; ++j) if (row[j] > row[top]) top = j;
  const body = h('tbody');
  for (let j = 0; j < n; ++j) {
    const special = isSpecial(roles, j);
    const tr = h('tr', {
      dataset: { token: String(j), value: String(row[j]) },
      hidden: special && !showSpecial,
      class: [j === selected ? 'selected' : '', j === top ? 'top' : ''].join(' ').trim() || undefined,
    },
    h('th', { scope: 'row', class: special ? 'special' : undefined, title: tokens[j].text, text: tokens[j].text }),
    h('td.track', { 'aria-hidden': 'true' },
      h('div.bar', { style: { width: `${(100 * row[j]) / scaleMax}%` } }),
      h('div.uniform', { style: { left: uniformLeft } })),
    h('td.value', { text: fmt(row[j], digits) }));
    body.append(tr);
  }
  return h(`table.bars${compact ? '.compact' : ''}`, {},
    caption ? h('caption', { text: caption }) : null,
    h('thead.visually-hidden', {}, h('tr', {}, h('th', { scope: 'col', text: 'Token' }), h('th', { scope: 'col', text: 'Bar' }), h('th', { scope: 'col', text: 'Weight' }))),
    body);
}

export function barLegend(row, scaleMax = barScale(row), label = `weight (bars run from 0 to ${fmt(scaleMax, 1)})`) {
  return h('div.legend', { 'aria-hidden': 'true' },
    h('span', {}, h('span.swatch-bar'), label),
    h('span', {}, h('span.swatch-line'), `uniform share 1/${row.length} = ${fmt(1 / row.length, 4)}`));
}

// The share of a row that lands on [CLS] and [SEP].
export function specialShare(row, roles) {
  let s = 0;
  for (let j = 0; j < row.length; ++j) if (isSpecial(roles, j)) s += row[j];
  return s;
}

// One row as a panel of the exported picture (export.js), without the hidden [CLS] and [SEP].
export function rowPanel({ tokens, roles, row, selected = -1, showSpecial = true, title, scaleMax = barScale(row) }) {
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
  };
}

// The picture of the selected token's row in the selected head (the instrument and the row).
export function selectedRowPanels({ result, token, layer, head, showSpecial }) {
  const row = attentionRow(result, layer, head, token);
  const s = rowStat(result, layer, head, token);
  const hidden = showSpecial ? '' : ` [CLS] and [SEP] not drawn; they hold ${fmt(specialShare(row, result.roles), 4)}.`;
  return {
    panels: [rowPanel({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial,
      title: `${headName(layer, head)}: row sum ${fmt(s.sum, 6)}, ratio to uniform ${fmt(s.ratio_to_uniform, 2)}`,
    })],
    note: `Dashed line: the uniform share 1/${result.n} = ${fmt(1 / result.n, 4)}.${hidden}`,
  };
}
