// Tests of the analysis: row statistics, head average and rollout on matrices worked out by
// hand, head-profile labels on synthetic heads built to be each kind, and AnalyzeText against
// the same steps taken one by one.
#include "core/analysis.h"
#include "core/sentence_set.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "test_model_writer.h"

#define EXPECT_HAS(haystack, needle) EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, haystack)

namespace attn {
namespace {

TEST(RowStatsTest, HandWorkedRow) {
  const float row[] = {0.25f, 0.5f, 0.25f};
  const RowStats s = ComputeRowStats(row, 3);
  EXPECT_EQ(s.max, 0.5f);
  EXPECT_EQ(s.argmax, 1);
  EXPECT_FLOAT_EQ(s.ratio_to_uniform, 1.5f);
  // -(0.5 ln 0.5 + 2 x 0.25 ln 0.25) = 0.5 ln 2 + ln 2 = 1.5 ln 2 = 1.0397208
  EXPECT_NEAR(s.entropy, 1.0397208f, 1e-6);
  EXPECT_NEAR(s.normalized_entropy, 1.0397208 / std::log(3.0), 1e-6);
  EXPECT_FLOAT_EQ(s.sum, 1.0f);
}

TEST(RowStatsTest, UniformOneHotAndSingleToken) {
  const float uniform[] = {0.25f, 0.25f, 0.25f, 0.25f};
  RowStats s = ComputeRowStats(uniform, 4);
  EXPECT_FLOAT_EQ(s.ratio_to_uniform, 1.0f);
  EXPECT_NEAR(s.normalized_entropy, 1.0f, 1e-6);
  EXPECT_EQ(s.argmax, 0);  // first of equal maxima
  const float one_hot[] = {0.0f, 0.0f, 1.0f};
  s = ComputeRowStats(one_hot, 3);
  EXPECT_EQ(s.argmax, 2);
  EXPECT_FLOAT_EQ(s.ratio_to_uniform, 3.0f);
  EXPECT_EQ(s.entropy, 0.0f);  // 0 log 0 counts as 0
  const float single[] = {1.0f};
  s = ComputeRowStats(single, 1);
  EXPECT_EQ(s.entropy, 0.0f);
  EXPECT_EQ(s.normalized_entropy, 0.0f);
  EXPECT_EQ(s.ratio_to_uniform, 1.0f);
  const float short_row[] = {0.3f, 0.3f};
  EXPECT_NEAR(ComputeRowStats(short_row, 2).sum, 0.6f, 1e-7);  // a row that does not sum to 1 shows it
}

// Synthetic activations: L layers, H heads, n tokens, with attention given per (l, h).
Activations MakeActivations(int L, int H, int n) {
  Activations a;
  a.layers = L;
  a.heads = H;
  a.tokens = n;
  a.hidden = H;
  a.attention_probs.assign(static_cast<size_t>(L * H * n * n), 0.0f);
  return a;
}
void SetHead(Activations* a, int l, int h, const std::vector<float>& values) {
  const size_t nn = static_cast<size_t>(a->tokens) * a->tokens;
  ASSERT_EQ(values.size(), nn);
  std::copy(values.begin(), values.end(), a->attention_probs.begin() + static_cast<long>((l * a->heads + h) * nn));
}

TEST(HeadAverageTest, MeanOverHeads) {
  Activations a = MakeActivations(1, 2, 2);
  SetHead(&a, 0, 0, {1, 0, 0.5f, 0.5f});
  SetHead(&a, 0, 1, {0, 1, 0.1f, 0.9f});
  const RowMajorMatrix avg = HeadAverage(a, 0);
  EXPECT_FLOAT_EQ(avg(0, 0), 0.5f);
  EXPECT_FLOAT_EQ(avg(0, 1), 0.5f);
  EXPECT_FLOAT_EQ(avg(1, 0), 0.3f);
  EXPECT_FLOAT_EQ(avg(1, 1), 0.7f);
}

TEST(RolloutTest, TwoLayersByHand) {
  // A0 = [[1, 0], [0.5, 0.5]] -> A0' = 0.5 I + 0.5 A0 = [[1, 0], [0.25, 0.75]]
  // A1 = [[0.2, 0.8], [0.6, 0.4]] -> A1' = [[0.6, 0.4], [0.3, 0.7]]
  // R = A1' A0' = [[0.6 + 0.1, 0.3], [0.3 + 0.175, 0.525]] = [[0.7, 0.3], [0.475, 0.525]]
  RowMajorMatrix a0(2, 2), a1(2, 2);
  a0 << 1, 0, 0.5f, 0.5f;
  a1 << 0.2f, 0.8f, 0.6f, 0.4f;
  const RowMajorMatrix r = Rollout({a0, a1}, 0.5);
  EXPECT_NEAR(r(0, 0), 0.7f, 1e-7);
  EXPECT_NEAR(r(0, 1), 0.3f, 1e-7);
  EXPECT_NEAR(r(1, 0), 0.475f, 1e-7);
  EXPECT_NEAR(r(1, 1), 0.525f, 1e-7);
  // The order matters: A0' A1' = [[0.6, 0.4], [0.375, 0.625]] would be the wrong answer.
  const RowMajorMatrix swapped = Rollout({a1, a0}, 0.5);
  EXPECT_NEAR(swapped(1, 0), 0.375f, 1e-7);
}

TEST(RolloutTest, ResidualWeightExtremesAndRenormalisation) {
  RowMajorMatrix a0(2, 2), a1(2, 2);
  a0 << 1, 0, 0.5f, 0.5f;
  a1 << 0.2f, 0.8f, 0.6f, 0.4f;
  // r = 0: the plain product A1 A0 = [[0.2 + 0.4, 0.4], [0.6 + 0.2, 0.2]].
  RowMajorMatrix r = Rollout({a0, a1}, 0.0);
  EXPECT_NEAR(r(0, 0), 0.6f, 1e-7);
  EXPECT_NEAR(r(0, 1), 0.4f, 1e-7);
  EXPECT_NEAR(r(1, 0), 0.8f, 1e-7);
  EXPECT_NEAR(r(1, 1), 0.2f, 1e-7);
  // r = 1: the identity.
  r = Rollout({a0, a1}, 1.0);
  EXPECT_TRUE(r.isApprox(RowMajorMatrix::Identity(2, 2)));
  // Rows that do not sum to 1 are renormalised: [[2, 2], [0, 4]] with r = 0 -> [[.5, .5], [0, 1]].
  RowMajorMatrix unnormalised(2, 2);
  unnormalised << 2, 2, 0, 4;
  r = Rollout({unnormalised}, 0.0);
  EXPECT_NEAR(r(0, 0), 0.5f, 1e-7);
  EXPECT_NEAR(r(1, 1), 1.0f, 1e-7);
}

TEST(RolloutTest, FromActivationsAveragesHeadsFirst) {
  Activations a = MakeActivations(2, 2, 2);
  // Layer 0 heads average to A0 above, layer 1 heads to A1 above.
  SetHead(&a, 0, 0, {1, 0, 1, 0});
  SetHead(&a, 0, 1, {1, 0, 0, 1});
  SetHead(&a, 1, 0, {0.4f, 0.6f, 0.6f, 0.4f});
  SetHead(&a, 1, 1, {0, 1, 0.6f, 0.4f});
  const RowMajorMatrix r = Rollout(a);
  EXPECT_NEAR(r(0, 0), 0.7f, 1e-7);
  EXPECT_NEAR(r(1, 0), 0.475f, 1e-7);
  EXPECT_NEAR(r(1, 1), 0.525f, 1e-7);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(r.row(i).sum(), 1.0f, 1e-6);
}

// Heads over the sentence "[CLS] a b . [SEP]" (n = 5), each row one-hot at the given column.
std::vector<float> OneHotRows(const std::vector<int>& argmax) {
  const size_t n = argmax.size();
  std::vector<float> m(n * n, 0.0f);
  for (size_t i = 0; i < n; ++i) m[i * n + static_cast<size_t>(argmax[i])] = 1.0f;
  return m;
}
const std::vector<TokenRole> kRoles = {TokenRole::kCls, TokenRole::kOrdinary, TokenRole::kOrdinary,
                                       TokenRole::kPunctuation, TokenRole::kSep};

HeadProfile Profile(const std::vector<float>& attention) {
  HeadProfile p;
  EXPECT_TRUE(p.Add(attention.data(), 5, kRoles).ok());
  return p;
}

TEST(HeadProfileTest, LabelsEachKindOfHead) {
  // Previous token: rows 1-4 look at i - 1 (row 0 at itself): 4/5.
  HeadProfile p = Profile(OneHotRows({0, 0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(p.Fraction(p.previous_token), 0.8);
  EXPECT_DOUBLE_EQ(p.Fraction(p.self), 0.2);
  EXPECT_EQ(p.Label(), HeadLabel::kPreviousToken);
  // Next token: 4/5.
  p = Profile(OneHotRows({1, 2, 3, 4, 4}));
  EXPECT_DOUBLE_EQ(p.Fraction(p.next_token), 0.8);
  EXPECT_EQ(p.Label(), HeadLabel::kNextToken);
  // Sink: all on [CLS] (row 1 also counts as previous, row 0 as self).
  p = Profile(OneHotRows({0, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(p.Fraction(p.cls), 1.0);
  EXPECT_DOUBLE_EQ(p.Fraction(p.previous_token), 0.2);
  EXPECT_EQ(p.Label(), HeadLabel::kSink);
  // [SEP] sink counts the same way.
  p = Profile(OneHotRows({4, 4, 4, 0, 4}));
  EXPECT_DOUBLE_EQ(p.Fraction(p.sep), 0.8);
  EXPECT_EQ(p.Label(), HeadLabel::kSink);
  // Self.
  p = Profile(OneHotRows({0, 1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(p.Fraction(p.self), 1.0);
  EXPECT_EQ(p.Label(), HeadLabel::kSelf);
  // Punctuation: every row on the '.'.
  p = Profile(OneHotRows({3, 3, 3, 3, 3}));
  EXPECT_DOUBLE_EQ(p.Fraction(p.punctuation), 1.0);
  EXPECT_EQ(p.Label(), HeadLabel::kPunctuation);
  EXPECT_DOUBLE_EQ(p.mean_ratio_to_uniform(), 5.0);
  EXPECT_DOUBLE_EQ(p.mean_entropy(), 0.0);
  // Mixed: no category reaches half of the rows (2, 4, 0, 1, 3: prev 1/5, cls 1/5, sep 1/5...).
  p = Profile(OneHotRows({2, 4, 0, 1, 3}));
  EXPECT_LT(p.Fraction(p.previous_token), 0.5);
  EXPECT_EQ(p.Label(), HeadLabel::kMixed);
  // Broad: uniform rows, whose argmax (position 0) would otherwise read as a [CLS] sink.
  p = Profile(std::vector<float>(25, 0.2f));
  EXPECT_NEAR(p.mean_normalized_entropy(), 1.0, 1e-6);
  EXPECT_NEAR(p.mean_ratio_to_uniform(), 1.0, 1e-6);
  EXPECT_EQ(p.Label(), HeadLabel::kBroad);
}

TEST(HeadProfileTest, ThresholdsAndTies) {
  // Exactly half the rows previous-token, the rest scattered: labelled (>= 0.5).
  HeadProfile p;
  const std::vector<TokenRole> roles(4, TokenRole::kOrdinary);
  const std::vector<float> half = {0, 0, 1, 0,   // row 0 -> 2
                                   1, 0, 0, 0,   // row 1 -> 0 (previous)
                                   0, 0, 0, 1,   // row 2 -> 3 (next)
                                   0, 0, 1, 0};  // row 3 -> 2 (previous)
  ASSERT_TRUE(p.Add(half.data(), 4, roles).ok());
  EXPECT_DOUBLE_EQ(p.Fraction(p.previous_token), 0.5);
  EXPECT_EQ(p.Label(), HeadLabel::kPreviousToken);
  // A tie between next-token (2/4) and self (2/4) goes to the earlier one, next-token.
  HeadProfile tie2;
  const std::vector<float> rows2 = {0, 1, 0, 0,   // row 0 next
                                    0, 0, 1, 0,   // row 1 next
                                    0, 0, 1, 0,   // row 2 self
                                    0, 0, 0, 1};  // row 3 self
  ASSERT_TRUE(tie2.Add(rows2.data(), 4, roles).ok());
  EXPECT_DOUBLE_EQ(tie2.Fraction(tie2.next_token), 0.5);
  EXPECT_DOUBLE_EQ(tie2.Fraction(tie2.self), 0.5);
  EXPECT_EQ(tie2.Label(), HeadLabel::kNextToken);
  EXPECT_STREQ(HeadLabelName(tie2.Label()), "next-token");
  EXPECT_STREQ(HeadLabelName(HeadLabel::kSink), "[CLS]/[SEP] sink");
}

TEST(HeadProfileTest, AggregatesOverSentences) {
  // Sentence 1 (n = 5): a previous-token head, 4 of 5 rows. Sentence 2 (n = 3): self, 0 of 3
  // previous. Together 4 of 8 rows = 0.5, still labelled previous-token; self 1 + 3 = 4 of 8 ties
  // and loses to the earlier category.
  Activations a = MakeActivations(1, 1, 5);
  SetHead(&a, 0, 0, OneHotRows({0, 0, 1, 2, 3}));
  std::vector<HeadProfile> profiles;
  ASSERT_TRUE(AccumulateHeadProfiles(a, kRoles, &profiles).ok());
  ASSERT_EQ(profiles.size(), 1u);
  Activations b = MakeActivations(1, 1, 3);
  SetHead(&b, 0, 0, OneHotRows({0, 1, 2}));
  const std::vector<TokenRole> roles_b = {TokenRole::kCls, TokenRole::kOrdinary, TokenRole::kSep};
  ASSERT_TRUE(AccumulateHeadProfiles(b, roles_b, &profiles).ok());
  const HeadProfile& p = profiles[0];
  EXPECT_EQ(p.rows, 8);
  EXPECT_EQ(p.previous_token, 4);
  EXPECT_EQ(p.self, 4);
  EXPECT_EQ(p.cls, 2 + 1);  // rows 0, 1 of sentence 1 and row 0 of sentence 2
  EXPECT_EQ(p.sep, 1);
  EXPECT_EQ(p.Label(), HeadLabel::kPreviousToken);

  // Mismatched inputs are errors, not crashes.
  Status status = AccumulateHeadProfiles(a, roles_b, &profiles);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "got 3 token roles for 5 tokens");
  Activations other = MakeActivations(2, 1, 3);
  status = AccumulateHeadProfiles(other, roles_b, &profiles);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "got 1 profiles, expected 2");
}

TEST(TokenRolesTest, SpecialAndPunctuationTokens) {
  Vocab vocab;
  ASSERT_TRUE(Vocab::FromText("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n,\n\xe2\x80\x94\n##s\n", &vocab).ok());
  Tokenizer tokenizer;
  ASSERT_TRUE(Tokenizer::Create(std::move(vocab), &tokenizer).ok());
  std::vector<Token> tokens(6);
  tokens[0].id = 2, tokens[0].text = "[CLS]";
  tokens[1].id = 5, tokens[1].text = "hello";
  tokens[2].id = 6, tokens[2].text = ",";
  tokens[3].id = 7, tokens[3].text = "\xe2\x80\x94";  // em dash, category Pd
  tokens[4].id = 8, tokens[4].text = "##s";
  tokens[5].id = 3, tokens[5].text = "[SEP]";
  const std::vector<TokenRole> roles = TokenRoles(tokens, tokenizer);
  const std::vector<TokenRole> want = {TokenRole::kCls, TokenRole::kOrdinary, TokenRole::kPunctuation,
                                       TokenRole::kPunctuation, TokenRole::kOrdinary, TokenRole::kSep};
  EXPECT_EQ(roles, want);
}

class AnalyzeTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<uint8_t> bytes =
        testing::Serialize(testing::RandomModel(testing::TinyConfig(), 7, false, true));
    ASSERT_TRUE(LoadedModel::FromBuffer(bytes.data(), bytes.size(), &model_).ok());
  }
  std::unique_ptr<LoadedModel> model_;
};

TEST_F(AnalyzeTextTest, EqualsTheStepsTakenOneByOne) {
  const std::string text = "the cat sat on the mat, a dog ran.";
  SentenceAnalysis analysis;
  ASSERT_TRUE(AnalyzeText(*model_, text, AnalysisOptions(), &analysis).ok());

  const Encoding encoding = model_->tokenizer().Encode(text, model_->MaxLength(0));
  std::vector<int32_t> ids;
  for (const Token& t : encoding.tokens) ids.push_back(t.id);
  Encoder encoder(model_->model());
  Activations activations;
  ASSERT_TRUE(encoder.Forward(ids, &activations).ok());
  const int32_t n = activations.tokens;
  ASSERT_EQ(analysis.tokens(), n);
  ASSERT_EQ(analysis.encoding.tokens.size(), encoding.tokens.size());
  EXPECT_EQ(analysis.activations.ids, ids);
  EXPECT_EQ(analysis.activations.attention_probs, activations.attention_probs);
  const RowMajorMatrix rollout = Rollout(activations);
  EXPECT_EQ((analysis.rollout - rollout).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ(analysis.roles, TokenRoles(encoding.tokens, model_->tokenizer()));

  ASSERT_EQ(analysis.row_stats.size(),
            static_cast<size_t>(activations.layers) * activations.heads * n * kRowStatFields);
  // The statistics come from the softmax's summaries; re-read from the stored rows they agree
  // exactly but for the entropy, taken another way (row_math.h), within kEntropyApart.
  constexpr float kEntropyApart = 2e-6f;
  float apart = 0;
  for (int32_t l = 0; l < activations.layers; ++l) {
    for (int32_t h = 0; h < activations.heads; ++h) {
      const std::vector<RowStats> summarized = ComputeRowStats(activations, l, h);
      for (int32_t i = 0; i < n; ++i) {
        const RowStats want = ComputeRowStats(activations.AttentionRow(l, h, i), n);
        const float* got =
            &analysis.row_stats[((static_cast<size_t>(l) * activations.heads + h) * n + i) * kRowStatFields];
        EXPECT_EQ(got[static_cast<int>(RowStatField::kMax)], want.max);
        EXPECT_EQ(got[static_cast<int>(RowStatField::kArgmax)], static_cast<float>(want.argmax));
        EXPECT_EQ(got[static_cast<int>(RowStatField::kRatioToUniform)], want.ratio_to_uniform);
        EXPECT_EQ(got[static_cast<int>(RowStatField::kEntropy)], summarized[static_cast<size_t>(i)].entropy);
        EXPECT_NEAR(got[static_cast<int>(RowStatField::kEntropy)], want.entropy, kEntropyApart);
        EXPECT_EQ(got[static_cast<int>(RowStatField::kNormalizedEntropy)],
                  summarized[static_cast<size_t>(i)].normalized_entropy);
        EXPECT_EQ(got[static_cast<int>(RowStatField::kSum)], want.sum);
        apart = std::max(apart, std::abs(got[static_cast<int>(RowStatField::kEntropy)] - want.entropy));
      }
    }
  }
  std::printf("row statistics: largest |entropy - entropy re-read from the rows| %.3g (tol %.3g)\n", apart, kEntropyApart);
  std::vector<HeadProfile> profiles;
  ASSERT_TRUE(AccumulateHeadProfiles(activations, analysis.roles, &profiles).ok());
  ASSERT_EQ(analysis.head_profiles.size(), profiles.size());
  for (size_t k = 0; k < profiles.size(); ++k) {
    EXPECT_EQ(analysis.head_profiles[k].Label(), profiles[k].Label());
    EXPECT_EQ(analysis.head_profiles[k].next_token, profiles[k].next_token);
    EXPECT_EQ(analysis.head_profiles[k].entropy_sum, profiles[k].entropy_sum);
  }
}

TEST_F(AnalyzeTextTest, OutputsMaskingAndTruncation) {
  AnalysisOptions options;
  options.outputs = 0;
  SentenceAnalysis analysis;
  ASSERT_TRUE(AnalyzeText(*model_, "the cat sat", options, &analysis).ok());
  EXPECT_TRUE(analysis.row_stats.empty());
  EXPECT_TRUE(analysis.head_profiles.empty());
  EXPECT_EQ(analysis.rollout.size(), 0) << "the rollout matrix only when asked for";
  EXPECT_FALSE(analysis.activations.final_hidden) << "no hidden states asked for: the last layer stops at its attention";
  options.outputs = kOutputRollout | kOutputHiddenStates;
  ASSERT_TRUE(AnalyzeText(*model_, "the cat sat", options, &analysis).ok());
  EXPECT_EQ(analysis.rollout.rows(), analysis.tokens());
  EXPECT_EQ((analysis.rollout - Rollout(analysis.activations)).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_TRUE(analysis.activations.final_hidden);
  options.outputs = 0;

  options.masked_positions = {2};
  ASSERT_TRUE(AnalyzeText(*model_, "the cat sat", options, &analysis).ok());
  EXPECT_EQ(analysis.activations.ids[2], model_->tokenizer().mask_id());
  EXPECT_EQ(analysis.encoding.tokens[2].text, "cat") << "the tokens keep what was typed";
  std::vector<Prediction> top;
  ASSERT_TRUE(model_->TopPredictions(analysis, 2, 3, &top).ok());
  ASSERT_EQ(top.size(), 3u);
  EXPECT_GE(top[0].probability, top[1].probability);
  EXPECT_EQ(top[0].text, model_->tokenizer().vocab().piece(top[0].id));
  // One entry's probability: the top prediction's, rank 1; the same through the batched path.
  LoadedModel::EntryProbability one;
  ASSERT_TRUE(model_->ProbabilityOf(analysis, 2, top[0].id, &one).ok());
  EXPECT_NEAR(one.probability, top[0].probability, 1e-12);
  EXPECT_EQ(one.rank, 1);
  EXPECT_EQ(one.top1, top[0].id);
  LoadedModel::EntryProbability third;
  ASSERT_TRUE(model_->ProbabilityOf(analysis, 2, top[2].id, &third).ok());
  EXPECT_EQ(third.rank, 3);
  std::vector<LoadedModel::EntryProbability> both;
  ASSERT_TRUE(model_->ProbabilitiesOf({&analysis.activations, &analysis.activations}, 2, top[2].id, &both).ok());
  ASSERT_EQ(both.size(), 2u);
  for (const auto& p : both) {
    EXPECT_NEAR(p.probability, third.probability, 1e-6 * third.probability);
    EXPECT_EQ(p.rank, 3);
    EXPECT_EQ(p.top1, top[0].id);
  }
  EXPECT_HAS(model_->ProbabilitiesOf({&analysis.activations}, 2, 40, &both).message(), "not in the vocabulary of 40");
  EXPECT_HAS(model_->ProbabilityOf(analysis, 2, -1, &one).message(), "not in the vocabulary of 40");

  for (int32_t bad : {0, 4, -1}) {
    options.masked_positions = {bad};
    const Status status = AnalyzeText(*model_, "the cat sat", options, &analysis);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_HAS(status.message(), "cannot mask position " + std::to_string(bad));
  }
  options.masked_positions.clear();
  options.residual_weight = 1.5;
  EXPECT_HAS(AnalyzeText(*model_, "the cat", options, &analysis).message(), "residual weight");

  // TinyConfig has 24 positions: a long text is cut to them, [SEP] last, and marked.
  std::string long_text;
  for (int k = 0; k < 40; ++k) long_text += "cat ";
  ASSERT_TRUE(AnalyzeText(*model_, long_text, AnalysisOptions(), &analysis).ok());
  EXPECT_EQ(analysis.tokens(), 24);
  EXPECT_TRUE(analysis.encoding.truncated);
  EXPECT_EQ(analysis.encoding.full_length, 42);
}

// The bindings tokenize a text once: the encoding made to find its missing shards is handed to
// AnalyzeEncoding. That must be AnalyzeText exactly, a cut text included.
TEST_F(AnalyzeTextTest, AnalyzeEncodingIsAnalyzeTextFromTheSameEncoding) {
  std::string long_text;
  for (int k = 0; k < 40; ++k) long_text += "cat ";
  for (const std::string& text : {std::string("the cat sat on the mat."), long_text}) {
    AnalysisOptions options;
    options.outputs = kDefaultOutputs | kOutputHiddenStates;
    SentenceAnalysis from_text, from_encoding;
    ASSERT_TRUE(AnalyzeText(*model_, text, options, &from_text).ok());
    Encoding encoding = model_->tokenizer().Encode(text, model_->MaxLength(options.max_length));
    EXPECT_EQ(model_->MissingShards(encoding), model_->MissingShards(text)) << "a single file: none";
    ASSERT_TRUE(AnalyzeEncoding(*model_, std::move(encoding), options, &from_encoding).ok());
    ASSERT_EQ(from_encoding.tokens(), from_text.tokens());
    EXPECT_EQ(from_encoding.encoding.truncated, from_text.encoding.truncated);
    EXPECT_EQ(from_encoding.activations.attention_probs, from_text.activations.attention_probs);
    EXPECT_EQ(from_encoding.activations.hidden_states, from_text.activations.hidden_states);
    EXPECT_EQ(from_encoding.rollout, from_text.rollout);
    EXPECT_EQ(from_encoding.row_stats, from_text.row_stats);
  }
}

// The profile's fields beside its label, one list for the CLI's JSON and the bindings.
TEST(HeadProfileTest, FractionsByName) {
  HeadProfile p;
  p.rows = 4;
  p.previous_token = 1;
  p.cls = 2;
  p.sep = 1;
  const auto fields = HeadProfileFractions(p);
  std::vector<std::string> names;
  for (const auto& [name, value] : fields) names.emplace_back(name);
  EXPECT_EQ(names, std::vector<std::string>({"previous_token", "next_token", "cls", "sep", "self", "punctuation",
                                             "mean_entropy", "mean_normalized_entropy", "mean_ratio_to_uniform"}));
  EXPECT_DOUBLE_EQ(fields[0].second, 0.25);
  EXPECT_DOUBLE_EQ(fields[2].second, 0.5);
  EXPECT_DOUBLE_EQ(fields[3].second, 0.25);
}

TEST_F(AnalyzeTextTest, RemovedHeadsKeepTheirAttentionAndChangeWhatFollows) {
  const std::string text = "the cat sat on the mat.";
  SentenceAnalysis plain, ablated;
  AnalysisOptions whole;  // the last layer's output too, to compare with the ablated pass's
  whole.outputs |= kOutputHiddenStates;
  ASSERT_TRUE(AnalyzeText(*model_, text, whole, &plain).ok());
  AnalysisOptions options;
  // TinyConfig: 2 layers of 4 heads. Remove layer 1's head 2 (counted from 1 as on the page).
  ASSERT_TRUE(ParseHeadList("1.2", model_->model().config(), &options.removed_heads).ok());
  ASSERT_EQ(options.removed_heads, std::vector<uint8_t>({0, 1, 0, 0, 0, 0, 0, 0}));
  ASSERT_TRUE(AnalyzeText(*model_, text, options, &ablated).ok());
  EXPECT_EQ(ablated.activations.removed_heads, options.removed_heads);
  const Activations& a = plain.activations;
  const Activations& b = ablated.activations;
  const size_t layer0 = static_cast<size_t>(a.heads) * a.tokens * a.tokens;
  // Layer 0's attention is computed before the removal takes effect, the removed head's
  // included; layer 1's input, and so its attention, changes.
  EXPECT_TRUE(std::equal(a.attention_probs.begin(), a.attention_probs.begin() + layer0,
                         b.attention_probs.begin()));
  EXPECT_NE(std::vector<float>(a.attention_probs.begin() + layer0, a.attention_probs.end()),
            std::vector<float>(b.attention_probs.begin() + layer0, b.attention_probs.end()));
  EXPECT_NE(a.hidden_states, b.hidden_states);

  // The same result through the encoder with Hugging Face's head mask by hand: removing a head
  // equals zeroing its slice of the context, which removing all of a layer's heads makes
  // the attention block's output its bias alone.
  options.removed_heads.assign(8, 1);
  ASSERT_TRUE(AnalyzeText(*model_, text, options, &ablated).ok());
  EXPECT_TRUE(std::equal(a.attention_probs.begin(), a.attention_probs.begin() + layer0,
                         ablated.activations.attention_probs.begin()));

  for (const char* bad : {"0.1", "3.1", "1.5", "1", "1.", ".1", "1.2.3", "a.b", "1.1,", "1.1,,2.2", "-1.1"}) {
    std::vector<uint8_t> flags;
    const Status status = ParseHeadList(bad, model_->model().config(), &flags);
    EXPECT_FALSE(status.ok()) << bad;
    EXPECT_HAS(status.message(), "L in 1..2 and H in 1..4");
  }
  std::vector<uint8_t> none;
  EXPECT_TRUE(ParseHeadList("", model_->model().config(), &none).ok());
  EXPECT_TRUE(none.empty());
}

TEST_F(AnalyzeTextTest, ValueNormsAreTheValuesCarriedThroughTheOutputProjection) {
  const std::string text = "a dog ran on the mat";
  AnalysisOptions options;
  options.outputs = kOutputValueNorms;
  SentenceAnalysis analysis;
  ASSERT_TRUE(AnalyzeText(*model_, text, options, &analysis).ok());
  const Activations& a = analysis.activations;
  const int32_t n = a.tokens, d = a.hidden, H = a.heads, dh = d / H;
  ASSERT_EQ(a.value_norms.size(), static_cast<size_t>(a.layers) * H * n);
  // By hand: v_j = x_j W_v^T + b_v from the layer's input, then || W_O[:, head] v_j[head] ||.
  const Weights& w = model_->model().weights();
  double worst = 0;
  for (int32_t l = 0; l < a.layers; ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    for (int32_t j = 0; j < n; ++j) {
      const Eigen::VectorXf x = a.HiddenState(l).row(j).transpose();
      const Eigen::VectorXf v = lw.value_weight * x + lw.value_bias;
      for (int32_t h = 0; h < H; ++h) {
        double norm = 0;
        for (int32_t r = 0; r < d; ++r) {
          double sum = 0;
          for (int32_t c = 0; c < dh; ++c) sum += double{lw.attention_output_weight(r, h * dh + c)} * v(h * dh + c);
          norm += sum * sum;
        }
        const float got = a.value_norms[(static_cast<size_t>(l) * H + h) * n + j];
        worst = std::max(worst, std::fabs(std::sqrt(norm) - got) / std::max(1.0, std::sqrt(norm)));
      }
    }
  }
  constexpr double kTolerance = 1e-5;  // relative, float32 products of length 16
  std::printf("value norms: max relative |diff| %.3g (tol %.0e)\n", worst, kTolerance);
  EXPECT_LE(worst, kTolerance);
  // Not asked for: not computed.
  ASSERT_TRUE(AnalyzeText(*model_, text, AnalysisOptions(), &analysis).ok());
  EXPECT_TRUE(analysis.activations.value_norms.empty());
}

TEST_F(AnalyzeTextTest, ValuesAndContextsAreWhatTheOutputProjectionMixes) {
  const std::string text = "a dog ran on the mat";
  AnalysisOptions options;
  options.outputs = kOutputValues;
  SentenceAnalysis analysis;
  ASSERT_TRUE(AnalyzeText(*model_, text, options, &analysis).ok());
  const Activations& a = analysis.activations;
  const int32_t n = a.tokens, d = a.hidden, H = a.heads, dh = d / H;
  ASSERT_EQ(a.values.size(), static_cast<size_t>(a.layers) * n * d);
  ASSERT_EQ(a.contexts.size(), a.values.size());
  // By hand, in double: v_j = x_j W_v^T + b_v, and head h's context of token i is
  // sum_j a_ij v_j over the head's columns.
  const Weights& w = model_->model().weights();
  double worst_value = 0, worst_context = 0;
  for (int32_t l = 0; l < a.layers; ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    std::vector<double> v(static_cast<size_t>(n) * d);
    for (int32_t j = 0; j < n; ++j) {
      for (int32_t r = 0; r < d; ++r) {
        double sum = lw.value_bias(r);
        for (int32_t c = 0; c < d; ++c) sum += double{lw.value_weight(r, c)} * a.HiddenState(l)(j, c);
        v[static_cast<size_t>(j) * d + r] = sum;
        worst_value = std::max(worst_value, std::fabs(sum - a.values[(static_cast<size_t>(l) * n + j) * d + r]));
      }
    }
    for (int32_t h = 0; h < H; ++h) {
      const ConstMatrixMap p = a.Attention(l, h);
      for (int32_t i = 0; i < n; ++i) {
        for (int32_t c = h * dh; c < (h + 1) * dh; ++c) {
          double sum = 0;
          for (int32_t j = 0; j < n; ++j) sum += double{p(i, j)} * v[static_cast<size_t>(j) * d + c];
          worst_context = std::max(worst_context, std::fabs(sum - a.contexts[(static_cast<size_t>(l) * n + i) * d + c]));
        }
      }
    }
  }
  constexpr double kTolerance = 1e-5;  // absolute, float32 sums of length d
  std::printf("values: max |diff| %.3g, contexts: %.3g (tol %.0e)\n", worst_value, worst_context, kTolerance);
  EXPECT_LE(worst_value, kTolerance);
  EXPECT_LE(worst_context, kTolerance);
  ASSERT_TRUE(AnalyzeText(*model_, text, AnalysisOptions(), &analysis).ok());
  EXPECT_TRUE(analysis.activations.values.empty());
  EXPECT_TRUE(analysis.activations.contexts.empty());
}

TEST_F(AnalyzeTextTest, MeanAblationReplacesAHeadsContextByItsMean) {
  const std::vector<std::string> sentences = {"a dog ran on the mat", "the cat sat."};
  std::vector<float> means;
  int64_t tokens = 0;
  ASSERT_TRUE(MeanHeadContexts(*model_, sentences, &means, &tokens).ok());
  const ModelConfig& c = model_->model().config();
  const int32_t L = static_cast<int32_t>(c.num_hidden_layers), H = static_cast<int32_t>(c.num_attention_heads);
  const int32_t d = static_cast<int32_t>(c.hidden_size), dh = d / H;
  ASSERT_EQ(means.size(), static_cast<size_t>(L) * H * dh);
  // The mean by hand over both sentences' contexts, every token.
  std::vector<double> sums(means.size(), 0.0);
  int64_t count = 0;
  AnalysisOptions options;
  options.outputs = kOutputValues;
  SentenceAnalysis analysis;
  for (const std::string& s : sentences) {
    ASSERT_TRUE(AnalyzeText(*model_, s, options, &analysis).ok());
    const Activations& a = analysis.activations;
    for (int32_t l = 0; l < L; ++l) {
      for (int32_t i = 0; i < a.tokens; ++i) {
        for (int32_t k = 0; k < d; ++k) sums[static_cast<size_t>(l) * d + k] += a.contexts[(static_cast<size_t>(l) * a.tokens + i) * d + k];
      }
    }
    count += a.tokens;
  }
  EXPECT_EQ(tokens, count);
  for (size_t k = 0; k < means.size(); ++k) EXPECT_NEAR(means[k], sums[k] / static_cast<double>(count), 1e-6);

  // Layer 2's head 3 replaced by its mean: its slice of every token's context is the mean, the
  // other heads' slices are those of the plain pass, and what follows changes.
  ASSERT_TRUE(AnalyzeText(*model_, sentences[0], options, &analysis).ok());
  const Activations plain = analysis.activations;
  const int32_t n = plain.tokens;
  const size_t k = static_cast<size_t>(1) * H + 2;
  ForwardOptions forward;
  forward.values = true;
  forward.removed_heads.assign(static_cast<size_t>(L) * H, 0);
  forward.removed_heads[k] = 1;
  forward.replacements = means;
  Activations replaced;
  ASSERT_TRUE(model_->encoder().Forward(plain.ids, &replaced, forward).ok());
  EXPECT_TRUE(replaced.replaced);
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t col = 0; col < d; ++col) {
      const size_t at = (static_cast<size_t>(1) * n + i) * d + col;
      const bool in_head = col >= 2 * dh && col < 3 * dh;
      EXPECT_EQ(replaced.contexts[at], in_head ? means[k * dh + (col - 2 * dh)] : plain.contexts[at]) << i << "," << col;
    }
  }
  EXPECT_NE(replaced.hidden_states, plain.hidden_states);
  // Replacing by zeros is the head mask (zero-ablation), bit for bit.
  forward.replacements.assign(means.size(), 0.0f);
  Activations zeroed, masked;
  ASSERT_TRUE(model_->encoder().Forward(plain.ids, &zeroed, forward).ok());
  forward.replacements.clear();
  ASSERT_TRUE(model_->encoder().Forward(plain.ids, &masked, forward).ok());
  EXPECT_FALSE(masked.replaced);
  EXPECT_EQ(zeroed.hidden_states, masked.hidden_states);
  // A resumed pass must have been replaced the same way, and a replacement of the wrong size
  // or with a non-finite value is refused.
  forward.first_layer = 2;
  Status status = model_->encoder().Forward(plain.ids, &zeroed, forward);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "same heads removed");
  forward.first_layer = 0;
  forward.replacements.assign(3, 0.0f);
  status = model_->encoder().Forward(plain.ids, &zeroed, forward);
  EXPECT_HAS(status.message(), "head replacements have 3 values");
  forward.replacements = means;
  forward.replacements[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_HAS(model_->encoder().Forward(plain.ids, &zeroed, forward).message(), "not a finite number");
}

TEST_F(AnalyzeTextTest, PositionClassesSayWhatPrecedesAndFollowsAToken) {
  SentenceAnalysis analysis;
  ASSERT_TRUE(AnalyzeText(*model_, "cat, dog sat.", AnalysisOptions(), &analysis).ok());
  // [CLS] cat , dog sat . [SEP]
  ASSERT_EQ(analysis.tokens(), 7);
  EXPECT_EQ(PositionClass(analysis, 1), 0 * 3 + 0);  // after [CLS], before punctuation
  EXPECT_EQ(PositionClass(analysis, 3), 1 * 3 + 2);  // after punctuation, before a token
  EXPECT_EQ(PositionClass(analysis, 4), 2 * 3 + 0);  // after a token, before punctuation
  EXPECT_EQ(PositionClass(analysis, 5), 2 * 3 + 1);  // the full stop: before [SEP]
  EXPECT_EQ(PositionClassName(0), "after [CLS], before punctuation");
  EXPECT_EQ(PositionClassName(8), "after another token, before another token");
  EXPECT_EQ(PositionClassName(9), "unknown");
}

TEST(LoadedModelTest, RefusesAModelWhoseLongestSentenceWouldExceedTheActivationBudget) {
  // Weights of a few MB, but 256 heads x 512 x 512 attention in each of 8 layers.
  ModelConfig c = testing::TinyConfig();
  c.hidden_size = 256;
  c.num_attention_heads = 256;
  c.num_hidden_layers = 8;
  c.intermediate_size = 1;
  c.max_position_embeddings = 512;
  c.vocab_size = 8;
  ASSERT_GT(Encoder::ActivationFloats(c, 512), MemoryBudget::kMaxActivationFloats);
  testing::ModelParts parts = testing::ConstantZeroModel(c);
  parts.vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nc\n";
  const std::vector<uint8_t> bytes = testing::Serialize(parts);
  std::unique_ptr<LoadedModel> loaded;
  const Status status = LoadedModel::FromBuffer(bytes.data(), bytes.size(), &loaded);
  ASSERT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "activation values in this model, more than this build allows");
  // The arithmetic is 64-bit: a config at the limits does not wrap.
  ModelConfig big;
  big.num_hidden_layers = ConfigLimits::kMaxLayers;
  big.num_attention_heads = ConfigLimits::kMaxHidden;
  big.hidden_size = ConfigLimits::kMaxHidden;
  big.intermediate_size = ConfigLimits::kMaxIntermediate;
  EXPECT_GT(Encoder::ActivationFloats(big, 1 << 16), uint64_t{1} << 54);  // L H n^2 alone
}

}  // namespace
}  // namespace attn
