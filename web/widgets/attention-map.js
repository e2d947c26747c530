// <attention-map>: the whole model at a glance, drawn from the loaded model's shape (its layers,
// heads and hidden size from the result; the feed-forward width and the vocabulary from the
// engine's model info, where the view has it): the embeddings, then each layer (attention with
// every head, the residual add, LayerNorm, the feed-forward block, the residual add, LayerNorm),
// then the masked-LM output. The head the other figures show is lit ("you are here"). Every
// part is a link to where the article shows it (MAP_TARGETS: on the article itself; a figure on
// its own links to the article on the widgets' site), and a head's link also chooses that head.
// The map is one tab stop: the arrow keys move from part to part.
import { AttentionFigure, define } from './base.js';
import { labelledHeadName } from './data.js';
import { h, setText, unwatchWidth, watchWidth } from './dom.js';
import { HeadName, thousands } from './format.js';

// Where the article (web/index.html) shows each part: the id of its figure, section or
// paragraph. tests/browser/model_map.test.mjs holds every link of the map to an id of the page.
export const MAP_TARGETS = Object.freeze({
  embeddings: 'embeddings',
  attention: 's-mechanism',  // Figure 2: one head's row computed from the vectors
  head: 'instrument',        // Figure 1: the chosen head's rows
  residual: 'residual',
  layerNorm: 'layer-norm',
  feedForward: 'feed-forward',
  output: 'model-output',
});

// The article on the widgets' site (the bundles sit one folder below web/, as this module does).
const ARTICLE_URL = new URL('../index.html', import.meta.url).href;

// The layout (fit): in one row, the embeddings, every layer and the output side by side, where
// they fit at LAYER_MIN_EM a layer; else the embeddings above and the output below the layers,
// which take rows of equal length (12 layers: two rows of 6, not 8 and 4).
const LAYER_MIN_EM = 8.6;
const END_EM = 8.5;
const GAP_EM = 1.1;

const CSS = `
  .flow {
    list-style: none; margin: 0; padding: 0; display: grid; gap: 0.9em ${GAP_EM}em; align-items: stretch;
    grid-template-columns: repeat(var(--per-row, 2), minmax(0, 1fr));
  }
  .flow[data-layout="row"] { grid-template-columns: minmax(0, ${END_EM}em) repeat(var(--per-row), minmax(0, 1fr)) minmax(0, ${END_EM}em); }
  .flow:not([data-layout="row"]) > .end { grid-column: 1 / -1; }
  .flow > li { margin: 0; position: relative; min-width: 0; }
  /* The order of the stages: an arrow before each (not read out): across within a row, down
     into the first of a row. */
  .flow > li + li::before {
    content: "\\2192" / ""; position: absolute; left: -0.95em; top: 50%; transform: translateY(-50%);
    color: var(--attn-muted); font-size: 0.9em; line-height: 1;
  }
  .flow:not([data-layout="row"]) > li.row-start::before, .flow:not([data-layout="row"]) > li.layer + li.end::before {
    content: "\\2193" / ""; left: 50%; top: -0.9em; transform: translateX(-50%);
  }
  .end { display: flex; }
  .end .part { flex: 1 1 auto; display: flex; flex-direction: column; justify-content: center; }
  .layer { padding: 0.3em 0.45em 0.45em; border: 1px solid var(--attn-line); border-radius: 8px; }
  .layer.here { border-color: var(--attn-bar); box-shadow: inset 0 0 0 1px var(--attn-bar); }
  .layer-name { font-size: 0.84em; font-weight: 650; color: var(--attn-muted); margin: 0 0 0.25em; }
  .layer.here .layer-name { color: var(--attn-fg); }
  /* A layer's steps run down the residual stream (the line on their left), which each add joins. */
  .steps { list-style: none; margin: 0; padding: 0 0 0 0.75em; display: flex; flex-direction: column; gap: 0.25em; border-left: 3px solid var(--attn-track); }
  .steps > li { margin: 0; position: relative; }
  .steps > li.add::before {
    content: "+" / ""; position: absolute; left: calc(-0.75em - 3px - 0.55em); top: 50%; transform: translateY(-50%);
    width: 1.1em; height: 1.1em; border-radius: 50%; display: grid; place-items: center;
    background: var(--attn-bg); border: 1px solid var(--attn-muted); color: var(--attn-fg); font-size: 0.8em; line-height: 1;
  }
  .part {
    display: block; color: var(--attn-fg); text-decoration: none; border: 1px solid var(--attn-line); border-radius: 5px;
    padding: 0.1em 0.4em; background: var(--attn-panel); font-size: 0.88em; line-height: 1.3; overflow-wrap: anywhere;
  }
  .part:hover { border-color: var(--attn-muted); }
  .part:hover .name { text-decoration: underline; }
  .part .sub { display: block; font-size: max(12px, 0.86em); color: var(--attn-muted); }
  .add .part { background: none; border-style: dashed; }
  .attention .part { border-color: var(--attn-bar-soft); }
  .heads { display: flex; flex-wrap: wrap; gap: 0.25em; margin-top: 0.3em; }
  .head {
    display: inline-grid; place-items: center; min-width: 2em; height: 2em; padding: 0 0.2em; border: 1px solid var(--attn-line);
    border-radius: 4px; text-decoration: none; color: var(--attn-fg); background: var(--attn-bg); font-size: 0.84em;
  }
  .head:hover { border-color: var(--attn-muted); }
  .head[aria-current] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); font-weight: 700; }
  .here-line { margin: 0.6em 0 0; font-size: 0.86em; color: var(--attn-muted); }
  .here-line b { color: var(--attn-fg); font-weight: 650; }
  .swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 2px; background: var(--attn-bar); vertical-align: -0.1em; margin-right: 0.3em; }
`;

class AttentionMap extends AttentionFigure {
  static css = CSS;

  static placeholderHeight = '14em';

  // In the article, Figure 1 just below says what the figures show (the example, the live
  // model): the map's own status line speaks only of a failure or while it has nothing to draw.
  // On its own, a figure keeps its status line.
  renderStatus(view) {
    super.renderStatus(view);
    const quiet = !this._standalone && Boolean(view.result) && view.mode !== 'error';
    if (this.statusEl.hidden !== quiet) this.statusEl.hidden = quiet;
  }

  // The model's info (the feed-forward width, the vocabulary) arrives with the engine, after the
  // example: the map is drawn again then.
  bodyChanged(view, previous) {
    return super.bodyChanged(view, previous) || view.model !== previous?.model;
  }

  // Built once per model shape; a new selection moves the lit head, a new sentence its count.
  render(view) {
    if (!this.hasResult(view)) {
      this._map = null;
      return;
    }
    const { result, model } = view;
    const shape = [result.layers, result.heads, result.hidden, model?.intermediate, model?.vocabSize, model?.maskedLm, Boolean(this._standalone)].join('/');
    if (this._map?.shape !== shape) this.build(view, shape);
    this.light(view);
  }

  // Where a part links: the article's id on the article, else the article on the widgets' site.
  href(part) {
    const id = MAP_TARGETS[part];
    return this._standalone ? `${ARTICLE_URL}#${id}` : `#${id}`;
  }

  build(view, shape) {
    const { result, model } = view;
    const { layers, heads, hidden } = result;
    const link = (part, name, sub = null) => h('a.part', { href: this.href(part), dataset: { part }, tabindex: '-1' },
      h('span.name', { text: name }), sub === null ? null : h('span.sub', { text: sub }));
    const tokens = h('span.sub');
    const embeddings = link('embeddings', 'Embeddings');
    embeddings.append(h('span.sub', { text: 'word + position + segment' }), tokens);
    const headLinks = [];
    const layerItems = [];
    for (let l = 0; l < layers; ++l) {
      const row = [];
      for (let hd = 0; hd < heads; ++hd) {
        const a = h('a.head', { href: this.href('head'), dataset: { part: 'head', layer: String(l), head: String(hd) }, tabindex: '-1' },
          h('span.visually-hidden', { text: `Layer ${l + 1}, head ` }), String(hd + 1), h('span.visually-hidden.label'));
        row.push(a);
      }
      headLinks.push(row);
      const step = (kind, part, name, sub) => h(`li.${kind}`, {}, link(part, name, sub));
      const attention = h('li.attention', {},
        link('attention', 'Attention', `${heads} head${heads === 1 ? '' : 's'} of ${hidden / heads}`),
        h('div.heads', { role: 'group', 'aria-label': `Heads of layer ${l + 1}` }, row));
      const feedForward = model?.intermediate ? `${hidden} \u2192 ${thousands(model.intermediate)} \u2192 ${hidden}` : 'each token alone';
      const item = h('li.layer', { dataset: { layer: String(l) } },
        h('p.layer-name', { text: `Layer ${l + 1}` }),
        h('ol.steps', { 'aria-label': `Layer ${l + 1}` },
          attention,
          step('add', 'residual', 'residual add'),
          step('norm', 'layerNorm', 'LayerNorm'),
          step('ffn', 'feedForward', 'Feed-forward', feedForward),
          step('add', 'residual', 'residual add'),
          step('norm', 'layerNorm', 'LayerNorm')));
      layerItems.push(item);
    }
    const vocabulary = model?.vocabSize ? `a score for each of ${thousands(model.vocabSize)} entries` : 'a score for every vocabulary entry';
    const output = model?.maskedLm === false
      ? link('output', 'Output', 'the last layer\u2019s vectors (this file has no masked-LM head)')
      : link('output', 'Masked-LM output', vocabulary);
    const here = h('b');
    const flow = h('ol.flow', { 'aria-label': `The model: embeddings, ${layers} layer${layers === 1 ? '' : 's'}, output` },
      h('li.end', {}, embeddings), layerItems, h('li.end', {}, output));
    flow.addEventListener('keydown', (event) => this.onKey(event));
    flow.addEventListener('click', (event) => this.onClick(event));
    this.bodyEl.replaceChildren(flow,
      h('p.here-line', {}, h('span.swatch', { 'aria-hidden': 'true' }), 'You are here: ', here,
        ', the head the figures show. Each part links to where this article shows it; the arrow keys move from part to part.'));
    this._map = { shape, flow, headLinks, layerItems, here, tokens, lit: null, stop: null, fitted: null };
    unwatchWidth(this._watched);
    this._watched = flow;
    watchWidth(flow, (width) => this.fit(width));
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    unwatchWidth(this._watched);
    this._watched = null;
  }

  connectedCallback() {
    super.connectedCallback();
    if (this._map && !this._watched) {
      this._watched = this._map.flow;
      watchWidth(this._watched, (width) => this.fit(width));
    }
  }

  // The layout for the map's width (see LAYER_MIN_EM).
  fit(width) {
    const m = this._map;
    if (!m || !(width > 0)) return;
    const em = parseFloat(getComputedStyle(m.flow).fontSize) || 15;
    const layers = m.layerItems.length;
    const gap = GAP_EM * em;
    const oneRow = 2 * (END_EM * em + gap) + layers * LAYER_MIN_EM * em + (layers - 1) * gap <= width;
    const fits = Math.max(1, Math.floor((width + gap) / (LAYER_MIN_EM * em + gap)));
    const perRow = oneRow ? layers : Math.ceil(layers / Math.ceil(layers / fits));
    const key = `${oneRow}/${perRow}`;
    if (m.fitted === key) return;
    m.fitted = key;
    m.flow.dataset.layout = oneRow ? 'row' : 'rows';
    m.flow.style.setProperty('--per-row', String(perRow));
    m.layerItems.forEach((item, l) => item.classList.toggle('row-start', !oneRow && l % perRow === 0));
  }

  // The lit head, its layer, the line under the map and the one tab stop (the lit head, unless
  // the reader moved the stop to another part).
  light(view) {
    const m = this._map;
    const { result, layer, head } = view;
    setText(m.tokens, `${result.hidden} numbers for each of ${result.n} tokens`);
    setText(m.here, labelledHeadName(result, layer, head, HeadName));
    const key = `${layer},${head}`;
    if (m.lit?.key !== key) {
      if (m.lit) {
        m.lit.link.removeAttribute('aria-current');
        setText(m.lit.link.querySelector('.label'), '');
        m.layerItems[m.lit.layer].classList.remove('here');
      }
      const link = m.headLinks[layer]?.[head];
      if (link) {
        link.setAttribute('aria-current', 'location');
        setText(link.querySelector('.label'), ', the head the figures show');
        m.layerItems[layer].classList.add('here');
        m.lit = { key, layer, link };
      } else {
        m.lit = null;
      }
    }
    // Each head's label over this sentence, where the pointer rests on it.
    if (m.titled !== result) {
      m.titled = result;
      for (const row of m.headLinks) for (const a of row) a.title = labelledHeadName(result, Number(a.dataset.layer), Number(a.dataset.head), HeadName);
    }
    if (!m.stop?.isConnected || m.stop.classList.contains('head')) this.setStop(m.lit?.link ?? m.flow.querySelector('a'));
  }

  setStop(link) {
    const m = this._map;
    if (!link || link === m.stop) return;
    if (m.stop) m.stop.tabIndex = -1;
    link.tabIndex = 0;
    m.stop = link;
  }

  // Arrow keys walk the parts in reading order; Home and End go to the first and last.
  onKey(event) {
    const links = [...this._map.flow.querySelectorAll('a')];
    const at = links.indexOf(event.target.closest?.('a'));
    if (at < 0) return;
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
    let next = null;
    if (step) next = links[Math.min(links.length - 1, Math.max(0, at + step))];
    else if (event.key === 'Home') next = links[0];
    else if (event.key === 'End') next = links[links.length - 1];
    if (!next) return;
    event.preventDefault();
    this.setStop(next);
    next.focus();
  }

  // A head's link chooses that head for every figure (and, on the article, goes to Figure 1; a
  // figure on its own stays where it is). On the article a link scrolls to its place and moves
  // the focus there without writing its id into the address, which holds the reader's view.
  onClick(event) {
    const link = event.target.closest?.('a');
    if (!link) return;
    this.setStop(link);
    const head = link.dataset.part === 'head';
    if (head) this.select({ layer: Number(link.dataset.layer), head: Number(link.dataset.head) });
    const plain = event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey;
    if (this._standalone ? head : plain) event.preventDefault();
    if (!this._standalone && plain) this.goTo(MAP_TARGETS[link.dataset.part]);
  }

  // At once, not smoothly: the figures on the way are laid out only as they come near (the
  // article's content-visibility), which moves a target that a smooth scroll aimed at. Once
  // they are, the target is brought to the top again if it moved.
  goTo(id) {
    const target = this.ownerDocument.getElementById(id);
    if (!target) return;
    target.scrollIntoView({ block: 'start', behavior: 'instant' });
    if (!target.hasAttribute('tabindex') && target.tabIndex < 0) target.setAttribute('tabindex', '-1');
    target.focus({ preventScroll: true });
    if (typeof requestAnimationFrame !== 'function') return;
    requestAnimationFrame(() => requestAnimationFrame(() => {
      if (Math.abs(target.getBoundingClientRect().top) > 2) target.scrollIntoView({ block: 'start', behavior: 'instant' });
    }));
  }
}

define('map', AttentionMap);
