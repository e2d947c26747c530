// <attention-mechanism>: one attention row taken apart with the model's own numbers. The
// selected token's vector entering the layer, its query split into heads, the query of the
// selected head against every key, the dot products, the same divided by sqrt(d_head), and the
// softmax that turns those scores into the row the instrument shows. Then what the row averages:
// every token's value slice in the head, the weighted sum (the head's context), recomputed here
// against the engine's, and the heads' contexts side by side, the numbers W_O multiplies.
import { AttentionFigure, define } from './base.js';
import { paintCells, prefersDark, signedColour } from './colour.js';
import { mechanism } from './data.js';
import { h, scrollBox, setText } from './dom.js';
import { fmt, headName } from './format.js';
import { revealRow } from './bars.js';

const PREVIEW = 4;  // leading components printed before the ellipsis

function preview(vector, digits = 2) {
  const shown = Array.from(vector.subarray(0, PREVIEW), (v) => fmt(v, digits));
  return `[${shown.join(', ')}, \u2026, ${fmt(vector[vector.length - 1], digits)}]`;
}

// Text that reads the same is not written again (each write is laid out and shaped).
function setNode(node, text) {
  if (node.nodeValue !== text) node.nodeValue = text;
}

function absMax(vector) {
  let m = 1e-9;
  for (const v of vector) m = Math.max(m, Math.abs(v));
  return m;
}

function paintStrip(canvas, vector, rows, dark) {
  const cols = vector.length / rows;
  const limit = absMax(vector);
  paintCells(canvas, rows, cols, (r, c) => signedColour(vector[r * cols + c], limit, dark));
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
  /* Every key of the head in one canvas (a row of pixels per token) in one cell spanning the
     rows: one picture to paint and to composite, not one per token. */
  table.values.mechanism { width: 100%; }
  table.values td.key { position: relative; min-width: 5em; width: 30%; padding: 0; }
  table.values td.key canvas { position: absolute; inset: 0.3em 0.6em; width: calc(100% - 1.2em); height: calc(100% - 0.6em); image-rendering: pixelated; }
  table.values .key-col { display: none; }
  @container (min-width: 560px) { table.values .key-col { display: table-cell; } }
  table.values td.wbar { min-width: 2.5em; width: 30%; }
  @container (max-width: 479px) {
    ol.steps > li { padding-left: 0; padding-top: 1.7em; }
    table.values th, table.values td { padding: 0.12em 0.25em; }
    table.values td.wbar { min-width: 1.2em; }
  }
  table.values td.wbar div { height: 0.8em; background: var(--attn-bar); border-radius: 0 2px 2px 0; transform-origin: left center; }
  /* Numbers in boxes of fixed size (size and layout containment) and bars scaled: a new row of numbers
     lays out those boxes, not the table, and off screen (content-visibility: auto) not even them. */
  table.values span.n { display: inline-block; contain: size layout style; content-visibility: auto; width: 7.5ch; height: 1.3em; line-height: 1.3em; vertical-align: middle; text-align: right; }
  table.values tr.top td, table.values tr.top th { font-weight: 700; }
  table.values tfoot td, table.values tfoot th { border-bottom: none; font-weight: 650; }
  .check { font-size: 0.86em; color: var(--attn-muted); }
  /* The value step: each token's value slice and the same times its weight, one canvas per
     column spanning the rows (as the keys), and their sum under them. */
  table.values.value-sum { width: 100%; }
  table.values.value-sum td.key { width: 35%; }
  table.values.value-sum tfoot td.context { padding: 0.2em 0.6em; }
  table.values.value-sum tfoot canvas.strip { margin: 0; height: 1.1em; }
  .nowrap { white-space: nowrap; }
  `;

  static placeholderHeight = '24em';

  static needsVectors = true;

  // The steps and the table's rows are built once per sentence; a new token or head rewrites
  // their numbers in place (the keys' colour strips change only with the layer and head).
  render(view) {
    if (!this.hasResult(view)) {
      this._built = null;
      return;
    }
    const { result, token, layer, head } = view;
    const m = mechanism(result, layer, head, token);
    if (!m) {
      this._built = null;
      this.bodyEl.replaceChildren(h('div.placeholder', { style: { 'min-height': AttentionMechanism.placeholderHeight } },
        h('p', { text: 'The example holds the vectors of its opening selection only. Open the instrument to take this row apart.' })));
      return;
    }
    const dark = prefersDark();
    if (!this._built || this._built.result !== result || this._built.dark !== dark) this.build(result, m, dark);
    const b = this._built;
    const word = result.tokens[token].text;
    const heads = result.heads;
    let top = 0;
    for (let j = 1; j < result.n; ++j) if (m.weights[j] > m.weights[top]) top = j;
    const dotTerms = Array.from(m.qHead.subarray(0, 3), (q, c) => `(${fmt(q, 2)})(${fmt(m.keys[top][c], 2)})`).join(' + ');

    setText(b.xTitle, `The vector of \u201c${word}\u201d entering layer ${layer + 1}: ${m.d} numbers`);
    paintStrip(b.xStrip, m.x, 1, dark);
    b.xStrip.setAttribute('aria-label', `${m.d} numbers, from ${fmt(Math.min(...m.x), 2)} to ${fmt(Math.max(...m.x), 2)}`);
    setText(b.xText, `x = ${preview(m.x)}`);
    setText(b.qTitle, `Its query, q = W_Q x + b_Q: ${m.d} numbers, read as ${heads} heads of ${m.dHead}`);
    b.split.forEach(({ label, canvas }, k) => {
      const on = k === head;
      label.classList.toggle('on', on);
      canvas.classList.toggle('on', on);
      paintStrip(canvas, m.q.subarray(k * m.dHead, (k + 1) * m.dHead), 1, dark);
    });
    setText(b.qText, `q for head ${head + 1} = ${preview(m.qHead)}`);
    setText(b.kTitle, `Every token\u2019s key in head ${head + 1} (${m.dHead} numbers each), one dot product per key, divided by \u221a${m.dHead} = ${fmt(m.scale, 0)}, then a softmax`);
    setText(b.kText, `q \u00b7 k(\u201c${result.tokens[top].text}\u201d) = ${dotTerms} + \u2026 (${m.dHead} products) = ${fmt(m.dots[top], 3)}`);
    setText(b.caption, `Scores and weights of \u201c${word}\u201d in ${headName(layer, head)}`);
    setText(b.scaleHead, `\u00f7 ${fmt(m.scale, 0)}`);
    setText(b.keyHead, `k (${m.dHead})`);
    const keysChanged = b.keysFor !== `${layer},${head}`;
    b.keysFor = `${layer},${head}`;
    if (keysChanged) {
      const limits = m.keys.map(absMax);
      paintCells(b.keys, result.n, m.dHead, (j, c) => signedColour(m.keys[j][c], limits[j], dark));
    }
    b.rows.forEach((r, j) => {
      r.tr.dataset.weight = String(m.weights[j]);
      setNode(r.dot, fmt(m.dots[j], 2));
      setNode(r.score, fmt(m.scores[j], 3));
      setNode(r.weight, fmt(m.weights[j], 4));
      r.bar.style.transform = `scaleX(${m.weights[j]})`;
    });
    if (b.top !== top) {
      b.rows[b.top]?.tr.classList.remove('top');
      b.rows[top].tr.classList.add('top');
      b.top = top;
    }
    if (b.selected !== token) {
      b.selected = token;
      revealRow(b.scroller, b.rows[token].tr);
    }
    setText(b.total, fmt(m.weights.reduce((a, x) => a + x, 0), 6));
    setText(b.check, `Recomputed here in JavaScript from q and k; the largest difference from the engine\u2019s row is ${m.maxDifference.toExponential(1)}. Without the division by ${fmt(m.scale, 0)} the largest weight would be ${fmt(Math.max(...m.unscaled), 3)} instead of ${fmt(m.weights[top], 3)}.`);
    if (b.value) this.renderValues(view, m, dark);
  }

  // The value side, in place: the value slices change with the layer and head, their weighted
  // copies, the sum and the heads' contexts with the token too.
  renderValues({ result, token, layer, head }, m, dark) {
    const v = this._built.value;
    const word = result.tokens[token].text;
    const heads = result.heads;
    const n = result.n;
    setText(v.title, `Every token\u2019s value in head ${head + 1}, v = W_V x + b_V (${m.dHead} numbers each), times its weight, added up`);
    setText(v.caption, `Value slices of every token in ${headName(layer, head)}, weighted by the row of \u201c${word}\u201d`);
    setText(v.valueHead, `v (${m.dHead})`);
    // Each column on one colour scale of its own (not a scale per row, as the keys): a token with
    // a small weight fades out of the weighted column, as it does out of the sum.
    if (v.valuesFor !== `${layer},${head}`) {
      v.valuesFor = `${layer},${head}`;
      const limit = Math.max(...m.values.map(absMax));
      paintCells(v.valueCanvas, n, m.dHead, (j, c) => signedColour(m.values[j][c], limit, dark));
    }
    const weightedLimit = Math.max(...m.values.map((value, j) => m.engineRow[j] * absMax(value)));
    paintCells(v.weightedCanvas, n, m.dHead, (j, c) => signedColour(m.engineRow[j] * m.values[j][c], weightedLimit, dark));
    v.rows.forEach((r, j) => {
      r.tr.dataset.weight = String(m.engineRow[j]);
      setNode(r.weight, fmt(m.engineRow[j], 4));
    });
    paintStrip(v.contextStrip, m.context, 1, dark);
    v.contextStrip.setAttribute('aria-label', `the context of \u201c${word}\u201d in head ${head + 1}: ${m.dHead} numbers, from ${fmt(Math.min(...m.context), 2)} to ${fmt(Math.max(...m.context), 2)}`);
    const order = Array.from(m.engineRow.keys()).sort((a, b) => m.engineRow[b] - m.engineRow[a]);
    const terms = order.slice(0, 3).map((j) => `${fmt(m.engineRow[j], 2)} v(\u201c${result.tokens[j].text}\u201d)`).join(' + ');
    setText(v.sumText, `c = ${terms}${n > 3 ? ` + \u2026 (${n} terms)` : ''} = ${preview(m.context)}`);
    v.check.dataset.difference = String(m.valueDifference);
    setText(v.difference, m.valueDifference.toExponential(1));
    setText(v.concatTitle, `The ${heads} heads\u2019 contexts of \u201c${word}\u201d side by side: ${m.d} numbers, what W_O multiplies`);
    v.split.forEach(({ label, canvas }, k) => {
      const on = k === head;
      label.classList.toggle('on', on);
      canvas.classList.toggle('on', on);
      paintStrip(canvas, m.contextRow.subarray(k * m.dHead, (k + 1) * m.dHead), 1, dark);
    });
    setText(v.concatText, `[c_1, \u2026, c_${heads}] = ${preview(m.contextRow)}`);
    setText(v.note, `W_O, a learned ${m.d} \u00d7 ${m.d} matrix, mixes these ${m.d} numbers back into ${m.d} (and adds b_O), so every number of the layer\u2019s output draws on every head. The residual path then adds x from step 1, and a LayerNorm and the feed-forward block follow. The engine does not hand W_O to this page, so the figure stops at what it multiplies.`);
  }

  // The value side's steps, built once per sentence; none when the result has no values (an
  // example written before them).
  buildValues(result, m) {
    if (!m.values) return [];
    const n = result.n;
    const valueCanvas = h('canvas', { 'aria-hidden': 'true' });
    const weightedCanvas = h('canvas', { 'aria-hidden': 'true' });
    const template = h('tr', {}, h('th', { scope: 'row' }), h('td', {}, h('span.n', {}, '')));
    const rows = result.tokens.map((t, j) => {
      const tr = template.cloneNode(true);
      const [th, weightCell] = tr.children;
      tr.dataset.token = String(j);
      th.textContent = t.text;
      if (j === 0) tr.append(h('td.key.key-col', { rowspan: String(n) }, valueCanvas), h('td.key', { rowspan: String(n) }, weightedCanvas));
      return { tr, weight: weightCell.firstChild.firstChild };
    });
    const split = [];
    const splitCells = [];
    for (let k = 0; k < result.heads; ++k) {
      const label = h('span.lab', { text: `head ${k + 1}` });
      const canvas = h('canvas.strip', { role: 'img', 'aria-label': `the context of head ${k + 1}: ${m.dHead} numbers` });
      split.push({ label, canvas });
      splitCells.push(label, canvas);
    }
    const v = {
      rows, split, valueCanvas, weightedCanvas, valuesFor: '',
      title: h('div.step-title'), caption: h('caption.visually-hidden'), valueHead: h('th.key-col', { scope: 'col' }),
      contextStrip: h('canvas.strip', { role: 'img' }), sumText: h('div.vec.mono'), difference: h('span.nowrap'),
      concatTitle: h('div.step-title'), concatText: h('div.vec.mono'), note: h('p.check'),
    };
    const scroller = scrollBox('div.table-scroll.bounded', 'The values weighted and added up, as a table', h('table.values.value-sum', {},
      v.caption,
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', text: 'token' }),
        h('th', { scope: 'col', text: 'weight' }),
        v.valueHead,
        h('th', { scope: 'col', text: 'weight \u00d7 v' }))),
      h('tbody', {}, rows.map((r) => r.tr)),
      h('tfoot', {}, h('tr', {},
        h('th', { scope: 'row', text: 'sum: c' }), h('td'), h('td.key-col'),
        h('td.context', {}, v.contextStrip)))));
    v.check = h('p.check.value-check', {}, 'Recomputed here in JavaScript as the weighted sum of the value slices with the row above; the largest difference from the engine\u2019s context is ', v.difference, '.');
    this._built.value = v;
    return [
      h('li', {}, v.title, scroller, v.sumText, v.check),
      h('li', {}, v.concatTitle, h('div.split', {}, splitCells), v.concatText, v.note),
    ];
  }

  build(result, m, dark) {
    const xStrip = h('canvas.strip', { role: 'img', style: { 'aspect-ratio': `${m.d} / 3` } });
    const split = [];
    const splitCells = [];
    for (let k = 0; k < result.heads; ++k) {
      const label = h('span.lab', { text: `head ${k + 1}` });
      const canvas = h('canvas.strip', { role: 'img', 'aria-label': `head ${k + 1}: ${m.dHead} numbers`, style: { 'aspect-ratio': `${m.dHead} / 3` } });
      split.push({ label, canvas });
      splitCells.push(label, canvas);
    }
    const keys = h('canvas', { 'aria-hidden': 'true' });
    // One row made once and cloned for every token.
    const template = h('tr', {},
      h('th', { scope: 'row' }),
      h('td', {}, h('span.n', {}, '')), h('td', {}, h('span.n', {}, '')), h('td', {}, h('span.n', {}, '')),
      h('td.wbar', { 'aria-hidden': 'true' }, h('div')));
    const rows = result.tokens.map((t, j) => {
      const tr = template.cloneNode(true);
      const [th, dotCell, scoreCell, weightCell, barCell] = tr.children;
      tr.dataset.token = String(j);
      th.textContent = t.text;
      if (j === 0) tr.insertBefore(h('td.key.key-col', { rowspan: String(result.n) }, keys), dotCell);
      return { tr, dot: dotCell.firstChild.firstChild, score: scoreCell.firstChild.firstChild, weight: weightCell.firstChild.firstChild, bar: barCell.firstChild };
    });
    const b = {
      result, dark, rows, keys, split, xStrip, top: -1, selected: -1, keysFor: '',
      xTitle: h('div.step-title'), xText: h('div.vec.mono'), qTitle: h('div.step-title'), qText: h('div.vec.mono'),
      kTitle: h('div.step-title'), kText: h('div.vec.mono'), caption: h('caption.visually-hidden'),
      keyHead: h('th.key-col', { scope: 'col' }), scaleHead: h('th', { scope: 'col' }), total: h('td'), check: h('p.check'),
    };
    b.scroller = scrollBox('div.table-scroll.bounded', 'The row computed step by step, as a table', h('table.values.mechanism', {},
      b.caption,
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', text: 'key' }),
        b.keyHead,
        h('th', { scope: 'col', text: 'q \u00b7 k' }),
        b.scaleHead,
        h('th', { scope: 'col', text: 'softmax' }),
        h('th', { scope: 'col' }, h('span.visually-hidden', { text: 'bar' })))),
      h('tbody', {}, rows.map((r) => r.tr)),
      h('tfoot', {}, h('tr', {},
        h('th', { scope: 'row', text: 'sum' }), h('td.key-col'), h('td'), h('td'),
        b.total, h('td')))));
    this._built = b;
    this.bodyEl.replaceChildren(h('ol.steps', {},
      h('li', {}, b.xTitle, xStrip, b.xText),
      h('li', {}, b.qTitle, h('div.split', {}, splitCells), b.qText),
      h('li', {}, b.kTitle, b.kText, b.scroller),
      h('li', {}, h('div.step-title', { text: 'The result is the row the instrument shows' }), b.check),
      ...this.buildValues(result, m)));
  }

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
