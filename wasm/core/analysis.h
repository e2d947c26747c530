// What the explainer computes from attention probabilities: per-row statistics, head-averaged
// attention, attention rollout (Abnar & Zuidema 2020) and head profiles with a label.
// n tokens, L layers, H heads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/encoder.h"
#include "core/status.h"
#include "core/tokenizer.h"

namespace attn {

// Statistics of one attention row (n weights, row i of one head).
struct RowStats {
  float max = 0;                 // largest weight
  int32_t argmax = 0;            // its position (the first one on ties)
  float ratio_to_uniform = 0;    // max / (1/n) = max * n; 1 means no better than uniform
  float entropy = 0;             // -sum p log p, in nats (0 log 0 = 0)
  float normalized_entropy = 0;  // entropy / log n, in [0, 1]; 0 when n = 1
  float sum = 0;                 // should be 1 within 1e-6
};
RowStats ComputeRowStats(const float* row, int32_t n);
// Every row of one head: (n).
std::vector<RowStats> ComputeRowStats(const Activations& activations, int32_t layer, int32_t head);

// The mean over heads of one layer's attention: (n, n).
RowMajorMatrix HeadAverage(const Activations& activations, int32_t layer);

// Attention rollout: per layer A'_l = r I + (1 - r) A_l with A_l the head average, each row
// renormalised to sum to 1, then R = A'_{L-1} ... A'_1 A'_0 (later layers on the left).
// Row i of R: how much each input position flowed into position i at the top, if attention
// alone mixed the tokens and the residual kept weight r. head_averaged: L matrices (n, n).
constexpr double kDefaultResidualWeight = 0.5;
RowMajorMatrix Rollout(const std::vector<RowMajorMatrix>& head_averaged,
                       double residual_weight = kDefaultResidualWeight);  // (n, n)
RowMajorMatrix Rollout(const Activations& activations,
                       double residual_weight = kDefaultResidualWeight);  // (n, n)

// What each position is, for head profiles; the caller decides (from the tokenizer).
enum class TokenRole : uint8_t { kOrdinary, kCls, kSep, kPunctuation };
// [CLS] and [SEP] by id; punctuation when every code point of the piece is punctuation in
// BERT's sense (the tokenizer splits punctuation into tokens of its own). (n)
std::vector<TokenRole> TokenRoles(const std::vector<Token>& tokens, const Tokenizer& tokenizer);

// Head label, and the rule that picks it (HeadProfile::Label):
//  1. broad          when the mean normalised entropy of the rows is >= kBroadEntropy (0.9):
//                    weight is spread so evenly that the argmax says little (and a uniform
//                    row's argmax, position 0, would otherwise read as a [CLS] sink);
//  2. otherwise the category with the largest fraction of rows, if that fraction is
//     >= kLabelFraction (0.5); ties go to the earlier one in this order:
//     previous-token  (argmax at i - 1),
//     next-token      (argmax at i + 1),
//     [CLS]/[SEP] sink (argmax on a [CLS] or [SEP] position),
//     self            (argmax at i),
//     punctuation     (argmax on a punctuation position);
//  3. mixed          otherwise.
// The categories can overlap (row 1's previous token is [CLS]); each is counted on its own.
enum class HeadLabel : uint8_t { kPreviousToken, kNextToken, kSink, kSelf, kPunctuation, kBroad, kMixed };
const char* HeadLabelName(HeadLabel label);  // "previous-token", "next-token", "[CLS]/[SEP] sink",
                                             // "self", "punctuation", "broad", "mixed"

struct HeadProfile {
  static constexpr double kLabelFraction = 0.5;
  static constexpr double kBroadEntropy = 0.9;

  int64_t rows = 0;  // rows seen (over all sentences added)
  // Rows whose argmax is...
  int64_t previous_token = 0, next_token = 0, cls = 0, sep = 0, self = 0, punctuation = 0;
  double entropy_sum = 0;             // nats
  double normalized_entropy_sum = 0;
  double ratio_to_uniform_sum = 0;

  // Adds every row of one head's attention (n, n) for one sentence; roles has n entries.
  Status Add(const float* attention, int32_t n, const std::vector<TokenRole>& roles);

  double Fraction(int64_t count) const { return rows ? static_cast<double>(count) / rows : 0.0; }
  double mean_entropy() const { return rows ? entropy_sum / rows : 0.0; }
  double mean_normalized_entropy() const { return rows ? normalized_entropy_sum / rows : 0.0; }
  double mean_ratio_to_uniform() const { return rows ? ratio_to_uniform_sum / rows : 0.0; }
  HeadLabel Label() const;
};

// Profiles of every head of one forward pass: (L * H), index l * H + h. Pass the same vector
// again with another sentence's activations to aggregate over many sentences.
Status AccumulateHeadProfiles(const Activations& activations, const std::vector<TokenRole>& roles,
                              std::vector<HeadProfile>* profiles);

}  // namespace attn
