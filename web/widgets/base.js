// The base of every attention figure: a custom element with a shadow root, a status line
// (example, live, or what failed with a retry) and a body the subclass draws from a "view"
// (figureView() builds it):
//   { result, token, layer, head, showSpecial, mode: 'example'|'live'|'loading'|'error',
//     model: {name, note, ...}, progress: {percent, loaded, total}, error: {message},
//     ready: engine loaded, sentence, inputError, sources: {[attribute]: absolute URL} }
// The article hands every figure the same view. Readers' choices leave a figure as events
// (bubbling out of the shadow root) so that the page's state decides what happens. Under the
// body every figure has a toolbar: the code to embed it as it is now, and SVG and PNG downloads.
import { currentEngine, getEngine } from '../engine/engine.js';
import { ROLE } from '../engine/result.js';
import { labelledHeadName, modelPhrase } from './data.js';
import { h, setText } from './dom.js';
import { adoptStyles, effectiveTheme, unwatchTheme, watchTheme } from './theme.js';
import { Latest, truncationNote } from './view.js';
import { HeadName, progressText } from './format.js';
import { download, figureSvg, modelLine, pngBlob, svgText } from './export.js';
import { elementSnippet, frameSnippet } from './snippet.js';
import { BASE_CSS, EMBEDDED_CSS, themeCss } from './style.js';
import { ATTRIBUTES, FIGURES, parseAttribute, reserveHeight, SOURCE_ATTRIBUTES, TAGS, unknownAttributeNote } from './registry.js';

export { ATTRIBUTES, FIGURES, TAGS };
// The newest-request rule, for the figures' modules that import it from here.
export { Latest };

// Defines a figure's element once, however many copies of the widgets a page loads (the
// article's modules and the embedding bundle may meet in one page). The element observes exactly
// the attributes its registry entry declares.
export function define(key, figureClass) {
  if (!Object.hasOwn(FIGURES, key)) throw new Error(`define: no figure "${key}" in the registry (web/widgets/registry.js)`);
  figureClass.figureKey = key;
  Object.defineProperty(figureClass, 'observedAttributes', { value: FIGURES[key].attributes, configurable: true });
  if (!customElements.get(FIGURES[key].tag)) customElements.define(FIGURES[key].tag, figureClass);
}

// A figure used on its own (outside the article), with a `sentence` attribute or inside the
// embedding bundle, follows its own attributes: its host is the driver that web/runtime/
// standalone.js installs here (driveStandalone(figure) -> {engine, resume, close,
// attributeChanged}), as article.js is the article's. Layer and head count from 1, as the
// figures label them; `word` is a token's text or its position (0 is [CLS]). Each figure's list
// and the parsers are in registry.js.

export const EVENTS = Object.freeze({
  select: 'attention-select',  // detail: a patch of {sentence, token, layer, head, showSpecial}
  open: 'attention-open',      // the reader asked for the live instrument
  retry: 'attention-retry',    // the reader asked to retry a failed load
  // To the host page, from a figure on its own, after the reader chose a token, a head or a
  // sentence (and the figure drew it): detail {sentence, word, token, layer, head, showSpecial},
  // word the token's text, token its position (0 is [CLS]), layer and head counted from 1 as in
  // the attributes. Bubbling and composed. (Not attention-select: the article's page listens to
  // that one for its own figures' patches.)
  change: 'attention-change',
});

let figureCount = 0;
// The observer of the widths of figures that keep a reserve (updateReserve), made at the first.
let reserveObserver = null;

export class AttentionFigure extends HTMLElement {
  // Set by the embedding bundle: there every figure follows its own attributes, with a default
  // sentence, since no article drives it.
  static embedded = false;

  // The host of a figure on its own, installed by web/runtime/standalone.js.
  static driveStandalone = null;

  // False for figures that compute everything themselves (the softmax lab).
  static needsModel = true;
  // Whether the figure may let go of its analysis and drawing when far from the viewport (release).
  static releasable = true;

  // True for figures that draw hidden states, queries and keys (the mechanism figure): only
  // then does the engine copy them out.
  static needsVectors = false;

  // True for figures that draw a row through a lens (web/engine/lenses.js): only then does a
  // live view carry the engine's lenses of its sentence.
  static showsLenses = false;

  constructor() {
    super();
    this._view = null;
    // This figure's requests to the engine (a figure on its own makes its own).
    this.channel = `figure-${++figureCount}`;
    // The driver of a figure on its own (driveStandalone), once connected as one.
    this._standalone = null;
    this._warned = new Set();
    // The notes on screen, by where they come from: the attributes as written, and what the
    // analysis could not honour (word, layer, head; resolveAttributes).
    this._noteGroups = { attributes: [], selection: [] };
    const root = this.attachShadow({ mode: 'open' });
    this.theme = 'light';
    // Three sheets: the theme's colours, the figure's styles, and its reserve (updateReserve).
    this._styles = adoptStyles(root, [themeCss('light'), BASE_CSS + (AttentionFigure.embedded ? EMBEDDED_CSS : '') + (this.constructor.css ?? ''), '']);
    this._reserving = false;
    this._reserved = 0;  // the reserve's height now, px
    this._held = 0;  // the height kept while released, px
    this._heldCss = '';
    this.statusEl = h('div.status', { role: 'status', 'aria-live': 'polite' });
    this.notesEl = h('div.notes', { role: 'note', hidden: true });
    this.bodyEl = h('div.body');
    this.toolsEl = this.buildTools();
    root.append(this.statusEl, this.notesEl, this.bodyEl, this.toolsEl);
  }

  // Applies the figure's theme (effectiveTheme); themeChanged() lets a subclass that paints
  // colours itself repaint.
  updateTheme() {
    const theme = effectiveTheme(this);
    if (theme === this.theme) return;
    this.theme = theme;
    this._styles.set(0, themeCss(theme));
    this.themeChanged?.(theme);
  }

  disconnectedCallback() {
    unwatchTheme(this);
    reserveObserver?.unobserve(this);
    this._standalone?.close();
  }

  // The engine this figure works with: its own (a figure on its own), else the page's.
  async figureEngine() {
    return this._standalone?.engine ?? (await (currentEngine() ?? getEngine()));
  }

  // The figure's registry entry (registry.js).
  get figure() {
    return FIGURES[this.constructor.figureKey];
  }

  // The addresses given as attributes (engine-src, manifest-src, model-src), resolved against the
  // host page (where an author wrote them); unparsable ones are left out, so the defaults beside
  // the bundle apply. The host of a figure on its own loads only http and https ones, from
  // origins the page allows (web/runtime/standalone.js).
  sources() {
    const out = {};
    for (const name of SOURCE_ATTRIBUTES) {
      const value = this.getAttribute(name);
      if (!value) continue;
      try {
        out[name] = new URL(value, document.baseURI).href;
      } catch {
        // Not an address: ignored.
      }
    }
    return out;
  }

  // A declared attribute's value through its parser, or `fallback` when it is absent.
  attributeValue(name, fallback = null) {
    const raw = this.getAttribute(name);
    return raw === null ? fallback : parseAttribute(name, raw).value;
  }

  // Notes for the attributes as written: a bad value of a declared attribute, and an attribute
  // the figure does not have (a misspelling).
  checkAttributes() {
    const key = this.constructor.figureKey;
    const notes = [];
    for (const { name, value } of this.attributes) {
      const unknown = unknownAttributeNote(key, name);
      const note = unknown ?? (this.figure?.attributes.includes(name) ? parseAttribute(name, value).note : null);
      if (note) notes.push({ attribute: name, value, message: note });
    }
    this.setNotes('attributes', notes);
  }

  setNotes(group, notes) {
    this._noteGroups[group] = notes;
    this.renderNotes([...this._noteGroups.attributes, ...this._noteGroups.selection]);
  }

  // The current selection as the host sees it (attention-change's detail), or null before the
  // first result; and the analysis result on screen (web/engine/result.js reads it).
  get selection() {
    const v = this._view;
    if (!v?.result || !(v.token >= 0)) return null;
    return { sentence: v.result.text, word: v.result.tokens[v.token].text, token: v.token, layer: v.layer + 1, head: v.head + 1, showSpecial: v.showSpecial };
  }

  get result() {
    return this._view?.result ?? null;
  }

  // The notes about attributes that could not be honoured: shown above the body, and each
  // said once on the console, naming the element.
  renderNotes(notes) {
    const messages = notes.map((n) => n.message);
    if (messages.join('\n') !== (this._notes ?? []).join('\n')) {
      this.notesEl.replaceChildren(...messages.map((text) => h('p', { text })));
      this.notesEl.hidden = messages.length === 0;
      this._notes = messages;
    }
    for (const text of messages) {
      if (this._warned.has(text)) continue;
      this._warned.add(text);
      console.warn(`<${this.localName}>${this.id ? `#${this.id}` : ''}: ${text}`);
    }
  }

  get view() {
    return this._view;
  }

  // Until a figure that needs the model has something to draw, it keeps the height its drawn
  // form takes in a column of its width (the registry's reserve), so that a host page does not
  // jump when it goes live. Its width is read by one ResizeObserver for every figure, whose
  // answer comes after layout and before the frame is painted: no frame shows a figure without
  // its reserve, and a column that narrows or widens takes the reserve of its new width.
  updateReserve(view) {
    const reserving = this.constructor.needsModel && !view?.result && Boolean(this.figure?.reserve);
    if (reserving === this._reserving) return;
    this._reserving = reserving;
    this._reserved = 0;
    if (reserving && typeof ResizeObserver === 'function') {
      reserveObserver ??= new ResizeObserver((entries) => {
        for (const entry of entries) entry.target.reserveFor(entry.borderBoxSize?.[0]?.inlineSize ?? entry.contentRect.width);
      });
      reserveObserver.observe(this);
      return;
    }
    reserveObserver?.unobserve(this);
    // Without ResizeObserver, a phone's reserve (the first row).
    this.holdHeight(reserving ? this.figure.reserve[0][1] : 0);
  }

  reserveFor(width) {
    if (!this._reserving) return;
    const height = reserveHeight(this.figure.reserve, width);
    if (height === this._reserved) return;
    this._reserved = height;
    this.holdHeight(height);
  }

  // The figure's own height while it has nothing drawn: its reserve, or the height it had when it
  // let go of its drawing (release); 0: none.
  holdHeight(height) {
    const css = this._held ? `:host { height: ${this._held}px !important; min-height: 0 !important; overflow: hidden !important; }\n`
      : height ? `:host { min-height: ${height}px; }\n` : '';
    if (css !== this._heldCss) this._styles.set(2, css);
    this._heldCss = css;
  }

  // Far from the viewport (its driver decides: web/runtime/standalone.js), a drawn figure lets go
  // of its analysis and of its drawing, which a page of hundreds of figures would otherwise all
  // hold, and keeps exactly the height it had, so that nothing around it moves; its driver draws it
  // again when it comes near. Not a figure with the reader's focus inside, nor one whose class
  // keeps state of its own that a redraw would lose (a prediction the reader asked for).
  // Returns whether it let go.
  release() {
    const view = this._view;
    if (!this.constructor.releasable || !view?.result || this.matches(':focus-within')) return false;
    this._held = this.getBoundingClientRect().height;
    this.holdHeight(0);
    this.view = { ...view, result: null, against: null, lenses: null, lensesPending: null, lensError: null, inputError: null, mode: 'loading', ready: false, progress: null, released: true };
    return true;
  }

  set view(view) {
    const previous = this._view;
    this._view = view;
    // Drawn again after a release: its own height again (or its reserve, while it waits).
    if (this._held && !view?.released) {
      this._held = 0;
      this.holdHeight(this._reserving ? this._reserved || this.figure.reserve[0][1] : 0);
    }
    // A view drawn before its lenses came (figureView's lensesPending, under the weights) is
    // drawn again with them, if it is still this figure's view then.
    if (this.constructor.showsLenses && view?.lensesPending) {
      view.lensesPending.then((answer) => {
        if (this._view === view) this.view = { ...view, ...answer, lensesPending: null };
      });
    }
    this.updateReserve(view);
    this.renderStatus(view);
    if (this.bodyChanged(view, previous)) {
      this.render(view, previous);
      // Engine work a new view calls for (a prediction) starts here, once the body is drawn:
      // render() only draws.
      this.viewDrawn?.(view, previous);
    }
    this.updateTools();
  }

  connectedCallback() {
    watchTheme(this);
    this.updateTheme();
    this.checkAttributes();
    this.updateReserve(this._view);
    // Back on the page while it still keeps a reserve: its width is watched again.
    if (this._reserving) reserveObserver?.observe(this);
    if (!this.constructor.needsModel) return;
    if (!this._standalone && (this.hasAttribute(ATTRIBUTES.sentence) || AttentionFigure.embedded)) this.standalone();
    // Back on the page: the download's progress reaches the status line again.
    this._standalone?.resume();
  }

  // An attribute the author (or the host's script) changes replaces the reader's choice of it.
  attributeChangedCallback(name) {
    if (this.isConnected) this.checkAttributes();
    if (name === ATTRIBUTES.theme) {
      if (this.isConnected) this.updateTheme();
      return;
    }
    this._standalone?.attributeChanged(name);
  }

  // Starts the figure's own host; without one installed (a page that loaded a figure's module
  // but not web/runtime/standalone.js) the figure says so instead of waiting for ever.
  standalone() {
    if (AttentionFigure.driveStandalone) {
      this._standalone = AttentionFigure.driveStandalone(this);
      return;
    }
    this.view = { mode: 'error', error: { message: 'Nothing drives this figure on its own: load it through the widgets\u2019 bundle (dist/attention-widgets.js).', kind: 'setup' }, result: null, model: null, progress: null, ready: false, showSpecial: true, sources: {} };
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
    // Written only where something changed: this runs for every selection.
    const what = view.result ? `Example computed ahead of time with ${view.model?.name ?? 'the same model'}.` : 'This figure needs the live model.';
    const progress = view.progress ?? { loaded: 0, total: 0, percent: 0 };
    setText(messages.loading, `${what} ${progressText(view.progress ? progress : null)}`);
    setText(messages.ready, `${what} The live model is ready.`);
    setText(messages.live, `Computed in your browser by ${modelPhrase(view.model)}.${truncationNote(view.result)}`);
    // A text the engine refuses (too long, say) is the input's problem, not the model's.
    const refusedText = view.error?.kind === 'input';
    setText(messages.error, view.mode !== 'error' ? '' : refusedText ? `This text cannot be analysed: ${view.error.message}` : `The live model did not load: ${view.error?.message ?? 'unknown error'}`);
    const active = view.mode === 'live' ? 'live' : view.mode === 'error' ? 'error' : view.ready ? 'ready' : 'loading';
    if (this._status.active !== active || this._status.mode !== view.mode) {
      for (const [key, el] of Object.entries(messages)) {
        el.className = key === active ? 'active' : 'inactive';
        el.setAttribute('aria-hidden', String(key !== active));
      }
      this.statusEl.dataset.mode = view.mode;
      // While the model downloads, only the page's own progress line speaks: a figure the page
      // drives keeps its progress to itself (six figures counting bytes at once say nothing).
      this.statusEl.setAttribute('aria-live', active === 'loading' && !this._standalone ? 'off' : 'polite');
      this._status.actionEvent = active === 'error' ? EVENTS.retry : EVENTS.open;
      action.textContent = active === 'error' ? 'Retry' : 'Open the instrument';
      action.className = active === 'error' ? 'retry' : 'primary open';
      action.style.visibility = active === 'error' || active === 'ready' ? 'visible' : 'hidden';
      action.tabIndex = action.style.visibility === 'hidden' ? -1 : 0;
      this._status.active = active;
      this._status.mode = view.mode;
    }
    setText(badge, { live: 'Live', error: 'Failed', ready: 'Example', loading: view.result ? 'Example' : 'Loading' }[active]);
  }

  // The body is redrawn only when what it shows changed, not on every progress report.
  bodyChanged(view, previous) {
    return !previous || ['result', 'token', 'layer', 'head', 'showSpecial', 'mode', 'inputError', 'sentence']
      .some((key) => view[key] !== previous[key])
      || (this.constructor.showsLenses && ['lens', 'lenses', 'lensError'].some((key) => view[key] !== previous[key]));
  }

  // Subclasses draw their body here; `previous` lets them keep focus and skip redraws.
  render() {}

  // The body when there is nothing to draw yet (no example for this model, or a failure).
  renderPlaceholder(view) {
    const text = view.mode !== 'error' ? 'This figure appears when the model has loaded.'
      : view.error?.kind === 'input' ? 'This figure appears for a text the model can read; the line above says what is wrong with this one.'
        : 'This figure needs the live model, which did not load. The retry button above tries again.';
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

  // ---- Embedding and export ----

  buildTools() {
    const button = (text, action, label) => h('button', { type: 'button', dataset: { action }, 'aria-label': label, text, on: { click: () => this.onTool(action) } });
    this.embedButton = button('Embed', 'embed', 'Embed: show the code that embeds this figure as it is now');
    this.embedButton.setAttribute('aria-expanded', 'false');
    this.snippetEl = h('textarea.snippet', { readonly: true, rows: 3, spellcheck: 'false', 'aria-label': 'Code for a script tag and the element' });
    this.frameSnippetEl = h('textarea.snippet', { readonly: true, rows: 3, spellcheck: 'false', 'aria-label': 'Code for an iframe' });
    this.embedPanel = h('div.embed-panel', { hidden: true },
      h('p', { text: 'Paste this into any page; the script loads the engine and the model from this site.' }),
      this.snippetEl,
      h('p', { text: 'Or, where a site allows only iframes:' }),
      this.frameSnippetEl,
      h('button', { type: 'button', dataset: { action: 'copy' }, text: 'Copy the script and element', on: { click: () => this.onTool('copy') } }));
    this.toolMessage = h('span.tool-message', { role: 'status' });
    return h('div.tools', { hidden: true },
      h('div.tool-buttons', {}, this.embedButton,
        button('SVG', 'svg', 'SVG: download this figure as a vector picture'),
        button('PNG', 'png', 'PNG: download this figure as an image'),
        this.toolMessage),
      this.embedPanel);
  }

  // Whether there is something to embed or export.
  canExport() {
    return Boolean(this.figure?.exportable && this.view?.result);
  }

  updateTools() {
    const hidden = !this.canExport();
    if (this.toolsEl.hidden !== hidden) this.toolsEl.hidden = hidden;
    if (!this.embedPanel.hidden && this.canExport()) this.fillSnippets();
  }

  fillSnippets() {
    const attributes = this.snippetAttributes(this.view);
    const key = this.constructor.figureKey;
    this.snippetEl.value = elementSnippet(TAGS[key], attributes);
    this.frameSnippetEl.value = frameSnippet(key, attributes, this.exportTitle(this.view), FIGURES[key].frameHeight);
  }

  // The figure's state as the element's attributes, in the order an author would write them.
  snippetAttributes(view) {
    const out = [];
    const { result, token } = view;
    if (result) {
      out.push([ATTRIBUTES.sentence, result.text]);
      const text = result.tokens[token].text;
      const first = result.tokens.findIndex((t, i) => t.text.toLowerCase() === text.toLowerCase() && result.roles[i] !== ROLE.cls);
      // A word's text reads better; its position is exact where the text occurs earlier too.
      out.push([ATTRIBUTES.word, first === token && !/^\d+$/.test(text) ? text : String(token)]);
      out.push([ATTRIBUTES.layer, String(view.layer + 1)], [ATTRIBUTES.head, String(view.head + 1)]);
    }
    if (view.showSpecial === false) out.push([ATTRIBUTES.hideSpecial, true]);
    for (const [name, url] of Object.entries(view.sources ?? {})) out.push([name, url]);
    return out;
  }

  // The picture's title; subclasses name what they draw.
  exportTitle(view) {
    const word = view.result ? `\u201c${view.result.tokens[view.token].text}\u201d` : '';
    return `Attention of ${word}`;
  }

  // The lines under the title: the sentence, the model, the layer and head, the token.
  exportLines(view) {
    const { result } = view;
    return [...this.contextLines(view), `${labelledHeadName(result, view.layer, view.head, HeadName)}; token \u201c${result.tokens[view.token].text}\u201d, ${view.token + 1} of ${result.n}`];
  }

  contextLines({ result, model }) {
    const lines = [`Sentence: \u201c${result.text}\u201d`];
    if (model) lines.push(modelLine(model));
    return lines;
  }

  // What the picture shows: {panels, columns, note}; subclasses choose their rows.
  exportPanels() {
    return null;
  }

  exportSpec() {
    const view = this.view;
    if (!this.canExport()) return null;
    const panels = this.exportPanels(view);
    if (!panels) return null;
    return { title: this.exportTitle(view), lines: this.exportLines(view), ...panels };
  }

  // The figure as an SVG document (a string), or null when it has nothing to show yet.
  toSVG() {
    const spec = this.exportSpec();
    if (!spec) return null;
    const { element } = figureSvg(spec);
    return svgText(element);
  }

  async toPNG() {
    const spec = this.exportSpec();
    if (!spec) return null;
    const { element, width, height } = figureSvg(spec);
    return pngBlob(svgText(element), width, height);
  }

  fileName(extension) {
    const view = this.view;
    const where = view?.result && this.constructor.needsModel ? `-L${view.layer + 1}H${view.head + 1}` : '';
    return `${TAGS[this.constructor.figureKey]}${where}.${extension}`;
  }

  async onTool(action) {
    this.toolMessage.textContent = '';
    try {
      if (action === 'embed') {
        const open = this.embedPanel.hidden;
        this.embedPanel.hidden = !open;
        this.embedButton.setAttribute('aria-expanded', String(open));
        if (open) this.fillSnippets();
      } else if (action === 'copy') {
        await navigator.clipboard.writeText(this.snippetEl.value);
        this.toolMessage.textContent = 'Copied.';
      } else if (action === 'svg') {
        const text = this.toSVG();
        if (text) download(new Blob([text], { type: 'image/svg+xml' }), this.fileName('svg'), this.shadowRoot);
      } else if (action === 'png') {
        const blob = await this.toPNG();
        if (blob) download(blob, this.fileName('png'), this.shadowRoot);
      }
    } catch (error) {
      this.toolMessage.textContent = action === 'copy' ? 'Copying was refused; select the code and copy it by hand.' : `The picture failed: ${error.message}`;
    }
  }
}
