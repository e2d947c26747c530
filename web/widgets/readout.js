// The line under a grid of small attention pictures (Figure 1's heatmaps, Figure 5's panels)
// that reads out one weight in words: "L2 H1 previous-token · it → was 0.412", the weight with
// which token `row` ("it") reads token `column` ("was") in that head (tokens in quotes, so that
// "." reads as a token). It follows the pointer
// over the pictures, keeps the cell last tapped or clicked (a phone has no hover), follows the
// keyboard, and otherwise reads the selected head's largest weight for the selected token, so
// that it always says something: "L4 H2 mixed · “it” → “too” 0.400 (point at or tap a
// square)". Every number is the loaded result's own (attentionRow); every token goes in as text.
import { attentionRow, headLabel } from '../engine/result.js';
import { h } from './dom.js';
import { fmtWeight, headShort } from './format.js';

// What a probe reads: {layer, head, row, column, value}, column null meaning the row's largest
// weight.
export function cellReading(result, layer, head, row, column = null) {
  const weights = attentionRow(result, layer, head, row);
  let j = column;
  if (j === null || !(j >= 0 && j < result.n)) {
    j = 0;
    for (let k = 1; k < weights.length; ++k) if (weights[k] > weights[j]) j = k;
  }
  return { layer, head, row, column: j, value: weights[j] };
}

// Which of n equal parts of a box the client coordinate falls in, or -1 outside the box.
export function partAt(start, size, n, at) {
  const f = (at - start) / size;
  if (!(f >= 0 && f < 1)) return -1;
  return Math.min(n - 1, Math.floor(f * n));
}

// Wires a probe to the pointer over `target`: a mouse or pen moving over it probes with source
// 'pointer'; a press, and a finger moving while it is down, with 'tap' (a phone has no hover, so
// the tapped cell stays after the finger lifts); a mouse leaving calls leave(event).
export function wireProbe(target, probe, leave) {
  let tapping = false;
  target.addEventListener('pointermove', (event) => probe(event, tapping ? 'tap' : 'pointer'));
  target.addEventListener('pointerdown', (event) => { tapping = event.pointerType !== 'mouse'; probe(event, 'tap'); });
  target.addEventListener('pointerup', () => { tapping = false; });
  target.addEventListener('pointerleave', (event) => { if (event.pointerType === 'mouse') leave(event); });
}

export class CellReadout {
  // hint: what the line adds while it reads the selection (how to read another cell).
  constructor({ hint }) {
    this.hint = hint;
    this.el = h('p.readout', { 'aria-live': 'polite' });
    this.echoes = [];
    this.probe = null;  // {layer, head, row, column, source} or null: the selection's reading
    this.key = '';
  }

  // A copy of the line for another place in the figure (near a picture far from the line, on
  // a phone), kept in step with it and silent for screen readers (the line itself speaks).
  echo() {
    const el = h('p.readout.echo', { 'aria-hidden': 'true' });
    this.echoes.push(el);
    this.key = '';
    return el;
  }

  // Shows the probe if there is one, else the selection's reading: the selected head's largest
  // weight in the selected token's row. A probe of another result (a new sentence) is dropped.
  render(result, { layer, head, token }) {
    if (this.probe && this.probe.result !== result) this.probe = null;
    const p = this.probe;
    const source = p?.source ?? 'selection';
    const reading = p
      ? cellReading(result, p.layer, p.head, p.row ?? token, p.column ?? null)
      : cellReading(result, layer, head, token);
    const key = [source, reading.layer, reading.head, reading.row, reading.column, reading.value].join(' ');
    if (key === this.key && this.result === result) return reading;
    this.key = key;
    this.result = result;
    const label = headLabel(result, reading.layer, reading.head);
    const parts = [
      h('b', { text: headShort(reading.layer, reading.head) }),
      label ? ` ${label}` : '',
      ` \u00b7 \u201c${result.tokens[reading.row].text}\u201d \u2192 \u201c${result.tokens[reading.column].text}\u201d `,
      h('b.value', { text: fmtWeight(reading.value, 3, { short: true }) }),
    ];
    if (source === 'selection' && this.hint) parts.push(h('span.hint', { text: ` (${this.hint})` }));
    this.el.replaceChildren(...parts.map((x) => (typeof x === 'string' ? document.createTextNode(x) : x)));
    Object.assign(this.el.dataset, {
      source, layer: String(reading.layer), head: String(reading.head), row: String(reading.row), column: String(reading.column), value: String(reading.value),
    });
    for (const echo of this.echoes) {
      echo.replaceChildren(...[...this.el.childNodes].map((node) => node.cloneNode(true)));
      Object.assign(echo.dataset, this.el.dataset);
    }
    return reading;
  }

  // A probe of (layer, head): row and column null for the selected token's row and its largest
  // weight. source: 'pointer' (hover), 'tap' (kept until another), 'keyboard'.
  set(result, probe) {
    this.probe = { result, row: null, column: null, ...probe };
  }

  // The pointer left the pictures: a hover's reading goes back to the selection's; a tap's stays.
  leave() {
    if (this.probe?.source === 'pointer') this.probe = null;
  }

  clear() {
    this.probe = null;
  }
}
