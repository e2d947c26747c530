// What the explainer computes from attention probabilities: per-row statistics, head-averaged
// attention, attention rollout (Abnar & Zuidema 2020) and head profiles with a label; and the
// one path from text to all of it (LoadedModel, AnalyzeText) that the CLI and the bindings call.
// n tokens, L layers, H heads, d model. docs/ARCHITECTURE.md describes the result schema.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/encoder.h"
#include "core/model_file.h"
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

// RowStats packed as kRowStatFields floats per row (argmax as a float), in this order; the
// names are the result schema's, exported to JS so that the page reads the same order.
enum class RowStatField : uint8_t { kMax, kArgmax, kRatioToUniform, kEntropy, kNormalizedEntropy, kSum };
constexpr int kRowStatFields = 6;
const char* RowStatName(RowStatField field);  // "max", "argmax", "ratio_to_uniform", ...
void PackRowStats(const RowStats& stats, float* out);  // writes kRowStatFields floats
// Every row of one head: (n). From the summaries the forward pass's softmax left
// (Activations::row_summaries) when it has them, else read from the stored rows.
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
// One factor of that product, A'_l (n, n): the edge capacities of attention flow (core/lenses.h).
RowMajorMatrix RolloutLayer(const Activations& activations, int32_t layer,
                            double residual_weight = kDefaultResidualWeight);

// What each position is, for head profiles; the caller decides (from the tokenizer).
enum class TokenRole : uint8_t { kOrdinary, kCls, kSep, kPunctuation };
constexpr int kTokenRoles = 4;
const char* TokenRoleName(TokenRole role);  // "ordinary", "cls", "sep", "punctuation"
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
constexpr int kHeadLabels = 7;
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

  // Word rows: rows of ordinary tokens (not [CLS], [SEP] or punctuation; a word's pieces each
  // count), the rows a reader clicks. A word row "has a previous token" when position i - 1 is
  // a token of the text (not [CLS]); "has a next token" when i + 1 is one (not [SEP]). The
  // shares of word rows on the previous or next token are taken over the rows that have one,
  // so a sentence's first word, which has no previous token, is not counted as a miss.
  int64_t word_rows = 0;
  int64_t word_rows_with_previous = 0, word_previous = 0;  // argmax at i - 1
  int64_t word_rows_with_next = 0, word_next = 0;          // argmax at i + 1
  // Where every row's argmax falls, as a partition (each row in exactly one, in this order of
  // precedence): a [CLS] or [SEP] position, the row's own position, the previous text token,
  // the next text token, another punctuation token, anywhere else. Sums to rows.
  int64_t target_special = 0, target_self = 0, target_previous = 0, target_next = 0,
          target_punctuation = 0, target_other = 0;

  // Adds every row of one head's attention (n, n) for one sentence; roles has n entries.
  Status Add(const float* attention, int32_t n, const std::vector<TokenRole>& roles);
  // The same from the rows' statistics, already computed: (n) stats and (n) roles.
  Status AddRows(const std::vector<RowStats>& rows, const std::vector<TokenRole>& roles);

  // Adds another profile's counts (the same head over other sentences).
  void Merge(const HeadProfile& other);

  double Fraction(int64_t count) const { return rows ? static_cast<double>(count) / rows : 0.0; }
  double mean_entropy() const { return rows ? entropy_sum / rows : 0.0; }
  double mean_normalized_entropy() const { return rows ? normalized_entropy_sum / rows : 0.0; }
  double mean_ratio_to_uniform() const { return rows ? ratio_to_uniform_sum / rows : 0.0; }
  HeadLabel Label() const;
};

// A profile's counts by name, in the order the CLI and the bindings write them ("rows",
// "previous_token", ..., "target_other"): the one list both front ends serialise.
std::vector<std::pair<const char*, int64_t>> HeadProfileCounts(const HeadProfile& profile);
// The fields of a head's profile in the result schema beside its label, by name: the fractions
// of rows whose largest weight is on each category, then the mean row statistics. One list for
// the CLI's JSON and the bindings.
std::vector<std::pair<const char*, double>> HeadProfileFractions(const HeadProfile& profile);

// Profiles of every head of one forward pass: (L * H), index l * H + h. Pass the same vector
// again with another sentence's activations to aggregate over many sentences.
Status AccumulateHeadProfiles(const Activations& activations, const std::vector<TokenRole>& roles,
                              std::vector<HeadProfile>* profiles);

// What AnalyzeText fills in beyond the tokens and attention, which it always does. The
// forward pass computes queries, keys and the hidden states into every layer in any case; the
// bits say which of them a front end wants to hand on (they are the large per-token arrays).
// Without kOutputHiddenStates (or values, value norms or removed heads) the last layer stops at
// its attention (ForwardOptions::last_layer_attention_only): the masked-LM head then computes
// the one final row it scores (Encoder::FinalHiddenRow).
enum AnalysisOutput : uint32_t {
  kOutputHiddenStates = 1u << 0,  // (L+1, n, d)
  kOutputQueries = 1u << 1,       // (L, n, d)
  kOutputKeys = 1u << 2,          // (L, n, d)
  kOutputRowStats = 1u << 3,      // (L, H, n, kRowStatFields)
  kOutputHeadProfiles = 1u << 4,  // (L * H)
  kOutputValueNorms = 1u << 5,    // (L, H, n): ||W_O^h v_j||, see Activations::value_norms
  kOutputValues = 1u << 6,        // values and contexts (L, n, d) each, see Activations::values
  // (n, n): the whole rollout matrix, three n x n x n products. The page's engine leaves it
  // out and computes the one row a reader asks for (web/engine/result.js, rolloutRow).
  kOutputRollout = 1u << 7,
};
constexpr uint32_t kDefaultOutputs = kOutputRowStats | kOutputHeadProfiles | kOutputRollout;
// What the page's engine always asks for (wasm/bindings/bindings.cc adds the large arrays a call
// names): row statistics and head profiles, no rollout matrix, no hidden states.
constexpr uint32_t kEngineOutputs = kOutputRowStats | kOutputHeadProfiles;

struct AnalysisOptions {
  // Positions the text may use, [CLS] and [SEP] included; <= 0 means the model's maximum
  // (at most Tokenizer::kDefaultMaxLength). Longer texts are cut and marked truncated.
  int32_t max_length = 0;
  double residual_weight = kDefaultResidualWeight;  // rollout's r, in [0, 1]
  uint32_t outputs = kDefaultOutputs;               // AnalysisOutput bits
  // Token positions whose ids become [MASK] before the forward pass (never [CLS] or [SEP]);
  // the tokens list keeps the typed pieces.
  std::vector<int32_t> masked_positions;
  // Heads to remove, (L * H) flags or empty (ParseHeadList makes one from "2.3,4.1"); see
  // ForwardOptions::removed_heads for the semantics.
  std::vector<uint8_t> removed_heads;
};

// "L.H[,L.H...]" with L and H counted from 1, as the page names heads, to (L * H) flags. An
// empty spec removes nothing. The error names the accepted form and the model's range.
Status ParseHeadList(std::string_view spec, const ModelConfig& config, std::vector<uint8_t>* flags);

// Everything one text's analysis yields; the arrays are flat and row-major.
struct SentenceAnalysis {
  Encoding encoding;             // tokens [CLS] ... [SEP], truncated, full_length
  Activations activations;       // ids, attention (L, H, n, n), hidden states, queries, keys
  std::vector<TokenRole> roles;  // (n)
  RowMajorMatrix rollout;        // (n, n) when asked for (kOutputRollout), else empty
  std::vector<float> row_stats;  // (L, H, n, kRowStatFields) when asked for
  std::vector<HeadProfile> head_profiles;  // (L * H), index l * H + h, when asked for
  uint32_t outputs = 0;          // the options' bits this analysis was made with

  int32_t tokens() const { return activations.tokens; }
};

// One masked-LM prediction: a vocabulary entry and its softmax probability.
struct Prediction {
  int32_t id = 0;
  std::string text;
  double probability = 0;
};

// A model file with its vocabulary and tokenizer, and an encoder to run it: what every front
// end loads once and analyses many texts with. Not thread-safe (the encoder reuses buffers).
class LoadedModel {
 public:
  static Status FromBuffer(const uint8_t* data, size_t size, std::unique_ptr<LoadedModel>* out);
  static Status FromFile(const std::string& path, std::unique_ptr<LoadedModel>* out);
  static Status FromModel(std::unique_ptr<Model> model, std::unique_ptr<LoadedModel>* out);

  const Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  Encoder& encoder() { return *encoder_; }
  // The max_length AnalyzeText uses for an option's value.
  int32_t MaxLength(int32_t requested) const;

  // The split layout (Model::sharded): loads one shard file; and the shards, in increasing
  // order, that a text's tokens need and that are not loaded yet (empty for a single file).
  Status LoadShard(const uint8_t* data, size_t size, int32_t* index = nullptr) {
    return model_->LoadWordEmbeddingShard(data, size, index);
  }
  std::vector<int32_t> MissingShards(std::string_view text, int32_t max_length = 0) const;
  // The same for a text already tokenized: the bindings hand that encoding on to AnalyzeEncoding,
  // so that a text whose rows are fetched first is tokenized once.
  std::vector<int32_t> MissingShards(const Encoding& encoding) const;
  // The all-rows file: every shard back to back (Model::LoadWordEmbeddingShards).
  Status LoadShards(const uint8_t* data, size_t size, int32_t* count = nullptr) {
    return model_->LoadWordEmbeddingShards(data, size, count);
  }

  // The masked-LM head's k most probable entries at one position of an analysis made with
  // this model, best first. Fails when the model has no masked-LM head.
  Status TopPredictions(const SentenceAnalysis& analysis, int32_t position, int32_t k,
                        std::vector<Prediction>* out) const;
  // The exact softmax probability of entry `id` at one position over the whole vocabulary, its
  // rank (1 + the number of entries with a larger score) and the most probable entry (the
  // lowest id on ties). Fails as TopPredictions does, or when id is not in the vocabulary.
  struct EntryProbability {
    double probability = 0;
    double log_probability = 0;  // its natural log, taken without underflow
    int32_t rank = 0;
    int32_t top1 = 0;
  };
  Status ProbabilityOf(const SentenceAnalysis& analysis, int32_t position, int32_t id,
                       EntryProbability* out) const;
  // The same for several passes over one text at one position (Encoder::MaskedLmLogitsBatch):
  // (*out)[r] for passes[r]; equal to ProbabilityOf within float rounding of the logits.
  Status ProbabilitiesOf(const std::vector<const Activations*>& passes, int32_t position, int32_t id,
                         std::vector<EntryProbability>* out) const;

 private:
  LoadedModel() = default;
  std::unique_ptr<Model> model_;
  Tokenizer tokenizer_;
  std::unique_ptr<Encoder> encoder_;
};

// The one path from text to everything the explainer shows: tokenize with the model's
// vocabulary, run the forward pass, then rollout, row statistics and head profiles as
// options.outputs asks. *out's buffers are reused from call to call.
Status AnalyzeText(LoadedModel& model, std::string_view text, const AnalysisOptions& options,
                   SentenceAnalysis* out);
// The same from the text's encoding, made by model.tokenizer() at
// model.MaxLength(options.max_length) (AnalyzeText is this after Encode).
Status AnalyzeEncoding(LoadedModel& model, Encoding encoding, const AnalysisOptions& options,
                       SentenceAnalysis* out);

}  // namespace attn
