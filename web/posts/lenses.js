// "Which picture of attention agrees with the model?": five lenses of an attention row (core/
// lenses.h) graded against occlusion over the series' sentence set and the held-out set, computed
// when the site was built by the core (attention-cli lens-set: every whole word as the masked
// target, each lens's Spearman rho against occluding every other token, the share of ordinary
// tokens' rows on [CLS], [SEP] and punctuation under three readings, the context-mixing ratio,
// all with cluster-bootstrap intervals over sentences and paired differences between lenses),
// shown here with the conclusion the numbers support; and the shares and mixing ratios of the
// reader's own sentence, computed live from the engine's lenses.
// First of all imports, so that it runs before the figures' modules are evaluated.
import '../start-engine.js';
import {
  countWord, fillFacts, fmt, h, loadEngine, loadSetStatistics, pageFidelity, percent, readHash, replaceKeepingFocus, scrollBox, sentenceForm, withInterval, writeHash,
} from './common.js';
import { DEFAULT_MANIFEST_URL } from '../engine/engine.js';
import { FAITHFULNESS_LENSES } from '../engine/lenses.js';
import { attentionMatrix, ROLE } from '../engine/result.js';
import { PRESETS } from '../content.js';
import { thousands } from '../widgets/format.js';

const status = document.getElementById('status');
const faithfulnessSlot = document.getElementById('faithfulness');
const sharesSlot = document.getElementById('shares');
const yoursSlot = document.getElementById('yours');
const HASH = { s: 'text' };

// The set statistics' names (attention-cli lens-set): the five lenses in the core's order, then
// the baseline that knows only position.
export const POSITION_ONLY = 'distance';
export const WEIGHT = 'attention_last_mean';
const LENS_NAMES = Object.fromEntries([...FAITHFULNESS_LENSES, [POSITION_ONLY, 'position only (nearness to the word)']]);
const lensName = (key) => LENS_NAMES[key] ?? key;
// The names the prose uses, as the page's list defines the lenses.
const SHORT_NAMES = Object.freeze({
  attention_last_mean: 'the weight', rollout: 'rollout', flow: 'flow', alti_rollout: 'the whole block (ALTI)',
  weighted_layer_last: 'weight \u00d7 size', [POSITION_ONLY]: 'position only',
});
const shortName = (key) => SHORT_NAMES[key] ?? lensName(key);
// The tables' row labels (the list at the top of the page defines each).
const LABELS = Object.freeze({
  attention_last_mean: 'Weight', rollout: 'Rollout', flow: 'Flow', alti_rollout: 'Whole block (ALTI)',
  weighted_layer_last: 'Weight \u00d7 size', [POSITION_ONLY]: 'Position only',
});
const label = (key) => LABELS[key] ?? capital(lensName(key));
const capital = (text) => `${text[0].toUpperCase()}${text.slice(1)}`;
export const READINGS = Object.freeze([['attention', 'weight'], ['weighted_layer', 'weight \u00d7 size'], ['alti', 'whole block (ALTI)']]);
export const CATEGORIES = Object.freeze([['sep', '[SEP]'], ['cls', '[CLS]'], ['punctuation', 'punctuation'], ['self', 'the token itself']]);
// The [SEP] share "collapses" under a weighted reading when that reading's share is at most this
// fraction of the weights' share, with the interval of their paired difference below 0.
export const COLLAPSE = 0.5;

const rho = (v) => fmt(v, 3);
const signed = (v) => `${v >= 0 ? '+' : '\u2212'}${fmt(Math.abs(v), 3)}`;
const above = (e) => e.low > 0;
const below = (e) => e.high < 0;
const bracket = (e, f) => `${f(e.value)} [${f(e.low)}, ${f(e.high)}]`;
const layerName = (l) => `layer ${l + 1}`;

// Lens a minus lens b on one set's summary, {value, low, high}, from the pair the core measured
// (either way round).
export function difference(summary, a, b) {
  const pair = summary.differences.find((d) => (d.a === a && d.b === b) || (d.a === b && d.b === a));
  if (!pair) return null;
  const m = pair.mean;
  return pair.a === a ? m : { value: -m.value, low: -m.high, high: -m.low };
}

// The lenses (not the baseline) by mean rho, best first.
const ranked = (summary) => Object.keys(summary.faithfulness).filter((k) => k !== POSITION_ONLY)
  .sort((x, y) => summary.faithfulness[y].mean_rho.value - summary.faithfulness[x].mean_rho.value);

// For each layer, whether the [SEP] share collapses under `reading` on this summary.
export function sepCollapses(summary, reading) {
  return summary.shares.attention.sep.map((raw, l) => summary.shares[reading].sep[l].value <= COLLAPSE * raw.value
    && below(summary.share_minus_attention[reading].sep[l]));
}

// What the numbers support, from both sets' summaries (`a` the set, `b` the held-out sentences).
export function conclusion(a, b) {
  const both = (f) => f(a) && f(b);
  const pair = (f) => `${f(a)} on the set, ${f(b)} held out`;
  const meanOf = (key) => (s) => rho(s.faithfulness[key].mean_rho.value);
  const best = a.best;
  const parts = [];
  const sameBest = a.best === b.best;
  const others = ranked(a).filter((k) => k !== best);
  const beatsAll = sameBest && others.every((k) => both((s) => above(difference(s, best, k))));
  if (sameBest) {
    parts.push(`Of the five lenses, ${shortName(best)} agrees best with what occlusion measures, on both sets (mean \u03c1 ${pair(meanOf(best))})`
      + (beatsAll ? ', ahead of every other lens with the whole interval of each paired difference above 0' : ', though not ahead of every other lens on both sets by the paired differences'));
  } else {
    parts.push(`The lens that agrees best with occlusion is not the same on both sets (${shortName(a.best)} on the set, ${shortName(b.best)} held out): no evidence that one of them is better`);
  }
  const overChance = ranked(a).filter((k) => both((s) => above(s.faithfulness[k].mean_rho)));
  parts.push(overChance.length === 5
    ? 'every lens agrees better than chance (a mean \u03c1 of 0)'
    : `${overChance.length ? overChance.map(shortName).join(', ') : 'no lens'} ${overChance.length === 1 ? 'agrees' : 'agree'} better than chance on both sets`);
  const weightVsPosition = (s) => difference(s, WEIGHT, POSITION_ONLY);
  parts.push(both((s) => below(weightVsPosition(s)))
    ? `the raw weight does worse than ranking the tokens by position alone (${pair((s) => signed(weightVsPosition(s).value))})`
    : both((s) => above(weightVsPosition(s)))
      ? `the raw weight does better than ranking the tokens by position alone (${pair((s) => signed(weightVsPosition(s).value))})`
      : `the raw weight is not shown to differ from ranking the tokens by position alone (${pair((s) => signed(weightVsPosition(s).value))})`);
  const beatPosition = ranked(a).filter((k) => both((s) => above(difference(s, k, POSITION_ONLY))));
  parts.push(beatPosition.length
    ? `only ${beatPosition.map(shortName).join(' and ')} ${beatPosition.length === 1 ? 'beats' : 'beat'} position on both sets, by ${beatPosition.map((k) => pair((s) => signed(difference(s, k, POSITION_ONLY).value))).join('; ')}`
    : 'no lens beats position alone on both sets');
  const collapseSet = sepCollapses(a, 'weighted_layer');
  const collapseHeld = sepCollapses(b, 'weighted_layer');
  const collapsed = collapseSet.map((c, l) => c && collapseHeld[l]);
  const sep = collapsed.every(Boolean)
    ? 'The weight on [SEP] collapses once each weight is multiplied by the size of its vector, in every layer and on both sets, as Kobayashi et al. report for bert-base.'
    : collapsed.some(Boolean)
      ? `The weight on [SEP] collapses once weighted by vector size in ${collapsed.map((c, l) => (c ? layerName(l) : null)).filter(Boolean).join(' and ')} on both sets, not in the others.`
      : 'The weight on [SEP] does not collapse once weighted by vector size, by this page\u2019s bar, in any layer: in this model [SEP] never held much of a word\u2019s row to begin with.';
  return `${capital(parts[0])}; ${parts.slice(1).join('; ')}. Even the best mean \u03c1, ${pair(meanOf(best))}, is far from 1: each picture ranks the tokens only loosely as hiding them does, so none of them should be read as what the model used. ${sep}`;
}

// The lenses' mean rho on both sets, with the undefined counts, and the paired differences from
// the raw weight and from position only.
function faithfulnessTables(a, b, level) {
  const keys = [...ranked(a), POSITION_ONLY];
  const caption = `Mean \u03c1 with occlusion over every target, best first on the set (${percent(level, 0)} intervals in brackets)`;
  const means = scrollBox('div.scroll', caption, h('table.data', { dataset: { scope: 'faithfulness' } },
    h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, ['Lens', `Set (${thousands(a.targets)} targets)`, `Held out (${thousands(b.targets)})`, 'Best in resamples (set)', '\u03c1 undefined (set, held out)']
      .map((t, k) => h('th', { scope: 'col', class: k === 0 ? 'text' : undefined, text: t })))),
    h('tbody', {}, keys.map((k) => h('tr', { dataset: { lens: k, rho: String(a.faithfulness[k].mean_rho.value), heldout: String(b.faithfulness[k].mean_rho.value) } },
      h('th', { scope: 'row', class: 'text', text: label(k) }),
      h('td', { text: bracket(a.faithfulness[k].mean_rho, rho) }),
      h('td', { text: bracket(b.faithfulness[k].mean_rho, rho) }),
      h('td', { text: k === POSITION_ONLY ? '\u2014' : percent(a.faithfulness[k].best_share, 0) }),
      h('td', { text: `${thousands(a.faithfulness[k].undefined)}, ${thousands(b.faithfulness[k].undefined)}` }))))));
  const caption2 = `Paired differences in \u03c1, target by target: each lens minus the raw weight and minus position only (${percent(level, 0)} intervals)`;
  const cell = (s, k, other) => (k === other ? '\u2014' : bracket(difference(s, k, other), signed));
  const differences = scrollBox('div.scroll', caption2, h('table.data', { dataset: { scope: 'differences' } },
    h('caption', { text: caption2 }),
    h('thead', {}, h('tr', {}, ['Lens', '\u2212 weight, set', '\u2212 weight, held out', '\u2212 position only, set', '\u2212 position only, held out']
      .map((t, k) => h('th', { scope: 'col', class: k === 0 ? 'text' : undefined, text: t })))),
    h('tbody', {}, keys.map((k) => h('tr', { dataset: { lens: k } },
      h('th', { scope: 'row', class: 'text', text: label(k) }),
      h('td', { text: cell(a, k, WEIGHT) }), h('td', { text: cell(b, k, WEIGHT) }),
      h('td', { text: cell(a, k, POSITION_ONLY) }), h('td', { text: cell(b, k, POSITION_ONLY) }))))));
  return [means, differences];
}

// Per layer, the shares of ordinary tokens' rows under the three readings and the mixing ratio.
// value(category, reading, layer) and mixing(layer) give {value, low?, high?}.
function sharesTable({ layers, caption, scope, value, mixing }) {
  const show = (e) => (e.low === undefined ? percent(e.value) : h('span', {}, percent(e.value), h('small.interval', { text: ` ${percent(e.low)}\u2013${percent(e.high)}` })));
  const columns = Array.from({ length: layers }, (_, l) => capital(layerName(l)));
  const rows = [];
  for (const [category, name] of CATEGORIES) {
    for (const [reading, readingName] of READINGS) {
      rows.push(h('tr', { dataset: { category, reading } },
        h('th', { scope: 'row', class: 'text', text: `On ${name}, ${readingName}` }),
        ...columns.map((_, l) => {
          const e = value(category, reading, l);
          return h('td', { dataset: { value: String(e.value) } }, show(e));
        })));
    }
  }
  rows.push(h('tr', { dataset: { category: 'mixing' } },
    h('th', { scope: 'row', class: 'text', text: 'Context-mixing ratio' }),
    ...columns.map((_, l) => h('td', { dataset: { value: String(mixing(l).value) } }, show(mixing(l))))));
  return scrollBox('div.scroll', caption, h('table.data.shares', { dataset: { scope } },
    h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, [h('th', { scope: 'col', class: 'text', text: 'Share of an ordinary token\u2019s row' }), ...columns.map((t) => h('th', { scope: 'col', text: t }))])),
    h('tbody', {}, rows)));
}

const setSharesTable = (s, caption, scope) => sharesTable({
  layers: s.mixing_ratio.length, caption, scope,
  value: (category, reading, l) => s.shares[reading][category][l],
  mixing: (l) => s.mixing_ratio[l],
});

// The [SEP] prose: how large the share is under the weights and what weighting does to it.
function sepVerdict(a, b) {
  const range = (s, reading, category) => {
    const values = s.shares[reading][category].map((e) => e.value);
    return `${percent(Math.min(...values))} to ${percent(Math.max(...values))}`;
  };
  const collapsed = sepCollapses(a, 'weighted_layer').map((c, l) => c && sepCollapses(b, 'weighted_layer')[l]);
  const falls = a.share_minus_attention.weighted_layer.sep.map((e, l) => below(e) && below(b.share_minus_attention.weighted_layer.sep[l]));
  const ratio = (s) => s.shares.weighted_layer.sep.map((e, l) => e.value / s.shares.attention.sep[l].value);
  const ratios = [...ratio(a), ...ratio(b)];
  const head = `In this model [SEP] takes ${range(a, 'attention', 'sep')} of an ordinary token\u2019s row by layer under the weights (held out ${range(b, 'attention', 'sep')}). `
    + `Weighted by vector size it is ${range(a, 'weighted_layer', 'sep')} (held out ${range(b, 'weighted_layer', 'sep')}): `
    + `${falls.every(Boolean) ? 'lower in every layer on both sets' : `lower on both sets in ${falls.filter(Boolean).length} of ${falls.length} layers`}, keeping ${percent(Math.min(...ratios), 0)} to ${percent(Math.max(...ratios), 0)} of the weights\u2019 share. `;
  const verdict = collapsed.every(Boolean)
    ? `By this page\u2019s bar (weighted, at most ${percent(COLLAPSE, 0)} of the weights\u2019 share, with the paired interval below 0, on both sets) it collapses in every layer, as Kobayashi et al. report for bert-base.`
    : collapsed.some(Boolean)
      ? `By this page\u2019s bar (weighted, at most ${percent(COLLAPSE, 0)} of the weights\u2019 share, with the paired interval below 0, on both sets) it collapses in ${collapsed.map((c, l) => (c ? layerName(l) : null)).filter(Boolean).join(' and ')} only.`
      : `By this page\u2019s bar (weighted, at most ${percent(COLLAPSE, 0)} of the weights\u2019 share, with the paired interval below 0, on both sets) it does not collapse in any layer: unlike the bert-base that Clark et al. and Kobayashi et al. studied, this small model never put much of a word\u2019s row on [SEP], so there was little to collapse.`;
  return head + verdict + ` Under the whole block it is ${range(a, 'alti', 'sep')} (held out ${range(b, 'alti', 'sep')}).`;
}

async function drawSet() {
  const { set, entry } = await loadSetStatistics();
  const a = set.lenses.summary;
  const b = set.heldout.lenses.summary;
  const level = set.lenses.bootstrap.level;
  const best = a.best;
  const f = a.faithfulness[best];
  const heldBest = b.faithfulness[b.best];
  const order = ranked(a);
  const undefinedCount = (s) => Math.max(...Object.values(s.faithfulness).map((x) => x.undefined));
  // The lenses against one other, grouped by what the paired differences show on both sets.
  const versus = (other) => {
    const groups = { 'higher on both sets': [], 'not shown to differ on both sets': [], 'lower on both sets': [] };
    for (const k of order.filter((x) => x !== other)) {
      const d = difference(a, k, other);
      const e = difference(b, k, other);
      const verdict = above(d) && above(e) ? 'higher on both sets' : below(d) && below(e) ? 'lower on both sets' : 'not shown to differ on both sets';
      groups[verdict].push(`${shortName(k)} (${signed(d.value)}; held out ${signed(e.value)})`);
    }
    return Object.entries(groups).filter(([, list]) => list.length).map(([verdict, list]) => `${verdict}, ${list.join(', ')}`).join('; ');
  };
  const overChance = (s) => order.filter((k) => above(s.faithfulness[k].mean_rho));
  const chanceBoth = order.filter((k) => overChance(a).includes(k) && overChance(b).includes(k));
  const mixingBelowHalf = a.mixing_ratio.every((e, l) => e.high < 0.5 && b.mixing_ratio[l].high < 0.5);
  const mixingRange = (s) => `${percent(Math.min(...s.mixing_ratio.map((e) => e.value)))} to ${percent(Math.max(...s.mixing_ratio.map((e) => e.value)))}`;
  const selfRange = (s, reading) => `${percent(Math.min(...s.shares[reading].self.map((e) => e.value)))} to ${percent(Math.max(...s.shares[reading].self.map((e) => e.value)))}`;
  const maxOf = (s, reading, category) => percent(Math.max(...s.shares[reading][category].map((e) => e.value)));
  fillFacts(document, {
    titleCounts: a.best === b.best
      ? `over ${thousands(a.targets + b.targets)} masked words in two sets of sentences, ${shortName(best)} agrees best with occlusion, and only loosely (a mean rank correlation of ${rho(f.mean_rho.value)} and ${rho(heldBest.mean_rho.value)})`
      : `over ${thousands(a.targets + b.targets)} masked words, five readings of attention graded against occlusion; no lens is best on both sets`,
    heads: countWord(set.model.heads, true),
    sentences: String(set.lenses.sentences),
    targets: `${thousands(a.targets)} targets in all`,
    setModel: `the f32 file of the model this page runs, ${set.model.name}: the default model trained for this project, not the original bert-mini`,
    heldoutSentences: String(set.heldout.lenses.sentences),
    heldoutTargets: `${thousands(b.targets)} targets`,
    level: percent(level, 0),
    resamples: thousands(set.lenses.bootstrap.resamples),
    bestNumber: `\u03c1 = ${rho(f.mean_rho.value)}`,
    bestNote: `The mean \u03c1 of ${shortName(best)}, the lens that agrees best over the ${thousands(a.targets)} targets of the set: ${percent(level, 0)} interval ${rho(f.mean_rho.low)} to ${rho(f.mean_rho.high)}, and the best lens in ${percent(f.best_share, 0)} of the resamples. On the held-out sentences the best is ${shortName(b.best)}, ${withInterval(heldBest.mean_rho, rho, level)}.`,
    chance: chanceBoth.length === order.length
      ? `Every lens agrees with the model better than chance on both sets: the whole interval of each mean \u03c1 lies above 0.`
      : `Better than chance (the whole interval above 0) on both sets: ${chanceBoth.map(shortName).join(', ') || 'no lens'}.`,
    ranking: `In order on the set: ${order.map((k) => `${shortName(k)} ${bracket(a.faithfulness[k].mean_rho, rho)}`).join(', ')}; position only, the baseline, ${bracket(a.faithfulness[POSITION_ONLY].mean_rho, rho)}.`,
    versusWeight: `Each lens minus the raw weight, target by target: ${versus(WEIGHT)}.`,
    versusPosition: `Each lens minus position only: ${versus(POSITION_ONLY)}.`,
    undefinedNote: `\u03c1 is undefined for a target with fewer than 3 tokens to hide, or where a lens or the occlusion scores are all equal: ${thousands(undefinedCount(a))} targets of the set and ${thousands(undefinedCount(b))} held out at most, per lens (the table counts each), left out of that lens\u2019s mean and of its paired differences.`,
    rows: `${thousands(a.rows)} rows of ordinary tokens per layer in the set, ${thousands(b.rows)} held out`,
    sepVerdict: sepVerdict(a, b),
    clsPunct: `[CLS] takes at most ${maxOf(a, 'attention', 'cls')} under the weights in any layer (held out ${maxOf(b, 'attention', 'cls')}), punctuation at most ${maxOf(a, 'attention', 'punctuation')} (${maxOf(b, 'attention', 'punctuation')}).`,
    selfShare: `Under the whole block the token itself takes ${selfRange(a, 'alti')} of its row by layer (held out ${selfRange(b, 'alti')}), against ${selfRange(a, 'attention')} under the weights: the residual path carries the token\u2019s own vector past attention, and only this reading counts it.`,
    mixing: a.mixing_ratio.map((e, l) => `${layerName(l)} ${withInterval(e, (v) => percent(v), level)}, held out ${percent(b.mixing_ratio[l].value)}`).join('; '),
    mixingVerdict: mixingBelowHalf
      ? `In every layer, on both sets, less than half of a word\u2019s new vector comes from the other tokens (${mixingRange(a)} by layer; ${mixingRange(b)} held out): most of it is the word\u2019s own vector on the residual path, as Kobayashi et al. (2021) found for BERT. A weight of 0.3 on another token is 0.3 of the attention, not of what the token becomes.`
      : `The ratio ranges over ${mixingRange(a)} by layer (${mixingRange(b)} held out).`,
    conclusion: conclusion(a, b),
    pageFidelity: pageFidelity(set)?.attention ?? 'the same file the set was computed with',
  });
  faithfulnessSlot.replaceChildren(...faithfulnessTables(a, b, level));
  Object.assign(faithfulnessSlot.dataset, { best, targets: String(a.targets), heldoutTargets: String(b.targets), ready: 'true' });
  sharesSlot.replaceChildren(
    setSharesTable(a, `Over the ${set.lenses.sentences} sentences of the set (${thousands(a.rows)} rows per layer; ${percent(level, 0)} intervals in small type)`, 'set'),
    setSharesTable(b, `Over the ${set.heldout.lenses.sentences} held-out sentences (${thousands(b.rows)} rows per layer)`, 'heldout'));
  sharesSlot.dataset.ready = 'true';
  if (entry.lens_words) document.getElementById('targets-link').href = new URL(entry.lens_words, DEFAULT_MANIFEST_URL).href;
}

// The shares of one sentence's ordinary-token rows and its mixing ratios, from the analysis
// (the weights, head-averaged) and the engine's lenses (weighted_layer, alti, mixing_ratio), by
// the definitions the core's set statistics use (core/sentence_set.h, SentenceLensSums).
export function sentenceShares(result, lenses) {
  const { n, layers, heads } = result;
  const roles = Array.from(result.roles);
  const ordinary = roles.map((r, i) => (r === ROLE.ordinary ? i : -1)).filter((i) => i >= 0);
  const out = { rows: ordinary.length, shares: {}, mixing: [] };
  for (const [reading] of READINGS) out.shares[reading] = Object.fromEntries(CATEGORIES.map(([c]) => [c, new Array(layers).fill(0)]));
  for (let l = 0; l < layers; ++l) {
    const mean = new Float64Array(n * n);
    for (let hd = 0; hd < heads; ++hd) {
      const m = attentionMatrix(result, l, hd);
      for (let k = 0; k < n * n; ++k) mean[k] += m[k] / heads;
    }
    let mixing = 0;
    for (const i of ordinary) {
      mixing += lenses.mixing_ratio[l * n + i];
      for (const [reading] of READINGS) {
        const row = reading === 'attention' ? mean.subarray(i * n, (i + 1) * n) : lenses[reading].subarray((l * n + i) * n, (l * n + i + 1) * n);
        const total = row.reduce((s, v) => s + v, 0);
        if (!(total > 0)) continue;
        const target = out.shares[reading];
        for (let j = 0; j < n; ++j) {
          const share = row[j] / total;
          if (roles[j] === ROLE.cls) target.cls[l] += share;
          if (roles[j] === ROLE.sep) target.sep[l] += share;
          if (roles[j] === ROLE.punctuation) target.punctuation[l] += share;
          if (j === i) target.self[l] += share;
        }
      }
    }
    out.mixing.push(mixing);
  }
  const rows = Math.max(out.rows, 1);
  for (const [reading] of READINGS) for (const [c] of CATEGORIES) out.shares[reading][c] = out.shares[reading][c].map((v) => v / rows);
  out.mixing = out.mixing.map((v) => v / rows);
  return out;
}

async function main() {
  const setDrawn = drawSet().catch((error) => {
    faithfulnessSlot.replaceChildren(h('p.error-line', { role: 'status', text: error.message }));
    sharesSlot.replaceChildren();
  });
  const { loop } = await loadEngine(status);
  await setDrawn;
  loop.onRestart = () => drawYours(loop);
  await drawYours(loop);
  addEventListener('hashchange', () => drawYours(loop));
}

async function drawYours(loop) {
  const sentence = readHash(HASH).s ?? PRESETS[0];
  const { form, error } = sentenceForm({
    value: sentence,
    onSubmit: (text) => {
      writeHash({ s: text }, { push: true });
      drawYours(loop);
    },
  });
  const view = await loop.view(true, { sentence, selection: { token: -1, layer: -1, head: -1 }, wordText: '' });
  if (!view) return;
  // Every row's lenses (the figures' views carry only the selected token's).
  let lenses = null;
  let failed = view.inputError ?? view.error?.message ?? null;
  if (view.result && !failed) {
    // While a trapped engine is replaced there is none; loop.onRestart draws again.
    const engine = loop.session.engine;
    if (!engine) return;
    try {
      lenses = await engine.lenses(view.result.text);
    } catch (e) {
      failed = e.message;
    }
  }
  if (!loop.isNewest(view)) return;
  if (!view.result || failed || !lenses) {
    replaceKeepingFocus(yoursSlot, form, h('p.error-line', { role: 'status', text: failed ?? 'The lenses did not come back.' }));
    return;
  }
  const mine = sentenceShares(view.result, lenses);
  replaceKeepingFocus(yoursSlot, form, error, sharesTable({
    layers: view.result.layers,
    caption: `Your sentence (${mine.rows} ${mine.rows === 1 ? 'row' : 'rows'} of ordinary tokens per layer), computed in your browser`,
    scope: 'yours',
    value: (category, reading, l) => ({ value: mine.shares[reading][category][l] }),
    mixing: (l) => ({ value: mine.mixing[l] }),
  }));
  yoursSlot.dataset.sentence = sentence;
  yoursSlot.dataset.ready = 'true';
}

main().catch(() => {});
