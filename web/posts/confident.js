// "The most confident head is a positional one": for every word of the series' sentence set,
// the head with the highest ratio to uniform for that word's row (the "most confident" head),
// what it said, and whether its largest weight is on the word's neighbour; then, for the heads
// that win, how often they point at the neighbour for every word; then the alternative the
// article uses (SELECTION_RULE: the sharpest content head) and what it changes. Over the set and
// the held-out sentences these were computed when the site was built (attention-cli profile:
// ConfidentCounts in wasm/core/sentence_set.h, the same choices as the functions below, with
// bootstrap intervals); over the reader's sentence, live in this page.
// First of all imports, so that it runs before the figures' modules are evaluated.
import '../start-engine.js';
import '../runtime/standalone.js';
import '../widgets/attention-compare.js';
import {
  countWord, fillFacts, fmt, h, headLabel, headShort, labelChip, loadEngine, loadSetStatistics, percent, readHash,
  analyzeReadersSentence, replaceKeepingFocus, scrollBox, withInterval,
} from './common.js';
import { ROLE, rowStat } from '../engine/result.js';
import { rowRelation, sharpestAndBroadest } from '../widgets/data.js';
import { thousands } from '../widgets/format.js';
import { PRESETS } from '../content.js';

const status = document.getElementById('status');
const yoursSlot = document.getElementById('yours');
const winnersSlot = document.getElementById('winners');
const HASH = { s: 'text', w: 'index' };

// Every word of a result: its most confident head (largest ratio to uniform over all heads),
// whether that head's largest weight is on a neighbour, and the article's content head.
export function confidentHeads(result) {
  const out = [];
  for (let token = 0; token < result.n; ++token) {
    if (result.roles[token] !== ROLE.ordinary) continue;
    const { sharpest, overall } = sharpestAndBroadest(result, token);
    const relation = rowRelation(result, token, overall.argmax);
    out.push({
      token, word: result.tokens[token].text, overall, relation,
      positional: relation === 'the next token' || relation === 'the previous token',
      content: sharpest, contentRelation: rowRelation(result, token, sharpest.argmax),
    });
  }
  return out;
}

const saying = (result, word, x) => `${word} \u2192 ${result.tokens[x.argmax].text}, ${fmt(x.max, 3)}`;

function wordTable(result, rows, selected) {
  return scrollBox('div.scroll', 'Every word\u2019s most confident head and content head', h('table.data', { dataset: { scope: 'words' } },
    h('caption', { text: `Every word of \u201c${result.text}\u201d: the most confident head and the content head` }),
    h('thead', {}, h('tr', {}, ['Word', 'Most confident head', 'What it said', 'Ratio', 'Where', 'Content head', 'What it said', 'Ratio']
      .map((t, k) => h('th', { scope: 'col', class: k === 0 || k === 1 || k === 2 || k === 5 || k === 6 ? 'text' : undefined, text: t })))),
    h('tbody', {}, rows.map((x) => h('tr', {
      'aria-current': String(x.token === selected),
      dataset: {
        token: String(x.token), layer: String(x.overall.layer), head: String(x.overall.head), argmax: String(x.overall.argmax),
        max: String(x.overall.max), ratio: String(x.overall.ratio_to_uniform), positional: String(x.positional),
        label: headLabel(result, x.overall.layer, x.overall.head) ?? '', contentLayer: String(x.content.layer), contentHead: String(x.content.head),
        contentLabel: headLabel(result, x.content.layer, x.content.head) ?? '',
      },
    },
    h('th', { scope: 'row', class: 'text' }, h('a', { href: `#${new URLSearchParams({ s: result.text, w: String(x.token) })}`, text: x.word })),
    h('td.text', {}, `${headShort(x.overall.layer, x.overall.head)} `, labelChip(headLabel(result, x.overall.layer, x.overall.head))),
    h('td.text.said', { text: saying(result, x.word, x.overall) }),
    h('td', { text: fmt(x.overall.ratio_to_uniform, 2) }),
    h('td', { text: x.relation || 'another word' }),
    h('td.text', {}, `${headShort(x.content.layer, x.content.head)} `, labelChip(headLabel(result, x.content.layer, x.content.head))),
    h('td.text.said', { text: saying(result, x.word, x.content) }),
    h('td', { text: fmt(x.content.ratio_to_uniform, 2) }))))));
}

// The winners over one set's profile: each head that is the most confident for some word, with
// its share of word rows pointing at the next and the previous token over the whole set.
function winnersOf(profile, wins) {
  return wins.map((n, k) => ({ k, n })).filter((x) => x.n > 0).sort((a, b) => b.n - a.n).map(({ k, n }) => {
    const x = profile.heads[k];
    return { layer: x.layer - 1, head: x.head - 1, label: x.label, wins: n, next: x.shares.word_next.estimate.value, previous: x.shares.word_previous.estimate.value };
  });
}

async function drawSet() {
  const { set } = await loadSetStatistics();
  const p = set.profile;
  const q = set.heldout.profile;
  const c = p.confident;
  const d = q.confident;
  const level = p.bootstrap.level;
  const winners = winnersOf(p, c.wins);
  // A winner "does the same thing for every word" when its label is positional and it points at
  // that neighbour for at least 90% of the word rows that have one.
  const steady = winners.filter((w) => Math.max(w.next, w.previous) >= 0.9);
  const steadyWins = steady.reduce((a, w) => a + w.wins, 0);
  const holds = c.positional_share.low > 0.5 && d.positional_share.low > 0.5;
  const claim = holds ? 'The most confident head is a positional one' : 'The most confident head is not always a positional one';
  const vwWinners = winnersOf(p, c.value_weighted_wins);
  const contentHeads = c.content_wins.filter((n) => n > 0).length;
  const relations = Object.entries(c.relations).filter(([, n]) => n > 0).map(([name, n]) => `${name} for ${thousands(n)}`).join(', ');
  const pct = (v) => percent(v);
  fillFacts(document, {
    titleClaim: claim,
    titleCounts: `for ${pct(c.positional_share.value)} of ${thousands(c.words)} words in ${p.sentences} sentences, and ${pct(d.positional_share.value)} of ${thousands(d.words)} held out`,
    words: thousands(c.words),
    sentences: String(p.sentences),
    heldoutSentences: String(q.sentences),
    heldoutWords: thousands(d.words),
    level: percent(level, 0),
    positional: thousands(c.positional),
    positionalShare: pct(c.positional_share.value),
    positionalInterval: `${percent(level, 0)} interval ${pct(c.positional_share.low)} to ${pct(c.positional_share.high)}`,
    heldoutPositional: `${thousands(d.positional)} of ${thousands(d.words)}, ${withInterval(d.positional_share, pct, level)}`,
    neighbourWords: `${thousands(c.neighbour_word)} of ${thousands(c.words)} words, ${withInterval(c.neighbour_word_share, pct, level)}; held out ${withInterval(d.neighbour_word_share, pct, level)}`,
    winnerCount: countWord(winners.length, true),
    winnerList: winners.map((w) => `${headShort(w.layer, w.head)} (${thousands(w.wins)} words)`).join(', '),
    steady: steady.length
      ? `${steady.map((w) => headShort(w.layer, w.head)).join(' and ')} ${steady.length === 1 ? 'does' : 'do'} the same thing for nearly every word: ${steady.length === 1 ? 'it points' : 'each points'} at ${steady.length === 1 ? 'its' : 'its own'} neighbour for at least 90% of the word rows that have one, and together they hold ${thousands(steadyWins)} of the ${thousands(c.words)} wins`
      : 'No winner points at the same neighbour for 90% of the word rows',
    steadyOthers: (() => {
      const others = winners.filter((w) => !steady.includes(w));
      return others.length
        ? `The other ${others.length === 1 ? 'winner' : `${countWord(others.length, true)} winners`} (${others.map((w) => `${headShort(w.layer, w.head)}, ${w.label}, ${thousands(w.wins)} ${w.wins === 1 ? 'word' : 'words'}`).join('; ')}) ${others.length === 1 ? 'wins' : 'win'} for a few words only, where ${others.length === 1 ? 'its' : 'their'} row happens to be sharpest.`
        : '';
    })(),
    relations,
    contentTier1: `${thousands(c.content_rows)} of ${thousands(c.words)}`,
    contentHeads: countWord(contentHeads, true),
    overallRatio: fmt(c.mean_ratio, 2),
    contentRatio: fmt(c.mean_content_ratio, 2),
    vwPositional: `${thousands(c.value_weighted_positional)} of ${thousands(c.words)}`,
    vwShare: `${withInterval(c.value_weighted_share, pct, level)}; held out ${withInterval(d.value_weighted_share, pct, level)}`,
    vwWinners: vwWinners.map((w) => `${headShort(w.layer, w.head)} (${thousands(w.wins)})`).join(', '),
    vwVerdict: c.value_weighted_share.low > 0.5 && d.value_weighted_share.low > 0.5
      ? 'So weighting by the values leaves the trap where it was.'
      : 'So weighting by the values moves many words away from the positional heads.',
  });
  document.title = claim;
  winnersSlot.replaceChildren(scrollBox('div.scroll', 'The heads most confident for some word', h('table.data', { dataset: { scope: 'winners' } },
    h('caption', { text: `The heads that are most confident for some word of the ${p.sentences} sentences, and what they do for every word of the set` }),
    h('thead', {}, h('tr', {}, ['Head', 'Label over the set', 'Most confident for', 'Says the next token', 'Says the previous token']
      .map((t, k) => h('th', { scope: 'col', class: k < 2 ? 'text' : undefined, text: t })))),
    h('tbody', {}, winners.map((w) => h('tr', { dataset: { layer: String(w.layer), head: String(w.head), wins: String(w.wins), next: String(w.next), previous: String(w.previous) } },
      h('th', { scope: 'row', class: 'text', text: headShort(w.layer, w.head) }),
      h('td.text', {}, labelChip(w.label)),
      h('td', { text: `${thousands(w.wins)} words` }),
      h('td', { text: percent(w.next) }),
      h('td', { text: percent(w.previous) })))))),
  h('p.note', { text: `Label: the engine\u2019s rule over the whole set (the heads post explains it). The two shares are over the set\u2019s word rows, each counted only where the word has a next (previous) token.` }));
  Object.assign(winnersSlot.dataset, { ready: 'true', positional: String(c.positional), words: String(c.words) });
  document.getElementById('value-weighted').dataset.ready = 'true';
  document.getElementById('value-weighted').dataset.positional = String(c.value_weighted_positional);
}

async function main() {
  const setDrawn = drawSet().catch((error) => {
    winnersSlot.replaceChildren(h('p.error-line', { role: 'status', text: error.message }));
  });
  const { loop } = await loadEngine(status);
  loop.onRestart = () => drawYours(loop);
  await drawYours(loop);
  addEventListener('hashchange', () => drawYours(loop));
  await setDrawn;
}

async function drawYours(loop) {
  const state = readHash(HASH);
  const mine = await analyzeReadersSentence({
    loop, hash: HASH, slot: yoursSlot, redraw: () => drawYours(loop), fallback: PRESETS[0],
  });
  if (!mine) return;
  const { sentence, form, error, result } = mine;
  const rows = confidentHeads(result);
  const selected = rows.find((x) => x.token === state.w) ?? rows.find((x) => x.word === 'it') ?? rows[0];
  const positional = rows.filter((x) => x.positional).length;
  const children = [form, error,
    h('p', {}, 'In this sentence the most confident head points at a neighbour for ',
      h('b', { dataset: { count: 'positional' }, text: `${positional} of ${rows.length}` }), ' words.')];
  if (selected) {
    const s = rowStat(result, selected.overall.layer, selected.overall.head, selected.token);
    children.push(h('p', {}, `For \u201c${selected.word}\u201d the most confident head is ${headShort(selected.overall.layer, selected.overall.head)} `,
      labelChip(headLabel(result, selected.overall.layer, selected.overall.head)),
      `: ${saying(result, selected.word, selected.overall)} (${selected.relation || 'another word'}), ratio to uniform ${fmt(s.ratio_to_uniform, 2)}. `
      + `The content head is ${headShort(selected.content.layer, selected.content.head)} `, labelChip(headLabel(result, selected.content.layer, selected.content.head)),
      `: ${saying(result, selected.word, selected.content)}, ratio ${fmt(selected.content.ratio_to_uniform, 2)}.`));
  }
  children.push(wordTable(result, rows, selected?.token));
  if (selected) {
    const figure = document.createElement('attention-compare');
    figure.setAttribute('sentence', sentence);
    figure.setAttribute('word', String(selected.token));
    children.push(h('figure.wide', {}, figure, h('figcaption', { text: `\u201c${selected.word}\u201d read three ways (the article\u2019s Figure 4): the sharpest content head, the broadest head, and rollout.` })));
  }
  replaceKeepingFocus(yoursSlot, ...children);
  yoursSlot.dataset.ready = 'true';
  yoursSlot.dataset.sentence = sentence;
}

main().catch(() => {});
