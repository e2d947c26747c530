// The layout of an analysis result, in one place: every reader of a result (the engine, the
// widgets, the article, scripts/site/make_examples.mjs and the tests) finds a row, a statistic,
// a token's role or a head's label through these functions, never by index arithmetic of its own.
// The schema (docs/ARCHITECTURE.md, "the result schema") is snake_case everywhere:
//   tokens [{id, text, start, end, word}], n, layers (L), heads (H), hidden (d), truncated,
//   full_length, attention (L*H*n*n, [l][h][i][j]), rollout (n*n, [i][j]; only in results that
//   asked for it: read a row through rolloutRow, which makes it when it is missing),
//   row_stats (L*H*n*ROW_STAT_FIELDS, [l][h][i][field]), roles (n),
//   head_profiles [{layer, head, label, previous_token, ...}] (L*H, layer-major),
//   and, only when asked for: hidden_states ((L+1)*n*d), queries and keys (L*n*d), values
//   (L*n*d, x W_V^T + b_V) and contexts (L*n*d, per head sum_j a_ij v_j: what W_O mixes); head h
//   is columns [h*d_head, (h+1)*d_head) of each.
// The constants below are the C++ enums' order (wasm/core/analysis.h); tests/js/schema.test.mjs
// checks them against the wasm module's schema().

// The fields of one row's statistics, in the order the core packs them.
// The converter a model made in the reader's browser from a Hugging Face checkpoint names in its
// provenance (web/engine/checkpoint.js writes it; describeModel in widgets/data.js reads it).
export const CHECKPOINT_CONVERTER = 'web/engine/checkpoint.js';

export const ROW_STAT = Object.freeze({ max: 0, argmax: 1, ratio_to_uniform: 2, entropy: 3, normalized_entropy: 4, sum: 5 });
export const ROW_STAT_FIELDS = Object.keys(ROW_STAT).length;

// What a token is to the analysis (roles[i]).
export const ROLE = Object.freeze({ ordinary: 0, cls: 1, sep: 2, punctuation: 3 });

// The labels a head profile can carry, in the core's order.
// The core's head labels (analysis.cc), by name: code names a label through these, never by its text.
export const HEAD_LABEL = Object.freeze({
  previous: 'previous-token', next: 'next-token', sink: '[CLS]/[SEP] sink', self: 'self', punctuation: 'punctuation', broad: 'broad', mixed: 'mixed',
});
export const HEAD_LABELS = Object.freeze(Object.values(HEAD_LABEL));

// [CLS] and [SEP]: the tokens a reader may hide.
export const isSpecial = (roles, j) => roles[j] === ROLE.cls || roles[j] === ROLE.sep;

// Where the row of token `token` in (layer, head) starts in result.attention.
function attentionOffset(result, layer, head, token) {
  return ((layer * result.heads + head) * result.n + token) * result.n;
}

// One head's whole n*n matrix for the sentence ([i][j]).
export function attentionMatrix(result, layer, head) {
  const start = attentionOffset(result, layer, head, 0);
  return result.attention.subarray(start, start + result.n * result.n);
}

// How token `token` reads the sentence in (layer, head): n weights summing to 1.
export function attentionRow(result, layer, head, token) {
  const start = attentionOffset(result, layer, head, token);
  return result.attention.subarray(start, start + result.n);
}

// The inverse of the layout: which layer, head, row and column an index of result.attention is.
export function attentionPosition(result, index) {
  const { n, heads } = result;
  return { column: index % n, row: Math.floor(index / n) % n, head: Math.floor(index / (n * n)) % heads, layer: Math.floor(index / (n * n * heads)) };
}

// Attention rollout's residual weight r, the core's kDefaultResidualWeight (wasm/core/analysis.h;
// tests/js/schema.test.mjs holds the two equal).
export const ROLLOUT_RESIDUAL_WEIGHT = 0.5;

// Row `token` of attention rollout: how much each position flowed into this one at the top, if
// attention alone mixed the tokens and the residual kept weight r. The core's definition
// (wasm/core/analysis.h, Rollout): A'_l = r I + (1 - r) A_l, A_l the mean of layer l's heads, each
// row renormalised to sum to 1, and R = A'_{L-1} ... A'_0. A result that holds the whole matrix
// (the CLI's, the site's precomputed examples) is read. The page's engine leaves it out (its three
// n x n x n products were 21 of the 141 ms an analysis of 512 tokens took, scripts/bench/
// bench_ort.mjs), and the row is e_token A'_{L-1} ... A'_0, made here from the result's attention
// on the first ask and kept: L - 1 vector-matrix products of H n^2 multiply-adds each (3.5 ms at
// n = 512 on the build machine).
const rolloutRows = new WeakMap();  // result -> Map(token -> Float32Array)

export function rolloutRow(result, token) {
  if (result.rollout) return result.rollout.subarray(token * result.n, (token + 1) * result.n);
  let rows = rolloutRows.get(result);
  if (!rows) rolloutRows.set(result, rows = new Map());
  let row = rows.get(token);
  if (!row) rows.set(token, row = rolloutRowOf(result, token));
  return row;
}

// The sum of row j of layer l's heads, in double: the core's row statistic `sum` when the
// result has row statistics, else added up here.
function headRowsSum(result, l, j) {
  const { n, heads, attention, row_stats: stats } = result;
  let sum = 0;
  for (let h = 0; h < heads; ++h) {
    if (stats) {
      sum += stats[((l * heads + h) * n + j) * ROW_STAT_FIELDS + ROW_STAT.sum];
    } else {
      const start = ((l * heads + h) * n + j) * n;
      for (let k = 0; k < n; ++k) sum += attention[start + k];
    }
  }
  return sum;
}

function rolloutRowOf(result, token) {
  const { n, layers, heads, attention } = result;
  const r = ROLLOUT_RESIDUAL_WEIGHT;
  let v = new Float64Array(n);
  v[token] = 1;
  for (let l = layers - 1; l >= 0; --l) {  // v <- v A'_l
    const next = new Float64Array(n);
    for (let j = 0; j < n; ++j) {
      if (v[j] === 0) continue;
      // Row j of A'_l is ((1 - r) A_l[j] + r e_j) / s, s that row's sum.
      const scaled = v[j] / ((1 - r) * headRowsSum(result, l, j) / heads + r);
      const w = scaled * (1 - r) / heads;
      for (let h = 0; h < heads; ++h) {
        const start = ((l * heads + h) * n + j) * n;
        for (let k = 0; k < n; ++k) next[k] += w * attention[start + k];
      }
      next[j] += scaled * r;
    }
    v = next;
  }
  return Float32Array.from(v);
}

// The core's statistics of one attention row, keyed by ROW_STAT's names.
export function rowStat(result, layer, head, token) {
  const start = ((layer * result.heads + head) * result.n + token) * ROW_STAT_FIELDS;
  const s = result.row_stats;
  const out = {};
  for (const [name, field] of Object.entries(ROW_STAT)) out[name] = s[start + field];
  return out;
}

// The d numbers of one token in a per-layer array: hidden_states (layer 0 is the embedding
// output, the input to layer 0), queries, keys, values or contexts.
export function tokenVector(array, result, layer, token) {
  const d = result.hidden;
  const start = (layer * result.n + token) * d;
  return array.subarray(start, start + d);
}

export function headProfile(result, layer, head) {
  return result.head_profiles?.[layer * result.heads + head];
}

// The head's profile label over the sentence (one of HEAD_LABELS), or undefined without profiles.
export function headLabel(result, layer, head) {
  return headProfile(result, layer, head)?.label;
}
