// <attention-compare>: the same token read three ways side by side: through two heads (by
// default the sharpest and the broadest for that token, picked from the loaded model) and
// through head-averaged attention rollout, each with its ratio to uniform.
import { ATTRIBUTES, AttentionFigure, define } from './base.js';
import { parseAttribute } from './registry.js';
import { attentionRow, headLabel, rolloutRow, rowStat } from '../engine/result.js';
import { headsForToken, isContentHead, labelledHeadName, rowSummary, sharpestAndBroadest } from './data.js';
import { h, setText } from './dom.js';
import { fmt, headName, headShort } from './format.js';
import { barLegend, FULL_SCALE, RowChart, rowPanel } from './bars.js';

const AUTO = 'auto';

// "2.1 4.3" (layer.head, counting from 1) to ["1,0", "3,2"]; anything else in a place is AUTO.
function parseHeads(value) {
  return parseAttribute(ATTRIBUTES.heads, value).value.map((x) => (x ? `${x.layer},${x.head}` : AUTO));
}

class AttentionCompare extends AttentionFigure {
  static css = `
  .panels { display: grid; gap: 1.2em; grid-template-columns: 1fr; }
  @container (min-width: 760px) { .panels { grid-template-columns: repeat(3, minmax(0, 1fr)); } }
  .panel h3 { font-size: 0.95em; margin: 0 0 0.2em; }
  .panel select { width: 100%; max-width: 100%; margin-bottom: 0.3em; }
  .panel .overall { margin: 0 0 0.3em; }
  .ratio { font-size: 1.05em; margin: 0.2em 0 0.4em; }
  .ratio b { font-size: 1.25em; }
  `;

  static placeholderHeight = '22em';

  constructor() {
    super();
    this.choice = [AUTO, AUTO];  // per head panel: AUTO or "layer,head"
    this.picked = [];            // the heads the panels show, as {layer, head}
  }

  attributeChangedCallback(name, old, value) {
    if (name === ATTRIBUTES.heads) {
      this.choice = parseHeads(value);
      if (this.view?.result) this.render(this.view);
    }
    super.attributeChangedCallback(name, old, value);
  }

  // The three panels are built once per sentence; a new token or head choice updates their
  // titles, menus, ratios and bars in place.
  render(view) {
    if (!this.hasResult(view)) {
      this._built = null;
      return;
    }
    const { result, token, showSpecial } = view;
    if (!this._built || this._built.result !== result || this._built.showSpecial !== showSpecial) this.build(result, showSpecial);
    const b = this._built;
    const { sharpest, broadest, overall } = sharpestAndBroadest(result, token);
    const autos = [sharpest, broadest];
    const heads = headsForToken(result, token);
    const word = result.tokens[token].text;
    this.picked = [];
    b.heads.forEach((panel, k) => {
      const picked = this.choice[k] === AUTO ? autos[k] : heads.find((x) => `${x.layer},${x.head}` === this.choice[k]) ?? autos[k];
      this.picked.push(picked);
      const row = attentionRow(result, picked.layer, picked.head, token);
      const s = rowStat(result, picked.layer, picked.head, token);
      setText(panel.auto, `${k === 0 ? 'Sharpest content head' : 'Broadest head (lowest ratio)'} (${headShort(autos[k].layer, autos[k].head)})`);
      if (panel.select.value !== this.choice[k]) panel.select.value = this.choice[k];
      Object.assign(panel.section.dataset, { layer: String(picked.layer), head: String(picked.head), ratio: String(s.ratio_to_uniform) });
      setText(panel.title, labelledHeadName(result, picked.layer, picked.head));
      setText(panel.ratio, fmt(s.ratio_to_uniform, 2));
      panel.chart.update({ tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial, scaleMax: FULL_SCALE, caption: `\u201c${word}\u201d in ${headName(picked.layer, picked.head)}` });
    });
    // Under the first panel: whether the sharpest of all heads is one the rule passes over.
    const first = b.heads[0];
    const positional = !isContentHead(result, overall.layer, overall.head) && (overall.layer !== this.picked[0].layer || overall.head !== this.picked[0].head);
    first.overall.hidden = !positional;
    if (positional) setText(first.overall, `The sharpest of all heads, ${headShort(overall.layer, overall.head)}, is a ${overall.label} head.`);
    // The core keeps no statistics of rollout rows; they are summarised here.
    const rollout = rolloutRow(result, token);
    const r = rowSummary(rollout);
    b.rollout.section.dataset.ratio = String(r.ratio_to_uniform);
    setText(b.rollout.ratio, fmt(r.ratio_to_uniform, 2));
    b.rollout.chart.update({ tokens: result.tokens, roles: result.roles, row: rollout, selected: token, showSpecial, scaleMax: FULL_SCALE, caption: `\u201c${word}\u201d through attention rollout` });
  }

  build(result, showSpecial) {
    const headPanel = (k) => {
      const auto = h('option', { value: AUTO });
      const options = [auto];
      for (let l = 0; l < result.layers; ++l) {
        for (let hd = 0; hd < result.heads; ++hd) options.push(h('option', { value: `${l},${hd}`, text: headName(l, hd) }));
      }
      const select = h('select', {
        'aria-label': `Head for panel ${k + 1}`,
        on: { change: (e) => { this.choice[k] = e.target.value; this.render(this.view); this.updateTools(); } },
      }, options);
      const title = h('h3');
      const ratio = h('b');
      const chart = new RowChart({ compact: true, digits: 3 });
      const overall = h('p.small.muted.overall', { hidden: true });
      const section = h('section.panel', { dataset: { kind: 'head' } }, title, select, ...(k === 0 ? [overall] : []), h('div.ratio', {}, 'ratio to uniform ', ratio), chart.el);
      return { section, select, auto, title, ratio, chart, overall };
    };
    const heads = [headPanel(0), headPanel(1)];
    const ratio = h('b');
    const chart = new RowChart({ compact: true, digits: 3 });
    const section = h('section.panel', { dataset: { kind: 'rollout' } },
      h('h3', { text: 'Rollout (all layers, heads averaged)' }),
      h('p.small.muted', { text: 'Each layer\u2019s heads averaged, half weight kept on the token itself for the residual path, multiplied through the layers.' }),
      h('div.ratio', {}, 'ratio to uniform ', ratio),
      chart.el);
    this.bodyEl.replaceChildren(h('div.panels', {}, heads.map((p) => p.section), section),
      // One scale for the three panels, 0 to 1, so that a broad row's bars look as short as they are.
      barLegend({ length: result.n }, FULL_SCALE, 'weight (all three panels on one scale, 0 to 1)'));
    this._built = { result, showSpecial, heads, rollout: { section, ratio, chart } };
  }

  snippetAttributes(view) {
    const out = super.snippetAttributes(view).filter(([name]) => name !== ATTRIBUTES.layer && name !== ATTRIBUTES.head);
    if (this.choice.some((c) => c !== AUTO)) {
      out.push([ATTRIBUTES.heads, this.picked.map((x) => `${x.layer + 1}.${x.head + 1}`).join(' ')]);
    }
    return out;
  }

  exportTitle(view) {
    return `\u201c${view.result.tokens[view.token].text}\u201d read through two heads and through rollout`;
  }

  exportLines(view) {
    const [a, b] = this.picked;
    return [...this.contextLines(view), `Token \u201c${view.result.tokens[view.token].text}\u201d, ${view.token + 1} of ${view.result.n}; ${labelledHeadName(view.result, a.layer, a.head)} and ${labelledHeadName(view.result, b.layer, b.head)}`];
  }

  exportPanels(view) {
    const { result, token } = view;
    const panel = (row, title, ratio) => rowPanel({ tokens: result.tokens, roles: result.roles, row, selected: token, showSpecial: view.showSpecial, scaleMax: FULL_SCALE, title: `${title}: ratio ${fmt(ratio, 2)}` });
    const rollout = rolloutRow(result, token);
    return {
      columns: 3,
      panels: [
        ...this.picked.map((x) => panel(attentionRow(result, x.layer, x.head, token), `${headShort(x.layer, x.head)}${headLabel(result, x.layer, x.head) ? ` \u00b7 ${headLabel(result, x.layer, x.head)}` : ''}`, rowStat(result, x.layer, x.head, token).ratio_to_uniform)),
        panel(rollout, 'Rollout', rowSummary(rollout).ratio_to_uniform),
      ],
      note: 'Every panel on one scale, weights from 0 to 1; dashed line: the uniform share 1/n; ratio: largest weight over 1/n.',
    };
  }
}

define('compare', AttentionCompare);
