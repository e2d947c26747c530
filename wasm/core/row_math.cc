// Softmax and row statistics (see row_math.h): SIMD128 with polynomial exp and log in the wasm
// build, the plain Eigen expressions elsewhere.
#include "core/row_math.h"

#include <Eigen/Core>
#include <algorithm>
#include <limits>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

#include <cmath>
#endif

namespace attn {
namespace {

#ifdef __wasm_simd128__
constexpr float kFloatMin = std::numeric_limits<float>::min();
constexpr float kInf = std::numeric_limits<float>::infinity();
// ln 2 split so that k * kLn2High is exact for |k| <= 128 (Cephes).
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;

v128_t Splat(float x) { return wasm_f32x4_splat(x); }

// exp(x): x = k ln 2 + r with |r| <= ln 2 / 2, exp(r) by Cephes' degree-6 polynomial, times 2^k
// built in the exponent bits. Below kExpMin the result is 0; NaN stays NaN.
v128_t Exp4(v128_t x) {
  const v128_t below = wasm_f32x4_lt(x, Splat(kExpMin));
  x = wasm_f32x4_max(wasm_f32x4_min(x, Splat(88.0f)), Splat(kExpMin));
  const v128_t k = wasm_f32x4_nearest(wasm_f32x4_mul(x, Splat(1.44269504088896341f)));
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(k, Splat(kLn2High)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, Splat(kLn2Low)));
  v128_t y = Splat(1.9875691500e-4f);
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(1.3981999507e-3f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(8.3334519073e-3f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(4.1665795894e-2f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(1.6666665459e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(5.0000001201e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, wasm_f32x4_mul(r, r)), wasm_f32x4_add(r, Splat(1.0f)));
  // k in [-126, 127] after the clamp, so k + 127 is a normal exponent.
  const v128_t power = wasm_i32x4_shl(
      wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(k), wasm_i32x4_splat(127)), 23);
  return wasm_v128_andnot(wasm_f32x4_mul(y, power), below);
}

// log(max(x, FLT_MIN)): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by Cephes' degree-8
// polynomial in m - 1, plus e ln 2 in two parts. NaN stays NaN.
v128_t Log4(v128_t input) {
  const v128_t x = wasm_f32x4_max(input, Splat(kFloatMin));
  const v128_t bits = x;
  // m in [0.5, 1) and its exponent e, x = m 2^e.
  v128_t e = wasm_f32x4_convert_i32x4(
      wasm_i32x4_sub(wasm_u32x4_shr(bits, 23), wasm_i32x4_splat(126)));
  v128_t m = wasm_v128_or(wasm_v128_and(bits, wasm_i32x4_splat(0x007fffff)),
                          wasm_i32x4_splat(0x3f000000));
  const v128_t small = wasm_f32x4_lt(m, Splat(0.707106781186547524f));
  e = wasm_f32x4_sub(e, wasm_v128_and(Splat(1.0f), small));
  m = wasm_f32x4_add(wasm_f32x4_sub(m, Splat(1.0f)), wasm_v128_and(m, small));
  const v128_t z = wasm_f32x4_mul(m, m);
  v128_t y = Splat(7.0376836292e-2f);
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(-1.1514610310e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(1.1676998740e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(-1.2420140846e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(1.4249322787e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(-1.6668057665e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(2.0000714765e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(-2.4999993993e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, m), Splat(3.3333331174e-1f));
  y = wasm_f32x4_mul(wasm_f32x4_mul(y, m), z);
  y = wasm_f32x4_add(y, wasm_f32x4_mul(e, Splat(kLn2Low)));
  y = wasm_f32x4_sub(y, wasm_f32x4_mul(z, Splat(0.5f)));
  const v128_t result = wasm_f32x4_add(wasm_f32x4_add(m, y), wasm_f32x4_mul(e, Splat(kLn2High)));
  return wasm_v128_bitselect(result, input, wasm_f32x4_eq(input, input));
}

// The last count % 4 values as one vector, the missing lanes set to pad.
v128_t LoadTail(const float* values, size_t count, float pad) {
  alignas(16) float lanes[4] = {pad, pad, pad, pad};
  std::copy(values, values + count, lanes);
  return wasm_v128_load(lanes);
}

void StoreTail(v128_t v, float* values, size_t count) {
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, v);
  std::copy(lanes, lanes + count, values);
}

template <typename Op>
void MapInPlace(float* values, size_t count, float pad, Op op) {
  size_t i = 0;
  for (; i + 4 <= count; i += 4) wasm_v128_store(values + i, op(wasm_v128_load(values + i)));
  if (i < count) StoreTail(op(LoadTail(values + i, count - i, pad)), values + i, count - i);
}

float HorizontalMax(v128_t v) {
  return std::max(std::max(wasm_f32x4_extract_lane(v, 0), wasm_f32x4_extract_lane(v, 1)),
                  std::max(wasm_f32x4_extract_lane(v, 2), wasm_f32x4_extract_lane(v, 3)));
}

// Adds the four floats of v to two f64x2 accumulators.
void AddAsDoubles(v128_t v, v128_t& low, v128_t& high) {
  low = wasm_f64x2_add(low, wasm_f64x2_promote_low_f32x4(v));
  high = wasm_f64x2_add(high, wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(v, v, 1, 0)));
}

double HorizontalSum(v128_t low, v128_t high) {
  const v128_t s = wasm_f64x2_add(low, high);
  return wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);
}
#endif  // __wasm_simd128__

}  // namespace

void ExpInPlace(float* values, size_t count) {
#ifdef __wasm_simd128__
  MapInPlace(values, count, 0.0f, Exp4);
#else
  Eigen::Map<Eigen::ArrayXf> x(values, static_cast<Eigen::Index>(count));
  x = x.exp();
#endif
}

void LogInPlace(float* values, size_t count) {
#ifdef __wasm_simd128__
  MapInPlace(values, count, 1.0f, Log4);
#else
  Eigen::Map<Eigen::ArrayXf> x(values, static_cast<Eigen::Index>(count));
  x = x.max(std::numeric_limits<float>::min()).log();
#endif
}

void SoftmaxRow(float* row, int32_t n) {
  if (n <= 0) return;
#ifdef __wasm_simd128__
  const size_t count = static_cast<size_t>(n), body = count / 4 * 4;
  v128_t vmax = Splat(-kInf);
  for (size_t i = 0; i < body; i += 4) vmax = wasm_f32x4_max(vmax, wasm_v128_load(row + i));
  float max = HorizontalMax(vmax);
  for (size_t i = body; i < count; ++i) max = std::max(max, row[i]);
  const v128_t shift = Splat(max);
  v128_t low = wasm_f64x2_splat(0.0), high = wasm_f64x2_splat(0.0);
  MapInPlace(row, count, -kInf, [&](v128_t s) {
    const v128_t e = Exp4(wasm_f32x4_sub(s, shift));  // a pad lane: exp(-inf) = 0
    AddAsDoubles(e, low, high);
    return e;
  });
  const v128_t scale = Splat(static_cast<float>(1.0 / HorizontalSum(low, high)));
  MapInPlace(row, count, 0.0f, [&](v128_t e) { return wasm_f32x4_mul(e, scale); });
#else
  Eigen::Map<Eigen::ArrayXf> x(row, n);
  const float max = x.maxCoeff();
  x = (x - max).exp();
  x *= static_cast<float>(1.0 / x.cast<double>().sum());
#endif
}

RowSummary SummarizeRow(const float* p, int32_t n) {
  RowSummary out;
  if (n <= 0) return out;
#ifdef __wasm_simd128__
  const size_t count = static_cast<size_t>(n);
  v128_t vmax = Splat(-kInf), vargmax = wasm_i32x4_splat(0), index = wasm_i32x4_make(0, 1, 2, 3);
  v128_t low = wasm_f64x2_splat(0.0), high = wasm_f64x2_splat(0.0), entropy = Splat(0.0f);
  const auto step = [&](v128_t v, v128_t valid) {
    // Strictly greater: each lane keeps the first position of its maximum.
    const v128_t greater = wasm_v128_and(wasm_f32x4_gt(v, vmax), valid);
    vmax = wasm_v128_bitselect(v, vmax, greater);
    vargmax = wasm_v128_bitselect(index, vargmax, greater);
    AddAsDoubles(v, low, high);
    entropy = wasm_f32x4_add(entropy, wasm_f32x4_mul(v, Log4(v)));
    index = wasm_i32x4_add(index, wasm_i32x4_splat(4));
  };
  size_t i = 0;
  for (; i + 4 <= count; i += 4) step(wasm_v128_load(p + i), wasm_i32x4_splat(-1));
  if (i < count) {  // pad lanes hold 0: they add nothing to the sum or the entropy
    step(LoadTail(p + i, count - i, 0.0f),
         wasm_i32x4_lt(wasm_i32x4_make(0, 1, 2, 3), wasm_i32x4_splat(static_cast<int32_t>(count - i))));
  }
  alignas(16) float maxima[4];
  alignas(16) int32_t positions[4];
  wasm_v128_store(maxima, vmax);
  wasm_v128_store(positions, vargmax);
  out.max = maxima[0];
  out.argmax = positions[0];
  for (int lane = 1; lane < 4; ++lane) {
    if (maxima[lane] > out.max || (maxima[lane] == out.max && positions[lane] < out.argmax)) {
      out.max = maxima[lane];
      out.argmax = positions[lane];
    }
  }
  out.sum = HorizontalSum(low, high);
  out.entropy = -((wasm_f32x4_extract_lane(entropy, 0) + wasm_f32x4_extract_lane(entropy, 1)) +
                  (wasm_f32x4_extract_lane(entropy, 2) + wasm_f32x4_extract_lane(entropy, 3)));
#else
  const Eigen::Map<const Eigen::ArrayXf> x(p, n);
  Eigen::Index argmax = 0;
  out.max = x.maxCoeff(&argmax);
  out.argmax = static_cast<int32_t>(argmax);
  out.sum = x.cast<double>().sum();
  out.entropy = -(x * x.max(std::numeric_limits<float>::min()).log()).sum();
#endif
  return out;
}

}  // namespace attn
