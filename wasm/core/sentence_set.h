// Statistics over a set of sentences, the numbers the series' posts show: every head's profile
// over the set (the label rule's counts, the word-row shares and where each row's largest
// weight falls) with cluster-bootstrap intervals and the stability of its label; and, for
// every whole word, what each head's removal does to the masked-LM probability of that word,
// with the summary the contribution post's claims rest on; and, for every whole word as a
// masked target, how well each lens of core/lenses.h agrees with occluding the other tokens,
// with where rows put their weight under three readings. The CLI's `profile`, `contribution`
// and `lens-set` commands print these; docs/ARCHITECTURE.md gives their JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "core/lenses.h"
#include "core/statistics.h"
#include "core/status.h"

namespace attn {

// A value over the set and the bootstrap's interval for it.
struct Estimate {
  double value = 0;
  stats::Interval interval;
};

// ---- Head profiles over a set ----

// One share a head's profile gives: numerator / denominator of its counts.
struct ProfileShare {
  const char* name;
  int64_t (*numerator)(const HeadProfile&);
  int64_t (*denominator)(const HeadProfile&);
};
// Every share the profile reports, in output order: word_previous and word_next (over the word
// rows that have a previous or next text token), the same over all word rows, the partition
// target_* (over all rows; they sum to 1), and the label rule's overlapping categories.
const std::vector<ProfileShare>& ProfileShares();

struct HeadSetProfile {
  HeadProfile counts;           // over the whole set
  HeadLabel label = HeadLabel::kMixed;
  double label_stability = 0;   // share of bootstrap resamples whose label is `label`
  std::vector<Estimate> shares;  // ProfileShares() order
  Estimate mean_normalized_entropy, mean_ratio_to_uniform;
};

// A label is shown as borderline when fewer than this share of resamples reproduce it.
constexpr double kStableLabel = 0.95;

// Where the sharpest rows point, counted over word rows (rows of ordinary tokens, pieces
// included) and summed over sentences. A word's most confident head is the head whose row for it
// has the largest ratio to uniform (the first head, in layer-then-head order, on ties); a
// neighbour is the token just before or after. The value-weighted reading weights each entry
// a_ij by ||W_O^h v_j|| (Activations::value_norms) and renormalises the row before the same
// choice. The content head is the page's selection rule (web/widgets/data.js, SELECTION_RULE):
// among heads whose label over the sentence is not previous-token, next-token, self or sink,
// the sharpest whose largest weight is on another word (two or more places away, an ordinary
// token of another word); failing that the sharpest such head; failing that the sharpest head.
struct ConfidentCounts {
  int64_t words = 0;
  int64_t positional = 0;      // the most confident head's largest weight is on a neighbour
  int64_t neighbour_word = 0;  // ... a neighbour that is another word (ordinary, not a piece of its own)
  int64_t value_weighted_positional = 0;
  int64_t content_rows = 0;    // the content head's largest weight is on another word (tier 1)
  double ratio_sum = 0, content_ratio_sum = 0;  // of the most confident and the content head
  // Where the most confident head's largest weight is: the next token, the previous token, the
  // word itself, [CLS], [SEP], another token.
  int64_t relations[6] = {0, 0, 0, 0, 0, 0};
  // (L * H) each: words for which the head is the most confident, the value-weighted most
  // confident and the content head; and the head's word rows with at least kSharpWeight on one
  // neighbour, and the sum of its word rows' largest weights.
  std::vector<int64_t> wins, value_weighted_wins, content_wins, sharp_neighbour;
  std::vector<double> largest_sum;

  void Merge(const ConfidentCounts& other);
};
constexpr double kSharpWeight = 0.9;
// The relations' names, in ConfidentCounts::relations order.
const char* ConfidentRelationName(int index);
// One sentence's counts from its analysis (made with kOutputHeadProfiles and kOutputValueNorms).
ConfidentCounts CountConfident(const SentenceAnalysis& analysis);

struct SetProfile {
  int32_t sentences = 0;
  std::vector<std::vector<HeadProfile>> per_sentence;  // [sentence][l * H + h]
  std::vector<HeadSetProfile> heads;                   // (L * H)
  std::vector<ConfidentCounts> confident_per_sentence;
  ConfidentCounts confident;  // over the set
  Estimate positional_share, neighbour_word_share, value_weighted_share;  // of confident.words
  std::vector<Estimate> sharp_neighbour_share;  // (L * H), of each head's word rows
};

// Analyses every sentence (whole, up to the model's maximum length) and profiles every head.
// progress(done, total) is called after each sentence when given.
Status ProfileSentences(LoadedModel& model, const std::vector<std::string>& sentences,
                        const stats::BootstrapOptions& bootstrap, SetProfile* out,
                        const std::function<void(size_t, size_t)>& progress = {});

// ---- Contribution: attention paid against the effect of removing a head ----

// A whole word: an ordinary token that is its word's only WordPiece piece (one [MASK] can stand
// for it).
bool IsWholeWord(const SentenceAnalysis& analysis, int32_t position);

// Where a token sits, for a null that keeps position: what precedes it (0 [CLS], 1 punctuation,
// 2 any other token) times 3 plus what follows it (0 punctuation, 1 [SEP], 2 any other token).
// A word just after [CLS] or just before a full stop tends to have its own most attending and
// most consequential heads, whatever its attention says; classes keep that apart.
constexpr int32_t kPositionClasses = 9;
int32_t PositionClass(const SentenceAnalysis& analysis, int32_t position);
// "after [CLS], before punctuation" and the like, for the class's number.
std::string PositionClassName(int32_t position_class);

// Each head's mean context (its slice sum_j a_ij v_j of what W_O mixes) over every token of
// every sentence, [CLS] and [SEP] included, each sentence analysed whole and unmasked:
// (L * H * d_head) floats, head k = l * H + h at k * d_head, for ForwardOptions::replacements
// (mean-ablation). *tokens: how many tokens the mean is over.
Status MeanHeadContexts(LoadedModel& model, const std::vector<std::string>& sentences,
                        std::vector<float>* means, int64_t* tokens = nullptr);

// One whole word, masked alone ([MASK] in its place, every other token as typed). Head k is
// l * H + h. attention[k]: the largest weight in the [MASK] row of head k in the unablated
// masked pass. p_removed[k]: the exact probability of the original entry with head k alone
// removed: by default Hugging Face's head_mask semantics (zero-ablation: the head's slice of
// the context is zero), or with `replacements` given, replaced by them (mean-ablation with
// MeanHeadContexts).
struct WordContribution {
  int32_t sentence = 0;  // 0-based line of the set
  int32_t token = 0;     // position in the unmasked tokenization, 0 = [CLS]
  int32_t position_class = 0;  // PositionClass of the token
  int32_t id = 0;        // the original entry
  std::string word;
  double p_full = 0;
  int32_t rank_full = 0;  // from 1
  int32_t top1_full = 0;
  std::vector<float> attention;       // (L * H)
  std::vector<double> p_removed;      // (L * H)
  std::vector<int32_t> top1_removed;  // (L * H)
};

// Measures every whole word of every sentence: 1 + L * H forward passes per word, each
// removal resumed at its head's layer from the masked pass, and one batched masked-LM product
// for all of them (p within float rounding of single calls: a relative 1e-5 at most on the
// shipped set, against the single-call build).
// progress(done, total) is called after each sentence when given. first: the index of
// sentences[0] in the whole set, for a caller that measures the set in parts (each word's
// `sentence`, and the sentence a failure names, count from there).
// replacements: empty (zero-ablation) or ForwardOptions::replacements.
Status MeasureContributions(LoadedModel& model, const std::vector<std::string>& sentences,
                            std::vector<WordContribution>* out,
                            const std::function<void(size_t, size_t)>& progress = {}, size_t first = 0,
                            const std::vector<float>& replacements = {});

// A word is "predicted" when its original entry is in the model's top kPredictedRank at its
// masked position.
constexpr int32_t kPredictedRank = 10;

// The summary of a contribution set. A head's effect on a word is p_removed - p_full (and, in
// log-probability, ln p_removed - ln p_full); its size is the absolute value. The most
// consequential head of a word is the one of largest |p_removed - p_full|, the most attending
// one the one of largest attention (the first head on ties, for both).
struct ContributionSummary {
  struct EffectGroup {
    int64_t words = 0;
    Estimate mean_abs_effect, mean_abs_log_effect;  // over the group's (word, head) pairs
  };
  struct Head {
    double mean_attention = 0, mean_abs_effect = 0, mean_abs_log_effect = 0;
    double top1_survival = 0;  // share of words whose top-1 entry is unchanged by its removal
    int64_t most_attending = 0, most_consequential = 0;  // words for which it is each
    // Within this head, across words: Spearman of its attention on a word with the size of its
    // effect on that word, in probability and in log-probability.
    double within_rho = 0, within_rho_log = 0;
  };

  int32_t sentences = 0, heads = 0;
  int64_t words = 0;
  int64_t top1_correct = 0;     // words whose top-1 entry is the original
  EffectGroup predicted, unpredicted;  // rank_full <= kPredictedRank, and the rest
  // Most attending = most consequential, against the null that keeps both per-word
  // distributions (stats::AgreementWithNull).
  stats::Agreement agreement;
  // The same with the word's position kept: shuffled only among words of one PositionClass.
  stats::Agreement agreement_position_kept;
  Estimate agreement_share;
  int32_t distinct_attending = 0, distinct_consequential = 0;  // heads that win some word
  // Per word, Spearman over the heads of attention with |effect|: its mean over the words where
  // it is defined; the same with every word given the same attention vector (each head's mean
  // attention over the set: what head identity alone gives); and their difference.
  int64_t rho_defined = 0;
  Estimate rho_per_word, rho_constant_attention, rho_beyond_head;
  // The within-head correlations' mean over heads.
  Estimate within_rho, within_rho_log;
  Estimate top1_survival;  // over all (word, head) pairs
  std::vector<Head> per_head;
};

ContributionSummary SummarizeContributions(const std::vector<WordContribution>& words,
                                           int32_t sentences, int32_t heads,
                                           const stats::BootstrapOptions& bootstrap,
                                           int32_t permutations);

// ---- Lenses over a set: which picture of attention agrees with the model ----

// What each target's occlusion is ranked against: the five lenses' row t (FaithfulnessLens
// order), then a baseline that knows only position, -|j - t| (the nearer token ranks higher).
constexpr int kSetLenses = kFaithfulnessLenses + 1;
constexpr int kDistanceBaseline = kFaithfulnessLenses;
// FaithfulnessLensName, and "distance" for the baseline.
const char* SetLensName(int lens);

// One whole word as the masked target (AnalysisOptions::masked_positions = {token}), its
// lenses and occlusion from ComputeLenses (core/lenses.h): rho[k], Spearman's rho between
// occlusion and row `token` of lens k over the occluded positions (NaN where undefined: fewer
// than 3 positions, or either side constant).
struct TargetFaithfulness {
  int32_t sentence = 0;  // 0-based line of the set
  int32_t token = 0;     // position, 0 = [CLS]
  int32_t id = 0;        // the word's entry, as typed
  std::string word;
  int32_t top1 = 0;      // w*, the model's top entry at the masked position
  double logprob = 0;    // log p(w*) there
  int32_t positions = 0; // occluded positions: how many values each rho ranks
  double rho[kSetLenses] = {};
  std::vector<double> occlusion;  // (n), NaN where not occluded
};

// Where a row puts its weight, after Clark et al. (2019), under three readings of layer l's
// row i: the head-averaged attention, weighted_layer and alti (core/lenses.h), each row over
// its own sum (a row summing to 0 counts 0 everywhere). Categories: the share on [CLS], on
// [SEP], on punctuation tokens, and on the token itself.
constexpr int kShareReadings = 3;    // attention, weighted_layer, alti
constexpr int kShareCategories = 4;  // cls, sep, punctuation, self
const char* ShareReadingName(int reading);
const char* ShareCategoryName(int category);

// One sentence's sums over its rows of ordinary tokens (not [CLS], [SEP] or punctuation;
// pieces of a split word count), from its unmasked analysis.
struct SentenceLensSums {
  int32_t rows = 0;                // ordinary-token rows (each layer has as many)
  std::vector<double> shares;      // (kShareReadings, kShareCategories, L): sums of the shares
  std::vector<double> mixing_ratio;  // (L): sums of mixing_ratio[l][i]
  double Share(int reading, int category, int32_t layer, int32_t layers) const {
    return shares[(static_cast<size_t>(reading) * kShareCategories + category) * layers + layer];
  }
};

// Measures every sentence: the unmasked analysis's lenses for the share sums, then every whole
// word masked alone as the target (1 + n forward passes each, and n max-flow problems for its
// flow row). progress(done, total) after each sentence; first: the index of sentences[0] in
// the whole set (each target's `sentence` counts from there). per_sentence gets one entry per
// sentence.
Status MeasureLensFaithfulness(LoadedModel& model, const std::vector<std::string>& sentences,
                               std::vector<TargetFaithfulness>* targets, std::vector<SentenceLensSums>* per_sentence,
                               const std::function<void(size_t, size_t)>& progress = {}, size_t first = 0);

// The summary over the set. Every interval comes from one set of cluster resamples (sentences
// drawn with replacement), so the intervals of differences are paired.
struct LensSetSummary {
  struct Lens {
    int64_t defined = 0, undefined = 0;  // targets with and without a rho
    Estimate mean_rho;                   // mean over the defined targets
    // Of the five lenses (not the baseline): the share of resamples in which this one has the
    // highest mean rho.
    double best_share = 0;
  };
  // Lens a minus lens b, per target where both are defined, averaged.
  struct Difference {
    int32_t a = 0, b = 0;
    int64_t targets = 0;
    Estimate mean;
  };
  int32_t sentences = 0, layers = 0;
  int64_t targets = 0, rows = 0;
  Lens lenses[kSetLenses];
  int32_t best = 0;  // the lens (of the five) with the highest mean rho
  std::vector<Difference> differences;  // every pair a < b of kSetLenses
  // (kShareReadings, kShareCategories, L): the mean share over ordinary-token rows; and for
  // readings 1 and 2, the reading's share minus the attention's (index reading - 1).
  std::vector<Estimate> shares, share_minus_attention;
  std::vector<Estimate> mixing_ratio;  // (L): the mean over ordinary-token rows
};

LensSetSummary SummarizeLensFaithfulness(const std::vector<TargetFaithfulness>& targets,
                                         const std::vector<SentenceLensSums>& per_sentence, int32_t layers,
                                         const stats::BootstrapOptions& bootstrap);

}  // namespace attn
