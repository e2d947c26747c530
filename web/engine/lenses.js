// The lenses a row figure can show, in one place: their keys (the URL's `lens`), names, plain
// definitions, what they depend on, and the row each gives. The numbers come from the engine's
// `lenses` operation (wasm/core/lenses.h computes them; docs/ARCHITECTURE.md, "Lenses", gives
// the formulas and the papers); attention weights are in every analysis, and rollout rows are made from them (result.js, rolloutRow).
import { attentionRow, rolloutRow } from './result.js';

// scope: what picks the row besides the token: one head ('head'), a layer with all its heads
// and the residual ('layer'), or the whole model ('model'). needs: the lenses' array the row
// comes from (null: the analysis has it). normalized: the shown row is the lens's row over its
// sum (the raw numbers are in another unit).
export const LENSES = Object.freeze({
  weight: Object.freeze({
    label: 'Weight', name: 'attention weight', scope: 'head', needs: null,
    definition: 'the attention row itself: how much of its mixture the token takes from each token in one head; it sums to 1.',
  }),
  weighted: Object.freeze({
    label: 'Weight \u00d7 size', name: 'weight \u00d7 size', scope: 'head', needs: 'weighted', normalized: true,
    definition: 'each weight times the length of the vector that token sends through the head (its value vector after the output matrix), as shares of the row\u2019s total: a large weight on a short vector moves little (Kobayashi et al., 2020).',
  }),
  alti: Object.freeze({
    label: 'Whole block', name: 'whole block (ALTI)', scope: 'layer', needs: 'alti',
    definition: 'all heads of the layer, the token\u2019s own vector carried by the residual, and the LayerNorm after them: how close each token\u2019s part lies to the layer\u2019s output for this token (nearer parts get larger shares, a part pointing away gets 0), as shares summing to 1 (ALTI: Kobayashi et al., 2021; Ferrando et al., 2022).',
  }),
  rollout: Object.freeze({
    label: 'Rollout', name: 'rollout', scope: 'model', needs: null,
    definition: 'the weights only, compounded through the layers: each layer\u2019s head-averaged row averaged half and half with the token keeping itself, multiplied from the first layer to the last; how much each input token could reach this token if attention alone mixed them (Abnar & Zuidema, 2020).',
  }),
  flow: Object.freeze({
    label: 'Flow', name: 'flow', scope: 'model', needs: 'flow_normalized', flowRow: true,
    definition: 'the weights only, compounded another way: the same layers as pipes whose widths are those weights, and the most that can flow from each input token to this token, as shares of the row\u2019s total (Abnar & Zuidema, 2020).',
  }),
});
export const LENS_KEYS = Object.freeze(Object.keys(LENSES));
export const DEFAULT_LENS = 'weight';
export const isLens = (key) => Object.hasOwn(LENSES, key);

// The lens row for the selection, or null when the lenses it needs are not here (yet).
// lenses: the engine's lenses result for the same sentence: every row (row -1), or the token's
// rows only (row = token: weighted (L, H, n), alti (L, n), mixing_ratio (L)), with its flow row.
export function lensRow(lens, result, lenses, layer, head, token) {
  const n = result.n;
  switch (lens) {
    case 'weight': return attentionRow(result, layer, head, token);
    case 'rollout': return rolloutRow(result, token);
    default: break;
  }
  const at = rowsOf(result, lenses, token);
  if (!at) return null;
  if (lens === 'weighted') return shares(lenses.weighted.subarray(at.weighted(layer, head), at.weighted(layer, head) + n));
  if (lens === 'alti') return lenses.alti.subarray(at.layer(layer), at.layer(layer) + n);
  if (lens === 'flow') return lenses.flow_row === token ? lenses.flow_normalized : null;
  return null;
}

// Where token's rows start in a lenses result of the same sentence: {weighted(l, h), layer(l),
// ratio(l)} offsets, or null when the result is another sentence's or another token's.
function rowsOf(result, lenses, token) {
  if (!lenses || lenses.n !== result.n || lenses.text !== result.text) return null;
  const n = result.n, H = lenses.heads;
  if (lenses.row === token) return { weighted: (l, h) => (l * H + h) * n, layer: (l) => l * n, ratio: (l) => l };
  if (lenses.row >= 0) return null;
  return { weighted: (l, h) => ((l * H + h) * n + token) * n, layer: (l) => (l * n + token) * n, ratio: (l) => l * n + token };
}

// The bar legend's words for a lens's row (null: the chart's own, for weights).
export const lensLegend = (lens) => (lens === DEFAULT_LENS ? null : `${LENSES[lens].label.toLowerCase()} share from 0 to 1, the track\u2019s full length`);

// The raw total a normalized lens's row was divided by (the weighted row's vector lengths), or
// null for a lens whose numbers are shown as they are.
export function lensTotal(lens, result, lenses, layer, head, token) {
  const at = lens === 'weighted' ? rowsOf(result, lenses, token) : null;
  if (!at) return null;
  let total = 0;
  const base = at.weighted(layer, head);
  for (let j = 0; j < result.n; ++j) total += lenses.weighted[base + j];
  return total;
}

// The share of token i's new vector in layer l that came from other tokens (the mixing bar), or
// null without the lenses.
export function mixingRatio(result, lenses, layer, token) {
  const at = rowsOf(result, lenses, token);
  return at ? lenses.mixing_ratio[at.ratio(layer)] : null;
}

// What the engine computes for a figure that shows one token's row through `lens`: the token's
// rows of the per-layer lenses, and its flow row under the flow lens (n max-flow problems).
export const lensRequest = (lens, token) => ({ row: token, flowRow: LENSES[lens]?.flowRow ? token : -1 });

// Which lens and which head, layer or model a row belongs to, in words ("through the whole
// block (ALTI) of layer 4 (all heads, residual, LayerNorm)").
export function lensReading(lens, layer, head) {
  const { name, scope } = LENSES[lens];
  if (scope === 'head') return `through ${name} in layer ${layer + 1}, head ${head + 1}`;
  if (scope === 'layer') return `through the ${name} of layer ${layer + 1} (all heads, residual, LayerNorm)`;
  return `through ${name}, every layer compounded`;
}

// The lens's name and definition as one sentence: "Whole block (ALTI): all heads ...".
export const lensDefinition = (lens) => `${LENSES[lens].name[0].toUpperCase()}${LENSES[lens].name.slice(1)}: ${LENSES[lens].definition}`;

// The row a figure draws for a view ({result, lenses, lensError, lens, mode, layer, head,
// token}): {lens: the lens whose row it is, asked: the view's lens, row, total (lensTotal),
// note: why the asked lens is not the one drawn}. A lens without its row yet (the example before
// the live model, a failed computation) draws the weights, and the note says so.
export function lensRowOf(view) {
  const { result, lenses, layer, head, token } = view;
  const asked = isLens(view.lens) ? view.lens : DEFAULT_LENS;
  const row = lensRow(asked, result, lenses, layer, head, token);
  if (row) return { lens: asked, asked, row, total: lensTotal(asked, result, lenses, layer, head, token), note: '' };
  const name = LENSES[asked].name;
  const note = view.lensError
    ? `The ${name} could not be computed (${view.lensError}); the attention weights are drawn instead.`
    : view.mode === 'live'
      ? `The ${name} is being computed; the attention weights are drawn meanwhile.`
      : `The ${name} is computed by the live model; until it is here (open the instrument) the attention weights are drawn.`;
  return { lens: DEFAULT_LENS, asked, row: attentionRow(result, layer, head, token), total: null, note };
}

function shares(row) {
  let total = 0;
  for (const v of row) total += v;
  const out = new Float32Array(row.length);
  if (total > 0) for (let j = 0; j < row.length; ++j) out[j] = row[j] / total;
  return out;
}

// The lenses the faithfulness score grades, with the core's names (FaithfulnessLensName), in the
// switch's order, and the words the page gives each: model-wide versions of the five, since the
// score compares one ranking of the tokens per lens.
export const FAITHFULNESS_LENSES = Object.freeze([
  ['attention_last_mean', 'weight (last layer, heads averaged)'],
  ['weighted_layer_last', 'weight \u00d7 size (last layer, heads together)'],
  ['alti_rollout', 'whole block (ALTI), through every layer'],
  ['rollout', 'rollout'],
  ['flow', 'flow'],
]);

// The two-sided 5% level of Spearman's rho under a random ranking of m tokens (the null that
// keeps the tokens and their occlusion values and shuffles the lens's order), by the normal
// approximation 1.96 / sqrt(m - 1); null below 3 tokens.
export const rhoChanceBand = (m) => (m >= 3 ? 1.96 / Math.sqrt(m - 1) : null);
