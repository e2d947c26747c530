// "Attention paid versus contribution made": the prediction figure, the contribution instrument
// for the reader's sentence and word, and the finding over the series' sentence set, all computed
// from the loaded model: for every whole word, masked, each head's weight on its top token beside
// the change in the original word's probability when that head alone is removed; per word the
// Spearman rank correlation of the two over the heads (effect as |change|), whether the
// most-attending head is the most consequential one, and, per head, the share of words whose
// top-1 prediction survives its removal.
import '../widgets/attention-prediction.js';
import { measureContribution, spearman, wholeWord } from '../widgets/attention-contribution.js';
import { withVocabularyProgress } from '../widgets/attention-prediction.js';
import { SENTENCE_SET } from './sentences.js';
import { countWord, fillFacts, fmt, h, headTag, loadEngine, percent, readHash, sentenceForm, writeHash } from './common.js';

const status = document.getElementById('status');
const yoursSlot = document.getElementById('yours');
const predictionSlot = document.getElementById('prediction-slot');
const survivalSlot = document.getElementById('survival');
const HASH = { s: 'text', w: 'index', o: 'text' };
const SORTS = ['attention', 'effect', 'head'];

// The summary of many measurements (each measureContribution's result).
export function findings(measured) {
  const rhos = [];
  const xs = [];
  const ys = [];
  let agree = 0;
  let pairs = 0;
  let survived = 0;
  const first = measured[0];
  const perHead = first.heads.map((x) => ({ layer: x.layer, head: x.head, survived: 0, words: 0, meanEffect: 0 }));
  for (const m of measured) {
    const attention = m.heads.map((x) => x.attention);
    const effect = m.heads.map((x) => Math.abs(x.effect));
    const rho = spearman(attention, effect);
    if (Number.isFinite(rho)) rhos.push(rho);
    xs.push(...attention);
    ys.push(...effect);
    let a = 0;
    let e = 0;
    for (let k = 1; k < m.heads.length; ++k) {
      if (attention[k] > attention[a]) a = k;
      if (effect[k] > effect[e]) e = k;
    }
    agree += a === e;
    m.heads.forEach((x, k) => {
      perHead[k].words += 1;
      perHead[k].survived += x.survives;
      perHead[k].meanEffect += x.effect / measured.length;
      survived += x.survives;
      pairs += 1;
    });
  }
  const sorted = rhos.slice().sort((p, q) => p - q);
  const median = sorted.length ? (sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2) : NaN;
  return {
    words: measured.length, defined: rhos.length,
    rhoMean: rhos.reduce((s, r) => s + r, 0) / rhos.length, rhoMedian: median,
    rhoPositive: rhos.filter((r) => r > 0).length, rhoPooled: spearman(xs, ys),
    agree, survived, pairs, perHead,
  };
}

function survivalTable(f) {
  return h('div.scroll', {}, h('table.data', { dataset: { scope: 'survival' } },
    h('caption', { text: `Each head removed alone, over the ${f.words} masked words of the set` }),
    h('thead', {}, h('tr', {}, ['Head', 'Top-1 guess survives', 'Mean change in p(original)'].map((t, k) => h('th', { scope: 'col', class: k === 0 ? 'text' : undefined, text: t })))),
    h('tbody', {}, f.perHead.map((c) => h('tr', { dataset: { layer: String(c.layer), head: String(c.head), survived: String(c.survived), words: String(c.words), share: String(c.survived / c.words) } },
      h('th', { scope: 'row', class: 'text', text: headTag(c.layer, c.head) }),
      h('td', {}, h('span.bar-track', {}, h('span.bar', { style: { width: `${((100 * c.survived) / c.words).toFixed(1)}%` } })), `${percent(c.survived / c.words)} (${c.survived} of ${c.words})`),
      h('td', { text: fmt(c.meanEffect, 4) }))))));
}

async function main() {
  const { engine } = await loadEngine(status);
  const live = status.textContent;
  // The vocabulary table first, once (every prediction needs it), with its progress.
  await withVocabularyProgress(engine, () => engine.predict(SENTENCE_SET[0], 1, 1, { masked: true }), (text) => {
    status.textContent = text || live;
  });
  status.textContent = live;
  drawYours();
  addEventListener('hashchange', drawYours);
  await measureSet(engine);
}

function drawYours() {
  const state = readHash(HASH);
  const sentence = state.s ?? SENTENCE_SET[0];
  // The reader's word from the address; on the opening sentence, "street"; else the figure's default.
  const word = state.w !== undefined ? String(state.w) : sentence === SENTENCE_SET[0] ? 'street' : null;
  const sort = SORTS.includes(state.o) ? state.o : 'attention';
  const { form, error } = sentenceForm({
    value: sentence,
    emptyMessage: 'Type a sentence first: an empty one has no words to mask. The figures below still show the last one.',
    onSubmit: (text) => {
      writeHash({ s: text, o: readHash(HASH).o }, { push: true });
      drawYours();
    },
  });
  const prediction = document.createElement('attention-prediction');
  prediction.setAttribute('sentence', sentence);
  if (word !== null) prediction.setAttribute('word', word);
  prediction.setAttribute('autoload', '');
  const instrument = document.createElement('attention-contribution');
  instrument.setAttribute('sentence', sentence);
  if (word !== null) instrument.setAttribute('word', word);
  instrument.setAttribute('sort', sort);
  instrument.setAttribute('autoload', '');
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
  yoursSlot.replaceChildren(form, error, h('figure', {}, instrument,
    h('figcaption', { text: 'Every head for the masked word: the weight on its top token, and the change in the probability of the word that was there when the head is removed. Sort by either; click a head for its value-weighted row.' })));
  yoursSlot.dataset.sentence = sentence;
  yoursSlot.dataset.ready = 'true';
}

async function measureSet(engine) {
  const t0 = performance.now();
  const measured = [];
  let words = 0;
  const results = [];
  for (const text of SENTENCE_SET) {
    const r = await engine.analyze(text);
    results.push(r);
    for (let i = 0; i < r.n; ++i) words += wholeWord(r, i);
  }
  for (const r of results) {
    for (let i = 0; i < r.n; ++i) {
      if (!wholeWord(r, i)) continue;
      measured.push(await measureContribution(engine, r, i));
      if (measured.length % 10 === 0) survivalSlot.firstElementChild.textContent = `Measuring: ${measured.length} of ${words} words\u2026`;
    }
  }
  const f = findings(measured);
  const heads = measured[0].heads.length;
  fillFacts(document, {
    titleCounts: `over ${f.words} masked words, the most-attending head is the most consequential one for ${f.agree}`,
    heads: countWord(heads, true),
    headsCount: heads,
    sentences: SENTENCE_SET.length,
    words: f.words,
    passes: (f.words * (heads + 2)).toLocaleString('en-US'),
    elapsed: `${(Math.round(performance.now() - t0) / 1000).toFixed(1)} s`,
    rhoMean: fmt(f.rhoMean, 2),
    rhoMedian: fmt(f.rhoMedian, 2),
    rhoPositive: `${f.rhoPositive} of ${f.defined}`,
    rhoPooled: fmt(f.rhoPooled, 2),
    agree: `${f.agree} of ${f.words} (${percent(f.agree / f.words)})`,
    surviveMean: `${percent(f.survived / f.pairs)} (${f.survived.toLocaleString('en-US')} of ${f.pairs.toLocaleString('en-US')})`,
  });
  survivalSlot.replaceChildren(survivalTable(f));
  const el = survivalSlot;
  Object.assign(el.dataset, {
    words: String(f.words), agree: String(f.agree), rhoMean: String(f.rhoMean), rhoMedian: String(f.rhoMedian),
    rhoPooled: String(f.rhoPooled), rhoPositive: String(f.rhoPositive), defined: String(f.defined), survived: String(f.survived), pairs: String(f.pairs),
    ms: String(performance.now() - t0),
  });
  el.dataset.ready = 'true';
}

main().catch(() => {});
