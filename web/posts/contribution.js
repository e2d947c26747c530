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

// A finding holds only where it holds on both sets: the series' set and the held-out sentences
// (written before any result on them was computed). Each sentence below is chosen by what the
// intervals and p-values of both say; `a` and `b` are the two sets' contribution summaries.
const SIGNIFICANT = 0.05;
export function agreementHolds(a, b) {
  return a.agreement.position_kept.p_value < SIGNIFICANT && b.agreement.position_kept.p_value < SIGNIFICANT;
}

export function conclusion(a, b) {
  const pair = (x, y, f) => `${f(x)} on the set, ${f(y)} on the held-out sentences`;
  const agreed = (s) => `${thousands(s.agreement.observed)} against ${fmt(s.agreement.position_kept.expected, 0)} expected (p = ${fmt(s.agreement.position_kept.p_value, 2)})`;
  const agreement = agreementHolds(a, b)
    ? `The most-attending head is the most consequential one more often than chance, even with each word's position kept (${pair(a, b, agreed)})`
    : `Once each word's position is kept, the most-attending head is the most consequential one about as often as chance gives (${pair(a, b, agreed)}): no evidence of more`;
  const beyondHolds = excludesZero(a.rho_beyond_head) && excludesZero(b.rho_beyond_head) && a.rho_beyond_head.value > 0 && b.rho_beyond_head.value > 0;
  const beyond = beyondHolds
    ? `a word's own attention adds a little to the per-word correlation beyond what head identity gives (${pair(a, b, (s) => rho(s.rho_beyond_head.value))})`
    : `there is no evidence on both sets that a word's own attention adds to the per-word correlation beyond head identity (${pair(a, b, (s) => rho(s.rho_beyond_head.value))})`;
  const logHolds = excludesZero(a.within_rho_log) && excludesZero(b.within_rho_log) && a.within_rho_log.value > 0 && b.within_rho_log.value > 0;
  const probabilityHolds = excludesZero(a.within_rho) && excludesZero(b.within_rho) && a.within_rho.value > 0 && b.within_rho.value > 0;
  const within = (logHolds
    ? `within a head, a larger weight on a word goes with a larger change in its log-probability, weakly (rank correlation ${pair(a, b, (s) => rho(s.within_rho_log.value))})`
    : `within a head there is no evidence on both sets that a larger weight goes with a larger change in log-probability (${pair(a, b, (s) => rho(s.within_rho_log.value))})`)
    + (probabilityHolds ? '' : `; measured as the change in probability itself, the correlation does not hold on both sets (${pair(a, b, (s) => rho(s.within_rho.value))})`);
  return `${agreement}; ${beyond}; and ${within}. Over these sentences, how much a head attends is a weak guide to what removing it does to a given word.`;
}

// The set statistics of both sets and both ablations side by side, each with its interval.
function claimsTable(parts, level) {
  const est = (e, f) => `${f(e.value)} [${f(e.low)}, ${f(e.high)}]`;
  const rows = [
    ['Words', (s) => thousands(s.words)],
    ['Most attending = most consequential', (s) => `${thousands(s.agreement.observed)} (${percent(s.agreement.share.value)})`],
    ['Chance, both distributions kept', (s) => `${fmt(s.agreement.expected, 1)}, p = ${fmt(s.agreement.p_value, 3)}`],
    ['Chance, position kept too', (s) => `${fmt(s.agreement.position_kept.expected, 1)}, p = ${fmt(s.agreement.position_kept.p_value, 3)}`],
    ['Per-word ρ over heads', (s) => est(s.rho_per_word, rho)],
    ['… with head identity alone', (s) => est(s.rho_constant_attention, rho)],
    ['… what the word’s attention adds', (s) => est(s.rho_beyond_head, rho)],
    ['Within-head ρ, probability', (s) => est(s.within_rho, rho)],
    ['Within-head ρ, log-probability', (s) => est(s.within_rho_log, rho)],
    ['Top-1 guess survives a removal', (s) => est(s.top1_survival, (v) => percent(v))],
  ];
  const caption = `The set statistics on both sentence sets, with each head zeroed and with it replaced by its mean output (${percent(level, 0)} intervals in brackets)`;
  return scrollBox('div.scroll', caption, h('table.data', { dataset: { scope: 'claims' } },
    h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, [h('th', { scope: 'col', class: 'text', text: 'Statistic' }), ...parts.map((p) => h('th', { scope: 'col', text: p.name }))])),
    h('tbody', {}, rows.map(([name, f]) => h('tr', {}, h('th', { scope: 'row', class: 'text', text: name }), ...parts.map((p) => h('td', { text: f(p.summary) })))))));
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
  const held = set.heldout.contribution.summary;
  const mean = set.contribution_mean;
  const heldMean = set.heldout.contribution_mean;
  const holds = agreementHolds(s, held);
  const level = c.bootstrap.level;
  const top = s.per_head.reduce((best, x) => (x.most_attending > best.most_attending ? x : best));
  const of = (count) => `${thousands(count)} of the ${thousands(s.words)} words (${percent(count / s.words)})`;
  fillFacts(document, {
    titleCounts: holds
      ? `over ${thousands(s.words + held.words)} masked words, the most-attending head is the most consequential one more often than chance`
      : `over ${thousands(s.words + held.words)} masked words, the most-attending head is the most consequential one about as often as chance`,
    heldoutSentences: String(set.heldout.contribution.sentences),
    heldoutWords: thousands(held.words),
    positionKept: `${fmt(a.position_kept.expected, 1)} agreements, p = ${fmt(a.position_kept.p_value, 3)}; on the held-out sentences ${thousands(held.agreement.observed)} against ${fmt(held.agreement.position_kept.expected, 1)}, p = ${fmt(held.agreement.position_kept.p_value, 3)}`,
    meanTokens: thousands(mean.ablation.mean_tokens),
    meanSame: `${thousands(mean.same_most_consequential)} of the ${thousands(s.words)} words (${percent(mean.same_most_consequential / s.words)}; ${percent(heldMean.same_most_consequential / held.words)} on the held-out sentences)`,
    meanAgreement: `${thousands(mean.summary.agreement.observed)} against ${fmt(mean.summary.agreement.position_kept.expected, 1)} with position kept (p = ${fmt(mean.summary.agreement.position_kept.p_value, 3)})`,
    meanRho: `${rho(mean.summary.rho_per_word.value)} against ${rho(s.rho_per_word.value)}`,
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
    conclusion: conclusion(s, held),
    pageFidelity: pageFidelity(set)?.predictions ?? 'they are the file the set below was computed with',
  });
  const link = document.getElementById('words-link');
  link.href = wordsUrl;
  const parts = [
    { name: `Set, zeroed (${c.sentences} sentences)`, summary: s },
    { name: `Held out, zeroed (${set.heldout.contribution.sentences})`, summary: held },
    { name: 'Set, mean', summary: mean.summary },
    { name: 'Held out, mean', summary: heldMean.summary },
  ];
  survivalSlot.replaceChildren(claimsTable(parts, level), headTable(s, `Each head over the ${thousands(s.words)} masked words of the set (heads zeroed)`));
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
