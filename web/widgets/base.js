// The base of every attention figure: a custom element with a shadow root, a status line
// (example, live, or what failed with a retry) and a body the subclass draws from a "view":
//   { result, token, layer, head, showSpecial, mode: 'example'|'live'|'loading'|'error',
//     model: {name, note, ...}, progress: {percent, loaded, total}, error: {message},
//     ready: engine loaded, sentence }
// The article hands every figure the same view. Readers' choices leave a figure as events
// (bubbling out of the shadow root) so that the page's state decides what happens.
import { DEFAULT_MANIFEST_URL, getEngine, onEngineProgress } from '../engine/engine.js';
import { describeModel, resolveSelection, ROLE } from './data.js';
import { h } from './dom.js';
import { BASE_CSS } from './style.js';

// Attributes of a figure used on its own (outside the article): with a `sentence` attribute
// the figure loads the page's shared engine itself and follows its attributes. Layer and head
// count from 1, as the figures label them; `word` is a token's text or its position (0 is
// [CLS]).
export const ATTRIBUTES = Object.freeze({
  sentence: 'sentence',
  word: 'word',
  layer: 'layer',
  head: 'head',
  hideSpecial: 'hide-special',
  modelSrc: 'model-src',
  manifestSrc: 'manifest-src',
});

export const EVENTS = Object.freeze({
  select: 'attention-select',  // detail: a patch of {sentence, token, layer, head, showSpecial}
  open: 'attention-open',      // the reader asked for the live instrument
  retry: 'attention-retry',    // the reader asked to retry a failed load
});

const megabytes = (bytes) => (bytes / 1e6).toFixed(1);

export function progressText(progress) {
  if (!progress) return 'Starting the download of the engine and the model\u2026';
  const percent = Math.floor(progress.percent ?? 0);
  if (percent >= 100) return `Downloaded ${megabytes(progress.loaded)} MB (100%); starting the engine\u2026`;
  return progress.total
    ? `Loading the live model: ${megabytes(progress.loaded)} of ${megabytes(progress.total)} MB (${percent}%)`
    : `Loading the live model: ${megabytes(progress.loaded)} MB`;
}

export class AttentionFigure extends HTMLElement {
  static observedAttributes = Object.values(ATTRIBUTES);

  constructor() {
    super();
    this._view = null;
    const root = this.attachShadow({ mode: 'open' });
    root.append(h('style', { text: BASE_CSS + (this.constructor.css ?? '') }));
    this.statusEl = h('div.status', { role: 'status', 'aria-live': 'polite' });
    this.bodyEl = h('div.body');
    root.append(this.statusEl, this.bodyEl);
  }

  get view() {
    return this._view;
  }

  set view(view) {
    const previous = this._view;
    this._view = view;
    this.renderStatus(view);
    if (this.bodyChanged(view, previous)) this.render(view, previous);
  }

  connectedCallback() {
    if (this.hasAttribute(ATTRIBUTES.sentence)) this.standalone();
  }

  attributeChangedCallback() {
    if (this._standalone) this.refreshStandalone();
  }

  // Drives the figure from its own attributes and the page's shared engine. The reader's
  // choices become attribute changes and stop here, so they never reach a host page's state.
  standalone() {
    if (this._standalone) return;
    this._standalone = { engine: null, error: null, progress: null };
    this.addEventListener(EVENTS.select, (event) => {
      event.stopPropagation();
      const d = event.detail;
      if (d.sentence !== undefined) {
        this.setAttribute(ATTRIBUTES.sentence, d.sentence);
        this.removeAttribute(ATTRIBUTES.word);
      }
      if (d.token !== undefined) this.setAttribute(ATTRIBUTES.word, String(d.token));
      if (d.layer !== undefined) this.setAttribute(ATTRIBUTES.layer, String(d.layer + 1));
      if (d.head !== undefined) this.setAttribute(ATTRIBUTES.head, String(d.head + 1));
      if (d.showSpecial !== undefined) this.toggleAttribute(ATTRIBUTES.hideSpecial, !d.showSpecial);
    });
    this.addEventListener(EVENTS.retry, (event) => {
      event.stopPropagation();
      this.loadStandalone();
    });
    onEngineProgress((progress) => {
      this._standalone.progress = progress;
      if (!this._standalone.engine) this.refreshStandalone();
    });
    this.loadStandalone();
  }

  loadStandalone() {
    const state = this._standalone;
    state.error = null;
    const base = document.baseURI;
    const manifest = this.getAttribute(ATTRIBUTES.manifestSrc);
    const model = this.getAttribute(ATTRIBUTES.modelSrc);
    const options = { manifestUrl: manifest ? new URL(manifest, base).href : DEFAULT_MANIFEST_URL };
    if (model) options.modelUrl = new URL(model, base).href;
    this.refreshStandalone();
    getEngine(options).then((engine) => {
      state.engine = engine;
      this.refreshStandalone();
    }, (error) => {
      state.error = { message: error.message, kind: error.kind };
      this.refreshStandalone();
    });
  }

  refreshStandalone() {
    const { engine, error, progress } = this._standalone;
    const sentence = this.getAttribute(ATTRIBUTES.sentence) ?? '';
    const view = {
      mode: engine ? 'live' : error ? 'error' : 'loading', error, progress, ready: Boolean(engine),
      model: engine ? describeModel(engine.info) : null, sentence, result: null,
      showSpecial: !this.hasAttribute(ATTRIBUTES.hideSpecial),
    };
    if (engine) {
      try {
        view.result = engine.analyze(sentence);
      } catch (analysisError) {
        view.mode = 'error';
        view.error = { message: analysisError.message, kind: analysisError.kind };
      }
    }
    if (view.result) {
      const word = this.getAttribute(ATTRIBUTES.word) ?? '';
      const tokens = view.result.tokens;
      let token = /^\d+$/.test(word) ? Number(word) : tokens.findIndex((t, i) => t.text.toLowerCase() === word.toLowerCase() && view.result.roles[i] !== ROLE.cls);
      if (!(token >= 0 && token < tokens.length)) token = -1;
      const oneBased = (name) => (/^\d+$/.test(this.getAttribute(name) ?? '') ? Number(this.getAttribute(name)) - 1 : -1);
      Object.assign(view, resolveSelection(view.result, { token, layer: oneBased(ATTRIBUTES.layer), head: oneBased(ATTRIBUTES.head) }, word));
    }
    this.view = view;
  }

  emit(name, detail = {}) {
    this.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, composed: true }));
  }

  select(patch) {
    this.emit(EVENTS.select, patch);
  }

  // What the status line says; subclasses that need no model may override. Every message the
  // line can hold while loading goes well sits in one grid cell, only one of them visible, so
  // the line keeps its height when the example gives way to the live figure.
  renderStatus(view) {
    if (!this._status) {
      const messages = { loading: h('span'), ready: h('span'), live: h('span'), error: h('span') };
      const action = h('button', { type: 'button', on: { click: () => this.emit(this._status.actionEvent) } });
      const badge = h('span.badge');
      this.statusEl.replaceChildren(badge, h('span.message', {}, Object.values(messages)), action);
      this._status = { messages, action, badge, actionEvent: null };
    }
    const { messages, action, badge } = this._status;
    const what = view.result ? `Example computed ahead of time with ${view.model?.name ?? 'the same model'}.` : 'This figure needs the live model.';
    const progress = view.progress ?? { loaded: 0, total: 0, percent: 0 };
    messages.loading.textContent = `${what} ${progressText(view.progress ? progress : null)}`;
    messages.ready.textContent = `${what} The live model is ready.`;
    messages.live.textContent = `Computed in your browser by ${view.model?.name ?? 'the model'}${view.model?.note ? ` (${view.model.note})` : ''}.`;
    messages.error.textContent = view.mode === 'error' ? `The live model did not load: ${view.error?.message ?? 'unknown error'}` : '';
    const active = view.mode === 'live' ? 'live' : view.mode === 'error' ? 'error' : view.ready ? 'ready' : 'loading';
    for (const [key, el] of Object.entries(messages)) {
      el.className = key === active ? 'active' : 'inactive';
      el.setAttribute('aria-hidden', String(key !== active));
    }
    this.statusEl.dataset.mode = view.mode;
    badge.textContent = { live: 'Live', error: 'Failed', ready: 'Example', loading: view.result ? 'Example' : 'Loading' }[active];
    this._status.actionEvent = active === 'error' ? EVENTS.retry : EVENTS.open;
    action.textContent = active === 'error' ? 'Retry' : 'Open the instrument';
    action.className = active === 'error' ? 'retry' : 'primary open';
    action.style.visibility = active === 'error' || active === 'ready' ? 'visible' : 'hidden';
    action.tabIndex = action.style.visibility === 'hidden' ? -1 : 0;
  }

  // The body is redrawn only when what it shows changed, not on every progress report.
  bodyChanged(view, previous) {
    return !previous || ['result', 'token', 'layer', 'head', 'showSpecial', 'mode', 'inputError', 'sentence']
      .some((key) => view[key] !== previous[key]);
  }

  // Subclasses draw their body here; `previous` lets them keep focus and skip redraws.
  render() {}

  // The body when there is nothing to draw yet (no example for this model, or a failure).
  renderPlaceholder(view) {
    const text = view.mode === 'error'
      ? 'This figure needs the live model, which did not load. The retry button above tries again.'
      : 'This figure appears when the model has loaded.';
    this.bodyEl.replaceChildren(h('div.placeholder', { style: { 'min-height': this.constructor.placeholderHeight ?? '12em' } }, h('p', { text })));
  }

  // Whether the view holds something to draw; draws the placeholder otherwise.
  hasResult(view) {
    if (view?.result) return true;
    this.renderPlaceholder(view ?? { mode: 'loading' });
    return false;
  }

  // True when the precomputed example is shown: the sentence cannot change until the live
  // model is open.
  isExample(view) {
    return view.mode !== 'live';
  }
}
