// Tests of the matrix kernels (core/kernels.h) against plain scalar loops, on odd shapes: n rows
// that leave a single-row tile, K and N that are not multiples of the 16-column panel, strided
// inputs and outputs. Built natively (the Eigen path) and in the wasm-asan build (the SIMD128
// kernels, run by Node).
//
// The bar: each output against a double-precision loop, within the worst-case bound of float
// summation, gamma(K + 1) * (sum_k |x_k w_k| + |b|) with gamma(m) = m u / (1 - m u), u = 2^-24,
// which holds for any summation order (Eigen's blocked, FMA sums natively; the kernel's k-order
// sums in wasm); GELU adds kGeluTolerance (Eigen's erf is within a few ulps). In the SIMD build
// the kernel must moreover equal a float loop that sums in k order and then adds the bias, bit
// for bit, with encoder.cc's Gelu after it: that is the order the tile computes in.
#include "core/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/encoder.h"

namespace attn {
namespace {

constexpr double kUnitRoundoff = 1.0 / (1 << 24);
constexpr double kGeluTolerance = 2e-6;  // absolute, plus as much relative to the value

double Gamma(int m) { return m * kUnitRoundoff / (1 - m * kUnitRoundoff); }

RowMajorMatrix Random(int rows, int cols, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  RowMajorMatrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

double GeluDouble(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

struct Worst {
  double difference = 0;  // largest |kernel - double loop|
  double ratio = 0;       // largest difference / its tolerance
  int exact_mismatches = 0;  // SIMD build: outputs that differ from the k-order float loop
};

// y = epilogue(x w^T + b) three ways: the kernel, a double loop, a k-order float loop.
Worst CheckLinear(int n, int K, int N, Epilogue epilogue, std::mt19937& rng) {
  const RowMajorMatrix w = Random(N, K, rng, 1.0f / std::sqrt(static_cast<float>(K)));
  const RowMajorMatrix b = Random(1, N, rng, 0.5f);
  // x and y as column blocks of wider matrices: strides differ from K and N.
  const RowMajorMatrix x_wide = Random(n, K + 3, rng, 1.5f);
  const auto x = x_wide.middleCols(2, K);
  RowMajorMatrix y_wide = RowMajorMatrix::Constant(n, N + 5, 123.0f);
  const PackedLinear packed(w.data(), b.data(), N, K);
  EXPECT_EQ(packed.packed_bytes(),
            SimdKernels() ? size_t((N + 15) / 16) * 16 * K * sizeof(float) : size_t{0});
  Linear(packed, x, y_wide.middleCols(1, N), epilogue);

  Worst worst;
  const bool gelu = epilogue == Epilogue::kBiasGelu;
  std::vector<float> ordered(static_cast<size_t>(N));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = b(0, j), magnitude = std::abs(b(0, j));
      float in_order = 0.0f;
      for (int k = 0; k < K; ++k) {
        sum += double{x(i, k)} * w(j, k);
        magnitude += std::abs(double{x(i, k)} * w(j, k));
        in_order += x(i, k) * w(j, k);
      }
      ordered[static_cast<size_t>(j)] = in_order + b(0, j);
      double expected = gelu ? GeluDouble(sum) : sum;
      double tolerance = Gamma(K + 1) * magnitude * (gelu ? 1.13 : 1.0);
      if (gelu) tolerance += kGeluTolerance * (1 + std::abs(expected));
      const double difference = std::abs(y_wide(i, j + 1) - expected);
      worst.difference = std::max(worst.difference, difference);
      worst.ratio = std::max(worst.ratio, difference / tolerance);
      EXPECT_LE(difference, tolerance) << "n=" << n << " K=" << K << " N=" << N << " at (" << i
                                       << ", " << j << ")";
    }
    if (gelu) Gelu(ordered.data(), ordered.size());
    for (int j = 0; j < N; ++j) {
      if (y_wide(i, j + 1) != ordered[static_cast<size_t>(j)]) ++worst.exact_mismatches;
    }
    // Columns outside the output block are untouched.
    EXPECT_EQ(y_wide(i, 0), 123.0f);
    for (int j = N + 1; j < N + 5; ++j) EXPECT_EQ(y_wide(i, j), 123.0f);
  }
  return worst;
}

const int kRows[] = {1, 2, 3, 5, 17, 511};
struct Shape {
  int K, N;
};
// K and N off the 16-wide panel (and its 4-wide vectors), and two of the model's own shapes.
const Shape kShapes[] = {{1, 1}, {7, 3}, {37, 29}, {64, 16}, {100, 35}, {257, 50}, {256, 256}, {1024, 40}};

TEST(KernelsTest, WasmBuildRunsTheSimdKernels) {
#ifdef __EMSCRIPTEN__
  EXPECT_TRUE(SimdKernels()) << "the wasm build must compile the core with -msimd128";
#else
  EXPECT_FALSE(SimdKernels());
#endif
  std::printf("kernel: %s\n", KernelName());
}

TEST(KernelsTest, LinearMatchesScalarLoop) {
  std::mt19937 rng(11);
  for (Epilogue epilogue : {Epilogue::kBias, Epilogue::kBiasGelu}) {
    Worst all;
    for (int n : kRows) {
      for (const Shape& s : kShapes) {
        if (n == 511 && s.K * s.N > 257 * 50) continue;  // keeps the scalar loops short under ASan
        const Worst worst = CheckLinear(n, s.K, s.N, epilogue, rng);
        all.difference = std::max(all.difference, worst.difference);
        all.ratio = std::max(all.ratio, worst.ratio);
        all.exact_mismatches += worst.exact_mismatches;
      }
    }
    std::printf("%s: largest |kernel - double loop| = %.3g, %.3g of the tolerance; %d outputs "
                "differ from the k-order float loop\n",
                epilogue == Epilogue::kBias ? "bias" : "bias+GELU", all.difference, all.ratio,
                all.exact_mismatches);
    if (SimdKernels()) EXPECT_EQ(all.exact_mismatches, 0);
  }
}

// The attention products: c = a b^T (scores) and c = a b (context), on column blocks as the
// encoder passes them (one head's slice of q, k, v). The bar is gamma(K) * sum |terms|; with
// d_head = 1 a score is one rounded product, whose error can come within a hair of it (u / (1 + u)
// against u / (1 - u)), so a printed ratio near 1 is expected there.
TEST(KernelsTest, AttentionProductsMatchScalarLoop) {
  std::mt19937 rng(5);
  double largest = 0, largest_ratio = 0;
  for (int n : kRows) {
    for (int d_head : {1, 7, 16, 33, 64}) {
      const int d = d_head * 3 + 2;
      const RowMajorMatrix q = Random(n, d, rng), k = Random(n, d, rng), v = Random(n, d, rng);
      RowMajorMatrix scores(n, n);
      MatMulTransposed(q.middleCols(d_head, d_head), k.middleCols(d_head, d_head), scores);
      RowMajorMatrix context = RowMajorMatrix::Constant(n, d, 7.0f);
      MatMul(scores, v.middleCols(2 * d_head, d_head), context.middleCols(2 * d_head, d_head));
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          double sum = 0, magnitude = 0;
          for (int t = 0; t < d_head; ++t) {
            sum += double{q(i, d_head + t)} * k(j, d_head + t);
            magnitude += std::abs(double{q(i, d_head + t)} * k(j, d_head + t));
          }
          const double difference = std::abs(scores(i, j) - sum);
          largest = std::max(largest, difference);
          largest_ratio = std::max(largest_ratio, difference / (Gamma(d_head) * magnitude + 1e-30));
          ASSERT_LE(difference, Gamma(d_head) * magnitude) << "scores n=" << n << " d_head=" << d_head;
        }
        for (int t = 0; t < d_head; ++t) {
          double sum = 0, magnitude = 0;
          for (int j = 0; j < n; ++j) {
            sum += double{scores(i, j)} * v(j, 2 * d_head + t);
            magnitude += std::abs(double{scores(i, j)} * v(j, 2 * d_head + t));
          }
          const double difference = std::abs(context(i, 2 * d_head + t) - sum);
          largest = std::max(largest, difference);
          largest_ratio = std::max(largest_ratio, difference / (Gamma(n) * magnitude + 1e-30));
          ASSERT_LE(difference, Gamma(n) * magnitude) << "context n=" << n << " d_head=" << d_head;
        }
        for (int c = 0; c < d; ++c) {
          if (c < 2 * d_head || c >= 3 * d_head) ASSERT_EQ(context(i, c), 7.0f);
        }
      }
    }
  }
  std::printf("attention products: largest |kernel - double loop| = %.3g, %.3g of the tolerance\n",
              largest, largest_ratio);
}

TEST(KernelsTest, PackedLinearMovesAndEmptyShapes) {
  std::mt19937 rng(2);
  const RowMajorMatrix w = Random(20, 9, rng), b = Random(1, 20, rng), x = Random(3, 9, rng);
  PackedLinear a(w.data(), b.data(), 20, 9);
  const size_t bytes = a.packed_bytes();
  PackedLinear moved(std::move(a));
  EXPECT_EQ(moved.packed_bytes(), bytes);
  EXPECT_EQ(a.packed_bytes(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state
  PackedLinear assigned;
  assigned = std::move(moved);
  RowMajorMatrix y(3, 20), expected(3, 20);
  Linear(assigned, x, y);
  expected = (x * w.transpose()).rowwise() + b.row(0);
  EXPECT_LE((y - expected).cwiseAbs().maxCoeff(), 1e-5f);
  // No rows: nothing is written and nothing is read.
  RowMajorMatrix none(0, 20);
  Linear(assigned, RowMajorMatrix(0, 9), none);
}

}  // namespace
}  // namespace attn
