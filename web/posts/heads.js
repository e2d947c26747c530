// "Sixteen heads, and what each one only ever says": every head of the loaded model profiled
// over the series' sentence set and over the reader's sentence, from the model in this page:
// where each row's largest weight falls (previous token, next token, [CLS]/[SEP], itself,
// punctuation), the mean normalised entropy, the label by the core's rule, and the count of heads
// that only ever say "the next word" or "the previous word" (at least ONLY_EVER of their word rows).
import '../widgets/attention-heads.js';
import { SENTENCE_SET } from './sentences.js';
import {
  analyzeAll, countWord, fillFacts, fmt, h, headCounts, headLabel, headTag, labelChip, labelOf, loadEngine, percent,
  analyzeReadersSentence, share,
} from './common.js';
import { ROLE } from '../engine/result.js';

// A head "only ever says the next word" when at least this share of its word rows (rows of
// ordinary tokens) put their largest weight on the next token; likewise for the previous one.
export const ONLY_EVER = 0.9;

const root = document.querySelector('main');
const status = document.getElementById('status');
const setTable = document.getElementById('set-table');
const yoursSlot = document.getElementById('yours');
const HASH = { s: 'text' };

// The heads that only ever say the next (or previous) word, from counts over word rows.
export function onlyEver(counts) {
  const next = counts.filter((c) => share(c.wordNext, c.words) >= ONLY_EVER);
  const previous = counts.filter((c) => share(c.wordPrevious, c.words) >= ONLY_EVER);
  return { next, previous };
}

function profileTable(counts, labels, caption, scope) {
  const bar = (value) => h('span', {}, h('span.bar-track', {}, h('span.bar', { style: { width: `${(100 * value).toFixed(1)}%` } })), percent(value));
  return h('div.scroll', {}, h('table.data', { dataset: { scope } },
    h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, ['Head', 'Label', 'Words \u2192 next', 'Words \u2192 previous', 'Rows on a neighbour', '[CLS]/[SEP]', 'Itself', 'Punctuation', 'Entropy / ln n']
      .map((t, k) => h('th', { scope: 'col', class: k < 2 ? 'text' : undefined, text: t })))),
    h('tbody', {}, counts.map((c, k) => h('tr', {
      dataset: {
        layer: String(c.layer), head: String(c.head), label: labels[k],
        next: String(share(c.wordNext, c.words)), previous: String(share(c.wordPrevious, c.words)),
        positional: String(share(c.previous_token + c.next_token, c.rows)), sink: String(share(c.sink, c.rows)),
        entropy: String(c.normalized_entropy / c.rows),
      },
    },
    h('th', { scope: 'row', class: 'text', text: headTag(c.layer, c.head) }),
    h('td.text', {}, labelChip(labels[k])),
    h('td', {}, bar(share(c.wordNext, c.words))),
    h('td', {}, bar(share(c.wordPrevious, c.words))),
    h('td', { text: percent(share(c.previous_token + c.next_token, c.rows)) }),
    h('td', { text: percent(share(c.sink, c.rows)) }),
    h('td', { text: percent(share(c.self, c.rows)) }),
    h('td', { text: percent(share(c.punctuation, c.rows)) }),
    h('td', { text: fmt(c.normalized_entropy / c.rows, 2) }))))));
}

const names = (list) => (list.length ? list.map((c) => headTag(c.layer, c.head)).join(', ') : 'none');

async function main() {
  const { engine } = await loadEngine(status);
  const t0 = performance.now();
  const results = await analyzeAll(engine, SENTENCE_SET);
  const counts = headCounts(results);
  const labels = counts.map(labelOf);
  const { next, previous } = onlyEver(counts);
  const words = counts[0].words;
  const total = counts.length;
  const tally = {};
  for (const label of labels) tally[label] = (tally[label] ?? 0) + 1;
  fillFacts(document, {
    totalWord: countWord(total),
    titleCounts: `${countWord(next.length)} ${next.length === 1 ? 'says' : 'say'} only \u201cthe next word\u201d, ${countWord(previous.length, true)} only \u201cthe previous word\u201d`,
    sentences: SENTENCE_SET.length,
    rows: counts[0].rows.toLocaleString('en-US'),
    words: words.toLocaleString('en-US'),
    onlyNext: `${next.length} (${names(next)})`,
    onlyPrevious: `${previous.length} (${names(previous)})`,
    threshold: percent(ONLY_EVER, 0),
    labelTally: Object.entries(tally).sort((a, b) => b[1] - a[1]).map(([label, n]) => `${n} ${label}`).join(', '),
    nextShares: next.map((c) => `${headTag(c.layer, c.head)} in ${percent(share(c.wordNext, c.words))} of them`).join(', ') || 'no head',
    previousShares: previous.map((c) => `${headTag(c.layer, c.head)} in ${percent(share(c.wordPrevious, c.words))}`).join(', ') || 'no head',
    elapsed: `${Math.round(performance.now() - t0)} ms`,
  });
  document.title = `${countWord(total)} heads, and what each one only ever says`;
  setTable.replaceChildren(profileTable(counts, labels, `Every head over the ${SENTENCE_SET.length} sentences (${counts[0].rows} rows per head, ${words} of them word rows)`, 'set'));
  setTable.dataset.ready = 'true';
  await drawYours(engine);
  addEventListener('hashchange', () => drawYours(engine));
}

let drawing = 0;
async function drawYours(engine) {
  const ticket = ++drawing;
  const mine = await analyzeReadersSentence({
    engine, hash: HASH, slot: yoursSlot, redraw: () => drawYours(engine), current: () => ticket === drawing, fallback: SENTENCE_SET[0],
  });
  if (!mine) return;
  const { sentence, form, error, result } = mine;
  const counts = headCounts([result]);
  // The core's own label for each head over this sentence (labelOf gives the same).
  const labels = counts.map((c) => headLabel(result, c.layer, c.head));
  const { next, previous } = onlyEver(counts);
  const word = result.tokens.findIndex((_, i) => result.roles[i] === ROLE.ordinary);
  const figure = document.createElement('attention-heads');
  figure.setAttribute('sentence', sentence);
  if (word >= 0) figure.setAttribute('word', String(word));
  yoursSlot.replaceChildren(form, error,
    h('p', {}, `In this sentence (${result.n} tokens), the heads that say the next word for at least ${percent(ONLY_EVER, 0)} of its words: `,
      h('b', { dataset: { count: 'next' }, text: `${next.length} (${names(next)})` }), '; the previous word: ',
      h('b', { dataset: { count: 'previous' }, text: `${previous.length} (${names(previous)})` }), '.'),
    profileTable(counts, labels, `Every head over your sentence (${result.n} rows per head)`, 'yours'),
    h('figure.wide', {}, figure, h('figcaption', { text: `The row of \u201c${word >= 0 ? result.tokens[word].text : ''}\u201d, your sentence\u2019s first word, in every head: the article\u2019s Figure 5, computed by the same engine.` })));
  yoursSlot.dataset.ready = 'true';
  yoursSlot.dataset.sentence = sentence;
}

main().catch(() => {});
