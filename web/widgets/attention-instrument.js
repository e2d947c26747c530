// <attention-instrument>: the main instrument. A sentence box with presets, the tokens as
// chips grouped under their words, a 4 x 4 picker of every layer and head (each a tiny heatmap
// of that head over the sentence), and the selected token's attention row as labelled bars
// with its sum, the uniform share, the ratio to uniform and the entropy.
import { AttentionFigure, define } from './base.js';
import { css, paintCells, weightColour } from './colour.js';
import { attentionMatrix, attentionRow, isSpecial, rowStat } from '../engine/result.js';
import { headsForToken } from './data.js';
import { fmt, h, headName, headShort } from './dom.js';
import { barLegend, barScale, rowChart, selectedRowPanels, specialShare } from './bars.js';
import { PRESETS } from '../state.js';

const INPUT_DELAY_MS = 300;
const MAX_INPUT = 1000;

class AttentionInstrument extends AttentionFigure {
  static css = `
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
  .options { font-size: 0.9em; margin: 0.2em 0 0.5em; }
  .tokens { display: flex; flex-wrap: wrap; gap: 0.45em 0.35em; margin: 0.3em 0 0.9em; }
  .word { display: inline-flex; flex-wrap: wrap; max-width: 100%; gap: 1px; padding-bottom: 3px; border-bottom: 2px solid var(--attn-line); }
  .word.multi { border-bottom-color: var(--attn-muted); }
  .chip {
    min-height: 2.2em; min-width: 2.2em; padding: 0.15em 0.5em; border-radius: 5px;
    border: 1px solid var(--attn-line); background: var(--attn-bg);
    max-width: 100%; overflow-wrap: anywhere;
  }
  .chip.special { font-style: italic; color: var(--attn-muted); }
  .chip[aria-pressed="true"] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); font-style: normal; }
  .grid { display: grid; gap: 1em; grid-template-columns: 1fr; }
  @container (min-width: 620px) { .grid { grid-template-columns: minmax(13em, 17em) 1fr; } }
  .picker-title { font-size: 0.86em; color: var(--attn-muted); margin-bottom: 0.3em; }
  .picker { display: grid; grid-template-columns: auto repeat(var(--heads), 1fr); gap: 4px; align-items: center; }
  .picker .axis { font-size: 0.75em; color: var(--attn-muted); text-align: center; }
  .cell { position: relative; padding: 2px; border-radius: 5px; border: 2px solid transparent; background: none; min-height: 0; display: block; }
  .cell canvas { display: block; width: 100%; aspect-ratio: 1; image-rendering: pixelated; border-radius: 2px; }
  .cell .marker { position: absolute; left: 0; right: 0; border: 1px solid var(--attn-fg); pointer-events: none; }
  .cell[aria-pressed="true"] { border-color: var(--attn-bar); }
  .scale { height: 8px; border-radius: 2px; margin-top: 0.4em; }
  `;

  constructor() {
    super();
    this._timer = 0;
    this._built = null;  // {result, showSpecial} the chips and heatmaps were drawn for
  }

  render(view) {
    if (!this.hasResult(view)) {
      this._built = null;
      this._frame = false;
      return;
    }
    if (!this._built || this._built.result !== view.result || this._built.showSpecial !== view.showSpecial) {
      this.build(view);
    }
    this.update(view);
  }

  // The parts that outlive a sentence (the sentence box keeps focus while the reader types).
  frame(view) {
    if (this._frame) return;
    const input = h('input', {
      type: 'text', id: 'sentence', name: 'sentence', maxlength: MAX_INPUT, autocomplete: 'off', spellcheck: 'false',
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
    this.specialBox = h('input', { type: 'checkbox', checked: view.showSpecial, on: { change: (e) => this.select({ showSpecial: e.target.checked }) } });
    this.tokensSlot = h('div.tokens', { role: 'group', 'aria-label': 'Tokens of the sentence, grouped by word. Arrow keys move between them.' });
    this.pickerSlot = h('div.picker', { role: 'group', 'aria-label': 'Layer and head. Arrow keys move between them.' });
    const scale = h('div.scale', {
      'aria-hidden': 'true',
      style: { background: `linear-gradient(to right, ${[0, 0.05, 0.15, 0.3, 0.5, 0.75, 1].map((w) => css(weightColour(w))).join(', ')})` },
    });
    this.rowSlot = h('div.row');
    this.factsSlot = h('div.facts', { 'aria-live': 'polite' });
    this.tableSlot = h('div.table-scroll');
    this.sentenceControls.append(presets);
    this.bodyEl.replaceChildren(
      this.sentenceControls, this.inputError, h('label.options', {}, this.specialBox, ' Show [CLS] and [SEP]'), this.tokensSlot,
      h('div.grid', {},
        h('div', {},
          h('div.picker-title', { text: 'Layer \u00d7 head: each square is that head\u2019s whole attention matrix for this sentence (rows: tokens reading, columns: tokens read). The outlined strip is the selected token\u2019s row.' }),
          this.pickerSlot,
          scale,
          h('div.legend', { 'aria-hidden': 'true' }, h('span', { text: 'colour: weight from 0 (dark) to 1 (yellow), square-root scale' }))),
        h('div', {}, this.rowSlot, this.factsSlot)),
      h('details.data', {}, h('summary', { text: 'Every head\u2019s reading of this token, as a table' }), this.tableSlot));
    this._frame = true;
  }

  // The parts drawn once per sentence: the token chips and the 16 heatmaps.
  build(view) {
    const { result } = view;
    this.frame(view);
    this._built = { result, showSpecial: view.showSpecial };
    this.specialBox.checked = view.showSpecial;
    this.chips = [];
    const words = [];
    let group = null;
    let groupWord = null;
    result.tokens.forEach((token, i) => {
      const special = isSpecial(result.roles, i);
      const chip = h(`button.chip${special ? '.special' : ''}`, {
        type: 'button', tabindex: '-1', 'aria-pressed': 'false', dataset: { token: String(i) },
        hidden: special && !view.showSpecial, text: token.text,
        on: { click: () => this.select({ token: i }), keydown: (e) => this.onChipKey(e, i) },
      });
      this.chips.push(chip);
      if (!group || token.word < 0 || token.word !== groupWord) {
        group = h('span.word', { role: 'presentation', hidden: special && !view.showSpecial });
        groupWord = token.word;
        words.push(group);
      }
      group.append(chip);
      if (group.children.length > 1) group.classList.add('multi');
    });
    this.tokensSlot.replaceChildren(...words);

    this.cells = [];
    const picker = this.pickerSlot;
    picker.style.setProperty('--heads', String(result.heads));
    picker.replaceChildren(h('span'));
    for (let head = 0; head < result.heads; ++head) picker.append(h('span.axis', { text: `H${head + 1}`, 'aria-hidden': 'true' }));
    for (let layer = 0; layer < result.layers; ++layer) {
      picker.append(h('span.axis', { text: `L${layer + 1}`, 'aria-hidden': 'true' }));
      for (let head = 0; head < result.heads; ++head) {
        const canvas = h('canvas', { 'aria-hidden': 'true' });
        const matrix = attentionMatrix(result, layer, head);
        paintCells(canvas, result.n, result.n, (i, j) => weightColour(matrix[i * result.n + j]));
        const marker = h('div.marker', { 'aria-hidden': 'true' });
        const cell = h('button.cell', {
          type: 'button', tabindex: '-1', 'aria-pressed': 'false', dataset: { layer: String(layer), head: String(head) },
          on: { click: () => this.select({ layer, head }), keydown: (e) => this.onCellKey(e, layer, head) },
        }, canvas, marker);
        this.cells.push({ cell, marker, layer, head });
        picker.append(cell);
      }
    }
  }

  update(view) {
    const { result, token, layer, head } = view;
    const focusInChips = this.chips.includes(this.shadowRoot.activeElement);
    const focusInPicker = this.cells.some((c) => c.cell === this.shadowRoot.activeElement);
    if (this.input && this.shadowRoot.activeElement !== this.input && this.input.value !== view.sentence && view.sentence !== undefined) {
      this.input.value = view.sentence;
    }
    this.inputError.textContent = view.inputError ?? '';
    this.sentenceControls.disabled = this.isExample(view);
    this.chips.forEach((chip, i) => {
      chip.setAttribute('aria-pressed', String(i === token));
      chip.tabIndex = i === token ? 0 : -1;
    });
    for (const { cell, marker, layer: l, head: hd } of this.cells) {
      const on = l === layer && hd === head;
      cell.setAttribute('aria-pressed', String(on));
      cell.tabIndex = on ? 0 : -1;
      const s = rowStat(result, l, hd, token);
      cell.setAttribute('aria-label', `${headName(l, hd)}: ratio to uniform ${fmt(s.ratio_to_uniform, 2)} for ${result.tokens[token].text}`);
      marker.style.top = `calc(2px + (100% - 4px) * ${token / result.n})`;
      marker.style.height = `calc((100% - 4px) / ${result.n})`;
    }
    if (focusInChips) this.chips[token].focus();
    if (focusInPicker) this.cells.find((c) => c.layer === layer && c.head === head)?.cell.focus();

    const row = attentionRow(result, layer, head, token);
    const s = rowStat(result, layer, head, token);
    const word = result.tokens[token].text;
    const scaleMax = barScale(row);
    const chart = rowChart({
      tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial: view.showSpecial, scaleMax,
      caption: `How \u201c${word}\u201d (token ${token + 1} of ${result.n}) reads the sentence in ${headName(layer, head)}: its attention row.`,
    });
    chart.dataset.layer = String(layer);
    chart.dataset.head = String(head);
    chart.dataset.token = String(token);
    chart.dataset.sentence = result.text;
    this.rowSlot.replaceChildren(chart, barLegend(row, scaleMax));
    const hiddenShare = view.showSpecial ? null : specialShare(row, result.roles);
    this.factsSlot.replaceChildren(...[
      h('span', {}, 'Row sum ', h('b.row-sum', { text: fmt(s.sum, 6) })),
      h('span', {}, 'largest ', h('b', { text: fmt(s.max, 4) }), ` on \u201c${result.tokens[s.argmax].text}\u201d`),
      h('span', {}, 'ratio to uniform ', h('b.ratio', { text: fmt(s.ratio_to_uniform, 2) })),
      h('span', {}, 'entropy ', h('b', { text: fmt(s.entropy, 3) }), ` nats of at most ln ${result.n} = ${fmt(Math.log(result.n), 3)}`),
      hiddenShare === null ? null : h('span.muted', { text: `[CLS] and [SEP] are hidden; they hold ${fmt(hiddenShare, 4)} of this row, and the sum counts them.` }),
    ].filter(Boolean));

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
    return `The attention row of \u201c${view.result.tokens[view.token].text}\u201d`;
  }

  exportPanels(view) {
    return selectedRowPanels(view);
  }

  onTyping() {
    clearTimeout(this._timer);
    this._timer = setTimeout(() => this.commitSentence(true), INPUT_DELAY_MS);
  }

  // transient: the reader paused while typing, which is not yet a choice worth a history entry.
  commitSentence(transient = false) {
    clearTimeout(this._timer);
    const sentence = this.input.value;
    if (sentence !== this.view?.sentence) this.select({ sentence, token: -1, transient });
  }

  onChipKey(event, i) {
    const visible = this.chips.map((c, k) => (c.hidden ? -1 : k)).filter((k) => k >= 0);
    const at = visible.indexOf(i);
    const target = { ArrowLeft: visible[at - 1], ArrowRight: visible[at + 1], ArrowUp: visible[at - 1], ArrowDown: visible[at + 1], Home: visible[0], End: visible[visible.length - 1] }[event.key];
    if (event.key in { ArrowLeft: 1, ArrowRight: 1, ArrowUp: 1, ArrowDown: 1, Home: 1, End: 1 }) event.preventDefault();
    if (target !== undefined) {
      this.chips[target].focus();
      this.select({ token: target });
    }
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
