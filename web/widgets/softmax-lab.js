// <softmax-lab>: a short row of scores the reader sets, and the softmax of that row. Whatever
// the scores, the weights are positive and sum to 1, so a row cannot say "nothing here": equal
// scores, however low, give the uniform row.
import { ATTRIBUTES, AttentionFigure, define } from './base.js';
import { SCORE_COUNT } from './registry.js';
import { softmax } from './data.js';
import { h } from './dom.js';
import { fmt } from './format.js';

const KEYS = SCORE_COUNT;
const MIN = -10;
const MAX = 10;
const STEP = 0.1;

const SETTINGS = {
  random: () => Array.from({ length: KEYS }, () => Math.round((Math.random() * 12 - 6) / STEP) * STEP),
  equal: () => Array(KEYS).fill(0),
  negative: () => Array(KEYS).fill(MIN),
  winner: () => [6, 0, 0, 0, 0],
};

class SoftmaxLab extends AttentionFigure {
  static needsModel = false;

  static css = `
  .lab { display: grid; grid-template-columns: auto minmax(6em, 1fr) 3.4em minmax(5em, 1fr) 4.2em; gap: 0.35em 0.6em; align-items: center; }
  .lab .head { font-size: 0.8em; color: var(--attn-muted); }
  @container (max-width: 479px) {
    .lab { grid-template-columns: auto 1fr 4.4em; }
    .lab .head { display: none; }
    .lab .track { grid-column: 1 / span 2; margin-bottom: 0.5em; }
    .lab output { align-self: start; }
  }
  .lab input[type=range] { width: 100%; min-width: 0; accent-color: var(--attn-bar); }
  .lab .track { position: relative; height: 1.3em; background: var(--attn-panel); border-radius: 3px; }
  .lab .bar { position: absolute; left: 0; top: 0; bottom: 0; background: var(--attn-bar); border-radius: 0 3px 3px 0; }
  .lab .uniform { position: absolute; top: 0; bottom: 0; border-left: 2px dashed var(--attn-uniform); }
  .lab output, .lab .score { text-align: right; white-space: nowrap; }
  .settings { display: flex; flex-wrap: wrap; gap: 0.4em; margin: 0.8em 0 0.4em; }
  @media (prefers-reduced-motion: no-preference) { .lab .bar { transition: width 120ms ease-out; } }
  `;

  constructor() {
    super();
    this.scores = [2, 1, 0.5, -0.5, -1.5];
    this.build();
    this.update();
  }

  attributeChangedCallback(name, old, value) {
    super.attributeChangedCallback(name, old, value);
    if (name !== ATTRIBUTES.scores || value === null) return;
    const parsed = this.attributeValue(ATTRIBUTES.scores);
    if (parsed) this.setScores(parsed);
  }

  // The lab needs no model, so it has no loading or error state.
  renderStatus() {
    this.statusEl.hidden = true;
  }

  setScores(scores) {
    this.scores = scores.map((s) => Math.min(MAX, Math.max(MIN, s)));
    this.sliders.forEach((slider, k) => { slider.value = String(this.scores[k]); });
    this.update();
  }

  build() {
    this.statusEl.hidden = true;
    this.sliders = [];
    this.cells = [];
    const grid = h('div.lab', { role: 'group', 'aria-label': 'Scores and their softmax weights' },
      h('span.head', { text: 'key' }), h('span.head', { text: 'score (drag)' }), h('span.head', { text: '' }),
      h('span.head', { text: 'weight after softmax' }), h('span.head', { text: '' }));
    for (let k = 0; k < KEYS; ++k) {
      const id = `score-${k}`;
      const slider = h('input', {
        type: 'range', id, min: MIN, max: MAX, step: STEP, value: String(this.scores[k]), dataset: { key: String(k) },
        'aria-label': `score for key ${k + 1}`,
        on: { input: () => { this.scores[k] = Number(slider.value); this.update(); } },
      });
      this.sliders.push(slider);
      const cell = { score: h('span.score.mono'), bar: h('div.bar'), value: h('output.mono', { for: id }) };
      this.cells.push(cell);
      grid.append(h('label', { for: id, text: `key ${k + 1}` }), slider, cell.score,
        h('div.track', { 'aria-hidden': 'true' }, cell.bar, h('div.uniform', { style: { left: `${100 / KEYS}%` } })),
        cell.value);
    }
    const button = (text, setting) => h('button', { type: 'button', dataset: { setting }, text, on: { click: () => this.setScores(SETTINGS[setting]()) } });
    this.sumEl = h('b.sum.mono');
    this.noteEl = h('p.note');
    this.bodyEl.replaceChildren(grid,
      h('div.settings', {},
        button('Random scores', 'random'),
        button('Nothing here: all equal', 'equal'),
        button(`Nothing here: all ${fmt(MIN, 0)}`, 'negative'),
        button('One clear winner', 'winner')),
      h('p.facts', { 'aria-live': 'polite' }, 'Sum of the weights: ', this.sumEl),
      this.noteEl);
  }

  update() {
    const { weights } = softmax(this.scores);
    let sum = 0;
    weights.forEach((w, k) => {
      sum += w;
      const cell = this.cells[k];
      cell.score.textContent = fmt(this.scores[k], 1);
      cell.bar.style.width = `${100 * w}%`;
      cell.value.textContent = fmt(w, 4);
      cell.value.dataset.value = String(w);
    });
    this.sumEl.textContent = fmt(sum, 6);
    this.sumEl.dataset.value = String(sum);
    const smallest = Math.min(...weights);
    const spread = Math.max(...this.scores) - Math.min(...this.scores);
    this.noteEl.textContent = spread === 0
      ? `All ${KEYS} scores are ${fmt(this.scores[0], 1)}, so every key gets exactly 1/${KEYS} = ${fmt(1 / KEYS, 4)}. The row does not come out empty; it comes out uniform.`
      : `The smallest weight is ${smallest < 1e-4 ? smallest.toExponential(1) : fmt(smallest, 4)}: positive, never zero. Adding the same number to every score changes nothing; only the differences count.`;
    this.updateTools();
  }

  canExport() {
    return true;
  }

  snippetAttributes() {
    return [[ATTRIBUTES.scores, this.scores.map((s) => String(Math.round(s * 100) / 100)).join(' ')]];
  }

  exportTitle() {
    return `The softmax of ${KEYS} scores`;
  }

  exportLines() {
    const { weights } = softmax(this.scores);
    return [`Scores: ${this.scores.map((s) => fmt(s, 1)).join(', ')}`, `The weights sum to ${fmt(weights.reduce((a, b) => a + b, 0), 6)}`];
  }

  exportPanels() {
    const { weights } = softmax(this.scores);
    return {
      panels: [{
        title: 'Weight after softmax',
        labels: this.scores.map((s, k) => `key ${k + 1} (${fmt(s, 1)})`),
        values: weights, selected: -1, uniform: 1 / KEYS, scaleMax: 1,
      }],
      note: `Dashed line: the even share 1/${KEYS}.`,
    };
  }
}

define('softmax', SoftmaxLab);
