// What the row figures (the instrument, <attention-row>) share about lenses: the switch among
// the five (web/engine/lenses.js defines them), the definition of the one shown, the bar of how
// much of the token's new vector came from other tokens, and the live faithfulness score (which
// lens agrees with what the model did when each other token is hidden, on this sentence).
import { FAITHFULNESS_LENSES, lensDefinition, LENS_KEYS, LENSES, rhoChanceBand } from '../engine/lenses.js';
import { h, setText } from './dom.js';
import { fmt } from './format.js';
import { maskable, withVocabularyProgress, vocabularyDownload } from './attention-prediction.js';

export const LENS_CSS = `
  .lens-switch { display: flex; flex-wrap: wrap; gap: 0.3em; align-items: center; margin: 0 0 0.4em; border: 0; padding: 0; }
  .lens-switch legend { font-size: 0.86em; color: var(--attn-muted); padding: 0; margin-right: 0.4em; float: left; }
  .lens-switch button { font-size: 0.82em; padding: 0.2em 0.55em; border-radius: 5px; border: 1px solid var(--attn-line); background: var(--attn-bg); }
  .lens-switch button[aria-pressed="true"] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); }
  .lens-definition { font-size: 0.86em; color: var(--attn-muted); margin: 0 0 0.5em; }
  .lens-note { font-size: 0.86em; color: var(--attn-muted); margin: 0 0 0.5em; font-style: italic; }
  .lens-note.failed { color: var(--attn-error); font-style: normal; }
  .mixing { margin: 0.6em 0 0.3em; font-size: 0.9em; }
  .mixing .track { position: relative; height: 0.7em; border-radius: 3px; background: var(--attn-line); overflow: hidden; margin: 0.25em 0; }
  .mixing .fill { position: absolute; inset: 0 auto 0 0; background: var(--attn-bar); }
  .faithfulness { margin: 0.7em 0 0; font-size: 0.9em; }
  .faithfulness table { border-collapse: collapse; margin: 0.3em 0; }
  .faithfulness th, .faithfulness td { text-align: left; padding: 0.1em 0.8em 0.1em 0; font-weight: normal; }
  .faithfulness td.rho { font-variant-numeric: tabular-nums; text-align: right; }
  .faithfulness .caveat, .mixing .caveat { color: var(--attn-muted); font-size: 0.92em; margin: 0.2em 0; }
  details.caveat p { margin: 0.2em 0 0.4em; }
`;

// The five lenses as toggle buttons, with the shown lens's definition under them. onSelect gets
// {lens}.
export class LensSwitch {
  constructor(onSelect) {
    this.buttons = LENS_KEYS.map((key) => h('button', {
      type: 'button', 'aria-pressed': 'false', dataset: { lens: key }, text: LENSES[key].label, title: LENSES[key].name,
      on: { click: () => onSelect({ lens: key }) },
    }));
    this.definition = h('p.lens-definition');
    this.note = h('p.lens-note', { hidden: true });
    this.el = h('div.lens-part', {},
      h('fieldset.lens-switch', {}, h('legend', { text: 'Lens' }), ...this.buttons),
      this.definition, this.note);
    this.lens = null;
  }

  // note: why the shown lens has no row (the lenses are computing, need the live model, failed:
  // `failed`). A lens that is not one head's says that the figure's head controls still choose a
  // head's weights (the picker, the heatmap, the menu), and the layer of the mixing bar.
  update(lens, note = '', { failed = false } = {}) {
    if (lens !== this.lens) {
      this.lens = lens;
      for (const b of this.buttons) b.setAttribute('aria-pressed', String(b.dataset.lens === lens));
      const scope = LENSES[lens].scope;
      const aside = scope === 'head' ? '' : scope === 'layer'
        ? ' The head controls still show the chosen head\u2019s weights; its layer is this row\u2019s.'
        : ' The head controls still show the chosen head\u2019s weights; its layer is the mixing bar\u2019s.';
      setText(this.definition, `${lensDefinition(lens)}${aside}`);
    }
    this.note.hidden = !note;
    this.note.classList.toggle('failed', failed);
    setText(this.note, note);
  }
}

// The context-mixing bar: the share of the token's new vector in one layer that came from other
// tokens (mixing_ratio of wasm/core/lenses.h). Its explanation stands under it whether or not the
// number is here, so that the figure keeps its height when the number comes.
export class MixingBar {
  constructor() {
    this.fill = h('span.fill');
    this.text = h('span');
    this.el = h('div.mixing', {},
      this.text,
      h('div.track', { 'aria-hidden': 'true' }, this.fill),
      h('details.caveat', {},
        h('summary', { text: 'What this measures' }),
        h('p', { text: 'Of the parts that make up the token\u2019s new vector in this layer (one per token: all heads, the residual, through the LayerNorm), the share of their total length that comes from other tokens. The token\u2019s own part is its vector carried by the residual plus what the heads took from it. The whole-block lens measures closeness, not length, so its share for the token itself differs.' })));
  }

  update(ratio, layer, word) {
    const head = `Context mixing of \u201c${word}\u201d in layer ${layer + 1}: `;
    if (ratio === null || ratio === undefined) {
      this.fill.style.width = '0';
      setText(this.text, `${head}\u2026`);
      delete this.el.dataset.ratio;
      return;
    }
    const percent = 100 * ratio;
    this.fill.style.width = `${percent.toFixed(1)}%`;
    setText(this.text, `${head}${fmt(percent, 1)}% from other tokens.`);
    this.el.dataset.ratio = String(ratio);
  }
}

// The live faithfulness score for the selected word: on the reader's request (then for every
// word they select), the engine hides the word ([MASK]) and each other token in turn and
// measures how much the masked-LM's top prediction loses; each lens's Spearman rho against that
// says which picture ranks the tokens as the model's own behaviour does. `figure` gives the
// engine (figureEngine) and the view.
export class FaithfulnessPanel {
  constructor(figure) {
    this.figure = figure;
    this.armed = false;
    this.for = null;  // "text\u0000token" of the score shown or computing
    this.start = h('button', { type: 'button', on: { click: () => { this.armed = true; this.run(figure.view); } } });
    this.status = h('p.caveat', { role: 'status' });
    // What the first grade downloads: a line of its own in every state, so that its words coming
    // do not move the page.
    this.cost = h('p.caveat', { text: 'The first grade downloads the model\u2019s vocabulary table once, then keeps it.' });
    this.table = h('table', { hidden: true });
    this.el = h('div.faithfulness', {},
      h('b', { text: 'Which lens agrees with the model here?' }),
      h('p.caveat', { text: 'Spearman\u2019s rho between each lens and what hiding each token does to the model\u2019s prediction of this word; a random ranking gives 0 on average. One sentence is one sample.' }),
      h('details.caveat', {},
        h('summary', { text: 'How the grade works' }),
        h('p', { text: 'Hide the word ([MASK]) and let the model predict it; then hide each other token in turn and measure how much the log-probability of that prediction drops. A lens agrees with the model when it ranks the tokens as those drops do: Spearman\u2019s rho, from \u22121 to 1. The grade reads a model-wide version of each lens, named in the table, at this word\u2019s row with the word hidden, not the row drawn above.' })),
      this.start, this.cost, this.status, this.table);
  }

  update(view) {
    const live = view.mode === 'live' && Boolean(view.result);
    const can = live && maskable(view.result, view.token);
    if (!can) {
      // The button stays (disabled) before the live model, so that the figure keeps its height.
      this.start.hidden = live;
      this.start.disabled = true;
      this.start.textContent = 'Grade the lenses (with the live model)';
      this.table.hidden = true;
      setText(this.status, live ? '[CLS] and [SEP] cannot be masked: choose a word.' : '');
      return;
    }
    this.start.disabled = false;
    const key = `${view.result.text}\u0000${view.token}`;
    if (this.armed) {
      if (this.for !== key) this.run(view);
      return;
    }
    const word = view.result.tokens[view.token].text;
    // Occlusion is one pass of the model per other token: say how many, as a long sentence takes
    // seconds (about an analysis each).
    const label = `Grade the lenses for \u201c${word}\u201d (${view.result.n - 3} passes of the model)`;
    this.start.textContent = label;
    this.start.hidden = false;
    this.figure.figureEngine().then(vocabularyDownload).then((note) => {
      setText(this.cost, note ? `The first grade ${note}.` : 'The vocabulary table is here: grading downloads nothing.');
    }, () => {});
  }

  async run(view) {
    if (!view?.result || !maskable(view.result, view.token)) return;
    const { result, token } = view;
    const key = `${result.text}\u0000${token}`;
    this.for = key;
    this.start.hidden = true;
    this.table.hidden = true;  // the last score was another word's
    setText(this.status, `Hiding each token in turn (${result.n - 3} passes of the model)\u2026`);
    let score;
    try {
      const engine = await this.figure.figureEngine();
      score = await withVocabularyProgress(engine, () => engine.faithfulness(result.text, token), (text) => { if (this.for === key && text) setText(this.status, text); });
    } catch (error) {
      if (this.for === key) setText(this.status, `The score could not be computed: ${error.message}`);
      return;
    }
    if (this.for !== key) return;
    this.show(result, token, score);
  }

  show(result, token, score) {
    const word = result.tokens[token].text;
    const rows = FAITHFULNESS_LENSES.map(([key, name]) => ({ key, name, rho: score.faithfulness[key] }));
    const counted = Array.from(score.occlusion).filter(Number.isFinite).length;
    const band = rhoChanceBand(counted);
    const chance = band === null ? '' : ` With ${counted} tokens a random ranking gives a rho beyond \u00b1${fmt(band, 2)} about one time in 20 (normal approximation), so only a score past that says more than chance here, and the lenses\u2019 differences are rarely that large.`;
    setText(this.status, `\u201c${word}\u201d hidden, the model\u2019s top prediction there is \u201c${score.top1_text}\u201d (log-probability ${fmt(score.logprob, 3)}); rho over the ${counted} other tokens ([CLS] and [SEP] left out).${chance}`);
    this.table.replaceChildren(
      h('caption.visually-hidden', { text: `Spearman rho of each lens against occlusion for \u201c${word}\u201d` }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Lens (as graded)' }), h('th', { scope: 'col', text: 'rho' }))),
      h('tbody', {}, rows.map((r) => h('tr', { dataset: { lens: r.key, rho: String(r.rho), beyondChance: String(band !== null && Number.isFinite(r.rho) && Math.abs(r.rho) > band) } },
        h('td', { text: r.name }),
        h('td.rho', { text: Number.isFinite(r.rho) ? fmt(r.rho, 3) : 'undefined (too few tokens, or all tied)' })))));
    this.table.hidden = false;
    this.table.dataset.sentence = result.text;
    this.table.dataset.token = String(token);
    this.table.dataset.band = String(band);
  }

}
