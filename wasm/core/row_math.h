// The per-row work of attention and its statistics: the softmax of a row of scores, and one pass
// over a row of probabilities for its maximum, first argmax, sum and entropy.
//
// In the WebAssembly build with SIMD128 (__wasm_simd128__) these run four lanes at a time on
// <wasm_simd128.h> with polynomial exp and log (Cephes' expf and logf: range reduction, then a
// degree-6 or degree-8 polynomial, the power of two from the exponent bits), because Eigen 3.4
// has no wasm packet math and its exp and log there are scalar calls of about 10 ns each, which
// made the softmax and the row statistics a fifth of an analysis at n = 512. Everywhere else they
// are the plain Eigen expressions (vectorised natively), so native numbers do not change; there
// exp below about -88.4 (and of -inf) is a denormal under FLT_MIN rather than 0 where Eigen's
// packet path runs.
//
// Accuracy of the SIMD128 polynomials against std::exp / std::log, checked over random and edge
// inputs by tests/cpp/row_math_test.cc in the wasm build:
//   exp: relative error at most kExpRelativeError for x in [kExpMin, 88.37]; exactly 0 below
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

// A row of scores becomes exp(s - max) / sum exp(s - max), the sum taken in double so that the
// row sums to 1 within float rounding of its entries. n >= 1.
void SoftmaxRow(float* row, int32_t n);

// What one pass over a row of probabilities gives.
struct RowSummary {
  float max = 0.0f;
  int32_t argmax = 0;     // the first position holding max
  double sum = 0.0;       // in double, so that it shows the row's own deviation from 1
  float entropy = 0.0f;   // -sum p log p in nats, 0 log 0 = 0 (p clamped to FLT_MIN in the log)
};
RowSummary SummarizeRow(const float* p, int32_t n);

}  // namespace attn
