// The article's wiring: draws every figure at once from the precomputed example for the
// default model, downloads the engine and the model with progress, offers the button that opens
// the live instrument, and from then on recomputes every figure and every number in the prose
// from the loaded model whenever the reader changes the sentence, the token, the layer or the
// head. Failures are shown in the figures with a retry; the prose stays as it is. The state
// lives in the URL hash: a deliberate choice adds a history entry (so the back button walks the
// reader's choices), typing only replaces the current one, and a link that names a sentence
// opens the live instrument on exactly that state as soon as the model is ready.
// First of all imports, so that it runs before the figures' modules are evaluated.
import { modelChoice } from './start-engine.js';
import { pinChosenCommit, wireModelChooser } from './runtime/model-chooser.js';
import { DEFAULT_MANIFEST_URL, loadManifest, manifestModel, startBytes } from './engine/engine.js';
import { EngineSession, PairLoop, ViewLoop } from './runtime/session.js';
// A figure placed on the page with its own sentence (by an author's script) follows its attributes.
import './runtime/standalone.js';
import { createStore, DEFAULT_STATE, formatHash, parseHash, PERMALINK_DEFAULTS, writeHash } from './runtime/state.js';
import { DEFAULT_WORD_TEXT } from './content.js';
import { attentionRow, headLabel, rolloutRow, rowStat } from './engine/result.js';
import { EVENTS } from './widgets/base.js';
import { describeModel, headsForToken, labelShare, mechanism, resolveSelection, resultFromExample, rowRelation, rowSummary, SELECTION_RULE, sharpestAndBroadest } from './widgets/data.js';
import { fmt, fmtWeight, HeadName, headName, megabytes, progressText, thousands } from './widgets/format.js';
import { fillFacts } from './widgets/dom.js';
import { loadSetStatistics } from './engine/sets.js';
import { keepForOffline } from './offline.js';
import { specialShare } from './widgets/bars.js';
import './widgets/attention-instrument.js';
import './widgets/attention-mechanism.js';
import './widgets/softmax-lab.js';
import './widgets/attention-compare.js';
import './widgets/attention-heads.js';
import './widgets/attention-precision.js';
import './widgets/attention-map.js';
import './widgets/attention-pair.js';

const figures = [...document.querySelectorAll('[data-figure]')];
const loader = document.getElementById('loader');
const progressBar = document.getElementById('progress');
const progressLabel = document.getElementById('progress-text');
const openButton = document.getElementById('open');
const retryButton = document.getElementById('retry');
// Shown once the reader has chosen a head: the figures then keep that head for every word and
// sentence, and this returns them to the rule's choice.
const defaultHeadButton = document.getElementById('default-head');

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
  model: null,          // describeModel() of what is shown
  sources: {},          // the model's address for embed snippets, when it is not the default
  pronouns: null,       // the pronoun study of the set statistics, once downloaded
  heldoutPronouns: null,  // the same over the held-out cases
};
// The engine, its download's progress, a failure, a restart after a trap (web/runtime/session.js).
const session = new EngineSession({
  options: modelChoice(),
  // What the start fetches (the engine and the model's core), not the whole model file.
  expectedBytes: () => startBytes(page.manifest, session.options),
  onChange: () => sessionChanged(),
});

// What the session's last change meant for the page. A report of the download's progress (one
// per animation frame while it runs) changes only the loader line and the figures' status lines:
// it does not rebuild the view, which would restart the figures' turns (see draw) and leave the
// example's first drawing unfinished on a slow phone. Until the example has been drawn once, the
// loader line alone follows the session: the first render draws whatever state it then finds.
let firstRenderDone = false;
let drawnSessionState = null;
const sessionState = () => `${Boolean(session.engine)} ${session.error?.message ?? ''} ${session.restarting ?? ''}`;
function sessionChanged() {
  if (firstRenderDone && sessionState() !== drawnSessionState) {
    render();
    return;
  }
  renderLoader();
  if (!firstRenderDone) return;
  for (const figure of figures) {
    // A figure far off screen that waits for its view (offScreenViews) gets it in the one it keeps.
    const current = offScreenViews.get(figure) ?? figure.view;
    if (!current || current.progress === session.progress) continue;
    const next = { ...current, progress: session.progress };
    if (offScreenViews.has(figure)) keepView(figure, next);
    else figure.view = next;
  }
}

async function loadExample(choice) {
  try {
    page.manifest = await loadManifest(DEFAULT_MANIFEST_URL);
    if (choice.modelUrl || choice.checkpoint) return;  // an explicit model file or a checkpoint has no precomputed example
    const entry = manifestModel(page.manifest, choice.model ?? page.manifest.default);
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

// Whether any figure on the page draws hidden states, queries and keys (the mechanism figure),
// and whether any draws a row through a lens (the instrument): then a live view carries the
// sentence's lenses.
const vectors = figures.some((figure) => figure.constructor.needsVectors);
const wantLenses = figures.some((figure) => figure.constructor.showsLenses);

// Renders are asynchronous (a new sentence is analysed in the engine's worker); the loop gives
// only the newest its view, so a result that arrives after the reader moved on never reaches the
// screen. It keeps the reader's last live result on screen while a sentence is refused or a
// trapped engine restarts.
const loop = new ViewLoop(session, { channel: 'article', vectors });

// The figure that reads two sentences through the same head (<attention-pair>) has its own
// sentences and word, and the head of the view the other figures take (`main`). It has no
// precomputed example: it goes live as soon as the engine is ready.
const pairFigures = figures.filter((figure) => figure.constructor.comparesSentences);
const pairLoop = new PairLoop(session, { channel: 'article-pair' });
function pairViewFor(state, main) {
  return pairLoop.view(true, {
    sentence: state.pairSentence,
    selection: { token: state.pairToken, layer: main.layer ?? -1, head: main.head ?? -1 },
    wordText: DEFAULT_WORD_TEXT,
    model: page.model, showSpecial: state.showSpecial, sources: page.sources,
  }, state.pairAgainst);
}

function viewFor(state) {
  return loop.view(state.live, (live) => ({
    example: page.example,
    sentence: live ? state.sentence : page.example?.text ?? state.sentence,
    // A selection made for another sentence (a permalink still waiting for the model) does not
    // apply to the example.
    selection: (result) => (live || result.text === state.sentence ? state : PERMALINK_DEFAULTS),
    wordText: DEFAULT_WORD_TEXT,
    model: page.model, showSpecial: state.showSpecial, sources: page.sources,
    lens: state.lens, wantLenses,
  }));
}

let lastView = null;
let lastRender = Promise.resolve();
// Settles when the newest render so far has drawn (or was overtaken by one that has).
async function rendered() {
  for (let seen = null; seen !== lastRender;) {
    seen = lastRender;
    await seen;
  }
}
let pushPending = false;  // a render that wanted a new history entry was overtaken
let livePainted = false;
function render() {
  lastRender = draw();
  return lastRender;
}

async function draw() {
  // A deliberate choice adds a history entry even when its render is overtaken by a newer one.
  if (historyMode === 'push') pushPending = true;
  historyMode = 'replace';
  const state = store.get();
  renderLoader();
  drawnSessionState = sessionState();
  // Null when a newer render overtook this one, or when the engine trapped: the session then
  // loads a new one (from the cache) and the page draws the reader's state again when it is
  // ready; meanwhile the figures keep the last live result and say what happened.
  const view = await viewFor(state);
  if (!view) return;
  // The pair figure's two sentences, through this view's head, are analysed while the other
  // figures draw; null when a newer render overtook them (that render draws the pair figure).
  // They are other sentences, with word-embedding rows of their own to download, so they are
  // asked for only once the figure is near the screen: the opening view fetches the opening
  // sentence's rows and no more (the observer below draws again when the figure comes near).
  const pairWanted = pairFigures.some((figure) => nearScreen.get(figure) === true || typeof IntersectionObserver !== 'function');
  pairStale = pairFigures.length > 0 && !pairWanted;
  const pairView = pairWanted ? pairViewFor(state, view) : null;
  const push = pushPending;
  pushPending = false;
  lastView = view;
  // The URL first, while the page's layout is still clean: a history entry makes Chromium lay
  // out the whole document, figures far off screen included (content-visibility), which after
  // the figures' updates below costs tens of milliseconds on a long sentence.
  if (state.live) {
    // The hash holds the reader's choices: a head they did not choose stays the rule's (no l, h).
    writeHash(formatHash({ ...state, ...pick(view, ['token']) }), { push });
  }
  // Each figure near the screen takes the view in a task of its own, in page order, so that no
  // task holds the main thread for all of them (on a phone the whole set was one task of several
  // hundred ms); a newer render takes over from a figure's turn on. A figure far off screen
  // keeps the view for later (see offScreenViews).
  let drawn = 0;
  for (const figure of figures) {
    const shown = pairFigures.includes(figure) ? await pairView : view;
    if (!loop.isNewest(view)) return;
    if (!shown) continue;
    if (farOffScreen(figure)) {
      keepView(figure, shown);
      continue;
    }
    if (drawn++ > 0) {
      await yieldToPage();
      if (!loop.isNewest(view)) return;
    }
    giveView(figure, shown);
  }
  fillFacts(factElements, facts(view));
  engineSettled.then(() => {
    if (lastView !== view) return;  // a newer render settles them
    settleOffscreen();
    catchUpWhenQuiet();
  });
  if (state.live && view.mode === 'live' && !livePainted) {
    livePainted = true;
    performance.mark('attention:live');
  }
}

// A figure far off screen (more than a screen's height away) takes a new view only when the
// reader scrolls near it, or once the reader has paused (QUIET_MS without a new render): then
// the figures that wait are drawn one per idle moment. While the reader types or clicks through
// words, the far figures are neither rebuilt nor left dirty. Measured on the phone profile
// (bench_interaction.mjs --phone --trace): after a keystroke, and after buttons are added,
// Chromium's autofill agent lays out the document, far figures included, three or four times
// in one task (70-170 ms each with four far figures rebuilt for a 136-token sentence); with
// the far figures off the page those tasks were gone. A figure that waits shows the previous
// view, off screen, and says data-waiting; before printing, every figure takes its view.
const QUIET_MS = 1000;
const NEAR_MARGIN = '100% 0px';
const nearScreen = new Map();  // figure -> whether it is within NEAR_MARGIN (absent: not known yet)
const offScreenViews = new Map();  // figure -> the newest view it has not taken yet
let pairStale = false;  // a render left the pair figure out while it was far off screen
const farOffScreen = (figure) => nearScreen.get(figure) === false;
// A figure that holds a view it has not drawn says so (data-waiting): the tests wait for it to go.
function keepView(figure, view) {
  offScreenViews.set(figure, view);
  figure.dataset.waiting = '';
}
function giveView(figure, view) {
  offScreenViews.delete(figure);
  delete figure.dataset.waiting;
  figure.view = view;
}
function takeView(figure) {
  const view = offScreenViews.get(figure);
  if (!view) return false;
  giveView(figure, view);
  return true;
}
if (typeof IntersectionObserver === 'function') {
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      nearScreen.set(entry.target, entry.isIntersecting);
      if (entry.isIntersecting) takeView(entry.target);
      if (entry.isIntersecting && pairStale && pairFigures.includes(entry.target)) render();
    }
  }, { rootMargin: NEAR_MARGIN });
  for (const figure of figures) observer.observe(figure);
}
addEventListener('beforeprint', () => {
  for (const figure of figures) takeView(figure);
});
// The far figures' catch-up waits until the engine has loaded or failed: until then this thread
// also passes the model's bytes on to the engine's worker as they arrive (startDownload in
// web/engine/files.js), and a far figure drawn or laid out in an idle moment (20-80 ms each on
// bench_load's phone) held the last of them up by a third of a second.
let engineSettled = Promise.resolve();
let quietTimer = null;
function catchUpWhenQuiet() {
  clearTimeout(quietTimer);
  if (offScreenViews.size) quietTimer = setTimeout(() => settleOffscreen({ takeViews: true }), QUIET_MS);
}

// Figures far off screen are not laid out when they change (content-visibility), but the next
// history entry would lay them all out at once, inside the reader's next click. So they are laid
// out here, one figure per idle moment, and that entry finds them done; a figure that waits for
// its view is left for catchUpWhenQuiet, which calls this again with the views to take.
const idle = typeof requestIdleCallback === 'function' ? (fn) => requestIdleCallback(fn, { timeout: 2000 }) : (fn) => setTimeout(() => fn({ timeRemaining: () => 10 }), 50);
let settling = null;
function settleOffscreen({ takeViews = false } = {}) {
  const queue = figures.slice();
  const token = {};
  settling = token;
  const step = () => {
    if (settling !== token) return;
    // One figure per idle moment: each is a task of its own (taking a view and laying it out
    // are two).
    const figure = queue[0];
    if (!figure) return;
    if (!(takeViews && takeView(figure))) {
      queue.shift();
      if (!offScreenViews.has(figure)) void figure.shadowRoot?.lastElementChild?.getBoundingClientRect();
    }
    if (queue.length) idle(step);
  };
  idle(step);
}

// Gives the page a turn (input, paint) before going on: scheduler.yield where the browser has
// it (its continuation runs before other tasks), else a zero-delay timeout.
const yieldToPage = () => (globalThis.scheduler?.yield ? globalThis.scheduler.yield() : new Promise((resolve) => setTimeout(resolve, 0)));

const pick = (object, keys) => Object.fromEntries(keys.filter((k) => object[k] !== undefined).map((k) => [k, object[k]]));

// The loader line, written only where it changes (renders come with every click, and an
// attribute or a text rewritten with the same value still costs a style and layout pass).
function renderLoader() {
  const live = store.get().live;
  const set = (el, key, value) => {
    if (el[key] !== value) el[key] = value;
  };
  const { engine, error, progress } = session;
  set(loader.dataset, 'state', error ? 'error' : engine ? (live ? 'open' : 'ready') : 'loading');
  const percent = engine ? 100 : Math.floor(progress?.percent ?? 0);
  set(progressBar, 'value', percent);
  set(progressBar.dataset, 'percent', String(percent));
  let text;
  if (error) {
    text = `The live model did not load: ${error.message}`;
  } else if (engine) {
    const t = engine.timings;
    text = `Loaded ${megabytes(t.wasmBytes + t.modelBytes)} (100%). ${live ? 'The figures are live.' : 'The figures below are a precomputed example until you open the instrument.'}`;
  } else {
    text = progressText(progress);
  }
  set(progressLabel, 'textContent', text);
  set(openButton, 'hidden', !engine);
  set(openButton, 'textContent', live ? 'Go to the instrument' : 'Open the instrument');
  set(retryButton, 'hidden', !error);
  set(defaultHeadButton, 'hidden', !(live && store.get().layer >= 0));
}

// Every number in the prose, from the view. Elements with data-fact="name" get the value as
// text; with nothing to compute from, they keep their placeholder wording.
function facts(view) {
  const f = {};
  const model = view.model;
  if (model) {
    f.modelName = model.name;
    // With its comma and full stop: the line's text is then all in its two facts, and no piece
    // of it moves to another place when they arrive (a layout shift).
    f.modelNote = model.note ? `, ${model.note}.` : '.';
    // The colophon states the weights' terms as the model's own file gives them.
    f.modelLicense = model.license ? `its file offers the weights under ${model.license}` : 'its file states no licence for the weights';
  } else if (view.mode === 'error') {
    f.modelName = 'not loaded';
    f.modelNote = ', see the message below.';
  }
  Object.assign(f, precisionFacts(page.manifest, page.checkpoint), downloadFacts(page.manifest, page.checkpoint), exampleFacts(page.example), pronounFacts(page.pronouns, page.heldoutPronouns));
  f.selectionRule = SELECTION_RULE;
  const r = view.result;
  if (!r) return f;
  f.firstExampleLead = firstExampleLead(r.text, page.example?.text ?? DEFAULT_STATE.sentence);
  const dHead = r.hidden / r.heads;
  Object.assign(f, layerFacts(r.hidden, model));
  Object.assign(f, {
    layers: r.layers, heads: r.heads, hidden: r.hidden, headDim: dHead, scale: fmt(Math.sqrt(dHead), Number.isInteger(Math.sqrt(dHead)) ? 0 : 2),
    totalHeads: r.layers * r.heads, n: r.n, nOther: r.n - 1, uniform: fmt(1 / r.n, 4), sentence: r.text,
  });
  const { token, layer, head } = view;
  const row = attentionRow(r, layer, head, token);
  const s = rowStat(r, layer, head, token);
  Object.assign(f, {
    word: r.tokens[token].text, headName: headName(layer, head), topToken: r.tokens[s.argmax].text, topWeight: fmtWeight(s.max),
    rowSum: fmt(s.sum, 6), ratio: fmt(s.ratio_to_uniform, 2), entropy: fmt(s.entropy, 2), maxEntropy: fmt(Math.log(r.n), 2),
    specialShare: fmtWeight(specialShare(row, r.roles)),
    // Reads true for whatever head is shown: a row that parks its weight on the markers, or not.
    specialSentence: specialShare(row, r.roles) >= 0.2
      ? `In the row of Figure 1, those two markers hold ${fmtWeight(specialShare(row, r.roles))} of the weight.`
      : `In the row of Figure 1 they hold ${specialShare(row, r.roles) < 0.001 ? '' : 'only '}${fmtWeight(specialShare(row, r.roles))} of it: this head found somewhere else to put its weight.`,
  });
  const m = mechanism(r, layer, head, token);
  if (m) {
    Object.assign(f, {
      rawMin: fmt(Math.min(...m.dots), 2), rawMax: fmt(Math.max(...m.dots), 2),
      scaledMin: fmt(Math.min(...m.scores), 2), scaledMax: fmt(Math.max(...m.scores), 2),
      unscaledTop: fmtWeight(Math.max(...m.unscaled)), scaledTop: fmtWeight(Math.max(...m.weights)),
    });
  }
  const { sharpest, broadest, overall } = sharpestAndBroadest(r, token);
  const heads = headsForToken(r, token);
  const labelOf = (x) => headLabel(r, x.layer, x.head) ?? 'unlabelled';
  // Figure 4 shows the content head; this says whether the sharpest head of all is another one,
  // and what that one says (usually: the next or the previous token, for most of the sentence).
  const overallSame = overall.layer === sharpest.layer && overall.head === sharpest.head;
  const relation = rowRelation(r, token, overall.argmax);
  const share = labelShare(r, overall.layer, overall.head);
  const overallSentence = overallSame
    ? 'No head of any label is sharper for this word.'
    : `The sharpest of all ${r.layers * r.heads} heads for \u201c${r.tokens[token].text}\u201d is ${headName(overall.layer, overall.head)} (${labelOf(overall)}), with ${fmt(overall.ratio_to_uniform, 2)}: `
      + `it puts ${fmtWeight(overall.max)} on \u201c${r.tokens[overall.argmax].text}\u201d${relation ? `, ${relation}` : ''}`
      + `${share === null ? '' : `, as it does for ${Math.round(100 * share)}% of this sentence\u2019s tokens`}.`;
  Object.assign(f, {
    sharpest: headName(sharpest.layer, sharpest.head), sharpestRatio: fmt(sharpest.ratio_to_uniform, 2), sharpestLabel: labelOf(sharpest),
    broadest: headName(broadest.layer, broadest.head), broadestRatio: fmt(broadest.ratio_to_uniform, 2), broadestLabel: labelOf(broadest),
    overallSentence,
    rolloutRatio: fmt(rowSummary(rolloutRow(r, token)).ratio_to_uniform, 2),
    distinctTops: new Set(heads.map((x) => x.argmax)).size,
    ratioMin: fmt(Math.min(...heads.map((x) => x.ratio_to_uniform)), 2),
    ratioMax: fmt(Math.max(...heads.map((x) => x.ratio_to_uniform)), 2),
  });
  return f;
}

// The rest of a layer (the paragraph the model map links its feed-forward block to): the
// feed-forward width and its share of a layer's weights, and the vocabulary, from the engine's
// model info (a precomputed example's model does not give them).
function layerFacts(d, model) {
  const f = {};
  const i = model?.intermediate;
  if (i) {
    const feedForward = 2 * d * i + i + d;
    const attention = 4 * d * d + 4 * d;
    const norms = 4 * d;
    f.intermediate = thousands(i);
    f.feedForwardShare = `${Math.round((100 * feedForward) / (feedForward + attention + norms))}%`;
  }
  if (model?.vocabSize) f.vocabSize = thousands(model.vocabSize);
  return f;
}

// The first words of the paragraph about the opening view: "this sentence" while the figures
// show it, its own words once the reader has typed another.
function firstExampleLead(shown, opening) {
  return shown === opening
    ? 'If you know this sentence, the opening view may look wrong.'
    : `If you know the page\u2019s opening sentence, \u201c${opening}\u201d, the view the page opened on may look wrong.`;
}

// What the opening view shows for the opening sentence (the precomputed example, with the
// selection the page opens on): the paragraph under Figure 1 comments on exactly this.
function exampleFacts(example) {
  if (!example) return {};
  const { token, layer, head } = resolveSelection(example, PERMALINK_DEFAULTS, DEFAULT_WORD_TEXT);
  const row = attentionRow(example, layer, head, token);
  const top = rowStat(example, layer, head, token).argmax;
  const animal = example.tokens.findIndex((t) => t.text === 'animal');
  return {
    exampleHead: headName(layer, head),
    exampleTop: fmtWeight(row[top]),
    exampleTopToken: example.tokens[top].text,
    exampleAnimal: animal >= 0 ? fmtWeight(row[animal]) : 'none',
  };
}

// The pronoun study (scripts/site/pronoun_study.mjs, computed with the f32 weights when the
// site was built), in one sentence that says what its numbers support.
function pronounFacts(study, heldout) {
  if (!study?.cases) return {};
  const name = (x) => headName(x.layer - 1, x.head - 1);
  const twin = (x) => heldout?.per_head.find((y) => y.layer === x.layer && y.head === x.head);
  const best = study.best;
  const other = twin(best);
  // A count on the first file and, in brackets, on the held-out one: "28 of 47 (20 of 40 held out)".
  const counted = (x, y, f) => `${f(x, study)}${y ? ` (${f(y, heldout)} held out)` : ''}`;
  // A head resolves pronouns here only if, on both sets, it beats the strongest trivial baseline
  // (always the first candidate, or always the nearest) and gets most Winograd pairs wholly right
  // (a head that picks by position gets at most one sentence of a pair).
  const resolves = (x, s) => x && x.among_candidates > Math.max(s.first, s.nearest) && x.pairs_both > s.pairs / 2;
  const resolvers = study.per_head.filter((x) => resolves(x, study) && (!heldout || resolves(twin(x), heldout)));
  const verdict = resolvers.length
    ? `${resolvers.map(name).join(', ')} ${resolvers.length === 1 ? 'beats' : 'beat'} both baselines and ${resolvers.length === 1 ? 'gets' : 'get'} most pairs right on both sets.`
    : `No head beats both baselines and gets most pairs right${heldout ? ' on both sets' : ''}: there is no evidence that any head of this model points a pronoun at its antecedent.`;
  return {
    pronounFinding: `The same model (its f32 file) was measured on ${study.cases} sentences written for the purpose, each with a pronoun and its antecedent marked (about half in Winograd-style pairs, where one changed word flips the antecedent)${heldout?.cases ? `, and on ${heldout.cases} held-out sentences written the same way before any result on them` : ''}. `
      + `Among the candidate nouns alone, the best head, ${name(best)}, gives the antecedent the most weight in ${counted(best, other, (x, s) => `${x.among_candidates} of ${s.cases}`)}. `
      + `That looks like something until the baselines: always choosing the first noun mentioned gives ${counted(study, heldout, (x) => String(x.first))}, the nearest noun ${counted(study, heldout, (x) => String(x.nearest))}, a random candidate ${fmt(study.chance, 1)} on average. `
      + `${HeadName(best.layer - 1, best.head - 1)} picks the first noun in ${counted(best, other, (x, s) => `${x.first_picks} of ${s.cases}`)}, and gets both sentences of a pair right in ${counted(best, other, (x, s) => `${x.pairs_both} of ${s.pairs}`)} pairs. ${verdict}`,
  };
}

// What the page downloads, in one sentence from the manifest it loaded, so that every size the
// page quotes elsewhere (the loader line, the precision paragraph) has its place in one account.
function downloadFacts(manifest, checkpoint = null) {
  if (checkpoint) {
    const engine = manifest?.engine?.bytes ? `the engine\u2019s WebAssembly, ${megabytes(manifest.engine.bytes)}, and ` : '';
    const from = checkpoint.id
      ? `${checkpoint.id}\u2019s files from the Hugging Face hub at commit ${checkpoint.commit.slice(0, 10)}, ${megabytes(checkpoint.bytes)} (its config, vocabulary and ${checkpoint.weights}), checked against the hub\u2019s SHA-256 and made into the engine\u2019s model file in your browser`
      : 'the model\u2019s files from your computer, read in your browser (nothing is uploaded)';
    return { downloads: `What this page downloaded: ${engine}${from}; later visits read them from your browser\u2019s cache.` };
  }
  const entry = manifestModel(manifest, manifest?.default);
  if (!entry || !manifest.engine?.bytes) return {};
  const reference = manifestModel(manifest, manifest.precision?.reference)?.bytes;
  const whole = `the compact model file whole is ${megabytes(entry.bytes)}${reference ? `, its 32-bit original ${megabytes(reference)}` : ''}`;
  if (!entry.core || !entry.shards) {
    return { downloads: `What this page downloads: the engine, ${megabytes(manifest.engine.bytes)}, and the model file, ${megabytes(entry.bytes)}${reference ? ` (its 32-bit original is ${megabytes(reference)})` : ''}; later visits read both from your browser\u2019s cache.` };
  }
  const s = entry.shards;
  const first = manifest.engine.bytes + entry.core.bytes + (s.preload?.length ?? 0) * (s.bytes / s.count);
  return {
    downloads: `What this page downloads: the engine\u2019s WebAssembly, ${megabytes(manifest.engine.bytes)}; the model\u2019s core, ${megabytes(entry.core.bytes)} (every weight but the table of word embeddings); `
      + `and that table\u2019s rows for the words of each sentence, in pieces of ${s.rows_per_shard} rows fetched as they are needed (${thousands(s.count)} pieces, ${megabytes(s.bytes)} for the whole vocabulary, which only predicting a masked word needs${s.all ? '; that comes as one file of the same size' : ''}). `
      + `A first visit takes about ${megabytes(first)} of these (the engine, the core and the opening sentence\u2019s pieces), besides the page\u2019s own text and scripts; ${whole}. Later visits read them from your browser\u2019s cache.`,
  };
}

// The file sizes the precision paragraph quotes, from the manifest the page loaded.
function precisionFacts(manifest, checkpoint = null) {
  const p = manifest?.precision;
  const bytes = (key) => manifestModel(manifest, p?.[key])?.bytes;
  if (!p || !bytes('reference') || !bytes('shipped') || !bytes('naive')) return {};
  return {
    // Under a model the reader chose, the compact copy is the shipped model's, not theirs.
    ...(checkpoint ? { precisionLead: 'The model you chose runs from its own 32-bit weights; the model this site ships with runs on' } : {}), compactMB: megabytes(bytes('shipped')), referenceMB: megabytes(bytes('reference')), naiveMB: megabytes(bytes('naive')), precisionBar: String(p.bar) };
}

// The prose's numbers, found once (fillFacts touches only those whose text changes).
const factElements = [...document.querySelectorAll('[data-fact]')];

async function startEngine() {
  if (session.options.modelUrl) page.sources = { 'model-src': session.options.modelUrl };
  const engine = await session.start();
  if (!engine) return;
  page.model = describeModel(engine.info);
  page.checkpoint = engine.info.checkpoint ?? null;
  pinChosenCommit(engine.info);
  performance.mark('attention:engine-ready');
  // A model the reader chose has no example computed ahead: the figures go live at once.
  if (session.options.checkpoint && !store.get().live) store.set({ live: true });
  // Before the example's first drawing (a second visit reads the engine from the cache), that
  // drawing picks the engine up.
  if (firstRenderDone) render();
  loadManifest(DEFAULT_MANIFEST_URL).then(keepForOffline, () => {});
  if (permalink && !store.get().live) openPermalink();
}

async function openInstrument() {
  if (!session.engine) return;
  store.set({ live: true });
  const target = document.getElementById('instrument');
  target.scrollIntoView({ behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth', block: 'start' });
  // The sentence box takes focus once the live figures are drawn (until then it is disabled).
  await rendered();
  target.shadowRoot?.getElementById('sentence')?.focus({ preventScroll: true });
}

// Opens the live figures on the state the link holds and shows the figure it names.
function openPermalink() {
  store.set({ live: true });
  const named = figures.find((figure) => figure.dataset.figure === store.get().view);
  named?.scrollIntoView({ block: 'start' });
}

// The two-sentence figure's choices: its sentences and its word are its own (a new sentence
// returns it to the default word); a head chosen there is every figure's.
function choosePair(d) {
  const patch = {};
  if (d.sentence !== undefined) patch.pairSentence = d.sentence;
  if (d.against !== undefined) patch.pairAgainst = d.against;
  if (d.token !== undefined) patch.pairToken = d.token;
  else if (Object.keys(patch).length) patch.pairToken = -1;
  if (d.layer !== undefined && d.head !== undefined) Object.assign(patch, { layer: d.layer, head: d.head });
  historyMode = 'push';
  store.set(patch);
  historyMode = 'replace';
}

document.addEventListener(EVENTS.select, (event) => {
  if (event.target?.constructor?.comparesSentences) {
    choosePair(event.detail);
    return;
  }
  // Only the live model can analyse a new sentence; the example answers the rest.
  if (!store.get().live && event.detail.sentence !== undefined) return;
  const patch = {};
  for (const key of ['sentence', 'token', 'layer', 'head', 'showSpecial', 'lens']) {
    if (event.detail[key] !== undefined) patch[key] = event.detail[key];
  }
  const figure = event.target?.dataset?.figure;
  if (figure) patch.view = figure;
  // Every choice adds a history entry, except that a sentence being typed keeps to one.
  historyMode = event.detail.transient && typingEntry ? 'replace' : 'push';
  typingEntry = Boolean(event.detail.transient);
  // A choice of token keeps the head the reader chose; with none chosen (layer -1) the new token
  // gets its own content head (SELECTION_RULE in widgets/data.js).
  if (lastView?.result && patch.token !== undefined && patch.layer === undefined && store.get().layer >= 0) {
    patch.layer = lastView.layer;
    patch.head = lastView.head;
  }
  // The same sentence submitted again after it failed (a shard that did not download, say) is
  // a retry: the state does not change, so draw again.
  const retry = patch.sentence !== undefined && patch.sentence === store.get().sentence && lastView?.inputError;
  store.set(patch);
  if (retry) render();
  historyMode = 'replace';
});
document.addEventListener(EVENTS.open, openInstrument);
document.addEventListener(EVENTS.retry, startEngine);
openButton.addEventListener('click', openInstrument);
defaultHeadButton.addEventListener('click', () => {
  historyMode = 'push';
  store.set({ layer: -1, head: -1 });
  historyMode = 'replace';
  // The button hides itself; focus goes to the instrument, not to the page's body.
  document.getElementById('instrument').shadowRoot?.getElementById('sentence')?.focus({ preventScroll: true });
});
retryButton.addEventListener('click', startEngine);
// The address holds the view (the hash, once the instrument is open): the button copies it, and
// says where to find it where the browser refuses (no clipboard on an insecure origin, say).
// The note goes back to its first words when the view changes, so "copied" is never stale.
const copyNote = document.getElementById('copy-link-note');
const copyNoteText = copyNote.textContent;
store.subscribe(() => {
  if (copyNote.textContent !== copyNoteText) copyNote.textContent = copyNoteText;
});
document.getElementById('copy-link').addEventListener('click', async () => {
  const note = copyNote;
  const link = location.href;
  try {
    await navigator.clipboard.writeText(link);
    note.textContent = '(copied: the link opens this sentence, this word and this head)';
  } catch {
    note.textContent = `(this browser did not let the page copy it; the link is the page\u2019s address: ${link})`;
  }
});
store.subscribe(render);
// Back, forward and an edited address all land here: the hash is the whole state.
function restoreFromHash() {
  if (!store.get().live) return;
  // A link to a place on the page (the model map's parts, the labels' definitions) is not a state.
  if (/^#[\w-]+$/.test(location.hash) && document.getElementById(location.hash.slice(1))) return;
  historyMode = 'replace';
  typingEntry = false;
  store.set({ ...PERMALINK_DEFAULTS, ...parseHash(location.hash) });
}
addEventListener('popstate', restoreFromHash);
addEventListener('hashchange', restoreFromHash);

// The engine's download starts at once: it runs in a worker and over the network while the
// page draws the precomputed example, and neither waits for the other.
engineSettled = startEngine().catch(() => {});
wireModelChooser();
await loadExample(modelChoice());
await render();
firstRenderDone = true;
performance.mark('attention:first-render');
// The engine failed (or got ready) while that render was under way: draw what it is now.
if (sessionState() !== drawnSessionState) render();
// A few kilobytes the prose quotes; the figures never wait for them.
loadSetStatistics().then(({ set }) => {
  page.pronouns = set.pronouns;
  page.heldoutPronouns = set.heldout?.pronouns ?? null;
  render();
}, () => {});
