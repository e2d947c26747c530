// <attention-precision>: where precision is spent. The selected token's row from the weights the
// page runs on (the compact file) next to the same row from the f32 reference they were made
// from, with the difference for every weight, the largest in the row and the largest in the
// whole sentence (every layer, head and row) against the fidelity bar; a switch puts the naive
// plan (int8, one scale per tensor) in the compact file's place. The f32 and naive files are
// large, so they download only when the reader asks; the manifest names them:
//   manifest.precision = {reference, shipped, naive, bar}  (scripts/site/build_site.mjs)
import { currentEngine, DEFAULT_MANIFEST_URL, getSideEngine, isSuperseded, loadManifest, manifestModel } from '../engine/engine.js';
import { ATTRIBUTES, AttentionFigure, define, Latest } from './base.js';
import { isSpecial } from '../engine/result.js';
import { attentionDifference, precisionWords } from './data.js';
import { h, scrollBox, setText } from './dom.js';
import { fmt, headName, HeadName, megabytes, superscript } from './format.js';
import { barScale, revealRow, rowPanel } from './bars.js';
import { CONTROLS_CSS, HeadMenu, TokenChips } from './controls.js';
import { PLANS } from './registry.js';

const DEFAULT_BAR = 1e-3;

// Small numbers as a reader writes them: 0.0153, or 3.7 × 10⁻⁴ below a hundredth.
export function small(x) {
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return '0';
  if (Math.abs(x) >= 0.01) return fmt(x, 4);
  let exponent = Math.floor(Math.log10(Math.abs(x)));
  let mantissa = (x / 10 ** exponent).toFixed(1);
  if (Math.abs(Number(mantissa)) >= 10) {  // 9.96e-4 rounds to 10.0
    exponent += 1;
    mantissa = (x / 10 ** exponent).toFixed(1);
  }
  return `${mantissa.replace('-', '\u2212')}\u00a0\u00d7\u00a010${superscript(exponent)}`;
}

// How a difference compares with the bar, in words.
export function againstBar(difference, bar) {
  return difference <= bar ? `within the ${bar} bar` : `${fmt(difference / bar, difference / bar >= 10 ? 0 : 1)} times the ${bar} bar`;
}

class AttentionPrecision extends AttentionFigure {
  // What the reader asked it to compute would be lost by a redraw: it keeps its drawing when far.
  static releasable = false;
  static css = `${CONTROLS_CSS}
  .intro { margin: 0 0 0.6em; }
  .intro-box { padding: 0.2em 0 0.4em; }
  .plans { border: 0; padding: 0; margin: 0 0 0.6em; display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; }
  .plans legend { padding: 0; margin-bottom: 0.2em; font-weight: 600; }
  .plans label { display: inline-flex; gap: 0.35em; align-items: baseline; min-height: 2em; }
  .verdict { display: grid; gap: 0.2em; margin: 0.2em 0 0.7em; padding: 0.5em 0.7em; border-radius: 6px; background: var(--attn-panel); }
  .verdict .over { color: var(--attn-error); font-weight: 700; }
  .verdict .within { color: var(--attn-bar); font-weight: 700; }
  .verdict .show-worst { min-height: 1.8em; padding: 0.05em 0.5em; font-size: 0.9em; }
  table.diff { width: 100%; max-width: 46em; border-collapse: collapse; table-layout: fixed; }
  table.diff caption { text-align: left; font-size: 0.86em; color: var(--attn-muted); padding-bottom: 0.3em; }
  table.diff th, table.diff td { padding: 0.05em 0.3em; white-space: nowrap; }
  table.diff thead th { font-size: 0.8em; font-weight: 600; color: var(--attn-muted); text-align: right; }
  table.diff tbody th { width: 6.5em; text-align: right; font-weight: 400; overflow: hidden; text-overflow: ellipsis; }
  table.diff td.num { width: 5.2em; text-align: right; }
  table.diff td.d { width: 7.2em; text-align: right; }
  table.diff td.d.over { color: var(--attn-error); font-weight: 700; }
  table.diff tr.selected th { font-weight: 700; }
  table.diff td.track { position: relative; height: 1.7em; padding: 0; }
  .bar-ref, .bar-plan { position: absolute; left: 0; height: 0.55em; border-radius: 0 3px 3px 0; min-width: 1px; }
  .bar-ref { top: 0.25em; background: var(--attn-bar); }
  .bar-plan { top: 0.9em; background: var(--attn-uniform); }
  .swatch-ref, .swatch-plan { display: inline-block; width: 1.4em; height: 0.6em; border-radius: 2px; vertical-align: middle; margin-right: 0.3em; }
  .swatch-ref { background: var(--attn-bar); }
  .swatch-plan { background: var(--attn-uniform); }
  .loading-line { min-height: 1.5em; }
  .error-text { color: var(--attn-error); }
  @container (max-width: 520px) {
    table.diff td.num.plan-value, table.diff thead th.plan-value { display: none; }
    table.diff tbody th { width: 4.8em; }
  }
  `;

  static placeholderHeight = '18em';

  constructor() {
    super();
    this.plan = 'shipped';
    // The comparison's own state: 'idle' until the reader asks, then 'loading', 'ready' or 'error'.
    this.compare = { state: 'idle', manifest: null, progress: {}, engines: null, error: null };
    this._compareLatest = new Latest();
    this._table = null;
  }

  attributeChangedCallback(name, old, value) {
    if (name === ATTRIBUTES.plan) {
      this.plan = this.attributeValue(ATTRIBUTES.plan, 'shipped');
      if (this.view) { this.render(this.view); this.compareNow(this.view); }
    }
    super.attributeChangedCallback(name, old, value);
  }

  manifestUrl() {
    return this.sources()[ATTRIBUTES.manifestSrc] ?? DEFAULT_MANIFEST_URL;
  }

  // The manifest's precision section and the entries it names, or a reason there are none.
  async precisionFiles() {
    const manifest = await loadManifest(this.manifestUrl());
    const p = manifest?.precision;
    const entry = (key) => manifestModel(manifest, p?.[key]);
    if (!p || !entry('reference') || !entry('shipped') || !entry('naive')) {
      throw new Error('This site does not serve the f32 reference and the naive file that this figure compares.');
    }
    return {
      names: { reference: p.reference, shipped: p.shipped, naive: p.naive },
      entries: { reference: entry('reference'), shipped: entry('shipped'), naive: entry('naive') },
      bar: Number.isFinite(p.bar) && p.bar > 0 ? p.bar : DEFAULT_BAR,
    };
  }

  // Downloads what the comparison needs: the f32 reference and the naive file always, and the
  // shipped file unless the page's own engine already runs it.
  async load() {
    const c = this.compare;
    if (c.state === 'loading' || c.state === 'ready') return;
    Object.assign(c, { state: 'loading', error: null, progress: {} });
    this.render(this.view);
    try {
      const files = await this.precisionFiles();
      c.manifest = files;
      this.render(this.view);
      const manifestUrl = this.manifestUrl();
      const engineUrl = this.sources()[ATTRIBUTES.engineSrc];
      const side = (key) => getSideEngine({ manifestUrl, model: files.names[key], engineUrl }, (p) => {
        c.progress[key] = p;
        this.renderLoading();
      });
      // The page's engine serves as the compact side when it runs that very file; otherwise
      // (another model chosen, or its load failed) the compact file loads on its own.
      const shipped = (async () => {
        const page = await currentEngine()?.catch(() => null);
        return page?.info?.sha256 === files.entries.shipped.sha256 ? page : side('shipped');
      })();
      const [reference, naive, ship] = await Promise.all([side('reference'), side('naive'), shipped]);
      c.engines = { reference, naive, shipped: ship };
      c.state = 'ready';
    } catch (error) {
      c.state = 'error';
      c.error = error.message;
    }
    this.render(this.view);
    this.compareNow(this.view);
    this.updateTools();
  }

  renderLoading() {
    if (!this._loadingLine) return;
    const c = this.compare;
    const parts = ['reference', 'naive', 'shipped'].filter((k) => c.progress[k]).map((k) => {
      const p = c.progress[k];
      const label = k === 'reference' ? 'f32 reference' : k === 'naive' ? 'naive file' : 'compact file';
      return `${label} ${megabytes(p.loaded)}${p.total ? ` of ${megabytes(p.total)}` : ''}`;
    });
    this._loadingLine.textContent = parts.length ? `Downloading: ${parts.join('; ')}.` : 'Starting the downloads\u2026';
  }

  viewDrawn(view) {
    this.compareNow(view);
  }

  // Asks both engines for the sentence's analysis when either lacks it, and draws once both
  // are in; only the newest request is drawn.
  compareNow(view) {
    const c = this.compare;
    const sentence = view?.result?.text ?? view?.sentence;
    if (c.state !== 'ready' || !sentence) return;
    const refEngine = c.engines.reference;
    const planEngine = c.engines[this.plan];
    const ticket = this._compareLatest.next();
    if (refEngine.peek(sentence) && planEngine.peek(sentence)) return;
    const channel = `${this.channel}-precision`;
    Promise.all([refEngine.analyze(sentence, { channel }), planEngine.analyze(sentence, { channel: `${channel}-plan` })]).then(() => {
      if (this._compareLatest.current(ticket)) this.render(this.view);
    }, (error) => {
      if (isSuperseded(error) || !this._compareLatest.current(ticket)) return;
      this._table = null;
      this.bodyEl.replaceChildren(h('div.placeholder', {}, h('p', { text: `This sentence could not be compared: ${error.message}` })));
    });
  }

  render(view) {
    this._loadingLine = null;
    if (!view) return;
    const c = this.compare;
    const sentence = view.result?.text ?? view.sentence;
    if (c.state !== 'ready' || !sentence) {
      this._table = null;
      this.renderIntro(view);
      return;
    }
    // Both analyses run in the engine's worker (compareNow); until they are here the figure
    // keeps what it showed.
    const reference = c.engines.reference.peek(sentence);
    const other = c.engines[this.plan].peek(sentence);
    if (!reference || !other) {
      if (!this._table) this.bodyEl.replaceChildren(h('div.placeholder', {}, h('p', { text: 'Comparing the two models\u2019 rows\u2026' })));
      return;
    }
    const n = reference.n;
    const token = Math.min(view.token ?? 0, n - 1);
    const layer = Math.min(view.layer ?? 0, reference.layers - 1);
    const head = Math.min(view.head ?? 0, reference.heads - 1);
    let diff;
    try {
      diff = attentionDifference(reference, other, layer, head, token);
    } catch (error) {
      this._table = null;
      this.bodyEl.replaceChildren(h('div.placeholder', {}, h('p', { text: error.message })));
      return;
    }
    this._shown = { reference, other, diff, token, layer, head };
    const showSpecial = view.showSpecial !== false;
    const t = this._table?.reference === reference && this._table.other === other && this._table.showSpecial === showSpecial
      ? this._table : this.buildTable(reference, other, showSpecial);
    const bar = c.manifest.bar;
    const planName = this.plan === 'shipped' ? 'compact' : 'naive';
    for (const [key, radio] of Object.entries(t.radios)) radio.checked = key === this.plan;
    t.chips.update(reference, token, showSpecial);
    t.menu.update(reference, layer, head);
    const word = reference.tokens[token].text;
    const w = diff.where;
    t.verdict.replaceChildren(
      h('span', {}, 'Largest difference in this row: ', h('b.row-max', { text: small(diff.rowMax) }), '.'),
      h('span', {}, `Largest over the whole sentence (${reference.layers * reference.heads} heads \u00d7 ${n} rows \u00d7 ${n} weights): `,
        h('b.sentence-max', { text: small(diff.sentenceMax) }),
        `, in ${headName(w.layer, w.head)}, row \u201c${reference.tokens[w.row].text}\u201d, weight on \u201c${reference.tokens[w.column].text}\u201d: `,
        h(`span.${diff.sentenceMax <= bar ? 'within' : 'over'}`, { text: againstBar(diff.sentenceMax, bar) }), '. ',
        w.row === token && w.layer === layer && w.head === head ? null
          // It says what it changes: in the article the token and the head are the page's, so
          // every figure moves with it.
          : h('button.show-worst', {
            type: 'button', text: `Show that row (selects \u201c${reference.tokens[w.row].text}\u201d in ${headName(w.layer, w.head)}${this._standalone ? '' : ' in every figure'})`,
            on: { click: () => this.select({ token: w.row, layer: w.layer, head: w.head }) },
          })));
    Object.assign(t.verdict.dataset, { rowMax: String(diff.rowMax), sentenceMax: String(diff.sentenceMax), bar: String(bar), plan: this.plan });
    const scaleMax = Math.max(barScale(diff.reference), barScale(diff.other));
    t.rows.forEach((r, j) => {
      Object.assign(r.tr.dataset, { reference: String(diff.reference[j]), other: String(diff.other[j]), difference: String(diff.row[j]) });
      r.tr.classList.toggle('selected', j === token);
      r.ref.style.width = `${(100 * diff.reference[j]) / scaleMax}%`;
      r.plan.style.width = `${(100 * diff.other[j]) / scaleMax}%`;
      r.refValue.nodeValue = fmt(diff.reference[j], 4);
      r.planValue.nodeValue = fmt(diff.other[j], 4);
      r.d.nodeValue = small(diff.row[j]);
      r.dCell.classList.toggle('over', diff.row[j] > bar);
    });
    if (t.selected !== token) {
      t.selected = token;
      revealRow(t.scroller, t.rows[token].tr);
    }
    setText(t.caption, `\u201c${word}\u201d (token ${token + 1} of ${n}) in ${headName(layer, head)}: f32 against the ${planName} weights.`);
    setText(t.planHead, planName);
    setText(t.legendPlan, `${planName} weights (bars run from 0 to ${fmt(scaleMax, 1)})`);
    setText(t.legendBar, `differences above ${bar} in bold`);
    this.updateTools();
  }

  // The figure's parts for one pair of results: built once, then updated by render().
  buildTable(reference, other, showSpecial) {
    const c = this.compare;
    const entries = c.manifest.entries;
    const planLabel = (key) => (key === 'shipped'
      ? `the compact file the page runs on (${megabytes(entries.shipped.bytes)}, ${precisionWords(c.engines.shipped.info.precision)})`
      : `the naive file: int8, one scale per tensor (${megabytes(entries.naive.bytes)})`);
    const radios = {};
    const plans = h('fieldset.plans', {},
      h('legend', { text: `Compare the f32 reference (${megabytes(entries.reference.bytes)}) with` }),
      PLANS.map((key) => {
        radios[key] = h('input', {
          type: 'radio', name: 'plan', value: key, checked: key === this.plan, dataset: { plan: key },
          on: { change: () => { this.plan = key; this.render(this.view); this.compareNow(this.view); this.updateTools(); } },
        });
        return h('label', {}, radios[key], planLabel(key));
      }));
    const rows = reference.tokens.map((tok, j) => {
      const special = isSpecial(reference.roles, j);
      const ref = h('div.bar-ref');
      const plan = h('div.bar-plan');
      const refValue = document.createTextNode('');
      const planValue = document.createTextNode('');
      const d = document.createTextNode('');
      const dCell = h('td.d', {}, d);
      const tr = h('tr', { dataset: { token: String(j) }, hidden: special && !showSpecial },
        h('th', { scope: 'row', class: special ? 'special' : undefined, title: tok.text, text: tok.text }),
        h('td.track', { 'aria-hidden': 'true' }, ref, plan),
        h('td.num', {}, refValue),
        h('td.num.plan-value', {}, planValue),
        dCell);
      return { tr, ref, plan, refValue, planValue, d, dCell };
    });
    const caption = h('caption');
    const planHead = h('th.plan-value', { scope: 'col' });
    const scroller = scrollBox('div.rows-scroll', 'The two models\u2019 weights, token by token', h('table.diff', {},
      caption,
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', text: 'Token' }), h('th', { scope: 'col', text: 'Weights' }),
        h('th', { scope: 'col', text: 'f32' }), planHead,
        h('th', { scope: 'col', text: '|difference|' }))),
      h('tbody', {}, rows.map((r) => r.tr))));
    const chips = new TokenChips({ label: 'Tokens of the sentence: choose whose row to compare', onSelect: (patch) => this.select(patch) });
    const menu = new HeadMenu((patch) => this.select(patch));
    const verdict = h('div.verdict', { 'aria-live': 'polite' });
    const legendPlan = document.createTextNode('');
    const legendBar = h('span');
    this.bodyEl.replaceChildren(plans, chips.scroller, menu.el, verdict, scroller,
      h('div.legend', { 'aria-hidden': 'true' },
        h('span', {}, h('span.swatch-ref'), 'f32 reference'),
        h('span', {}, h('span.swatch-plan'), legendPlan),
        legendBar));
    this._table = { reference, other, showSpecial, radios, rows, caption, planHead, scroller, chips, menu, verdict, legendPlan, legendBar, selected: -1 };
    return this._table;
  }

  // Before the comparison is loaded: what it will download, and the button.
  renderIntro(view) {
    const c = this.compare;
    const sizes = c.manifest
      ? ` (${megabytes(c.manifest.entries.reference.bytes)} and ${megabytes(c.manifest.entries.naive.bytes)})`
      : '';
    const children = [h('p.intro', {
      text: 'This figure runs the sentence through the f32 weights the compact file was made from, and through a naive 8-bit copy, '
        + `and sets their rows beside the compact one. Those two files${sizes} download only when you ask.`,
    })];
    if (c.state === 'loading') {
      this._loadingLine = h('p.loading-line', { role: 'status', text: 'Starting the downloads\u2026' });
      children.push(this._loadingLine);
      this.renderLoading();
    } else {
      if (c.state === 'error') children.push(h('p', { role: 'alert', class: 'error-text', text: `The comparison did not load: ${c.error}` }));
      children.push(h('button.primary', {
        type: 'button', dataset: { action: 'load-precision' },
        text: c.state === 'error' ? 'Retry the comparison' : 'Load the f32 and naive files',
        on: { click: () => { c.state = 'idle'; this.load(); } },
      }));
      if (!view?.result && view?.mode !== 'live') children.push(h('p.small.muted', { text: 'The compact model the page runs on loads first.' }));
    }
    this.bodyEl.replaceChildren(h('div.intro-box', {}, children));
    if (!c.manifest && !this._manifestAsked) {
      this._manifestAsked = true;
      this.precisionFiles().then((files) => {
        c.manifest = files;
        if (c.state !== 'ready') this.renderIntro(this.view);
      }, () => {});
    }
  }

  canExport() {
    return this.compare.state === 'ready' && Boolean(this._shown);
  }

  snippetAttributes(view) {
    const out = super.snippetAttributes(view);
    if (this.plan !== 'shipped') out.push([ATTRIBUTES.plan, this.plan]);
    return out;
  }

  exportTitle(view) {
    const word = this._shown ? this._shown.reference.tokens[this._shown.token].text : '';
    return `\u201c${word}\u201d in f32 and in the ${this.plan === 'shipped' ? 'compact' : 'naive'} weights`;
  }

  exportLines(view) {
    const s = this._shown;
    return [...this.contextLines({ ...view, result: s.reference }), `${HeadName(s.layer, s.head)}; token \u201c${s.reference.tokens[s.token].text}\u201d, ${s.token + 1} of ${s.reference.n}`];
  }

  exportPanels(view) {
    const s = this._shown;
    if (!s) return null;
    const bar = this.compare.manifest.bar;
    const scaleMax = Math.max(barScale(s.diff.reference), barScale(s.diff.other));
    const panel = (row, title) => rowPanel({ tokens: s.reference.tokens, roles: s.reference.roles, row, selected: s.token, showSpecial: view.showSpecial, title, scaleMax });
    return {
      columns: 2,
      panels: [panel(s.diff.reference, 'f32 reference'), panel(s.diff.other, this.plan === 'shipped' ? 'Compact weights (shipped)' : 'Naive int8 per tensor')],
      note: `Largest difference in this row ${small(s.diff.rowMax)}; over the sentence ${small(s.diff.sentenceMax)}, ${againstBar(s.diff.sentenceMax, bar)}.`,
    };
  }
}

define('precision', AttentionPrecision);
