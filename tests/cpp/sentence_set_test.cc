// The lens study over a sentence set (core/sentence_set.h: MeasureLensFaithfulness and
// SummarizeLensFaithfulness) on a random tiny model: which words become targets, each target's
// rank correlations against core/lenses.h run directly, the share sums against the head-averaged
// attention and the lenses recomputed here, undefined correlations counted, and the summary's
// means and intervals. tests/py/claims_check.py re-derives the same numbers on the shipped model
// with independent code.
#include "core/sentence_set.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "test_model_writer.h"

namespace attn {
namespace {

class LensSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<uint8_t> bytes =
        testing::Serialize(testing::RandomModel(testing::TinyConfig(), 23, false, true));
    ASSERT_TRUE(LoadedModel::FromBuffer(bytes.data(), bytes.size(), &model_).ok());
  }

  // The sentence's unmasked analysis with the values kept, as the study makes it.
  SentenceAnalysis Analyse(const std::string& text, std::vector<int32_t> masked = {}) {
    AnalysisOptions options;
    options.outputs = kOutputValues;
    options.masked_positions = std::move(masked);
    SentenceAnalysis analysis;
    EXPECT_TRUE(AnalyzeText(*model_, text, options, &analysis).ok());
    return analysis;
  }

  // Two ordinary sentences and one too short for any correlation: "a cat." has two whole words,
  // and masking one leaves two positions to occlude (the other word and the full stop), under
  // the 3 a rank correlation needs.
  const std::vector<std::string> sentences_ = {"the cat sat on the mat, a dog ran.", "a cat.",
                                               "the dogs sat on a mat."};
  std::unique_ptr<LoadedModel> model_;
};

TEST_F(LensSetTest, EveryWholeWordIsATargetAndItsRhosAreTheLensesOwn) {
  std::vector<TargetFaithfulness> targets;
  std::vector<SentenceLensSums> sums;
  ASSERT_TRUE(MeasureLensFaithfulness(*model_, sentences_, &targets, &sums).ok());
  ASSERT_EQ(sums.size(), sentences_.size());
  ASSERT_GE(targets.size(), 14u);  // 9 + 2 + 5 whole words ("dogs" is two pieces)
  size_t next = 0;
  for (size_t s = 0; s < sentences_.size(); ++s) {
    const SentenceAnalysis plain = Analyse(sentences_[s]);
    for (int32_t t = 0; t < plain.tokens(); ++t) {
      if (!IsWholeWord(plain, t)) continue;
      ASSERT_LT(next, targets.size());
      const TargetFaithfulness& x = targets[next++];
      EXPECT_EQ(x.sentence, static_cast<int32_t>(s));
      EXPECT_EQ(x.token, t);
      EXPECT_EQ(x.id, plain.encoding.tokens[static_cast<size_t>(t)].id);
      // The lenses of the masked sentence with t as the target, computed here.
      Lenses lenses;
      LensOptions options;
      options.target = t;
      ASSERT_TRUE(ComputeLenses(*model_, Analyse(sentences_[s], {t}), options, &lenses).ok());
      EXPECT_EQ(x.top1, lenses.target_top1);
      EXPECT_DOUBLE_EQ(x.logprob, lenses.target_logprob);
      // [CLS], [SEP] and the target itself are not occluded.
      EXPECT_EQ(x.positions, plain.tokens() - 3);
      ASSERT_EQ(x.occlusion.size(), static_cast<size_t>(plain.tokens()));
      EXPECT_TRUE(std::isnan(x.occlusion[0]) && std::isnan(x.occlusion.back()) &&
                  std::isnan(x.occlusion[static_cast<size_t>(t)]));
      std::vector<double> effect, nearness;
      for (int32_t j = 0; j < plain.tokens(); ++j) {
        const double o = x.occlusion[static_cast<size_t>(j)];
        EXPECT_EQ(std::isnan(o), std::isnan(lenses.occlusion[static_cast<size_t>(j)]));
        if (std::isnan(o)) continue;
        EXPECT_DOUBLE_EQ(o, lenses.occlusion[static_cast<size_t>(j)]);
        effect.push_back(o);
        nearness.push_back(-std::abs(j - t));
      }
      for (int k = 0; k < kFaithfulnessLenses; ++k) {
        if (std::isnan(lenses.faithfulness[k])) {
          EXPECT_TRUE(std::isnan(x.rho[k])) << SetLensName(k);
        } else {
          EXPECT_DOUBLE_EQ(x.rho[k], lenses.faithfulness[k]) << SetLensName(k);
        }
      }
      const double distance = SpearmanRho(effect, nearness);
      EXPECT_EQ(std::isnan(x.rho[kDistanceBaseline]), std::isnan(distance));
      if (!std::isnan(distance)) EXPECT_DOUBLE_EQ(x.rho[kDistanceBaseline], distance);
    }
  }
  EXPECT_EQ(next, targets.size());
}

TEST_F(LensSetTest, MeasuredInPartsTheTargetsAreTheSame) {
  // The CLI measures one sentence at a time on several threads, naming each by `first`.
  std::vector<TargetFaithfulness> whole, part, parts;
  std::vector<SentenceLensSums> sums, part_sums;
  ASSERT_TRUE(MeasureLensFaithfulness(*model_, sentences_, &whole, &sums).ok());
  for (size_t s = 0; s < sentences_.size(); ++s) {
    ASSERT_TRUE(MeasureLensFaithfulness(*model_, {sentences_[s]}, &part, &part_sums, {}, s).ok());
    ASSERT_EQ(part_sums.size(), 1u);
    EXPECT_EQ(part_sums[0].rows, sums[s].rows);
    parts.insert(parts.end(), part.begin(), part.end());
  }
  ASSERT_EQ(parts.size(), whole.size());
  for (size_t w = 0; w < whole.size(); ++w) {
    EXPECT_EQ(parts[w].sentence, whole[w].sentence);
    EXPECT_EQ(parts[w].token, whole[w].token);
    for (int k = 0; k < kSetLenses; ++k) {
      EXPECT_TRUE(parts[w].rho[k] == whole[w].rho[k] || (std::isnan(parts[w].rho[k]) && std::isnan(whole[w].rho[k])));
    }
  }
}

TEST_F(LensSetTest, ShareSumsFollowTheirDefinition) {
  std::vector<TargetFaithfulness> targets;
  std::vector<SentenceLensSums> sums;
  ASSERT_TRUE(MeasureLensFaithfulness(*model_, {sentences_[0]}, &targets, &sums).ok());
  const SentenceAnalysis a = Analyse(sentences_[0]);
  Lenses lenses;
  ASSERT_TRUE(ComputeLenses(*model_, a, LensOptions(), &lenses).ok());
  const int32_t L = a.activations.layers, n = a.tokens();
  int32_t rows = 0;
  for (TokenRole role : a.roles) rows += role == TokenRole::kOrdinary;
  ASSERT_EQ(sums[0].rows, rows);
  for (int32_t l = 0; l < L; ++l) {
    const RowMajorMatrix mean = HeadAverage(a.activations, l);
    double expected[kShareReadings][kShareCategories] = {};
    double mixing = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (a.roles[static_cast<size_t>(i)] != TokenRole::kOrdinary) continue;
      mixing += lenses.mixing_ratio[static_cast<size_t>(l * n + i)];
      for (int r = 0; r < kShareReadings; ++r) {
        std::vector<double> row(static_cast<size_t>(n));
        double total = 0;
        for (int32_t j = 0; j < n; ++j) {
          const size_t at = (static_cast<size_t>(l) * n + i) * n + j;
          row[static_cast<size_t>(j)] = r == 0 ? mean(i, j) : r == 1 ? lenses.weighted_layer[at] : lenses.alti[at];
          total += row[static_cast<size_t>(j)];
        }
        expected[r][0] += row[0] / total;  // [CLS] opens every sentence
        expected[r][1] += row[static_cast<size_t>(n - 1)] / total;  // [SEP] closes it
        for (int32_t j = 0; j < n; ++j) {
          if (a.roles[static_cast<size_t>(j)] == TokenRole::kPunctuation) expected[r][2] += row[static_cast<size_t>(j)] / total;
        }
        expected[r][3] += row[static_cast<size_t>(i)] / total;
      }
    }
    EXPECT_NEAR(sums[0].mixing_ratio[static_cast<size_t>(l)], mixing, 1e-9);
    for (int r = 0; r < kShareReadings; ++r) {
      double all = 0;
      for (int c = 0; c < kShareCategories; ++c) {
        EXPECT_NEAR(sums[0].Share(r, c, l, L), expected[r][c], 1e-9) << ShareReadingName(r) << " " << ShareCategoryName(c);
        all += sums[0].Share(r, c, l, L);
      }
      // The categories do not overlap, so a row's shares sum to at most 1.
      EXPECT_LE(all, rows + 1e-9);
    }
  }
}

TEST_F(LensSetTest, SummaryCountsUndefinedRhosAndItsIntervalsHoldTheirMeans) {
  std::vector<TargetFaithfulness> targets;
  std::vector<SentenceLensSums> sums;
  ASSERT_TRUE(MeasureLensFaithfulness(*model_, sentences_, &targets, &sums).ok());
  stats::BootstrapOptions bootstrap;
  bootstrap.resamples = 200;
  const int32_t L = static_cast<int32_t>(model_->model().config().num_hidden_layers);
  const LensSetSummary summary = SummarizeLensFaithfulness(targets, sums, L, bootstrap);
  EXPECT_EQ(summary.sentences, 3);
  EXPECT_EQ(summary.targets, static_cast<int64_t>(targets.size()));
  // "a cat." gives two targets with two positions each: every rho undefined.
  int64_t short_targets = 0;
  for (const TargetFaithfulness& x : targets) {
    if (x.sentence == 1) {
      ++short_targets;
      EXPECT_EQ(x.positions, 2);
    }
  }
  EXPECT_EQ(short_targets, 2);
  double total_best = 0;
  for (int k = 0; k < kSetLenses; ++k) {
    const LensSetSummary::Lens& lens = summary.lenses[k];
    int64_t undefined = 0;
    double sum = 0;
    for (const TargetFaithfulness& x : targets) {
      if (std::isnan(x.rho[k])) ++undefined;
      else sum += x.rho[k];
    }
    EXPECT_GE(undefined, short_targets) << SetLensName(k);
    EXPECT_EQ(lens.undefined, undefined) << SetLensName(k);
    EXPECT_EQ(lens.defined + lens.undefined, summary.targets);
    EXPECT_NEAR(lens.mean_rho.value, sum / static_cast<double>(lens.defined), 1e-12);
    EXPECT_LE(lens.mean_rho.interval.low, lens.mean_rho.value) << SetLensName(k);
    EXPECT_GE(lens.mean_rho.interval.high, lens.mean_rho.value) << SetLensName(k);
    total_best += lens.best_share;
  }
  EXPECT_NEAR(total_best, 1.0, 1e-12);  // each resample has one best lens
  EXPECT_EQ(summary.lenses[kDistanceBaseline].best_share, 0.0);
  for (int k = 0; k < kFaithfulnessLenses; ++k) {
    EXPECT_GE(summary.lenses[summary.best].mean_rho.value, summary.lenses[k].mean_rho.value);
  }
  // Every pair once, each a paired mean over the targets where both are defined.
  ASSERT_EQ(summary.differences.size(), static_cast<size_t>(kSetLenses * (kSetLenses - 1) / 2));
  for (const LensSetSummary::Difference& d : summary.differences) {
    EXPECT_LT(d.a, d.b);
    double sum = 0;
    int64_t both = 0;
    for (const TargetFaithfulness& x : targets) {
      if (std::isnan(x.rho[d.a]) || std::isnan(x.rho[d.b])) continue;
      sum += x.rho[d.a] - x.rho[d.b];
      ++both;
    }
    EXPECT_EQ(d.targets, both);
    EXPECT_NEAR(d.mean.value, sum / static_cast<double>(both), 1e-12);
    EXPECT_LE(d.mean.interval.low, d.mean.interval.high);
  }
  // Shares and mixing: the pooled mean over the set's ordinary-token rows, inside its interval.
  int64_t rows = 0;
  for (const SentenceLensSums& s : sums) rows += s.rows;
  EXPECT_EQ(summary.rows, rows);
  ASSERT_EQ(summary.shares.size(), static_cast<size_t>(kShareReadings * kShareCategories * L));
  ASSERT_EQ(summary.share_minus_attention.size(), static_cast<size_t>((kShareReadings - 1) * kShareCategories * L));
  for (int r = 0; r < kShareReadings; ++r) {
    for (int c = 0; c < kShareCategories; ++c) {
      for (int32_t l = 0; l < L; ++l) {
        double sum = 0;
        for (const SentenceLensSums& s : sums) sum += s.Share(r, c, l, L);
        const Estimate& e = summary.shares[static_cast<size_t>((r * kShareCategories + c) * L + l)];
        EXPECT_NEAR(e.value, sum / static_cast<double>(rows), 1e-12);
        EXPECT_LE(e.interval.low, e.value + 1e-12);
        EXPECT_GE(e.interval.high, e.value - 1e-12);
        if (r == 0) continue;
        const Estimate& attention = summary.shares[static_cast<size_t>(c * L + l)];
        const Estimate& minus = summary.share_minus_attention[static_cast<size_t>(((r - 1) * kShareCategories + c) * L + l)];
        EXPECT_NEAR(minus.value, e.value - attention.value, 1e-12);
      }
    }
  }
  ASSERT_EQ(summary.mixing_ratio.size(), static_cast<size_t>(L));
  for (int32_t l = 0; l < L; ++l) {
    const Estimate& e = summary.mixing_ratio[static_cast<size_t>(l)];
    EXPECT_GT(e.value, 0.0);
    EXPECT_LT(e.value, 1.0);
    EXPECT_LE(e.interval.low, e.value + 1e-12);
    EXPECT_GE(e.interval.high, e.value - 1e-12);
  }
}

TEST_F(LensSetTest, AnEmptySetIsRefused) {
  std::vector<TargetFaithfulness> targets;
  std::vector<SentenceLensSums> sums;
  EXPECT_FALSE(MeasureLensFaithfulness(*model_, {}, &targets, &sums).ok());
}

}  // namespace
}  // namespace attn
