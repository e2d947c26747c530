// "The most confident head is a positional one": for every word of every sentence in the
// series' set, the head with the highest ratio to uniform for that word's row (the "most
// confident" head), what it said, and whether its largest weight is on the word's neighbour;
// then, for the heads that win, how often they point at the neighbour for every word of the set;
// then the alternative the article uses (SELECTION_RULE: the sharpest content head) and what it
// changes. All of it computed live from the model in this page.
// First of all imports, so that it runs before the figures' modules are evaluated.
import '../start-engine.js';
import '../runtime/standalone.js';
import '../widgets/attention-compare.js';
import { SENTENCE_SET } from './sentences.js';
import {
  analyzeAll, countWord, fillFacts, fmt, h, headLabel, headShort, labelChip, loadEngine, percent, readHash,
  share, analyzeReadersSentence, replaceKeepingFocus, scrollBox, summedCounts,
} from './common.js';
import { attentionRow, ROLE, rowStat } from '../engine/result.js';
import { rowRelation, SELECTION_RULE, sharpestAndBroadest } from '../widgets/data.js';
import { thousands } from '../widgets/format.js';

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

// The same choice with each weight read through the size of what it mixes in (Kobayashi et
// al. 2020): a_ij x ||W_O^h v_j||, renormalised per row; for every word, the head whose weighted
// row has the highest ratio to uniform, and whether its largest share is on a neighbour.
export function valueWeightedConfident(result, norms) {
  const out = [];
  for (let token = 0; token < result.n; ++token) {
    if (result.roles[token] !== ROLE.ordinary) continue;
    let best = null;
    for (let layer = 0; layer < result.layers; ++layer) {
      for (let head = 0; head < result.heads; ++head) {
        const row = attentionRow(result, layer, head, token);
        const offset = (layer * result.heads + head) * result.n;
        let total = 0;
        let max = -1;
        let argmax = 0;
        for (let j = 0; j < result.n; ++j) {
          const w = row[j] * norms.value_norms[offset + j];
          total += w;
          if (w > max) {
            max = w;
            argmax = j;
          }
        }
        const ratio = total > 0 ? (max / total) * result.n : 0;
        if (!best || ratio > best.ratio) best = { layer, head, argmax, share: total > 0 ? max / total : 0, ratio };
      }
    }
    out.push({ token, ...best, positional: Math.abs(best.argmax - token) === 1 });
  }
  return out;
}

// Whether position j holds another word than position i: an ordinary token of a different word
// (not punctuation, not [CLS] or [SEP], not a piece of the same word).
const otherWord = (result, i, j) => result.roles[j] === ROLE.ordinary && result.tokens[j].word !== result.tokens[i].word;

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

async function main() {
  const { engine, loop } = await loadEngine(status);
  const results = await analyzeAll(engine, SENTENCE_SET);
  const perSentence = results.map(confidentHeads);
  const all = perSentence.flat();
  const positional = all.filter((x) => x.positional);
  // Which heads win, and how often each winner points at the neighbour for every word of the set.
  const wins = new Map();
  for (const x of all) {
    const key = `${x.overall.layer},${x.overall.head}`;
    wins.set(key, (wins.get(key) ?? 0) + 1);
  }
  const counts = summedCounts(results);
  const winners = [...wins.entries()].sort((a, b) => b[1] - a[1]).map(([key, n]) => {
    const [layer, head] = key.split(',').map(Number);
    const c = counts[layer * results[0].heads + head];
    return { layer, head, wins: n, next: share(c.word_next, c.word_rows_with_next), previous: share(c.word_previous, c.word_rows_with_previous), words: c.word_rows };
  });
  const contentTier1 = all.filter((x) => x.content.tier === 1).length;
  const contentHeads = new Set(all.map((x) => `${x.content.layer},${x.content.head}`)).size;
  const mean = (list, f) => list.reduce((a, x) => a + f(x), 0) / list.length;
  const overallTargets = new Set(all.map((x) => x.relation || 'another word'));
  const positionalShare = share(positional.length, all.length);
  fillFacts(document, {
    titleClaim: positionalShare >= 0.5 ? 'The most confident head is a positional one' : 'The most confident head is not always a positional one',
    titleCounts: `for ${thousands(positional.length)} of ${thousands(all.length)} words in ${SENTENCE_SET.length} sentences`,
    words: thousands(all.length),
    sentences: SENTENCE_SET.length,
    positional: thousands(positional.length),
    positionalShare: percent(positionalShare),
    neighbourWords: (() => {
      const words = perSentence.flatMap((rows, k) => rows.filter((x) => x.positional && otherWord(results[k], x.token, x.overall.argmax)));
      return `${thousands(words.length)} of ${thousands(all.length)} words (${percent(share(words.length, all.length))})`;
    })(),
    winnerCount: countWord(winners.length, true),
    winnerList: winners.map((w) => `${headShort(w.layer, w.head)} (${w.wins} words)`).join(', '),
    relations: [...overallTargets].join(', '),
    contentTier1: `${contentTier1} of ${all.length}`,
    contentHeads: countWord(contentHeads, true),
    overallRatio: fmt(mean(all, (x) => x.overall.ratio_to_uniform), 2),
    contentRatio: fmt(mean(all, (x) => x.content.ratio_to_uniform), 2),
    rule: SELECTION_RULE,
  });
  // Value-weighted: the core's value norms (analyzeAblated with valueNorms, no head removed);
  // the paragraph keeps its placeholder wording if this engine build has none.
  try {
    const weighted = [];
    for (const r of results) {
      const norms = await engine.analyzeAblated(r.text, { valueNorms: true });
      if (!norms || norms.n !== r.n) throw new Error('no value norms');
      weighted.push(...valueWeightedConfident(r, norms));
    }
    const vwPositional = weighted.filter((x) => x.positional).length;
    const vwWins = new Map();
    for (const x of weighted) vwWins.set(headShort(x.layer, x.head), (vwWins.get(headShort(x.layer, x.head)) ?? 0) + 1);
    fillFacts(document, {
      vwPositional: `${vwPositional} of ${weighted.length}`,
      vwShare: percent(share(vwPositional, weighted.length)),
      vwWinners: [...vwWins.entries()].sort((a, b) => b[1] - a[1]).map(([tag, n]) => `${tag} (${n})`).join(', '),
      vwVerdict: share(vwPositional, weighted.length) >= 0.5 ? 'So weighting by the values leaves the trap where it was.' : 'So weighting by the values moves most words away from the positional heads.',
    });
    document.getElementById('value-weighted').dataset.ready = 'true';
    document.getElementById('value-weighted').dataset.positional = String(vwPositional);
  } catch {
    // The paragraph says what it would compute.
  }
  document.title = `${positionalShare >= 0.5 ? 'The most confident head is a positional one' : 'The most confident head is not always a positional one'}`;
  winnersSlot.replaceChildren(scrollBox('div.scroll', 'The heads most confident for some word', h('table.data', { dataset: { scope: 'winners' } },
    h('caption', { text: `The heads that are most confident for some word, and what they do for every word of the ${SENTENCE_SET.length} sentences` }),
    h('thead', {}, h('tr', {}, ['Head', 'Label', 'Most confident for', 'Says the next token', 'Says the previous token']
      .map((t, k) => h('th', { scope: 'col', class: k < 2 ? 'text' : undefined, text: t })))),
    h('tbody', {}, winners.map((w) => h('tr', { dataset: { layer: String(w.layer), head: String(w.head), wins: String(w.wins), next: String(w.next), previous: String(w.previous) } },
      h('th', { scope: 'row', class: 'text', text: headShort(w.layer, w.head) }),
      h('td.text', {}, labelChip(headLabel(results[0], w.layer, w.head))),
      h('td', { text: `${w.wins} words` }),
      h('td', { text: percent(w.next) }),
      h('td', { text: percent(w.previous) })))))),
  h('p.note', { text: `Label: the engine\u2019s label for the head over the first sentence. The two shares are over the set\u2019s ${winners[0]?.words ?? 0} word rows, each counted only where the word has a next (previous) token in the sentence.` }));
  winnersSlot.dataset.ready = 'true';
  loop.onRestart = () => drawYours(loop);
  await drawYours(loop);
  addEventListener('hashchange', () => drawYours(loop));
}

async function drawYours(loop) {
  const state = readHash(HASH);
  const mine = await analyzeReadersSentence({
    loop, hash: HASH, slot: yoursSlot, redraw: () => drawYours(loop), fallback: SENTENCE_SET[0],
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
