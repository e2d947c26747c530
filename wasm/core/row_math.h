// The per-row work of attention and its statistics: the softmax of a row of scores, and one pass
// over a row of probabilities for its maximum, first argmax, sum and entropy.
//
// In the WebAssembly build with SIMD128 (__wasm_simd128__) these run four lanes at a time on
// <wasm_simd128.h> with polynomial exp and log (range reduction, then for exp a degree-5 minimax
// polynomial and for log Cephes' degree-8 one, the power of two from the exponent bits), because
// Eigen 3.4 has no wasm packet math and its exp and log there are scalar calls of about 10 ns
// each, which made the softmax and the row statistics a fifth of an analysis at n = 512.
// Everywhere else they are the plain Eigen expressions (vectorised natively), so native numbers do
// not change; there exp below about -88.4 (and of -inf) is a denormal under FLT_MIN rather than 0
// where Eigen's packet path runs.
//
// Accuracy of the SIMD128 polynomials against std::exp / std::log, checked over random and edge
// inputs by tests/cpp/row_math_test.cc in the wasm build:
//   exp: relative error at most kExpRelativeError for x in [kExpMin, 88]; exactly 0 below
//        kExpMin (where std::exp is below 1.2e-38, so the absolute error is under 1.2e-38),
//        and 0 for -inf.
//   log: error at most kLogAbsoluteError + kLogRelativeError |log x| for x in [FLT_MIN, FLT_MAX]
//        (the relative part: about 2 float ulps of the result).
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn {

constexpr float kExpMin = -87.33654f;            // log(FLT_MIN), rounded up
constexpr double kExpRelativeError = 4.0e-7;      // about 3.4 float ulps
constexpr double kLogAbsoluteError = 1.0e-7;
constexpr double kLogRelativeError = 2.5e-7;

// exp(x) of each value in place (the polynomial in the SIMD build; see above).
void ExpInPlace(float* values, size_t count);
// log(max(x, FLT_MIN)) of each value in place.
void LogInPlace(float* values, size_t count);

// What one pass over a row of probabilities gives.
struct RowSummary {
  float max = 0.0f;
  int32_t argmax = 0;     // the first position holding max
  double sum = 0.0;       // in double, so that it shows the row's own deviation from 1
  float entropy = 0.0f;   // -sum p log p in nats, 0 log 0 = 0 (see the two functions below)
};

// A row of scores s becomes the softmax of x = s scale (scale > 0), exp(x - max) / Z with
// Z = sum exp(x - max) taken in double (in the SIMD build, over partial sums of 16 terms in
// float), so that the row sums to 1 within a few float roundings; and the summary of the
// weights it stored, from the same passes: max, first argmax and sum read from the stored
// weights, the entropy from the normaliser as log Z - sum_j e_j (x_j - max) / Z (exactly
// -sum p log p for p = e / Z; no logarithm per weight).
// That entropy and SummarizeRow's of the stored row differ only by rounding (row_math_test
// checks them against each other and against a double reference). n >= 1.
RowSummary SoftmaxRowSummary(float* row, int32_t n, float scale);
// The softmax alone (scale 1).
void SoftmaxRow(float* row, int32_t n);

// The sum of n floats in double (four lanes in the SIMD build, then added).
double SumAsDouble(const float* values, int32_t n);

// Any row of weights (a stored attention row, a rollout row): its entropy is -sum p log p
// summed over the weights, p clamped to FLT_MIN in the logarithm.
RowSummary SummarizeRow(const float* p, int32_t n);

}  // namespace attn
