// Tests of the per-row softmax and statistics (core/row_math.h) against double-precision
// references, over random rows and the edge cases: all equal, one huge, -inf entries, ties,
// n = 1 and 512, lengths that leave a partial vector. Built natively (the Eigen expressions) and
// in the wasm-asan build (the SIMD128 polynomials, run by Node), where the bounds stated in
// row_math.h are the ones checked. Each test prints its largest error.
#include "core/row_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "core/kernels.h"

namespace attn {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kUnitRoundoff = 1.0 / (1 << 24);

double Gamma(int m) { return m * kUnitRoundoff / (1 - m * kUnitRoundoff); }

std::vector<float> Uniform(size_t count, float low, float high, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> v(count);
  for (float& x : v) x = uniform(rng);
  return v;
}

TEST(RowMathTest, ExpWithinItsBound) {
  std::mt19937 rng(7);
  std::vector<float> x = Uniform(200000, kExpMin, 88.0f, rng);
  for (float edge : {kExpMin, -87.0f, -20.0f, -1.0f, -0.3465736f, -1e-7f, 0.0f, 1e-7f, 0.3465736f,
                     1.0f, 20.0f, 88.0f}) {
    x.push_back(edge);
  }
  std::vector<float> y = x;
  ExpInPlace(y.data(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    const double relative = std::abs(y[i] - exact) / exact;
    worst = std::max(worst, relative);
    ASSERT_LE(relative, kExpRelativeError) << "exp(" << x[i] << ") = " << y[i] << ", exact " << exact;
  }
  std::printf("exp (%s): largest relative error %.3g over %zu values (bound %.3g)\n", KernelName(),
              worst, x.size(), kExpRelativeError);
}

TEST(RowMathTest, ExpBelowTheRangeIsZeroOrTiny) {
  std::vector<float> x = {-87.5f, -88.0f, -100.0f, -103.0f, -1e30f, -kInf,
                          std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> y = x;
  ExpInPlace(y.data(), y.size());
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    EXPECT_GE(y[i], 0.0f) << x[i];
    EXPECT_LE(y[i], std::numeric_limits<float>::min()) << x[i];  // under 1.2e-38
  }
  // The SIMD128 polynomial gives exactly 0 below its range; Eigen's vectorised exp clamps its
  // input and gives a denormal there (under FLT_MIN, checked above).
  if (SimdKernels()) EXPECT_EQ(y[5], 0.0f) << "exp(-inf) must be 0: a masked score gives no weight";
  EXPECT_TRUE(std::isnan(y.back())) << "exp(NaN) must stay NaN";
}

TEST(RowMathTest, LogWithinItsBound) {
  std::mt19937 rng(11);
  std::vector<float> x = Uniform(100000, 0.0f, 1.0f, rng);  // probabilities, as the entropy reads
  const std::vector<float> wide = Uniform(100000, -126.0f, 127.0f, rng);
  for (float e : wide) x.push_back(std::exp2(e));
  for (float edge : {std::numeric_limits<float>::min(), 1e-30f, 1e-7f, 0.5f, 0.70710677f, 0.70710683f,
                     0.99999994f, 1.0f, 1.0000001f, 2.0f, 1e30f, std::numeric_limits<float>::max()}) {
    x.push_back(edge);
  }
  std::vector<float> y = x;
  LogInPlace(y.data(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::log(std::max(static_cast<double>(x[i]), double{std::numeric_limits<float>::min()}));
    const double bound = kLogAbsoluteError + kLogRelativeError * std::abs(exact);
    const double error = std::abs(y[i] - exact);
    worst = std::max(worst, error / bound);
    ASSERT_LE(error, bound) << "log(" << x[i] << ") = " << y[i] << ", exact " << exact;
  }
  std::printf("log (%s): largest error %.3g of its bound over %zu values\n", KernelName(), worst,
              x.size());
}

TEST(RowMathTest, LogOfZeroIsLogOfTheSmallestNormalAndNanStays) {
  std::vector<float> x = {0.0f, 1e-40f, std::numeric_limits<float>::quiet_NaN()};
  LogInPlace(x.data(), x.size());
  const double floor = std::log(double{std::numeric_limits<float>::min()});
  EXPECT_NEAR(x[0], floor, 1e-5);
  EXPECT_NEAR(x[1], floor, 1e-5);
  EXPECT_TRUE(std::isnan(x[2]));
}

// Softmax in double, for the reference.
std::vector<double> SoftmaxDouble(const std::vector<float>& s) {
  const double max = *std::max_element(s.begin(), s.end());
  std::vector<double> p(s.size());
  double sum = 0;
  for (size_t j = 0; j < s.size(); ++j) sum += p[j] = std::exp(static_cast<double>(s[j]) - max);
  for (double& v : p) v /= sum;
  return p;
}

void ExpectSoftmax(const std::vector<float>& scores, double* worst) {
  std::vector<float> row = scores;
  SoftmaxRow(row.data(), static_cast<int32_t>(row.size()));
  const std::vector<double> exact = SoftmaxDouble(scores);
  const double max = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (size_t j = 0; j < row.size(); ++j) {
    sum += row[j];
    // exp's relative bound; the float subtraction s - max, off by up to u |s - max|, which exp
    // turns into that relative error; the sum's and the scaling's rounding; 1.2e-38 absolute for
    // weights that underflow.
    const double shifted = kUnitRoundoff * std::abs(scores[j] - max);
    const double bound = (kExpRelativeError + shifted + 4 * kUnitRoundoff) * exact[j] + 1.2e-38;
    const double error = std::abs(row[j] - exact[j]);
    *worst = std::max(*worst, error / (exact[j] + 1e-30));
    ASSERT_LE(error, bound) << "n = " << row.size() << ", position " << j;
  }
  EXPECT_NEAR(sum, 1.0, Gamma(static_cast<int>(row.size()) + 2)) << "n = " << row.size();
}

TEST(RowMathTest, SoftmaxMatchesDoubleOnRandomRows) {
  std::mt19937 rng(3);
  double worst = 0;
  for (int n : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64, 127, 128, 255, 511, 512}) {
    for (float spread : {0.1f, 3.0f, 30.0f}) ExpectSoftmax(Uniform(n, -spread, spread, rng), &worst);
  }
  std::printf("softmax (%s): largest relative error of a weight %.3g\n", KernelName(), worst);
}

TEST(RowMathTest, SoftmaxEdgeCases) {
  double worst = 0;
  ExpectSoftmax(std::vector<float>(512, 2.5f), &worst);  // all equal: 1/512 each
  std::vector<float> row = {5.0f};
  SoftmaxRow(row.data(), 1);
  EXPECT_EQ(row[0], 1.0f);

  std::vector<float> huge(37, 0.0f);
  huge[20] = 1e30f;  // one huge score: one-hot
  SoftmaxRow(huge.data(), 37);
  // Exactly 0 in the SIMD build; natively Eigen's exp leaves a denormal (see above).
  const auto zero = [](float w) { return SimdKernels() ? w == 0.0f : w >= 0.0f && w < std::numeric_limits<float>::min(); };
  for (int j = 0; j < 37; ++j) {
    if (j == 20) EXPECT_EQ(huge[j], 1.0f);
    else EXPECT_TRUE(zero(huge[j])) << j << ": " << huge[j];
  }

  std::vector<float> masked = {1.0f, -kInf, 2.0f, -kInf, 0.5f, -kInf};  // -inf: masked out
  SoftmaxRow(masked.data(), 6);
  const std::vector<double> exact = SoftmaxDouble({1.0f, -1e30f, 2.0f, -1e30f, 0.5f, -1e30f});
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(masked[j], exact[j], 1e-6) << j;
  EXPECT_TRUE(zero(masked[1])) << masked[1];
  EXPECT_TRUE(zero(masked[5])) << masked[5];  // in the partial vector
}

struct Reference {
  double max, sum, entropy, terms;  // terms: sum |p log p|, for the summation bound
  int32_t argmax;
};

Reference SummarizeDouble(const std::vector<float>& p) {
  Reference r{-kInf, 0, 0, 0, 0};
  for (size_t j = 0; j < p.size(); ++j) {
    if (p[j] > r.max) r = {p[j], r.sum, r.entropy, r.terms, static_cast<int32_t>(j)};
    r.sum += p[j];
    const double term = p[j] * std::log(std::max(double{p[j]}, double{std::numeric_limits<float>::min()}));
    r.entropy -= term;
    r.terms += std::abs(term);
  }
  return r;
}

void ExpectSummary(const std::vector<float>& p, double* worst) {
  const RowSummary s = SummarizeRow(p.data(), static_cast<int32_t>(p.size()));
  const Reference r = SummarizeDouble(p);
  EXPECT_EQ(s.max, r.max) << "n = " << p.size();
  EXPECT_EQ(s.argmax, r.argmax) << "n = " << p.size() << ": the first position of the maximum";
  EXPECT_NEAR(s.sum, r.sum, 1e-12) << "n = " << p.size();
  // Each term's log error (relative and absolute parts, times p), then float summation.
  const double bound = kLogAbsoluteError * r.sum + kLogRelativeError * r.terms +
                       Gamma(static_cast<int>(p.size()) + 1) * r.terms + 1e-30;
  *worst = std::max(*worst, std::abs(s.entropy - r.entropy) / bound);
  EXPECT_LE(std::abs(s.entropy - r.entropy), bound) << "n = " << p.size();
}

TEST(RowMathTest, SummaryMatchesDoubleOnRandomRowsAndEdgeCases) {
  std::mt19937 rng(5);
  double worst = 0;
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 100, 511, 512}) {
    for (float spread : {0.1f, 3.0f, 30.0f}) {
      std::vector<float> p = Uniform(n, -spread, spread, rng);
      SoftmaxRow(p.data(), n);
      ExpectSummary(p, &worst);
    }
    ExpectSummary(std::vector<float>(n, 1.0f / n), &worst);  // uniform: entropy log n, argmax 0
    std::vector<float> one_hot(n, 0.0f);
    one_hot[n - 1] = 1.0f;  // the maximum in the last, partial vector
    ExpectSummary(one_hot, &worst);
    std::vector<float> ties(n, 0.0f);
    for (int j = n / 3; j < n; j += 2) ties[j] = 0.25f;  // ties across lanes: the first wins
    ExpectSummary(ties, &worst);
  }
  const std::vector<float> uniform(512, 1.0f / 512);
  EXPECT_NEAR(SummarizeRow(uniform.data(), 512).entropy, std::log(512.0), 1e-5);
  EXPECT_EQ(SummarizeRow(uniform.data(), 0).sum, 0.0);  // an empty row: the zero summary
  std::printf("row summary (%s): largest entropy error %.3g of its bound\n", KernelName(), worst);
}

// The fused softmax and summary: the weights it stores are the plain softmax's of the scaled
// scores, bit for bit; max, argmax and sum are SummarizeRow's of those weights; the entropy,
// taken from the normaliser, is within its bound of the exact entropy of the softmax of the
// scaled scores (in double), and close to SummarizeRow's of the stored weights.
void ExpectSoftmaxSummary(const std::vector<float>& scores, float scale, double* worst, double* apart) {
  const int32_t n = static_cast<int32_t>(scores.size());
  std::vector<float> fused = scores, plain = scores;
  const RowSummary s = SoftmaxRowSummary(fused.data(), n, scale);
  for (float& x : plain) x *= scale;
  const std::vector<float> scaled = plain;
  SoftmaxRow(plain.data(), n);
  ASSERT_EQ(fused, plain) << "n = " << n << ", scale " << scale;
  const RowSummary read = SummarizeRow(plain.data(), n);
  EXPECT_EQ(s.max, read.max) << "n = " << n;
  EXPECT_EQ(s.argmax, read.argmax) << "n = " << n;
  EXPECT_EQ(s.sum, read.sum) << "n = " << n;

  const double m = *std::max_element(scaled.begin(), scaled.end());
  double z = 0, a = 0, range = 0;
  for (float x : scaled) {
    const double e = std::exp(x - m);
    z += e;
    if (e > 0) a += e * (x - m);
    if (e > 1e-30) range = std::max(range, m - x);
  }
  const double exact = std::log(z) - a / z;
  // exp's relative error, the rounding of x - m (u |x - m|) and of e (x - m), and the float
  // partial sums of 16 terms move Z and sum e (x - m) by a relative eta each; the entropy then
  // moves by at most eta (1 + 2 H), H >= the mean |x - m| under p. Then the float result's own
  // rounding.
  const double eta = kExpRelativeError + kUnitRoundoff * (range + 2) + Gamma(16);
  const double bound = eta * (1 + 2 * exact) + kUnitRoundoff * exact + 1e-12;
  *worst = std::max(*worst, std::abs(s.entropy - exact) / bound);
  EXPECT_LE(std::abs(s.entropy - exact), bound) << "n = " << n << ", scale " << scale;
  *apart = std::max(*apart, static_cast<double>(std::abs(s.entropy - read.entropy)));
}

TEST(RowMathTest, FusedSoftmaxSummaryMatchesTheTwoPassesAndDouble) {
  std::mt19937 rng(13);
  double worst = 0, apart = 0;
  for (int n : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64, 127, 128, 255, 511, 512}) {
    for (float spread : {0.1f, 3.0f, 30.0f, 300.0f}) {
      for (float scale : {1.0f, 0.125f, 0.37f}) ExpectSoftmaxSummary(Uniform(n, -spread, spread, rng), scale, &worst, &apart);
    }
    ExpectSoftmaxSummary(std::vector<float>(n, 2.5f), 0.125f, &worst, &apart);  // uniform: log n
    std::vector<float> ties(n, -1.0f);
    for (int j = n / 3; j < n; j += 2) ties[j] = 4.0f;  // tied maxima across lanes: the first wins
    ExpectSoftmaxSummary(ties, 1.0f, &worst, &apart);
    std::vector<float> huge(n, 0.0f);
    huge[n - 1] = 1e30f;  // one-hot, in the last (partial) vector: entropy 0
    ExpectSoftmaxSummary(huge, 0.125f, &worst, &apart);
  }
  std::vector<float> masked = {1.0f, -kInf, 2.0f, -kInf, 0.5f, -kInf};  // -inf adds no NaN
  const RowSummary s = SoftmaxRowSummary(masked.data(), 6, 1.0f);
  EXPECT_FALSE(std::isnan(s.entropy));
  EXPECT_NEAR(s.entropy, SummarizeRow(masked.data(), 6).entropy, 1e-6);
  std::vector<float> uniform(512, 0.0f);
  EXPECT_NEAR(SoftmaxRowSummary(uniform.data(), 512, 1.0f).entropy, std::log(512.0), 1e-6);
  std::printf("fused softmax summary (%s): largest entropy error %.3g of its bound; largest "
              "|entropy - entropy re-read from the stored row| %.3g\n", KernelName(), worst, apart);
}

}  // namespace
}  // namespace attn
