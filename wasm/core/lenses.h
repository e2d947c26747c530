// Lenses: what a token used, beside what it attended to. An attention weight alpha_ij is what
// token i paid to token j; these are the readings of the research since 2020 that count what
// j's vector actually moved into i, each one step further into the layer, and a perturbation
// that grades them against what the model did. One home for every formula; the CLI's `lenses`,
// the bindings and the set statistics call ComputeLenses. docs/ARCHITECTURE.md ("Lenses") gives
// the definitions with the papers and the JSON.
//
// Notation: layers l counted from 0; row i is the token being updated, column j the token it
// reads from; x the layer's input (n, d); head h owns columns [h d_head, (h+1) d_head);
// f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h, token j's value vector carried through the head's slice
// of the output projection, with the value bias and without the output bias b_O; alpha^h the
// softmax weights; y_i = x_i + sum_h sum_j alpha^h_ij f_h(x_j) + b_O, the first LayerNorm's
// input, and s_i = sqrt(biased var(y_i) + eps) its own standard deviation.
//
//  weighted[l][h][i][j]   alpha^h_ij ||f_h(x_j)||                      (Kobayashi et al. 2020)
//  weighted_layer[l][i][j] ||sum_h alpha^h_ij f_h(x_j)||, the heads together
//  mixing[l][i][j]        ||T_i(x_j)|| where T_i(x_j) = gamma_1 (u_ij - mean(u_ij)) / s_i and
//                         u_ij = sum_h alpha^h_ij f_h(x_j) + [i = j] x_i: token j's share of
//                         the first LayerNorm's output, the residual counted (Kobayashi et al.
//                         2021); sum_j T_i(x_j) + gamma_1 (b_O - mean(b_O)) / s_i + beta_1 is
//                         that output exactly.
//  mixing_ratio[l][i]     sum over j != i of mixing[l][i][j] / sum over all j: how much of
//                         token i's new vector came from other tokens.
//  alti[l][i][j]          c_ij / sum_j' c_ij', c_ij = max(0, ||z_i||_1 - ||z_i - T_i(x_j)||_1),
//                         z_i the first LayerNorm's actual output (ALTI, Ferrando et al. 2022);
//                         a row whose c are all 0 stays 0.
//  alti_rollout           alti[L-1] ... alti[0], the matrix product: row i is what each input
//                         token contributed to output i.
//  rollout                as core/analysis.h (Abnar & Zuidema 2020): M_l = r I + (1 - r) mean_h
//                         alpha, rows renormalised, M_{L-1} ... M_0.
//  flow[i][j]             attention flow (Abnar & Zuidema 2020): the maximum flow from input
//                         node (0, j) to output node (L, i) of the layered graph whose edge
//                         (l-1, j') -> (l, i') has capacity M_{l-1}[i'][j']; flow_normalized,
//                         each row over its sum. Only the rows asked for (n max-flow problems
//                         each).
//  value_zeroing[l][i][j] layer l run again from its own input with token j's value vectors
//                         (bias included) zeroed in every head; s_ij = the cosine distance of
//                         token i's original and altered layer output, clipped to [0, 2]; each
//                         row over its sum (Mohebbi et al. 2023). Only the rows asked for.
//  occlusion[j]           with a target position t: log p(w* at t) - log p(w* at t | token j
//                         replaced by [MASK]), w* the masked-LM's top entry at t on the input as
//                         given (the lowest id on ties); for every j != t that is not [CLS] or
//                         [SEP], NaN elsewhere.
//  faithfulness[k]        Spearman's rho between occlusion and row t of lens k over those j
//                         (FaithfulnessLens); ranks average over ties, values within
//                         kTieTolerance of their neighbour in sorted order tie; NaN with fewer
//                         than 3 positions or when either side is constant.
#pragma once

#include <cstdint>
#include <vector>

#include "core/analysis.h"
#include "core/status.h"

namespace attn {

// The lenses the faithfulness score grades, row t of each, in output order.
enum class FaithfulnessLens : uint8_t { kAttentionLastMean, kRollout, kFlow, kAltiRollout, kWeightedLayerLast };
constexpr int kFaithfulnessLenses = 5;
// "attention_last_mean", "rollout", "flow", "alti_rollout", "weighted_layer_last".
const char* FaithfulnessLensName(FaithfulnessLens lens);

struct LensOptions {
  bool weighted = true;  // weighted, weighted_layer
  bool mixing = true;    // mixing, mixing_ratio, alti, alti_rollout
  // The rows (token positions) of weighted_layer, mixing, mixing_ratio and alti to compute, in
  // every layer; empty: all of them. alti_rollout needs every row and is left empty unless all
  // are computed. A page that shows one token's row asks for that row: the rows are the lenses'
  // main cost (n d (H + 1) per row and layer).
  std::vector<int32_t> rows;
  // Rows (token positions) of flow and of value zeroing (every layer) to compute; AllRows(n)
  // for every row. Each is a set: order and repeats do not matter.
  std::vector<int32_t> flow_rows;
  std::vector<int32_t> value_zeroing_rows;
  // A token position for occlusion and the faithfulness score, or -1 for none. A target needs
  // the masked-LM head and brings in what the score reads: weighted, mixing and flow row t.
  int32_t target = -1;
  double residual_weight = kDefaultResidualWeight;  // rollout's and flow's r

  static std::vector<int32_t> AllRows(int32_t n);
};

// Ranks of equal values within this distance of each other are averaged.
constexpr double kTieTolerance = 1e-9;

// Every lens of one sentence, flat and row-major. An array a lens was not asked for is empty; a
// row not asked for holds NaN (JSON null).
struct Lenses {
  int32_t layers = 0, heads = 0, tokens = 0;  // L, H, n
  std::vector<float> weighted;        // (L, H, n, n)
  std::vector<float> weighted_layer;  // (L, n, n)
  std::vector<float> mixing;          // (L, n, n)
  std::vector<float> mixing_ratio;    // (L, n)
  std::vector<float> alti;            // (L, n, n)
  std::vector<float> alti_rollout;    // (n, n)
  std::vector<float> rollout;         // (n, n)
  std::vector<float> flow;            // (n, n)
  std::vector<float> flow_normalized; // (n, n)
  std::vector<float> value_zeroing;   // (L, n, n)
  int32_t target = -1;      // as asked
  int32_t target_top1 = -1; // w*
  double target_logprob = 0;  // log p(w* at t), natural log
  std::vector<double> occlusion;  // (n)
  double faithfulness[kFaithfulnessLenses] = {};
};

// The lenses of an analysis made with kOutputValues (values and contexts kept) and no head
// removed, by the model that made it. Fails, saying why, on any other analysis, a row or target
// outside the sentence, or a target without a masked-LM head or the whole word-embedding table.
Status ComputeLenses(LoadedModel& model, const SentenceAnalysis& analysis, const LensOptions& options,
                     Lenses* out);

// Token i's first-LayerNorm output in layer l taken apart (Kobayashi et al. 2021): row j of
// parts is T_i(x_j) (n, d); bias is gamma_1 (b_O - mean(b_O)) / s_i + beta_1 (d); output is z_i
// (d), and parts' rows plus bias sum to it. In double, from the float pass.
struct AttentionBlockParts {
  Eigen::MatrixXd parts;
  Eigen::VectorXd bias, output;
  double scale = 0;  // s_i
};
Status DecomposeAttentionBlock(const Model& model, const Activations& activations, int32_t layer, int32_t row,
                               AttentionBlockParts* out);

// Spearman's rank correlation of x and y (equal lengths) as the faithfulness score takes it:
// stats::Spearman (core/statistics.h) with ties within kTieTolerance, and NaN below 3 values.
double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y);

// The maximum flow from source to sink of a graph given as edges (from, to, capacity >= 0) over
// nodes 0 .. nodes-1 (Dinic's algorithm in double). Exposed for tests.
struct FlowEdge {
  int32_t from, to;
  double capacity;
};
double MaxFlow(int32_t nodes, const std::vector<FlowEdge>& edges, int32_t source, int32_t sink);

}  // namespace attn
