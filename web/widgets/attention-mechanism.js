// <attention-mechanism>: one attention row taken apart with the model's own numbers. The
// selected token's vector entering the layer, its query split into heads, the query of the
// selected head against every key, the dot products, the same divided by sqrt(d_head), and the
// softmax that turns those scores into the row the instrument shows.
import { AttentionFigure, define } from './base.js';
import { paintCells, prefersDark, signedColour } from './colour.js';
import { mechanism } from './data.js';
import { fmt, h, headName } from './dom.js';

const PREVIEW = 4;  // leading components printed before the ellipsis

function preview(vector, digits = 2) {
  const shown = Array.from(vector.subarray(0, PREVIEW), (v) => fmt(v, digits));
  return `[${shown.join(', ')}, \u2026, ${fmt(vector[vector.length - 1], digits)}]`;
}

function absMax(vector) {
  let m = 1e-9;
  for (const v of vector) m = Math.max(m, Math.abs(v));
  return m;
}

function strip(vector, rows, dark, label) {
  const cols = vector.length / rows;
  const limit = absMax(vector);
  const canvas = h('canvas.strip', { role: 'img', 'aria-label': label, style: { 'aspect-ratio': `${cols} / ${rows * 3}` } });
  paintCells(canvas, rows, cols, (r, c) => signedColour(vector[r * cols + c], limit, dark));
  return canvas;
}

class AttentionMechanism extends AttentionFigure {
  static css = `
  ol.steps { list-style: none; margin: 0; padding: 0; counter-reset: step; }
  ol.steps > li { counter-increment: step; margin: 0 0 1.1em; padding-left: 2em; position: relative; }
  ol.steps > li::before {
    content: counter(step); position: absolute; left: 0; top: 0.05em; width: 1.5em; height: 1.5em;
    border-radius: 50%; background: var(--attn-panel); border: 1px solid var(--attn-line);
    text-align: center; font-size: 0.85em; line-height: 1.45em; font-weight: 700;
  }
  .step-title { font-weight: 650; }
  canvas.strip { display: block; width: 100%; image-rendering: pixelated; border-radius: 3px; margin: 0.35em 0; border: 1px solid var(--attn-line); }
  .split { display: grid; grid-template-columns: auto 1fr; gap: 2px 0.5em; align-items: center; margin: 0.35em 0; }
  .split canvas.strip { margin: 0; height: 1.1em; aspect-ratio: auto; }
  .split .lab { font-size: 0.8em; color: var(--attn-muted); }
  .split .lab.on { color: var(--attn-fg); font-weight: 700; }
  .split canvas.on { outline: 2px solid var(--attn-bar); outline-offset: 1px; }
  .vec { font-size: 0.85em; overflow-wrap: anywhere; }
  table.values td.key canvas { display: block; width: 100%; min-width: 5em; height: 0.9em; image-rendering: pixelated; }
  table.values .key-col { display: none; }
  @container (min-width: 560px) { table.values .key-col { display: table-cell; } }
  table.values td.wbar { min-width: 2.5em; width: 30%; }
  @container (max-width: 479px) {
    ol.steps > li { padding-left: 0; padding-top: 1.7em; }
    table.values th, table.values td { padding: 0.12em 0.25em; }
    table.values td.wbar { min-width: 1.2em; }
  }
  table.values td.wbar div { height: 0.8em; background: var(--attn-bar); border-radius: 0 2px 2px 0; }
  table.values tr.top td, table.values tr.top th { font-weight: 700; }
  table.values tfoot td, table.values tfoot th { border-bottom: none; font-weight: 650; }
  .check { font-size: 0.86em; color: var(--attn-muted); }
  `;

  static placeholderHeight = '24em';

  static needsVectors = true;

  render(view) {
    if (!this.hasResult(view)) return;
    const { result, token, layer, head } = view;
    const m = mechanism(result, layer, head, token);
    if (!m) {
      this.bodyEl.replaceChildren(h('div.placeholder', { style: { 'min-height': AttentionMechanism.placeholderHeight } },
        h('p', { text: 'The example holds the vectors of its opening selection only. Open the instrument to take this row apart.' })));
      return;
    }
    const dark = prefersDark();
    const word = result.tokens[token].text;
    const heads = result.heads;
    let top = 0;
    for (let j = 1; j < result.n; ++j) if (m.weights[j] > m.weights[top]) top = j;
    const dotTerms = Array.from(m.qHead.subarray(0, 3), (q, c) => `(${fmt(q, 2)})(${fmt(m.keys[top][c], 2)})`).join(' + ');

    const splitRows = [];
    for (let k = 0; k < heads; ++k) {
      const on = k === head;
      const slice = m.q.subarray(k * m.dHead, (k + 1) * m.dHead);
      splitRows.push(h(`span.lab${on ? '.on' : ''}`, { text: `head ${k + 1}` }));
      const canvas = strip(slice, 1, dark, `head ${k + 1}: ${m.dHead} numbers`);
      if (on) canvas.classList.add('on');
      splitRows.push(canvas);
    }

    const rows = result.tokens.map((t, j) => {
      const keyStrip = h('canvas', { 'aria-hidden': 'true' });
      paintCells(keyStrip, 1, m.dHead, (r, c) => signedColour(m.keys[j][c], absMax(m.keys[j]), dark));
      return h(`tr${j === top ? '.top' : ''}`, { dataset: { token: String(j), weight: String(m.weights[j]) } },
        h('th', { scope: 'row', text: t.text }),
        h('td.key.key-col', {}, keyStrip),
        h('td', { text: fmt(m.dots[j], 2) }),
        h('td', { text: fmt(m.scores[j], 3) }),
        h('td', { text: fmt(m.weights[j], 4) }),
        h('td.wbar', { 'aria-hidden': 'true' }, h('div', { style: { width: `${100 * m.weights[j]}%` } })));
    });
    const total = m.weights.reduce((a, b) => a + b, 0);

    this.bodyEl.replaceChildren(h('ol.steps', {},
      h('li', {},
        h('div.step-title', { text: `The vector of \u201c${word}\u201d entering layer ${layer + 1}: ${m.d} numbers` }),
        strip(m.x, 1, dark, `${m.d} numbers, from ${fmt(Math.min(...m.x), 2)} to ${fmt(Math.max(...m.x), 2)}`),
        h('div.vec.mono', { text: `x = ${preview(m.x)}` })),
      h('li', {},
        h('div.step-title', { text: `Its query, q = W_Q x + b_Q: ${m.d} numbers, read as ${heads} heads of ${m.dHead}` }),
        h('div.split', {}, splitRows),
        h('div.vec.mono', { text: `q for head ${head + 1} = ${preview(m.qHead)}` })),
      h('li', {},
        h('div.step-title', { text: `Every token\u2019s key in head ${head + 1} (${m.dHead} numbers each), one dot product per key, divided by \u221a${m.dHead} = ${fmt(m.scale, 0)}, then a softmax` }),
        h('div.vec.mono', { text: `q \u00b7 k(\u201c${result.tokens[top].text}\u201d) = ${dotTerms} + \u2026 (${m.dHead} products) = ${fmt(m.dots[top], 3)}` }),
        h('div.table-scroll', {}, h('table.values.mechanism', {},
          h('caption.visually-hidden', { text: `Scores and weights of \u201c${word}\u201d in ${headName(layer, head)}` }),
          h('thead', {}, h('tr', {},
            h('th', { scope: 'col', text: 'key' }),
            h('th.key-col', { scope: 'col', text: `k (${m.dHead})` }),
            h('th', { scope: 'col', text: 'q \u00b7 k' }),
            h('th', { scope: 'col', text: `\u00f7 ${fmt(m.scale, 0)}` }),
            h('th', { scope: 'col', text: 'softmax' }),
            h('th', { scope: 'col' }, h('span.visually-hidden', { text: 'bar' })))),
          h('tbody', {}, rows),
          h('tfoot', {}, h('tr', {},
            h('th', { scope: 'row', text: 'sum' }), h('td.key-col'), h('td'), h('td'),
            h('td', { text: fmt(total, 6) }), h('td')))))),
      h('li', {},
        h('div.step-title', { text: 'The result is the row the instrument shows' }),
        h('p.check', { text: `Recomputed here in JavaScript from q and k; the largest difference from the engine\u2019s row is ${m.maxDifference.toExponential(1)}. Without the division by ${fmt(m.scale, 0)} the largest weight would be ${fmt(Math.max(...m.unscaled), 3)} instead of ${fmt(m.weights[top], 3)}.` }))));
  }

  static frameHeight = 900;

  canExport() {
    const v = this.view;
    return Boolean(v?.result && mechanism(v.result, v.layer, v.head, v.token));
  }

  exportTitle(view) {
    return `How the row of \u201c${view.result.tokens[view.token].text}\u201d is computed: q \u00b7 k, divided by \u221a(d/h), softmax`;
  }

  exportPanels(view) {
    const { result, layer, head, token } = view;
    const m = mechanism(result, layer, head, token);
    return {
      panels: [{
        title: `Softmax of the scores q \u00b7 k / ${fmt(m.scale, 0)} (labels: token and its score)`,
        labels: result.tokens.map((t, j) => `${t.text} (${fmt(m.scores[j], 2)})`),
        values: m.weights, selected: token, uniform: 1 / result.n, scaleMax: 1,
      }],
      note: `Sum of the weights: ${fmt(m.weights.reduce((a, b) => a + b, 0), 6)}. Dashed line: the uniform share 1/${result.n}.`,
    };
  }
}

define('mechanism', AttentionMechanism);
