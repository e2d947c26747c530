// Tests of the set statistics (core/statistics.h) on cases worked out by hand: ranks with ties,
// Spearman's rho, percentile intervals, the generator's range and the agreement null's
// expected count; and the word-row counts and target partition of a head profile
// (core/analysis.h) on a synthetic head.
#include "core/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/analysis.h"

namespace attn {
namespace {

TEST(StatisticsTest, RanksShareTheirMeanOnTies) {
  EXPECT_EQ(stats::Ranks({10, 20, 20, 5}), (std::vector<double>{2, 3.5, 3.5, 1}));
  EXPECT_EQ(stats::Ranks({1, 1, 1}), (std::vector<double>{2, 2, 2}));
  EXPECT_TRUE(stats::Ranks({}).empty());
}

TEST(StatisticsTest, SpearmanOnHandWorkedCases) {
  EXPECT_DOUBLE_EQ(stats::Spearman({1, 2, 3, 4}, {10, 20, 30, 400}), 1.0);
  EXPECT_DOUBLE_EQ(stats::Spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ranks 1 2 3 and 1 3 2, deviations (-1, 0, 1) and (-1, 1, 0): products sum to 1, squares
  // to 2 each, so rho = 1 / 2.
  EXPECT_DOUBLE_EQ(stats::Spearman({1, 2, 3}, {1, 3, 2}), 0.5);
  // With a tie: x ranks 1 2.5 2.5 4, y ranks 1 2 3 4; deviations (-1.5, 0, 0, 1.5) and
  // (-1.5, -0.5, 0.5, 1.5): 4.5 / sqrt(4.5 * 5).
  EXPECT_NEAR(stats::Spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(4.5 * 5.0), 1e-15);
  EXPECT_TRUE(std::isnan(stats::Spearman({1, 1, 1}, {1, 2, 3})));  // a constant side
  EXPECT_TRUE(std::isnan(stats::Spearman({1}, {1})));
  EXPECT_TRUE(std::isnan(stats::Spearman({1, 2}, {1, 2, 3})));
}

TEST(StatisticsTest, PercentileIntervalInterpolatesAsNumpy) {
  // numpy.percentile([1, 2, 3, 4, 5], [25, 75]) = [2, 4]; [2.5, 97.5] = [1.1, 4.9].
  const stats::Interval half = stats::PercentileInterval({5, 1, 4, 2, 3}, 0.5);
  EXPECT_DOUBLE_EQ(half.low, 2.0);
  EXPECT_DOUBLE_EQ(half.high, 4.0);
  const stats::Interval wide = stats::PercentileInterval({5, 1, 4, 2, 3, NAN}, 0.95);
  EXPECT_NEAR(wide.low, 1.1, 1e-12);
  EXPECT_NEAR(wide.high, 4.9, 1e-12);
  EXPECT_TRUE(std::isnan(stats::PercentileInterval({}, 0.95).low));
}

TEST(StatisticsTest, GeneratorStaysInRangeAndRepeatsFromItsSeed) {
  stats::Random a(7), b(7);
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 5000; ++i) {
    const uint32_t v = a.Below(5);
    ASSERT_LT(v, 5u);
    ASSERT_EQ(v, b.Below(5));
    ++seen[v];
  }
  for (int count : seen) EXPECT_GT(count, 850);  // 1000 expected each
  // splitmix64's first output from seed 0 (its published test value).
  EXPECT_EQ(stats::Random(0).Next(), 0xE220A8397B1DCDAFull);
}

TEST(StatisticsTest, AgreementNullKeepsBothDistributions) {
  // a picks head 0 twice and 1 twice, b the same: expected agreements (2*2 + 2*2) / 4 = 2.
  const stats::Agreement even = stats::AgreementWithNull({0, 0, 1, 1}, {0, 1, 0, 1}, 2000, 1);
  EXPECT_EQ(even.observed, 2);
  EXPECT_DOUBLE_EQ(even.expected, 2.0);
  EXPECT_GT(even.p_value, 0.5);  // 2 or more agreements in most pairings
  // One choice dominates both sides: chance alone gives 9*9/10 = 8.1 agreements of 10, far
  // from "1 in the number of choices".
  const stats::Agreement skewed =
      stats::AgreementWithNull({3, 3, 3, 3, 3, 3, 3, 3, 3, 1}, {3, 3, 3, 3, 3, 3, 3, 3, 3, 2}, 2000, 1);
  EXPECT_EQ(skewed.observed, 9);
  EXPECT_DOUBLE_EQ(skewed.expected, 8.1);
  EXPECT_GT(skewed.p_value, 0.05);
  // Perfect agreement of four distinct choices: expected 1, and a small p-value (1/24 of
  // pairings agree fully).
  const stats::Agreement perfect = stats::AgreementWithNull({0, 1, 2, 3}, {0, 1, 2, 3}, 5000, 3);
  EXPECT_EQ(perfect.observed, 4);
  EXPECT_DOUBLE_EQ(perfect.expected, 1.0);
  EXPECT_NEAR(perfect.p_value, 1.0 / 24.0, 0.015);
}

TEST(StatisticsTest, AgreementNullCanKeepAClassOfEachItem) {
  // Two classes, each agreeing perfectly with itself: class 0 always picks 0, class 1 always
  // picks 1. Ignoring classes, chance gives (2*2 + 2*2) / 4 = 2 of the 4 agreements; keeping
  // them, every shuffle within a class agrees as observed: expected 4, p = 1.
  const std::vector<int32_t> a = {0, 0, 1, 1}, b = {0, 0, 1, 1}, classes = {7, 7, 3, 3};
  const stats::Agreement plain = stats::AgreementWithNull(a, b, 1000, 5);
  const stats::Agreement kept = stats::AgreementWithNull(a, b, 1000, 5, classes);
  EXPECT_EQ(plain.observed, 4);
  EXPECT_DOUBLE_EQ(plain.expected, 2.0);
  EXPECT_LT(plain.p_value, 0.3);  // 4 of 4 in 1 of the 6 distinct pairings
  EXPECT_EQ(kept.observed, 4);
  EXPECT_DOUBLE_EQ(kept.expected, 4.0);
  EXPECT_DOUBLE_EQ(kept.p_value, 1.0);
  // Class by class: {0, 1} x {0, 1} gives 1 of 2, {2, 2, 5} x {2, 5, 2} gives (2*2 + 1*1)/3.
  const stats::Agreement mixed =
      stats::AgreementWithNull({0, 1, 2, 2, 5}, {0, 1, 2, 5, 2}, 100, 5, {0, 0, 1, 1, 1});
  EXPECT_EQ(mixed.observed, 3);
  EXPECT_DOUBLE_EQ(mixed.expected, 1.0 + 5.0 / 3.0);
  // One class for every item is no class at all: the same shuffles, the same p-value.
  const std::vector<int32_t> x = {0, 1, 2, 3, 0, 1, 2, 3, 1, 1}, y = {0, 1, 2, 0, 0, 2, 2, 3, 1, 0};
  const stats::Agreement none = stats::AgreementWithNull(x, y, 500, 9);
  const stats::Agreement one = stats::AgreementWithNull(x, y, 500, 9, std::vector<int32_t>(x.size(), 4));
  EXPECT_DOUBLE_EQ(none.expected, one.expected);
  EXPECT_DOUBLE_EQ(none.p_value, one.p_value);
}

TEST(StatisticsTest, ClusterResamplesDrawWholeSentences) {
  stats::BootstrapOptions options;
  options.resamples = 50;
  const auto draws = stats::ClusterResamples(7, options);
  ASSERT_EQ(draws.size(), 50u);
  for (const auto& draw : draws) {
    ASSERT_EQ(draw.size(), 7u);
    for (uint32_t s : draw) EXPECT_LT(s, 7u);
  }
  EXPECT_EQ(draws, stats::ClusterResamples(7, options));  // the same seed, the same draws
}

TEST(HeadProfileWordRowsTest, SharesExcludeRowsWithoutANeighbour) {
  // [CLS] w1 w2 , w3 [SEP]: every row's argmax on the previous position (row 0 on itself).
  const int32_t n = 6;
  const std::vector<TokenRole> roles = {TokenRole::kCls, TokenRole::kOrdinary, TokenRole::kOrdinary,
                                        TokenRole::kPunctuation, TokenRole::kOrdinary, TokenRole::kSep};
  std::vector<float> attention(n * n, 0.0f);
  for (int32_t i = 0; i < n; ++i) attention[i * n + (i == 0 ? 0 : i - 1)] = 1.0f;
  HeadProfile p;
  ASSERT_TRUE(p.Add(attention.data(), n, roles).ok());
  EXPECT_EQ(p.word_rows, 3);                // w1, w2, w3
  EXPECT_EQ(p.word_rows_with_previous, 2);  // w1's previous position is [CLS]
  EXPECT_EQ(p.word_previous, 2);
  EXPECT_EQ(p.word_rows_with_next, 2);      // w3's next position is [SEP]
  EXPECT_EQ(p.word_next, 0);
  // Partition: rows 0 (on itself, [CLS]) and 1 (on [CLS]) fall on a special position; rows 2
  // to 5 on the previous text token (w1, w2, ',' and w3), punctuation or not.
  EXPECT_EQ(p.target_special, 2);
  EXPECT_EQ(p.target_previous, 4);
  EXPECT_EQ(p.target_self + p.target_next + p.target_punctuation + p.target_other, 0);
  EXPECT_EQ(p.target_special + p.target_self + p.target_previous + p.target_next + p.target_punctuation +
                p.target_other,
            p.rows);
  HeadProfile twice = p;
  twice.Merge(p);
  EXPECT_EQ(twice.rows, 2 * p.rows);
  EXPECT_EQ(twice.word_previous, 4);
  EXPECT_DOUBLE_EQ(twice.entropy_sum, 2 * p.entropy_sum);
  EXPECT_EQ(twice.Label(), p.Label());
}

}  // namespace
}  // namespace attn
