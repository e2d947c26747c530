// <attention-instrument>: the main instrument. A sentence box with presets, the tokens as
// chips grouped under their words, a 4 x 4 picker of every layer and head (each a tiny heatmap
// of that head over the sentence) with a line that reads out the weight under the pointer or
// the last tap, the selected head's heatmap enlarged with its tokens along both sides, and the
// selected token's attention row as labelled bars on tracks from 0 to 1, with its sum, the
// uniform share, the ratio to uniform and the entropy.
import { AttentionFigure, define } from './base.js';
import { css, paintWeights, weightColour } from './colour.js';
import { attentionMatrix, headLabel, isSpecial, rowStat } from '../engine/result.js';
import { headsForToken, labelledHeadName, rowSummary, shortHeadLabel } from './data.js';
import { h, MIN_LABEL_PX, scrollBox, setText, thinLabels, unwatchWidth, watchWidth } from './dom.js';
import { fmt, headShort } from './format.js';
import { barLegend, FULL_SCALE, RowChart, selectedRowPanels, specialShare } from './bars.js';
import { LENSES, lensLegend, lensReading, lensRowOf, mixingRatio } from '../engine/lenses.js';
import { FaithfulnessPanel, LENS_CSS, LensSwitch, MixingBar } from './lens-panel.js';
import { CHIP_CSS, TokenChips } from './controls.js';
import { CellReadout, partAt, wireProbe } from './readout.js';
import { PRESETS } from '../content.js';
import { tooLong } from '../engine/engine.js';
import { TILES_CSS, WeightTiles } from './tiles.js';
import { refuseLongPastes, textRefusal } from './sentence-box.js';

const INPUT_DELAY_MS = 300;
// Above this many tokens the enlarged heatmap's rows are too thin for their labels; the readout
// names the tokens instead.
const MAX_LABELLED = 32;
// Up to this many heads a layer's squares fit beside the row (its column is 13em to 17em wide and
// a square with its label under it needs about 3em); a model with more has the picker above.
const PICKER_BESIDE_HEADS = 4;

class AttentionInstrument extends AttentionFigure {
  static showsLenses = true;

  static css = LENS_CSS + `
  fieldset.sentence { border: 0; margin: 0; padding: 0; min-width: 0; }
  fieldset.sentence:disabled { opacity: 0.75; }
  form { display: flex; flex-wrap: wrap; gap: 0.4em; align-items: center; }
  form label { width: 100%; font-weight: 600; }
  form input[type=text] {
    flex: 1 1 14em; min-width: 0; padding: 0.45em 0.6em; border: 1px solid var(--attn-line);
    border-radius: 6px; background: var(--attn-bg);
  }
  .presets { display: flex; flex-wrap: wrap; gap: 0.35em; margin: 0.5em 0; }
  .presets button { font-size: 0.82em; max-width: 100%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .input-error { color: var(--attn-error); font-size: 0.86em; min-height: 1.3em; margin: 0.2em 0; }
  .example-note { color: var(--attn-muted); font-size: 0.86em; margin: 0.2em 0; }
  .options { font-size: 0.9em; margin: 0.2em 0 0.5em; }
  .tokens { display: flex; flex-wrap: wrap; gap: 0.45em 0.35em; margin: 0.3em 0 0.9em; --chip-size: 2.2em; --chip-font: 1em; }
  .word { display: inline-flex; flex-wrap: wrap; max-width: 100%; gap: 1px; padding-bottom: 3px; border-bottom: 2px solid var(--attn-line); }
  .word.multi { border-bottom-color: var(--attn-muted); }
  .tokens .chip { padding: 0.15em 0.5em; }
  /* One column on a phone (the picker, the row, the enlarged head); two from 620px, the enlarged
     head under the picker; three from 940px, the enlarged head beside the row. */
  .grid { display: grid; gap: 1em; grid-template-columns: minmax(0, 1fr); }
  @container (min-width: 620px) {
    .grid { grid-template-columns: minmax(13em, 17em) minmax(0, 1fr); }
    .grid > .row-part { grid-column: 2; grid-row: 1 / span 2; }
    .grid > .zoom { grid-column: 1; grid-row: 2; }
    .grid > .readout.echo { display: none; }
  }
  @container (min-width: 940px) {
    .grid { grid-template-columns: minmax(13em, 16em) minmax(0, 1fr) minmax(14em, 18em); }
    .grid > .row-part { grid-column: 2; grid-row: 1; }
    .grid > .zoom { grid-column: 3; grid-row: 1; margin-top: 0; }
  }
  /* A model with more heads than fit beside the row (PICKER_BESIDE_HEADS) has the picker across
     the whole width above the row and the enlarged head, its squares at most 3.5em wide. */
  @container (min-width: 620px) {
    .grid.many { grid-template-columns: minmax(0, 1fr) minmax(14em, 18em); }
    .grid.many > .picker-part { grid-column: 1 / -1; grid-row: 1; }
    .grid.many > .row-part { grid-column: 1; grid-row: 2; }
    .grid.many > .zoom { grid-column: 2; grid-row: 2; }
    .grid.many .picker { grid-template-columns: auto repeat(var(--heads), minmax(0, 3.5em)); justify-content: start; }
    .grid.many .scale { max-width: 28em; }
  }
  .picker-title { font-size: 0.86em; color: var(--attn-muted); margin-bottom: 0.3em; }
  .picker { position: relative; display: grid; grid-template-columns: auto repeat(var(--heads), minmax(0, 1fr)); gap: 4px; align-items: center; }
  .picker .axis { font-size: max(12px, 0.75em); color: var(--attn-muted); text-align: center; }
  .cell { position: relative; padding: 2px; border-radius: 5px; border: 2px solid transparent; background: none; min-height: 0; display: block; container: head-cell / inline-size; }
  /* A tile's place: the picker's one canvas (WeightTiles) paints its heatmap and marker there. */
  .cell .map { display: block; width: 100%; aspect-ratio: 1; touch-action: manipulation; }
  .cell .tag { display: block; font-size: max(12px, 0.66em); line-height: 1.25; color: var(--attn-muted); text-align: center; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .cell[aria-pressed="true"] .tag { color: var(--attn-fg); font-weight: 600; }
  /* A square too narrow for its label at the smallest type (12 x 12 heads on a phone) shows none
     rather than an ellipsis: the line under the grid names the head a tap or pointer reads, and
     the square's accessible name holds it too (the square is the query container). */
  @container head-cell (max-width: 40px) { .cell .tag { display: none; } }
  .cell[aria-pressed="true"] { border-color: var(--attn-bar); }
  .scale { height: 8px; border-radius: 2px; margin-top: 0.4em; }
  /* The selected head enlarged, its tokens along both sides: the columns' labels read upwards,
     the rows' to the left. The type follows the size of a row, 12px to 13px (--label-size, set
     when the map's width is known), and where rows are closer than 12px only every second or
     third is named (thinLabels). */
  .zoom { max-width: 20em; container-type: inline-size; min-width: 0; }
  .zoom-title { font-size: 0.86em; color: var(--attn-muted); margin-bottom: 0.2em; }
  .zoom-grid {
    display: grid; grid-template-columns: 28cqi minmax(0, 1fr); grid-template-rows: auto auto; column-gap: 3px;
    --label-size: 12px;
  }
  .zoom .cols { grid-column: 2; grid-row: 1; display: grid; grid-template-columns: repeat(var(--n), minmax(0, 1fr)); align-items: end; padding-bottom: 2px; }
  .zoom .rows { grid-column: 1; grid-row: 2; display: grid; grid-template-rows: repeat(var(--n), minmax(0, 1fr)); contain: size; width: 28cqi; }
  .zoom .cols span, .zoom .rows span {
    font-size: var(--label-size); line-height: 1; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; color: var(--attn-muted); min-width: 0; min-height: 0;
  }
  .zoom .cols span { writing-mode: vertical-rl; transform: rotate(180deg); max-height: 6em; justify-self: center; }
  .zoom .rows span { text-align: right; align-self: center; padding-right: 2px; }
  .zoom .special { font-style: italic; }
  .zoom .on { color: var(--attn-fg); font-weight: 700; }
  .zoom .map { grid-column: 2; grid-row: 2; position: relative; touch-action: manipulation; }
  .zoom .map:focus-visible { outline-offset: 1px; }
  .zoom canvas { display: block; width: 100%; aspect-ratio: 1; image-rendering: pixelated; border-radius: 2px; }
  .zoom .marker, .zoom .probe { position: absolute; pointer-events: none; }
  .zoom .marker { left: 0; right: 0; border: 1px solid var(--attn-fg); }
  .zoom .probe { outline: 2px solid var(--attn-focus); outline-offset: 0; }
  .zoom.dense .cols, .zoom.dense .rows { display: none; }
  .zoom.dense .zoom-grid { grid-template-columns: 0 minmax(0, 1fr); column-gap: 0; }
  ` + CHIP_CSS + TILES_CSS;

  constructor() {
    super();
    this._timer = 0;
    this._built = null;  // the result the heatmaps were drawn for
    this._shown = {};    // what updateRow() last drew: {result, token, layer, head, showSpecial, ...}
    this._marked = {};   // what updateSelection() last marked: {result, token, layer, head}
    this._asked = null;  // a sentence committed whose analysis has not arrived yet
    this._pressedTile = null;  // the tile a finger is down on, until it lifts
  }

  // The line beside the sentence box says whether the model is here (view.ready) while the
  // example is shown.
  bodyChanged(view, previous) {
    return super.bodyChanged(view, previous) || view.ready !== previous?.ready;
  }

  render(view) {
    this._asked = null;
    if (!this.hasResult(view)) {
      this._built = null;
      this._frame = false;
      this._shown = {};
      this._marked = {};
      return;
    }
    this.frame(view);
    const fresh = this._built !== view.result || this._axis?.showSpecial !== view.showSpecial;
    const drawn = Boolean(this._shown.result);
    if (fresh) this.build(view);
    // A new sentence replacing one on screen: its chips, tiles and marks are laid out in this
    // frame, the row's bars, facts and enlarged heatmap in a task just after it (updateRowSoon).
    // On a phone, laying out a long sentence's chips and bars together made that frame the
    // longest task after typing (bench_interaction.mjs --phone).
    if (fresh && drawn && typeof requestAnimationFrame === 'function') {
      this.updateSelection(view);
      this.updateRowSoon();
    } else {
      this.update(view);
    }
    if (this._revealChart) {
      this.revealChart(this._revealChart === 'nearest' ? 'nearest' : 'start');
      this._revealChart = false;
    }
  }

  // Scrolls the row's chart up into view when its top is below the screen's lower fifth (a
  // phone's one-column layout); on a wide screen it is beside the chips and nothing moves.
  revealChart(block = 'start') {
    const chart = this.chart?.el;
    if (!chart || typeof innerHeight !== 'number') return;
    const box = chart.getBoundingClientRect();
    if (box.top < innerHeight * 0.8) return;
    const reduce = typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;
    chart.scrollIntoView({ block, behavior: reduce ? 'auto' : 'smooth' });
  }

  // The parts that outlive a sentence (the sentence box keeps focus while the reader types).
  frame(view) {
    if (this._frame) return;
    const input = h('input', {
      type: 'text', id: 'sentence', name: 'sentence', autocomplete: 'off', spellcheck: 'false',
      value: view.sentence ?? view.result.text,
      on: { input: () => this.onTyping() },
    });
    this.input = input;
    // Until the live model is open the sentence is the example's; tokens and heads still answer.
    this.sentenceControls = h('fieldset.sentence', {},
      h('form', { on: { submit: (e) => { e.preventDefault(); this.commitSentence(); } } },
        h('label', { for: 'sentence', text: 'Sentence' }), input,
        h('button', { type: 'submit', text: 'Analyse' })));
    const presets = h('div.presets', { role: 'group', 'aria-label': 'Preset sentences' },
      PRESETS.map((text) => h('button', { type: 'button', title: text, text, on: { click: () => { input.value = text; this.commitSentence(); } } })));
    this.inputError = h('div.input-error', { role: 'alert' });
    refuseLongPastes(input, (message) => setText(this.inputError, message), 'The figures still show the last sentence.');
    // What the sentence box does now: while the example is shown, why it is greyed out (a
    // disabled field alone looks like one that ignores typing); once live, how to use it. Always
    // one line of about the same length, so the figures below never move when it changes.
    this.exampleNote = h('p.example-note');
    this.specialBox = h('input', { type: 'checkbox', checked: view.showSpecial, on: { change: (e) => this.select({ showSpecial: e.target.checked }) } });
    this.chipList = new TokenChips({
      label: 'Tokens of the sentence, grouped by word. Arrow keys move between them.',
      grouped: true, roving: true,
      onSelect: (patch) => {
        // On a narrow screen the row's chart sits below the heatmaps, a screen or more down:
        // after a chip is chosen, the chart that changed is brought into view (once drawn).
        this._revealChart = true;
        this.select(patch);
      },
      onKey: (event, i) => this.onChipKey(event, i),
    });
    this.pickerSlot = h('div.picker', { role: 'group', 'aria-label': 'Layer and head. Arrow keys move between them.' });
    this.tiles = new WeightTiles(this.pickerSlot);
    this.pickerSlot.addEventListener('click', (event) => {
      const cell = event.target.closest?.('button.cell');
      if (!cell) return;
      // As for a chip, on a phone the changed chart is brought into view, but only as far as
      // it takes (the tapped tile's reading, under the tiles, stays on screen where it can).
      this._revealChart = 'nearest';
      this.select({ layer: Number(cell.dataset.layer), head: Number(cell.dataset.head) });
    });
    this.pickerSlot.addEventListener('keydown', (event) => {
      const cell = event.target.closest?.('button.cell');
      if (cell) this.onCellKey(event, Number(cell.dataset.layer), Number(cell.dataset.head));
    });
    // The readout: the cell under the pointer (mouse, pen), the one tapped in the enlarged
    // heatmap, the head the keyboard is on, else the selection's largest weight. A tap on a tile
    // chooses its head, so the line reads that head's row of the selected token, as the chart
    // under it does, not whichever small square the finger happened to cover.
    this.readout = new CellReadout({ hint: 'point at or tap a square' });
    this.readout.el.id = 'picker-readout';
    const probeCell = (event, source) => {
      const cell = event.target.closest?.('button.cell');
      if (!cell || !this.view?.result) return;
      const layer = Number(cell.dataset.layer);
      const head = Number(cell.dataset.head);
      if (source === 'tap' && event.pointerType !== 'mouse') {
        this.readout.set(this.view.result, { layer, head, source });
        // A finger pressed on another head's tile (and still on it): the click that follows
        // selects that head and draws the line with it. Drawn now as well, the page would be
        // rendered twice for one tap (once between the press and the lift), on a phone the
        // longest task of a tap (bench_interaction.mjs --phone). A press that scrolls instead is
        // drawn on pointercancel; a finger that slides onto another tile, at once.
        if (event.type === 'pointerdown') this._pressedTile = cell;
        if (cell === this._pressedTile && (layer !== this.view.layer || head !== this.view.head)) return;
        this.showReadout();
        return;
      }
      this.probeAt(cell.querySelector('.map'), event, layer, head, source);
    };
    wireProbe(this.pickerSlot, probeCell, () => this.leaveProbe());
    this.pickerSlot.addEventListener('pointerup', () => { this._pressedTile = null; });
    this.pickerSlot.addEventListener('pointercancel', () => {
      this._pressedTile = null;
      this.showReadout();
    });
    this.pickerSlot.addEventListener('focusin', (event) => {
      const cell = event.target.closest?.('button.cell');
      if (!cell?.matches(':focus-visible') || !this.view?.result) return;
      this.readout.set(this.view.result, { layer: Number(cell.dataset.layer), head: Number(cell.dataset.head), source: 'keyboard' });
      this.showReadout();
    });
    this.zoom = this.buildZoom();
    const scale = h('div.scale', {
      'aria-hidden': 'true',
      style: { background: `linear-gradient(to right, ${[0, 0.05, 0.15, 0.3, 0.5, 0.75, 1].map((w) => css(weightColour(w))).join(', ')})` },
    });
    this.chart = new RowChart({ track: true });
    this.lensSwitch = new LensSwitch((patch) => this.select(patch));
    this.mixing = new MixingBar();
    this.faithfulness = new FaithfulnessPanel(this);
    this.legendSlot = h('div');
    this.facts = {
      sum: h('b.row-sum'), max: h('b'), argmax: document.createTextNode(''), ratio: h('b.ratio'), entropy: h('b'), ceiling: document.createTextNode(''),
      hidden: h('span.muted'),
    };
    const f = this.facts;
    this.factsSlot = h('div.facts', { 'aria-live': 'polite', 'aria-atomic': 'true' },
      h('span', {}, 'Row sum ', f.sum),
      h('span', {}, 'largest ', f.max, f.argmax),
      h('span', {}, 'ratio to uniform ', f.ratio),
      h('span', {}, 'entropy ', f.entropy, f.ceiling),
      f.hidden);
    // Every head's reading of the token, as a table: filled when it is open.
    this.tableSlot = scrollBox('div.table-scroll', 'Every head\u2019s reading of this token, as a table');
    this.tableDetails = h('details.data', { on: { toggle: () => this.fillTable() } },
      h('summary', { text: 'Every head\u2019s reading of this token, as a table' }), this.tableSlot);
    this.sentenceControls.append(presets);
    this.bodyEl.replaceChildren(
      this.sentenceControls, this.exampleNote, this.inputError, h('label.options', {}, this.specialBox, ' Show [CLS] and [SEP]'), this.chipList.scroller,
      this.gridEl = h('div.grid', {},
        h('div.picker-part', {},
          h('div.picker-title', { text: 'Layer \u00d7 head: each square is that head\u2019s whole attention matrix for this sentence (rows: tokens reading, columns: tokens read). The outlined strip is the selected token\u2019s row.' }),
          this.pickerSlot,
          scale,
          h('div.legend', { 'aria-hidden': 'true' }, h('span', { text: 'colour: weight from 0 (dark) to 1 (yellow), square-root scale' })),
          this.readout.el),
        h('div.row-part', {}, this.lensSwitch.el, this.chart.el, this.legendSlot, this.factsSlot, this.mixing.el, this.faithfulness.el),
        this.zoom.el,
        // Under the enlarged heatmap too where it sits far below the line (one column).
        this.readout.echo()),
      this.tableDetails);
    this._frame = true;
    this._shown = {};
    this._marked = {};
    this._cellsShape = null;  // the heatmap tiles go in the new picker (build)
  }

  // The parts drawn once per sentence: the heatmaps, one per head (the chips and the chart's rows are
  // built by their own components when the sentence changes).
  build(view) {
    const { result } = view;
    this._built = result;
    this._shown = {};
    this._marked = {};
    // The tokens along the heatmaps' axes: all of them, or without [CLS] and [SEP] when the
    // reader hides them (as the chips and the bars do). list: their positions in the result;
    // at[j]: token j's place on the axis, -1 when hidden; m: how many.
    const list = result.tokens.map((_, j) => j).filter((j) => view.showSpecial || !isSpecial(result.roles, j));
    const at = new Int32Array(result.n).fill(-1);
    list.forEach((j, k) => { at[j] = k; });
    this._axis = { showSpecial: view.showSpecial, list, at, m: list.length };
    const m = list.length;
    const picker = this.pickerSlot;
    // The tiles are made once per model shape; their heatmaps are painted on the picker's one
    // canvas (this.tiles) for each sentence.
    if (this._cellsShape !== `${result.layers}x${result.heads}`) {
      this._cellsShape = `${result.layers}x${result.heads}`;
      picker.style.setProperty('--heads', String(result.heads));
      this.gridEl.classList.toggle('many', result.heads > PICKER_BESIDE_HEADS);
      const children = [h('span')];
      for (let head = 0; head < result.heads; ++head) children.push(h('span.axis', { text: `H${head + 1}`, 'aria-hidden': 'true' }));
      this.cells = [];
      for (let layer = 0; layer < result.layers; ++layer) {
        children.push(h('span.axis', { text: `L${layer + 1}`, 'aria-hidden': 'true' }));
        for (let head = 0; head < result.heads; ++head) {
          const map = h('span.map', { 'aria-hidden': 'true' });
          const tag = h('span.tag');
          const cell = h('button.cell', {
            type: 'button', tabindex: '-1', 'aria-pressed': 'false', dataset: { layer: String(layer), head: String(head) },
          }, map, tag);
          this.cells.push({ cell, map, tag, layer, head });
          children.push(cell);
        }
      }
      picker.replaceChildren(...children);
    }
    const axisList = m === result.n ? null : list;
    this.tiles.set(this.cells.map(({ map, layer, head }) => ({ el: map, weights: attentionMatrix(result, layer, head), n: result.n, list: axisList })), null);
    for (const { cell, tag, layer, head } of this.cells) {
      // The head's label, visible under its heatmap (not only in aria-label).
      const label = headLabel(result, layer, head);
      setText(tag, shortHeadLabel(label));
      if (label) tag.title = label;
      else tag.removeAttribute('title');
      cell.setAttribute('aria-pressed', 'false');
      cell.tabIndex = -1;
    }
    const z = this.zoom;
    const dense = m > MAX_LABELLED;
    z.el.classList.toggle('dense', dense);
    z.grid.style.setProperty('--n', String(m));
    const labels = () => (dense ? [] : list.map((j) => h(`span${isSpecial(result.roles, j) ? '.special' : ''}`, { text: result.tokens[j].text, title: result.tokens[j].text })));
    z.cols.replaceChildren(...labels());
    z.rows.replaceChildren(...labels());
    z.thinned = null;
    unwatchWidth(z.canvas);
    if (!dense) {
      watchWidth(z.canvas, (width) => {
        const spacing = width / m;
        z.grid.style.setProperty('--label-size', `${Math.min(13, Math.max(MIN_LABEL_PX, spacing * 0.85)).toFixed(1)}px`);
        z.spacing = spacing;
        this.thinZoom();
      });
    }
    z.marker.style.height = `calc(100% / ${m})`;
    z.probe.style.width = `calc(100% / ${m})`;
    z.probe.style.height = `calc(100% / ${m})`;
    z.painted = null;
  }

  // The enlarged heatmap's labels thinned for its rows' size, counted from the selected token.
  thinZoom(token = this.view?.token ?? 0) {
    const z = this.zoom;
    if (!z.spacing || !this._axis) return;
    const anchor = Math.max(0, this._axis.list.indexOf(token));
    if (z.thinned === `${z.spacing} ${anchor}`) return;
    z.thinned = `${z.spacing} ${anchor}`;
    thinLabels([...z.cols.children], z.spacing, anchor);
    thinLabels([...z.rows.children], z.spacing, anchor);
  }

  // The head's matrix restricted to the axis's tokens (the whole matrix when nothing is hidden).
  axisMatrix(result, layer, head) {
    const full = attentionMatrix(result, layer, head);
    const { list, m } = this._axis;
    if (m === result.n) return full;
    const out = new Float32Array(m * m);
    for (let r = 0; r < m; ++r) for (let c = 0; c < m; ++c) out[r * m + c] = full[list[r] * result.n + list[c]];
    return out;
  }

  // A token's place on the heatmaps as a CSS offset, or null where it is hidden.
  axisOffset(token) {
    const k = this._axis.at[token];
    return k < 0 ? null : `calc(100% * ${k / this._axis.m})`;
  }

  placeMarker(marker, token) {
    const top = this.axisOffset(token);
    marker.hidden = top === null;
    if (top !== null) marker.style.top = top;
  }

  // The selected head's heatmap, large, with the tokens along both sides (built once).
  buildZoom() {
    const title = h('div.zoom-title');
    const cols = h('div.cols', { 'aria-hidden': 'true' });
    const rows = h('div.rows', { 'aria-hidden': 'true' });
    const canvas = h('canvas', { 'aria-hidden': 'true' });
    const marker = h('span.marker', { 'aria-hidden': 'true' });
    const probe = h('span.probe', { 'aria-hidden': 'true', hidden: true });
    const map = h('div.map', {
      tabindex: '0', role: 'img', 'aria-describedby': 'picker-readout',
    }, canvas, marker, probe);
    const grid = h('div.zoom-grid', {}, cols, rows, map);
    const el = h('div.zoom', {}, title, grid);
    const probeMap = (event, source) => {
      if (!this.view?.result) return;
      this.probeAt(canvas, event, this.view.layer, this.view.head, source);
    };
    wireProbe(map, probeMap, () => this.leaveProbe());
    map.addEventListener('keydown', (event) => this.onMapKey(event));
    map.addEventListener('focus', () => {
      if (!map.matches(':focus-visible') || !this.view?.result) return;
      const v = this.view;
      const p = this.readout.probe;
      if (!p || p.layer !== v.layer || p.head !== v.head) this.readout.set(v.result, { layer: v.layer, head: v.head, row: v.token, column: null, source: 'keyboard' });
      this.showReadout();
    });
    return { el, title, grid, cols, rows, canvas, marker, probe, map, painted: null };
  }

  // A probe at the pointer's place in a heatmap (its canvas): row and column of (layer, head).
  probeAt(canvas, event, layer, head, source) {
    const { result } = this.view;
    const box = canvas.getBoundingClientRect();
    const { list, m } = this._axis;
    const rowAt = partAt(box.top, box.height, m, event.clientY);
    const columnAt = partAt(box.left, box.width, m, event.clientX);
    const row = rowAt < 0 ? -1 : list[rowAt];
    const column = columnAt < 0 ? -1 : list[columnAt];
    if (row < 0 || column < 0) {
      // On the head's label under its heatmap: the head, read at the selected token.
      if (source === 'pointer') this.readout.set(result, { layer, head, source });
      else return;
    } else {
      this.readout.set(result, { layer, head, row, column, source });
    }
    this.showReadout();
  }

  leaveProbe() {
    this.readout.leave();
    this.showReadout();
  }

  // Arrow keys move the probe over the enlarged heatmap's cells.
  onMapKey(event) {
    const v = this.view;
    const move = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0], Home: [0, -Infinity], End: [0, Infinity] }[event.key];
    if (!move || !v?.result) return;
    event.preventDefault();
    // Moves are along the axis, so hidden [CLS] and [SEP] are skipped.
    const { list, at, m } = this._axis;
    const p = this.readout.probe;
    const same = p && p.layer === v.layer && p.head === v.head && p.row !== null && p.column !== null;
    const reading = this.showReadout();
    const row = same ? p.row : reading?.row ?? v.token;
    const column = same ? p.column : reading?.column ?? list[0];
    const step = (token, by) => list[Math.min(m - 1, Math.max(0, Math.max(0, at[token]) + by))];
    this.readout.set(v.result, { layer: v.layer, head: v.head, row: step(row, move[0]), column: step(column, move[1]), source: 'keyboard' });
    this.showReadout();
  }

  // The readout and, where it reads the selected head, its cell outlined on the enlarged heatmap.
  showReadout() {
    const v = this.view;
    if (!v?.result || !this.readout) return null;
    const reading = this.readout.render(v.result, v);
    const z = this.zoom;
    const top = reading.row === null || reading.row === undefined ? null : this.axisOffset(reading.row);
    const left = reading.column === null || reading.column === undefined ? null : this.axisOffset(reading.column);
    const onZoom = this.readout.probe && reading.layer === v.layer && reading.head === v.head && top !== null && left !== null;
    z.probe.hidden = !onZoom;
    if (onZoom) {
      z.probe.style.top = top;
      z.probe.style.left = left;
    }
    // The row's and the column's tokens in bold, where the reading is of the head shown large.
    const shown = reading.layer === v.layer && reading.head === v.head;
    for (const [axis, index] of [['rows', reading.row], ['cols', reading.column]]) {
      const box = z[axis];
      const old = box.querySelector('.on');
      const now = shown && index !== null && index !== undefined ? box.children[this._axis.at[index]] ?? null : null;
      if (old !== now) {
        old?.classList.remove('on');
        now?.classList.add('on');
      }
    }
    return reading;
  }

  // The tiles' markers take the theme's ink (the base class may apply a theme before this
  // class's constructor has made them).
  themeChanged() {
    this.tiles?.repaint();
  }

  // The enlarged heatmap of the selected head: painted when the head or the sentence changes.
  updateZoom(view) {
    const { result, layer, head, token } = view;
    const z = this.zoom;
    const key = `${layer},${head}`;
    if (z.painted !== key) {
      paintWeights(z.canvas, this._axis.m, this._axis.m, this.axisMatrix(result, layer, head));
      z.painted = key;
      const label = headLabel(result, layer, head);
      const unlabelled = this._axis.m > MAX_LABELLED ? ` (${this._axis.m} tokens, too many to label: point at or tap a cell to read its tokens)` : '';
      setText(z.title, `${headShort(layer, head)}${label ? ` ${label}` : ''} enlarged: each row reads the columns${unlabelled}`);
      z.map.setAttribute('aria-label', `The attention matrix of ${labelledHeadName(result, layer, head)}, enlarged. Arrow keys move between its cells; the line under the small heatmaps reads the cell.`);
    }
    this.placeMarker(z.marker, token);
    this.thinZoom(token);
  }

  // What a selection changes: the pressed chip and head, the markers, the row's bars and facts.
  update(view) {
    this.updateSelection(view);
    this.updateRow(view);
  }

  // The row's part of update() in a task after the next frame, with the view current then. The
  // chart's table says data-pending until it is drawn, the one mark of a drawing to come: a
  // selection that draws the row first clears it, and the deferred drawing then does nothing.
  updateRowSoon() {
    const table = this.chart.table;
    if ('pending' in table.dataset) return;
    table.dataset.pending = '';
    requestAnimationFrame(() => setTimeout(() => {
      if ('pending' in table.dataset && this.view?.result && this.view.result === this._built) this.updateRow(this.view);
    }, 0));
  }

  // The sentence box and its notes, the chips, the pressed head and the tiles' markers.
  updateSelection(view) {
    const { result, token, layer, head, showSpecial } = view;
    const shown = this._marked;
    const active = this.shadowRoot.activeElement;
    const focusInChips = this.chipList.chips.includes(active);
    const focusInPicker = this.cells.some((c) => c.cell === active);
    if (this.input && active !== this.input && this.input.value !== view.sentence && view.sentence !== undefined) {
      this.input.value = view.sentence;
    }
    setText(this.inputError, view.inputError ?? '');
    this.sentenceControls.disabled = this.isExample(view);
    setText(this.exampleNote, !this.isExample(view)
      ? 'Type any sentence and press Analyse, or pick one of the presets above; the figures follow what you type.'
      : view.ready
        ? 'This is an example computed ahead of time. The sentence box works once you open the instrument (the button above).'
        : 'This is an example computed ahead of time. The sentence box works once the model is here and the instrument open.');
    this.specialBox.checked = showSpecial;
    this.chipList.update(result, token, showSpecial);
    const tokenChanged = shown.token !== token || shown.result !== result;
    const headChanged = shown.layer !== layer || shown.head !== head || shown.result !== result;
    for (const c of this.cells) {
      const on = c.layer === layer && c.head === head;
      if (headChanged && (on || (c.layer === shown.layer && c.head === shown.head))) {
        c.cell.setAttribute('aria-pressed', String(on));
        c.cell.tabIndex = on ? 0 : -1;
      }
      if (tokenChanged) {
        const s = rowStat(result, c.layer, c.head, token);
        // The name starts with the tile's visible text (its short label), as WCAG's "label in name" asks.
        const tag = shortHeadLabel(headLabel(result, c.layer, c.head));
        c.cell.setAttribute('aria-label', `${tag ? `${tag}: ` : ''}${labelledHeadName(result, c.layer, c.head)}, ratio to uniform ${fmt(s.ratio_to_uniform, 2)} for ${result.tokens[token].text}`);
      }
    }
    if (tokenChanged) this.tiles.setMark(this._axis.at[token] < 0 ? null : this._axis.at[token]);
    if (focusInChips && active !== this.chipList.chips[token]) this.chipList.chips[token].focus();
    if (focusInPicker) {
      const cell = this.cells.find((c) => c.layer === layer && c.head === head)?.cell;
      if (cell && active !== cell) cell.focus();
    }
    this._marked = { result, token, layer, head };
  }

  // The row's bars and facts, the enlarged heatmap and the readout.
  updateRow(view) {
    delete this.chart.table.dataset.pending;  // drawn now: a deferred drawing has nothing left to do
    const { result, token, layer, head, showSpecial } = view;
    const shown = this._shown;
    const tokenChanged = shown.token !== token || shown.result !== result;
    const { lens, row, note, total } = lensRowOf(view);
    const s = rowSummary(row);
    const word = result.tokens[token].text;
    // On the scale from 0 to 1, each bar on its track: the row's budget is in view.
    const scaleMax = FULL_SCALE;
    this.lensSwitch.update(view.lens ?? lens, note);
    const reading = lens === 'weight'
      ? `in ${labelledHeadName(result, layer, head)}: its attention row`
      : `${lensReading(lens, layer, head)}${total === null ? '' : ` (as shares of the row\u2019s total vector length, ${fmt(total, 3)})`}`;
    this.chart.update({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial, scaleMax,
      caption: `How \u201c${word}\u201d (token ${token + 1} of ${result.n}) reads the sentence ${reading}.`,
    });
    const ds = this.chart.table.dataset;
    ds.layer = String(layer);
    ds.head = String(head);
    ds.token = String(token);
    ds.sentence = result.text;
    ds.lens = lens;
    this.mixing.update(mixingRatio(result, view.lenses, layer, token), layer, word);
    this.faithfulness.update(view);
    if (shown.scaleMax !== scaleMax || shown.n !== result.n || shown.lens !== lens) this.legendSlot.replaceChildren(barLegend(row, scaleMax, lensLegend(lens), { track: true }));
    const f = this.facts;
    setText(f.sum, fmt(s.sum, 6));
    setText(f.max, fmt(s.max, 4));
    f.argmax.nodeValue = ` on \u201c${result.tokens[s.argmax].text}\u201d`;
    setText(f.ratio, fmt(s.ratio_to_uniform, 2));
    setText(f.entropy, fmt(s.entropy, 3));
    f.ceiling.nodeValue = ` nats of at most ln ${result.n} = ${fmt(Math.log(result.n), 3)}`;
    f.hidden.hidden = showSpecial;
    if (!showSpecial) setText(f.hidden, `[CLS] and [SEP] are hidden; they hold ${fmt(specialShare(row, result.roles), 4)} of this row, and the sum counts them.`);
    this.updateZoom(view);
    // A cell read in another token's row gives way to the new token's reading.
    if (tokenChanged && this.readout.probe?.row !== null) this.readout.clear();
    this.showReadout();
    this._shown = { result, token, layer, head, showSpecial, scaleMax, n: result.n, lens, lenses: view.lenses };
    this._tableFor = null;
    this.fillTable();
  }

  // The table of every head for the selected token, drawn only while it is open.
  fillTable() {
    const view = this.view;
    if (!this.tableDetails.open || !view?.result || this._tableFor === this._shown) return;
    this._tableFor = this._shown;
    const { result, token } = view;
    const word = result.tokens[token].text;
    const heads = headsForToken(result, token);
    this.tableSlot.replaceChildren(h('table.values', {},
      h('caption.visually-hidden', { text: `The row of \u201c${word}\u201d in each of the ${heads.length} heads` }),
      h('thead', {}, h('tr', {}, ['Head', 'Largest weight', 'on token', 'Ratio to uniform', 'Entropy (nats)'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, heads.map((x) => h('tr', {},
        h('th', { scope: 'row', text: headShort(x.layer, x.head) }),
        h('td', { text: fmt(x.max, 4) }),
        h('td', { text: result.tokens[x.argmax].text }),
        h('td', { text: fmt(x.ratio_to_uniform, 2) }),
        h('td', { text: fmt(x.entropy, 3) }))))));
  }

  exportTitle(view) {
    return `The row of \u201c${view.result.tokens[view.token].text}\u201d: ${LENSES[lensRowOf(view).lens].name}`;
  }

  exportPanels(view) {
    return selectedRowPanels(view);
  }

  onTyping() {
    clearTimeout(this._timer);
    // A text longer than the engine takes (a paste is refused before it gets here: refuseLongPastes)
    // is refused at once (no analysis, no history entry, nothing cut silently: the box keeps it,
    // and the figures the last sentence).
    if (tooLong(this.input.value)) {
      this.commitSentence();
      return;
    }
    this._timer = setTimeout(() => this.commitSentence(true), INPUT_DELAY_MS);
  }

  // transient: the reader paused while typing, which is not yet a choice worth a history entry.
  commitSentence(transient = false) {
    clearTimeout(this._timer);
    const sentence = this.input.value;
    // An empty sentence is only [CLS] and [SEP], a huge one more than the engine takes: say what
    // to do and keep the figures (sentence-box.js words both). A pause in typing an empty box
    // says nothing yet.
    const refusal = textRefusal(sentence, 'The figures still show the last sentence.');
    if (refusal) {
      if (!transient || sentence.trim()) setText(this.inputError, refusal);
      return;
    }
    // A sentence already asked for (its analysis still running) is not asked for again, unless
    // it failed (then asking again is the retry).
    if (sentence !== (this._asked ?? this.view?.sentence) || (!transient && this.view?.inputError)) {
      this._asked = sentence;
      this.select({ sentence, token: -1, transient });
    }
  }

  onChipKey(event, i) {
    const target = this.chipList.step(event, i);
    if (target !== undefined) this.select({ token: target });
  }

  onCellKey(event, layer, head) {
    const { layers, heads } = this.view.result;
    const move = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[event.key];
    if (!move) return;
    event.preventDefault();
    const l = Math.min(layers - 1, Math.max(0, layer + move[0]));
    const hd = Math.min(heads - 1, Math.max(0, head + move[1]));
    this.cells.find((c) => c.layer === l && c.head === hd)?.cell.focus();
    this.select({ layer: l, head: hd });
  }
}

define('instrument', AttentionInstrument);
