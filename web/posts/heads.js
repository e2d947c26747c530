// "What each head does": every head of the model profiled over the series' sentence set, from
// the statistics the site build computed with the core (attention-cli profile; shown at once,
// with bootstrap intervals and each label's stability), and over the reader's own sentence,
// computed live by the engine in this page (the core's counts and label for that sentence).
// Every share is a count over a named denominator; the partition of rows by where their largest
// weight falls sums to 100%.
// First of all imports, so that it runs before the figures' modules are evaluated.
import '../start-engine.js';
import '../runtime/standalone.js';
import '../widgets/attention-heads.js';
import {
  countWord, fillFacts, fmt, h, headLabel, headShort, labelChip, loadEngine, loadSetStatistics, partitionPercents, percent,
  analyzeReadersSentence, pageFidelity, POSITIONAL, replaceKeepingFocus, scrollBox, share, withInterval,
} from './common.js';
import { ROLE } from '../engine/result.js';
import { PRESETS } from '../content.js';
import { thousands } from '../widgets/format.js';

// A head "almost always says the previous (next) token" when the lower end of the 95% interval
// of that share, over the word rows that have such a token, is at least this.
export const ALMOST_ALWAYS = 0.9;

const status = document.getElementById('status');
const setTable = document.getElementById('set-table');
const yoursSlot = document.getElementById('yours');
const HASH = { s: 'text' };

// Where a row's largest weight falls, as the core partitions the rows (each row in one column).
const PARTITION = [
  ['[CLS]/[SEP]', (c) => c.target_special],
  ['Itself', (c) => c.target_self],
  ['A neighbour', (c) => c.target_previous + c.target_next],
  ['Punctuation', (c) => c.target_punctuation],
  ['Elsewhere', (c) => c.target_other],
];

// One table row's numbers from a head's counts: the word shares and the partition.
function rowNumbers(c) {
  return {
    previous: share(c.word_previous, c.word_rows_with_previous),
    next: share(c.word_next, c.word_rows_with_next),
    partition: partitionPercents(PARTITION.map(([, count]) => count(c))),
    entropy: c.rows ? c.normalized_entropy_sum / c.rows : 0,
  };
}

// heads: [{layer, head (from 0), label, counts, stability?, borderline?, intervals?}]; the
// set's table has a column for the label's stability and intervals under its shares.
function profileTable(heads, caption, scope) {
  const bar = (value) => h('span', {}, h('span.bar-track', { 'aria-hidden': 'true' }, h('span.bar', { style: { width: `${(100 * value).toFixed(1)}%` } })), percent(value));
  const ranged = (value, e) => (e ? h('span', {}, bar(value), h('small.interval', { text: ` ${percent(e.low)}\u2013${percent(e.high)}` })) : bar(value));
  const stable = heads[0]?.stability !== undefined;
  const single = (text, left = false) => h('th', { scope: 'col', rowspan: '2', class: left ? 'text' : undefined, text });
  const head = h('thead', {},
    h('tr', {}, single('Head', true), single('Label', true), stable ? single('Same label in resamples') : null,
      single('Word \u2192 previous token'), single('Word \u2192 next token'),
      h('th', { scope: 'colgroup', colspan: String(PARTITION.length), text: 'Largest weight on (every row once; sums to 100%)' }),
      single('Entropy / ln n')),
    h('tr', {}, PARTITION.map(([name]) => h('th', { scope: 'col', text: name }))));
  return scrollBox('div.scroll', caption, h('table.data', { dataset: { scope } },
    h('caption', { text: caption }),
    head,
    h('tbody', {}, heads.map((x) => {
      const n = rowNumbers(x.counts);
      return h('tr', {
        dataset: {
          layer: String(x.layer), head: String(x.head), label: x.label, previous: String(n.previous), next: String(n.next),
          partition: n.partition.join(' '), entropy: String(n.entropy), borderline: String(Boolean(x.borderline)),
        },
      },
      h('th', { scope: 'row', class: 'text', text: headShort(x.layer, x.head) }),
      h('td.text', {}, labelChip(x.label)),
      stable ? h('td', {}, percent(x.stability, 0), x.borderline ? h('small.interval', { text: ' borderline' }) : null) : null,
      h('td', {}, ranged(n.previous, x.intervals?.word_previous)),
      h('td', {}, ranged(n.next, x.intervals?.word_next)),
      ...n.partition.map((p) => h('td', { text: `${p.toFixed(1)}%` })),
      h('td', {}, fmt(n.entropy, 2), x.intervals ? h('small.interval', { text: ` ${fmt(x.intervals.entropy.low, 2)}\u2013${fmt(x.intervals.entropy.high, 2)}` }) : null));
    }))));
}

// Heads of the set profile (layer and head from 1) with one share each on both sets, for the
// prose: `other` is the held-out profile (its heads in the same order).
const names = (list, pick, other) => (list.length
  ? list.map((x) => {
    const twin = other.heads.find((y) => y.layer === x.layer && y.head === x.head);
    return `${headShort(x.layer - 1, x.head - 1)}, ${withInterval(pick(x), (v) => percent(v))}; held out ${withInterval(pick(twin), (v) => percent(v))}`;
  }).join('. ')
  : 'none');
// A head holds a bar on both sets when the whole interval of its share is at or above it on each.
const onBoth = (p, q, pick) => p.heads.filter((x, k) => pick(x).low >= ALMOST_ALWAYS && pick(q.heads[k]).low >= ALMOST_ALWAYS);
const headsDo = (n) => `${countWord(n, true)} ${n === 1 ? 'head does' : 'heads do'}`;

// The heads of the set profile, in the table's form.
function setHeads(profile) {
  return profile.heads.map((x) => ({
    layer: x.layer - 1, head: x.head - 1, label: x.label, counts: x.counts, stability: x.label_stability, borderline: x.borderline,
    intervals: { word_previous: x.shares.word_previous.estimate, word_next: x.shares.word_next.estimate, entropy: x.mean_normalized_entropy },
  }));
}

async function drawSet() {
  const { set } = await loadSetStatistics();
  const p = set.profile;
  const q = set.heldout.profile;
  const heads = setHeads(p);
  const first = p.heads[0].counts;
  const previous = onBoth(p, q, (x) => x.shares.word_previous.estimate);
  const next = onBoth(p, q, (x) => x.shares.word_next.estimate);
  // Which heads put nearly all of a word's row on one neighbour (at least sharp_weight) for
  // most words, on both sets; and how the other positional heads compare.
  const sharpWeight = p.confident.sharp_weight;
  const sharp = p.heads.filter((x, k) => x.sharp_neighbour.estimate.low > 0.5 && q.heads[k].sharp_neighbour.estimate.low > 0.5);
  const share = (x) => percent(x.sharp_neighbour.estimate.value);
  const twinOf = (x) => q.heads.find((y) => y.layer === x.layer && y.head === x.head);
  // "85.7% [84.8%, 86.6%]": the share and its interval, compact enough to nest in a sentence.
  const sharpShare = (x) => {
    const e = x.sharp_neighbour.estimate;
    return `${percent(e.value)} [${percent(e.low)}, ${percent(e.high)}]`;
  };
  // Labels that differ between the two sets, and the held-out tally.
  const changed = p.heads.map((x, k) => ({ ...x, k })).filter((x) => x.label !== q.heads[x.k].label);
  const heldTally = {};
  for (const x of q.heads) heldTally[x.label] = (heldTally[x.label] ?? 0) + 1;
  const heldoutTally = Object.entries(heldTally).sort((a, b) => b[1] - a[1]).map(([label, n]) => `${n} ${label}`).join(', ');
  const near = (key) => p.heads.filter((x) => x.shares[key].estimate.value >= ALMOST_ALWAYS && x.shares[key].estimate.low < ALMOST_ALWAYS);
  const tally = {};
  for (const x of p.heads) tally[x.label] = (tally[x.label] ?? 0) + 1;
  const borderline = p.heads.filter((x) => x.borderline);
  const level = p.bootstrap.level;
  const positional = p.heads.filter((x) => POSITIONAL.has(x.label));
  fillFacts(document, {
    totalWord: countWord(p.heads.length, true),
    titleCounts: `over ${p.sentences} sentences and ${q.sentences} held out, ${countWord(previous.length, true)} almost always ${previous.length === 1 ? 'says' : 'say'} \u201cthe previous token\u201d and ${countWord(next.length, true)} \u201cthe next token\u201d`,
    heldoutSentences: String(q.sentences),
    setModel: `the f32 file of the model this page runs, ${set.model.name}`,
    sentences: String(p.sentences),
    rows: thousands(first.rows),
    words: thousands(first.word_rows),
    wordsWithPrevious: thousands(first.word_rows_with_previous),
    wordsWithNext: thousands(first.word_rows_with_next),
    threshold: percent(ALMOST_ALWAYS, 0),
    level: percent(level, 0),
    resamples: thousands(p.bootstrap.resamples),
    stable: percent(p.label_rule.stable_label, 0),
    onlyPrevious: headsDo(previous.length),
    previousShares: names(previous, (x) => x.shares.word_previous.estimate, q),
    onlyNext: headsDo(next.length),
    nextShares: names(next, (x) => x.shares.word_next.estimate, q),
    nearMisses: [...near('word_previous'), ...near('word_next')].map((x) => headShort(x.layer - 1, x.head - 1)).join(', ') || 'none',
    labelTally: Object.entries(tally).sort((a, b) => b[1] - a[1]).map(([label, n]) => `${n} ${label}`).join(', '),
    borderline: borderline.length
      ? `${borderline.length} ${borderline.length === 1 ? 'label is' : 'labels are'} borderline: ${borderline.map((x) => `${headShort(x.layer - 1, x.head - 1)} ${x.label} (kept in ${percent(x.label_stability, 0)})`).join(', ')}`
      : 'no label is borderline',
    pageFidelity: pageFidelity(set)?.attention ?? 'the same file the set was computed with',
    sharpWeight: fmt(sharpWeight, 1),
    sharpHeads: sharp.length
      ? `${sharp.map((x) => headShort(x.layer - 1, x.head - 1)).join(' and ')} ${sharp.length === 1 ? 'puts' : 'put'} nearly all of a row on one neighbouring token: at least ${fmt(sharpWeight, 1)} of it for `
        + `${sharp.map((x) => `${sharpShare(x)} of word rows (held out ${sharpShare(twinOf(x))})`).join(' and ')}, ${percent(level, 0)} intervals in brackets`
      : `no head puts at least ${fmt(sharpWeight, 1)} of a row on one neighbouring token for most word rows on both sets`,
    otherPositional: (() => {
      const others = positional.filter((x) => !sharp.includes(x));
      return others.length
        ? `The other positional ${others.length === 1 ? 'head does' : 'heads do'} not: ${others.map((x) => `${headShort(x.layer - 1, x.head - 1)} for ${share(x)} (mean largest weight ${fmt(x.mean_largest_word_weight, 2)})`).join(', ')}. Their largest weight falls on a neighbour more often than anywhere else, but much of the row goes elsewhere.`
        : '';
    })(),
    conclusion: `In this model ${countWord(positional.length, true)} of the ${countWord(p.heads.length, true)} heads are positional by the core\u2019s rule: `
      + `${positional.map((x) => `${headShort(x.layer - 1, x.head - 1)} (${x.label})`).join(', ') || 'none'}; `
      + `${countWord(previous.length + next.length, true)} of them point at their neighbour for at least ${percent(ALMOST_ALWAYS, 0)} of the words that have one, with the whole ${percent(level, 0)} interval above that bar on the set and on the ${q.sentences} held-out sentences. `
      + `The other labels describe tendencies, not rules${borderline.length ? `, and ${countWord(borderline.length, true)} of them could change with another sample of sentences` : ''}. `
      + (changed.length
        ? `On the held-out sentences ${changed.length === 1 ? 'one did' : `${countWord(changed.length, true)} did`}: ${changed.map((x) => `${headShort(x.layer - 1, x.head - 1)} is ${x.label} on the set and ${q.heads[x.k].label} there${x.borderline ? ' (a label this page marks borderline)' : ''}`).join('; ')}; the held-out tally is ${heldoutTally}.`
        : `On the held-out sentences every head keeps its label.`),
  });
  setTable.replaceChildren(profileTable(heads, `Every head over the ${p.sentences} sentences (${thousands(first.rows)} rows per head, ${thousands(first.word_rows)} of them word rows), with ${percent(level, 0)} intervals`, 'set'));
  setTable.dataset.ready = 'true';
}

async function main() {
  const setDrawn = drawSet().catch((error) => {
    setTable.replaceChildren(h('p.error-line', { role: 'status', text: error.message }));
  });
  const { loop } = await loadEngine(status);
  await setDrawn;
  loop.onRestart = () => drawYours(loop);
  await drawYours(loop);
  addEventListener('hashchange', () => drawYours(loop));
}

async function drawYours(loop) {
  const mine = await analyzeReadersSentence({
    loop, hash: HASH, slot: yoursSlot, redraw: () => drawYours(loop), fallback: PRESETS[0],
  });
  if (!mine) return;
  const { sentence, form, error, result } = mine;
  // The core's counts and label for each head over this one sentence.
  const heads = result.head_profiles.map((x) => ({ layer: x.layer, head: x.head, label: headLabel(result, x.layer, x.head), counts: x.counts }));
  const word = result.tokens.findIndex((_, i) => result.roles[i] === ROLE.ordinary);
  const figure = document.createElement('attention-heads');
  figure.setAttribute('sentence', sentence);
  if (word >= 0) figure.setAttribute('word', String(word));
  replaceKeepingFocus(yoursSlot, form, error,
    profileTable(heads, `Every head over your sentence (${result.n} rows per head), computed in your browser by the model this page loaded`, 'yours'),
    h('figure.wide', {}, figure, h('figcaption', { text: `The row of \u201c${word >= 0 ? result.tokens[word].text : ''}\u201d, your sentence\u2019s first word, in every head: the article\u2019s Figure 5, computed by the same engine.` })));
  yoursSlot.dataset.ready = 'true';
  yoursSlot.dataset.sentence = sentence;
}

main().catch(() => {});
