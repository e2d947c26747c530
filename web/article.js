// The article's wiring: draws every figure at once from the precomputed example for the
// default model, downloads the engine and the model with progress, offers the button that opens
// the live instrument, and from then on recomputes every figure and every number in the prose
// from the loaded model whenever the reader changes the sentence, the token, the layer or the
// head. Failures are shown in the figures with a retry; the prose stays as it is. The state
// lives in the URL hash: a deliberate choice adds a history entry (so the back button walks the
// reader's choices), typing only replaces the current one, and a link that names a sentence
// opens the live instrument on exactly that state as soon as the model is ready.
import { DEFAULT_MANIFEST_URL, getEngine, loadManifest, onEngineProgress } from './engine/engine.js';
import { createStore, DEFAULT_STATE, DEFAULT_WORD_TEXT, formatHash, parseHash, PERMALINK_DEFAULTS } from './state.js';
import { attentionRow, rolloutRow, rowStat } from './engine/result.js';
import { EVENTS, figureView, progressText } from './widgets/base.js';
import { describeModel, headsForToken, mechanism, resultFromExample, rowSummary, sharpestAndBroadest } from './widgets/data.js';
import { fmt, headName, megabytes } from './widgets/dom.js';
import { specialShare } from './widgets/bars.js';
import './widgets/attention-instrument.js';
import './widgets/attention-mechanism.js';
import './widgets/softmax-lab.js';
import './widgets/attention-compare.js';
import './widgets/attention-heads.js';
import './widgets/attention-precision.js';

const figures = [...document.querySelectorAll('[data-figure]')];
const loader = document.getElementById('loader');
const progressBar = document.getElementById('progress');
const progressLabel = document.getElementById('progress-text');
const openButton = document.getElementById('open');
const retryButton = document.getElementById('retry');

const store = createStore({ ...DEFAULT_STATE, ...parseHash(location.hash), live: false });
// A link that names a sentence asks for the live figures without a click on "open".
const permalink = parseHash(location.hash).sentence !== undefined;
// How the next render records the state in the URL: 'push' after a deliberate choice.
let historyMode = 'replace';
// Whether the current history entry holds a sentence still being typed.
let typingEntry = false;
const page = {
  manifest: null,
  example: null,        // the precomputed example's result, or null
  exampleModel: null,   // describeModel() of the example's model
  engine: null,
  model: null,          // describeModel() of what is shown
  progress: null,
  error: null,
  liveResult: null,     // the last live result the engine gave
  sources: {},          // the model's address for embed snippets, when it is not the default
};

// Query parameters choose another model: ?model=KEY (from the manifest) or ?model-src=URL
// (same origin only, so a link cannot make the page fetch from elsewhere).
function modelChoice() {
  const params = new URLSearchParams(location.search);
  const choice = {};
  const key = params.get('model');
  if (key && /^[\w.-]{1,100}$/.test(key)) choice.model = key;
  const src = params.get('model-src');
  if (src) {
    try {
      const url = new URL(src, location.href);
      if (url.origin === location.origin) choice.modelUrl = url.href;
    } catch {
      // An unparsable address is ignored; the default model loads.
    }
  }
  return choice;
}

async function loadExample(choice) {
  try {
    page.manifest = await loadManifest(DEFAULT_MANIFEST_URL);
    if (choice.modelUrl) return;  // an explicit model file has no precomputed example
    const entry = page.manifest.models?.[choice.model ?? page.manifest.default];
    if (choice.model && entry) page.sources = { 'model-src': new URL(entry.file, DEFAULT_MANIFEST_URL).href };
    if (!entry?.sha256 || !/^[0-9a-f]{64}$/.test(entry.sha256)) return;
    const exampleResponse = await fetch(new URL(`examples/${entry.sha256}.json`, location.href), { cache: 'no-cache' });
    if (!exampleResponse.ok) return;
    const example = await exampleResponse.json();
    if (example.model?.sha256 !== entry.sha256) return;
    page.example = resultFromExample(example);
    page.exampleModel = describeModel(example.model);
    page.model = page.exampleModel;
  } catch {
    // Without an example the figures wait for the live model; the prose reads on.
  }
}

// Whether any figure on the page draws hidden states, queries and keys (the mechanism figure).
const vectors = figures.some((figure) => figure.constructor.needsVectors);

function viewFor(state) {
  const live = Boolean(state.live && page.engine);
  const view = figureView({
    engine: live ? page.engine : null, example: page.example, previous: page.liveResult, vectors,
    sentence: live ? state.sentence : page.example?.text ?? state.sentence,
    // A selection made for another sentence (a permalink still waiting for the model) does not
    // apply to the example.
    selection: (result) => (live || result.text === state.sentence ? state : PERMALINK_DEFAULTS),
    wordText: DEFAULT_WORD_TEXT,
    model: page.model, progress: page.progress, error: page.error, ready: Boolean(page.engine),
    showSpecial: state.showSpecial, sources: page.sources,
  });
  if (live) page.liveResult = view.result;  // kept on screen while a sentence is refused
  return view;
}

let lastView = null;
function render() {
  const state = store.get();
  const view = viewFor(state);
  lastView = view;
  for (const figure of figures) figure.view = view;
  renderLoader();
  fillFacts(view);
  if (state.live) {
    const hash = formatHash({ ...state, ...pick(view, ['token', 'layer', 'head']) });
    if (hash !== location.hash) history[historyMode === 'push' ? 'pushState' : 'replaceState'](null, '', hash);
  }
  historyMode = 'replace';
}

const pick = (object, keys) => Object.fromEntries(keys.filter((k) => object[k] !== undefined).map((k) => [k, object[k]]));

function renderLoader() {
  const live = store.get().live;
  loader.dataset.state = page.error ? 'error' : page.engine ? (live ? 'open' : 'ready') : 'loading';
  const percent = page.engine ? 100 : Math.floor(page.progress?.percent ?? 0);
  progressBar.value = percent;
  progressBar.dataset.percent = String(percent);
  if (page.error) {
    progressLabel.textContent = `The live model did not load: ${page.error.message}`;
  } else if (page.engine) {
    const t = page.engine.timings;
    progressLabel.textContent = `Loaded ${megabytes(t.wasmBytes + t.modelBytes)} (100%). ${live ? 'The figures are live.' : 'The figures below are a precomputed example until you open the instrument.'}`;
  } else {
    progressLabel.textContent = progressText(page.progress);
  }
  openButton.hidden = !page.engine;
  openButton.textContent = live ? 'Go to the instrument' : 'Open the instrument';
  retryButton.hidden = !page.error;
}

// Every number in the prose, from the view. Elements with data-fact="name" get the value as
// text; with nothing to compute from, they keep their placeholder wording.
function facts(view) {
  const f = {};
  const model = view.model;
  if (model) {
    f.modelName = model.name;
    f.modelNote = model.note;
    // The colophon states the weights' terms as the model's own file gives them.
    f.modelLicense = model.license ? `its file offers the weights under ${model.license}` : 'its file states no licence for the weights';
  } else if (view.mode === 'error') {
    f.modelName = 'not loaded';
    f.modelNote = 'see the message below';
  }
  Object.assign(f, precisionFacts(page.manifest));
  const r = view.result;
  if (!r) return f;
  const dHead = r.hidden / r.heads;
  Object.assign(f, {
    layers: r.layers, heads: r.heads, hidden: r.hidden, headDim: dHead, scale: fmt(Math.sqrt(dHead), Number.isInteger(Math.sqrt(dHead)) ? 0 : 2),
    totalHeads: r.layers * r.heads, n: r.n, nOther: r.n - 1, uniform: fmt(1 / r.n, 4), sentence: r.text,
  });
  const { token, layer, head } = view;
  const row = attentionRow(r, layer, head, token);
  const s = rowStat(r, layer, head, token);
  Object.assign(f, {
    word: r.tokens[token].text, headName: headName(layer, head), topToken: r.tokens[s.argmax].text, topWeight: fmt(s.max, 3),
    rowSum: fmt(s.sum, 6), ratio: fmt(s.ratio_to_uniform, 2), entropy: fmt(s.entropy, 2), maxEntropy: fmt(Math.log(r.n), 2),
    specialShare: fmt(specialShare(row, r.roles), 3),
  });
  const m = mechanism(r, layer, head, token);
  if (m) {
    Object.assign(f, {
      rawMin: fmt(Math.min(...m.dots), 2), rawMax: fmt(Math.max(...m.dots), 2),
      scaledMin: fmt(Math.min(...m.scores), 2), scaledMax: fmt(Math.max(...m.scores), 2),
      unscaledTop: fmt(Math.max(...m.unscaled), 3), scaledTop: fmt(Math.max(...m.weights), 3),
    });
  }
  const { sharpest, broadest } = sharpestAndBroadest(r, token);
  const heads = headsForToken(r, token);
  Object.assign(f, {
    sharpest: headName(sharpest.layer, sharpest.head), sharpestRatio: fmt(sharpest.ratio_to_uniform, 2),
    broadest: headName(broadest.layer, broadest.head), broadestRatio: fmt(broadest.ratio_to_uniform, 2),
    rolloutRatio: fmt(rowSummary(rolloutRow(r, token)).ratio_to_uniform, 2),
    distinctTops: new Set(heads.map((x) => x.argmax)).size,
    ratioMin: fmt(Math.min(...heads.map((x) => x.ratio_to_uniform)), 2),
    ratioMax: fmt(Math.max(...heads.map((x) => x.ratio_to_uniform)), 2),
  });
  return f;
}

// The file sizes the precision paragraph quotes, from the manifest the page loaded.
function precisionFacts(manifest) {
  const p = manifest?.precision;
  const bytes = (key) => manifest?.models?.[p?.[key]]?.bytes;
  if (!p || !bytes('reference') || !bytes('shipped') || !bytes('naive')) return {};
  return { compactMB: megabytes(bytes('shipped')), referenceMB: megabytes(bytes('reference')), naiveMB: megabytes(bytes('naive')), precisionBar: String(p.bar) };
}

function fillFacts(view) {
  const f = facts(view);
  for (const el of document.querySelectorAll('[data-fact]')) {
    const value = f[el.dataset.fact];
    if (value !== undefined) el.textContent = String(value);
  }
}

let progressFrame = 0;
onEngineProgress((p) => {
  const totals = (page.progressParts ??= {});
  totals[p.phase] = p;
  const parts = Object.values(totals);
  const loaded = parts.reduce((a, x) => a + x.loaded, 0);
  const total = parts.reduce((a, x) => a + (x.total || 0), 0);
  const expected = page.manifest ? page.manifest.engine.bytes + (page.manifest.models?.[page.manifest.default]?.bytes ?? 0) : 0;
  const denominator = Math.max(total, parts.length < 2 ? expected : 0);
  page.progress = { loaded, total: denominator, percent: denominator ? Math.min(100, (100 * loaded) / denominator) : 0 };
  if (!progressFrame) {
    progressFrame = requestAnimationFrame(() => {
      progressFrame = 0;
      render();
    });
  }
});

function startEngine() {
  page.error = null;
  page.progress = null;
  page.progressParts = {};
  render();
  const choice = modelChoice();
  if (choice.modelUrl) page.sources = { 'model-src': choice.modelUrl };
  getEngine(choice).then((engine) => {
    page.engine = engine;
    page.model = describeModel(engine.info);
    performance.mark('attention:engine-ready');
    render();
    if (permalink && !store.get().live) openPermalink();
  }, (error) => {
    page.error = { message: error.message, kind: error.kind };
    render();
  });
}

function openInstrument() {
  if (!page.engine) return;
  store.set({ live: true });
  const target = document.getElementById('instrument');
  target.scrollIntoView({ behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth', block: 'start' });
  target.shadowRoot?.getElementById('sentence')?.focus({ preventScroll: true });
}

// Opens the live figures on the state the link holds and shows the figure it names.
function openPermalink() {
  store.set({ live: true });
  const named = figures.find((figure) => figure.dataset.figure === store.get().view);
  named?.scrollIntoView({ block: 'start' });
}

document.addEventListener(EVENTS.select, (event) => {
  // Only the live model can analyse a new sentence; the example answers the rest.
  if (!store.get().live && event.detail.sentence !== undefined) return;
  const patch = {};
  for (const key of ['sentence', 'token', 'layer', 'head', 'showSpecial']) {
    if (event.detail[key] !== undefined) patch[key] = event.detail[key];
  }
  const figure = event.target?.dataset?.figure;
  if (figure) patch.view = figure;
  // Every choice adds a history entry, except that a sentence being typed keeps to one.
  historyMode = event.detail.transient && typingEntry ? 'replace' : 'push';
  typingEntry = Boolean(event.detail.transient);
  // A choice of token keeps the current head; resolving now pins the defaults it was showing.
  if (lastView?.result && patch.token !== undefined && patch.layer === undefined) {
    patch.layer = lastView.layer;
    patch.head = lastView.head;
  }
  store.set(patch);
  historyMode = 'replace';
});
document.addEventListener(EVENTS.open, openInstrument);
document.addEventListener(EVENTS.retry, startEngine);
openButton.addEventListener('click', openInstrument);
retryButton.addEventListener('click', startEngine);
store.subscribe(render);
// Back, forward and an edited address all land here: the hash is the whole state.
function restoreFromHash() {
  if (!store.get().live) return;
  historyMode = 'replace';
  typingEntry = false;
  store.set({ ...PERMALINK_DEFAULTS, ...parseHash(location.hash) });
}
addEventListener('popstate', restoreFromHash);
addEventListener('hashchange', restoreFromHash);

await loadExample(modelChoice());
render();
performance.mark('attention:first-render');
startEngine();
