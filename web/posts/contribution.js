// "Attention paid versus contribution made": the prediction figure and the contribution
// instrument for the reader's sentence and word (computed live), and the finding over the
// series' sentence set, computed when the site was built by the core (attention-cli
// contribution: exact probabilities, a bootstrap over sentences, and for the agreement of the
// most-attending and the most-consequential head a permutation null that keeps both
// distributions) and shown here as it is, with the conclusion its numbers support.
// First of all imports, so that it runs before the figures' modules are evaluated.
import '../start-engine.js';
import '../runtime/standalone.js';
import { vocabularyDownload } from '../widgets/attention-prediction.js';
import '../widgets/attention-contribution.js';
import {
  countWord, fillFacts, fmt, h, headShort, Latest, loadEngine, loadSetStatistics, pageFidelity, percent, readHash, replaceKeepingFocus, scrollBox, sentenceForm, withInterval, writeHash,
} from './common.js';
import { PRESETS } from '../content.js';
import { SORTS } from '../widgets/registry.js';
import { fmtProbability, megabytes, thousands } from '../widgets/format.js';

const status = document.getElementById('status');
const yoursSlot = document.getElementById('yours');
const predictionSlot = document.getElementById('prediction-slot');
const survivalSlot = document.getElementById('survival');
const HASH = { s: 'text', w: 'index', o: 'text' };

const rho = (v) => fmt(v, 3);
const excludesZero = (e) => e.low > 0 || e.high < 0;

// One plain sentence per finding, chosen by what the intervals and the p-value say.
export function conclusion(s) {
  const a = s.agreement;
  const agreement = a.p_value < 0.05
    ? `The most-attending head is the most consequential one somewhat more often than chance that keeps both distributions gives (${a.observed} against ${fmt(a.expected, 0)} expected, p = ${fmt(a.p_value, 3)})`
    : `There is no evidence that the most-attending head is the most consequential one more often than chance that keeps both distributions (${a.observed} against ${fmt(a.expected, 0)} expected, p = ${fmt(a.p_value, 2)})`;
  const beyond = excludesZero(s.rho_beyond_head)
    ? `a word's own attention adds ${rho(s.rho_beyond_head.value)} to the per-word correlation beyond what head identity gives (${rho(s.rho_per_word.value)} against ${rho(s.rho_constant_attention.value)})`
    : `there is no evidence that a word's own attention adds to the per-word correlation beyond head identity (${rho(s.rho_per_word.value)} against ${rho(s.rho_constant_attention.value)})`;
  const within = excludesZero(s.within_rho)
    ? `within a head, attention and effect go together only weakly (rank correlation ${rho(s.within_rho.value)}, ${rho(s.within_rho_log.value)} in log-probability)`
    : `within a head there is no evidence that attention predicts effect in probability (rank correlation ${rho(s.within_rho.value)}; ${rho(s.within_rho_log.value)} in log-probability)`;
  return `${agreement}; ${beyond}; and ${within}. Over these sentences, how much a head attends is a weak guide to what removing it does to a given word.`;
}

function headTable(summary, caption) {
  const columns = ['Head', 'Most attending for (words)', 'Most consequential for (words)', 'Mean attention', 'Mean |effect|', 'Mean |effect|, log p', 'Top-1 guess survives', 'Within-head ρ', 'Within-head ρ, log p'];
  return scrollBox('div.scroll', caption, h('table.data', { dataset: { scope: 'survival' } },
    h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, columns.map((t, k) => h('th', { scope: 'col', class: k === 0 ? 'text' : undefined, text: t })))),
    h('tbody', {}, summary.per_head.map((c) => h('tr', {
      dataset: { layer: String(c.layer - 1), head: String(c.head - 1), survival: String(c.top1_survival), attending: String(c.most_attending), consequential: String(c.most_consequential) },
    },
    h('th', { scope: 'row', class: 'text', text: headShort(c.layer - 1, c.head - 1) }),
    h('td', { text: thousands(c.most_attending) }),
    h('td', { text: thousands(c.most_consequential) }),
    h('td', { text: fmt(c.mean_attention, 3) }),
    h('td', { text: fmtProbability(c.mean_abs_effect) }),
    h('td', { text: fmt(c.mean_abs_log_effect, 3) }),
    h('td', {}, h('span.bar-track', { 'aria-hidden': 'true' }, h('span.bar', { style: { width: `${(100 * c.top1_survival).toFixed(1)}%` } })), percent(c.top1_survival)),
    h('td', { text: rho(c.within_rho) }),
    h('td', { text: rho(c.within_rho_log) }))))));
}

async function drawSet() {
  const { set, wordsUrl } = await loadSetStatistics();
  const c = set.contribution;
  const s = c.summary;
  const a = s.agreement;
  const level = c.bootstrap.level;
  const top = s.per_head.reduce((best, x) => (x.most_attending > best.most_attending ? x : best));
  const of = (count) => `${thousands(count)} of the ${thousands(s.words)} words (${percent(count / s.words)})`;
  fillFacts(document, {
    titleCounts: `over ${thousands(s.words)} masked words, the most-attending head is the most consequential one for ${thousands(a.observed)}, where chance gives ${fmt(a.expected, 0)}`,
    sentences: String(c.sentences),
    words: thousands(s.words),
    setModel: `the f32 file of the model this page runs, ${set.model.name}`,
    level: percent(level, 0),
    resamples: thousands(c.bootstrap.resamples),
    top1: of(s.top1_correct),
    predicted: of(s.predicted.words),
    unpredicted: thousands(s.unpredicted.words),
    effectPredicted: withInterval(s.predicted.mean_abs_effect, fmtProbability, level),
    effectUnpredicted: withInterval(s.unpredicted.mean_abs_effect, fmtProbability, level),
    logEffectPredicted: withInterval(s.predicted.mean_abs_log_effect, (v) => fmt(v, 3), level),
    logEffectUnpredicted: withInterval(s.unpredicted.mean_abs_log_effect, (v) => fmt(v, 3), level),
    agree: `${of(a.observed).slice(0, -1)}; ${percent(level, 0)} interval ${percent(a.share.low)} to ${percent(a.share.high)})`,
    distinctAttending: countWord(a.distinct_attending, true),
    topAttending: `${headShort(top.layer - 1, top.head - 1)}, for ${of(top.most_attending)}`,
    distinctConsequential: countWord(a.distinct_consequential, true),
    expected: `${fmt(a.expected, 1)} (${percent(a.expected / s.words)})`,
    pValue: `the share of ${thousands(a.permutations)} shuffles that agree at least as often as observed is p = ${fmt(a.p_value, a.p_value < 0.01 ? 4 : 3)}`,
    rhoPerWord: withInterval(s.rho_per_word, rho, level),
    rhoConstant: withInterval(s.rho_constant_attention, rho, level),
    rhoBeyond: withInterval(s.rho_beyond_head, rho, level),
    withinRho: withInterval(s.within_rho, rho, level),
    withinRhoLog: withInterval(s.within_rho_log, rho, level),
    survival: withInterval(s.top1_survival, (v) => percent(v), level),
    conclusion: conclusion(s),
    pageFidelity: pageFidelity(set)?.predictions ?? 'they are the file the set below was computed with',
  });
  const link = document.getElementById('words-link');
  link.href = wordsUrl;
  survivalSlot.replaceChildren(headTable(s, `Each head over the ${thousands(s.words)} masked words of the set`));
  Object.assign(survivalSlot.dataset, { words: String(s.words), agree: String(a.observed), expected: String(a.expected), pValue: String(a.p_value) });
  survivalSlot.dataset.ready = 'true';
}

async function main() {
  const setDrawn = drawSet().catch((error) => {
    survivalSlot.replaceChildren(h('p.error-line', { role: 'status', text: error.message }));
  });
  const { engine } = await loadEngine(status);
  // The figures fetch the vocabulary table with their first prediction, when the reader asks
  // for one; the prose says its size from the manifest now.
  const stats = await engine.shardStats().catch(() => null);
  if (stats?.total) fillFacts(document, { vocabularySize: megabytes(stats.total) });
  await drawYours(engine);
  addEventListener('hashchange', () => drawYours(engine));
  await setDrawn;
}

const yours = new Latest();
async function drawYours(engine) {
  const ticket = yours.next();
  // Once the vocabulary table is here (the reader asked for a prediction, now or on an earlier
  // visit), a new sentence's figures predict at once; before, they wait for the reader.
  const vocabularyHere = (await vocabularyDownload(engine)) === '';
  if (!yours.current(ticket)) return;
  const state = readHash(HASH);
  const sentence = state.s ?? PRESETS[0];
  // The reader's word from the address; on the opening sentence, "street"; else the figure's default.
  const word = state.w !== undefined ? String(state.w) : sentence === PRESETS[0] ? 'street' : null;
  const sort = SORTS.includes(state.o) ? state.o : SORTS[0];
  const { form, error } = sentenceForm({
    value: sentence,
    keeps: 'The figures below still show the last one.',
    onSubmit: (text) => {
      writeHash({ s: text, o: readHash(HASH).o }, { push: true });
      drawYours(engine);
    },
  });
  const prediction = document.createElement('attention-prediction');
  prediction.setAttribute('sentence', sentence);
  if (word !== null) prediction.setAttribute('word', word);
  if (vocabularyHere) prediction.setAttribute('autoload', '');
  const instrument = document.createElement('attention-contribution');
  instrument.setAttribute('sentence', sentence);
  if (word !== null) instrument.setAttribute('word', word);
  instrument.setAttribute('sort', sort);
  if (vocabularyHere) instrument.setAttribute('autoload', '');
  // The reader's word (the figure's attention-change event, or a changed word attribute) and
  // sort order go into the address (a permalink), as data.
  let chosen = state.w;
  const remember = () => {
    const o = instrument.getAttribute('sort');
    writeHash({ s: sentence, w: chosen, o });
    yoursSlot.dataset.word = chosen === undefined ? '' : String(chosen);
    yoursSlot.dataset.sort = o ?? '';
  };
  instrument.addEventListener('attention-change', (event) => {
    if (Number.isInteger(event.detail?.token)) chosen = event.detail.token;
    remember();
  });
  new MutationObserver(() => {
    const w = instrument.getAttribute('word');
    if (/^\d+$/.test(w ?? '')) chosen = Number(w);
    remember();
  }).observe(instrument, { attributes: true, attributeFilter: ['word', 'sort'] });
  predictionSlot.replaceChildren(prediction, h('figcaption', { text: 'Click a word to mask it: the model\u2019s ten best guesses for that place, and the rank of the word that was there.' }));
  replaceKeepingFocus(yoursSlot, form, error, h('figure', {}, instrument,
    h('figcaption', { text: 'Every head for the masked word: the weight on its top token, and the change in the probability of the word that was there when the head is removed. Sort by either; click a head for its value-weighted row.' })));
  yoursSlot.dataset.sentence = sentence;
  yoursSlot.dataset.ready = 'true';
}

main().catch(() => {});
