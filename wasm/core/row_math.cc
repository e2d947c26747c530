// Softmax and row statistics (see row_math.h): SIMD128 with polynomial exp and log in the wasm
// build, the plain Eigen expressions elsewhere.
#include "core/row_math.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attn {
namespace {

#ifdef __wasm_simd128__
constexpr float kFloatMin = std::numeric_limits<float>::min();
constexpr float kInf = std::numeric_limits<float>::infinity();
// ln 2 split so that k * kLn2High is exact for |k| <= 128 (Cephes).
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;

v128_t Splat(float x) { return wasm_f32x4_splat(x); }

// exp(x) for x in [kExpMin, 88] (NaN stays NaN): x = k ln 2 + r with |r| <= ln 2 / 2, exp(r) by
// a degree-5 polynomial, times 2^k built in the exponent bits. The polynomial is a minimax fit of
// exp(r) - 1 on [-ln 2 / 2, ln 2 / 2] for relative error (9.1e-8 in exact arithmetic); with its
// float roundings the largest relative error over [kExpMin, 0] is 1.85e-7, under the stated
// kExpRelativeError (row_math_test checks it against std::exp).
v128_t ExpInRange(v128_t x) {
  // k = x / ln 2 rounded to nearest (even): adding 1.5 * 2^23 rounds it so and leaves k in the
  // low bits of the sum, from which 2^k is built below with integer adds and a shift (cheaper
  // than a saturating float-to-int conversion, which x86 has no one instruction for).
  const v128_t shifter = Splat(12582912.0f);
  const v128_t shifted = wasm_f32x4_add(wasm_f32x4_mul(x, Splat(1.44269504088896341f)), shifter);
  const v128_t k = wasm_f32x4_sub(shifted, shifter);
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(k, Splat(kLn2High)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, Splat(kLn2Low)));
  v128_t y = Splat(8.2903141e-3f);
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(4.1897930e-2f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(1.6667636e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(4.9999151e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(9.9999970e-1f));
  y = wasm_f32x4_add(wasm_f32x4_mul(y, r), Splat(1.0f));
  // k in [-126, 127], so k + 127 is a normal exponent; the sum's bits are 0x4B400000 + k.
  const v128_t power = wasm_i32x4_shl(wasm_i32x4_add(shifted, wasm_i32x4_splat(127 - 0x4B400000)), 23);
  return wasm_f32x4_mul(y, power);
}

// exp(x) for any x: 0 below kExpMin (and for -inf); NaN stays NaN.
v128_t Exp4(v128_t x) {
  const v128_t below = wasm_f32x4_lt(x, Splat(kExpMin));
  // pmin / pmax: one x86 instruction each (f32x4.min / max take several, for IEEE NaN and
  // signed-zero rules); a NaN x is kept, as both return their first operand then.
  return wasm_v128_andnot(ExpInRange(wasm_f32x4_pmax(wasm_f32x4_pmin(x, Splat(88.0f)), Splat(kExpMin))), below);
}

// log(max(x, FLT_MIN)): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by Cephes' degree-8
// polynomial in m - 1, plus e ln 2 in two parts. NaN stays NaN.
v128_t Log4(v128_t input) {
  const v128_t x = wasm_f32x4_pmax(input, Splat(kFloatMin));  // NaN kept (see Exp4)
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

// A row's maximum, its first position and its sum in double, four lanes at a time, over the
// vectors of the row that start at first, first + 8, ... (ScanRow gives each of two the even or
// the odd vectors): Add them in order (valid: the lanes that hold the row, all but a partial last
// vector's padding), Merge the other, then Finish.
struct MaxAndSum {
  explicit MaxAndSum(int32_t first) : index(wasm_i32x4_make(first, first + 1, first + 2, first + 3)) {}

  v128_t max = Splat(-kInf), argmax = wasm_i32x4_splat(0), index;
  v128_t low = wasm_f64x2_splat(0.0), high = wasm_f64x2_splat(0.0);

  void Add(v128_t v, v128_t valid = wasm_i32x4_splat(-1)) {
    // Strictly greater: each lane keeps the first position of its maximum.
    const v128_t greater = wasm_v128_and(wasm_f32x4_gt(v, max), valid);
    max = wasm_v128_bitselect(v, max, greater);
    argmax = wasm_v128_bitselect(index, argmax, greater);
    AddAsDoubles(v, low, high);
    index = wasm_i32x4_add(index, wasm_i32x4_splat(8));
  }

  // Lane by lane, the larger maximum and, where they are equal, the earlier position.
  void Merge(const MaxAndSum& other) {
    const v128_t take = wasm_v128_or(wasm_f32x4_gt(other.max, max),
                                     wasm_v128_and(wasm_f32x4_eq(other.max, max), wasm_i32x4_lt(other.argmax, argmax)));
    max = wasm_v128_bitselect(other.max, max, take);
    argmax = wasm_v128_bitselect(other.argmax, argmax, take);
    low = wasm_f64x2_add(low, other.low);
    high = wasm_f64x2_add(high, other.high);
  }

  // The lanes' largest maximum and, among lanes holding it, the smallest position; the sum.
  void Finish(RowSummary* out) const {
    alignas(16) float m[4];
    alignas(16) int32_t p[4];
    wasm_v128_store(m, max);
    wasm_v128_store(p, argmax);
    out->max = m[0];
    out->argmax = p[0];
    for (int lane = 1; lane < 4; ++lane) {
      if (m[lane] > out->max || (m[lane] == out->max && p[lane] < out->argmax)) {
        out->max = m[lane];
        out->argmax = p[lane];
      }
    }
    out->sum = HorizontalSum(low, high);
  }
};

// The first `left` lanes (left < 4): those of a partial last vector that hold the row.
v128_t TailLanes(size_t left) {
  return wasm_i32x4_lt(wasm_i32x4_make(0, 1, 2, 3), wasm_i32x4_splat(static_cast<int32_t>(left)));
}

// The maximum, first argmax and sum of a row of count values: vector(i) gives the whole vector at
// i (i = 0, 4, ..., in order), tail(i) a partial last one padded with 0. The even and the odd
// vectors go to two accumulators, so that each chain of dependent operations (the compare and
// select of the maximum, the double adds) is half as long; merged, they give what one
// accumulator over the row would, but for the order of the sum's double additions.
template <typename Vector, typename Tail>
void ScanRow(size_t count, Vector vector, Tail tail, RowSummary* out) {
  MaxAndSum even(0), odd(4);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    even.Add(vector(i));
    odd.Add(vector(i + 4));
  }
  MaxAndSum* next = &even;
  if (i + 4 <= count) {
    even.Add(vector(i));
    i += 4;
    next = &odd;
  }
  if (i < count) next->Add(tail(i), TailLanes(count - i));
  even.Merge(odd);
  even.Finish(out);
}

// The largest of count values (count a multiple of 4), four vectors at a time.
float MaxOfVectors(const float* values, size_t count) {
  v128_t m0 = Splat(-kInf), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    m0 = wasm_f32x4_pmax(m0, wasm_v128_load(values + i));
    m1 = wasm_f32x4_pmax(m1, wasm_v128_load(values + i + 4));
    m2 = wasm_f32x4_pmax(m2, wasm_v128_load(values + i + 8));
    m3 = wasm_f32x4_pmax(m3, wasm_v128_load(values + i + 12));
  }
  for (; i < count; i += 4) m0 = wasm_f32x4_pmax(m0, wasm_v128_load(values + i));
  return HorizontalMax(wasm_f32x4_pmax(wasm_f32x4_pmax(m0, m1), wasm_f32x4_pmax(m2, m3)));
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

void SoftmaxRow(float* row, int32_t n) { SoftmaxRowSummary(row, n, 1.0f); }

RowSummary SoftmaxRowSummary(float* row, int32_t n, float scale) {
  RowSummary out;
  if (n <= 0) return out;
  // With scale > 0, rounding s * scale is monotone in s, so the largest scaled score is the
  // largest score scaled: one multiplication per row instead of a pass.
  double z = 0, weighted = 0;  // Z = sum e_j and sum e_j x_j, x_j = s_j scale - max <= 0
#ifdef __wasm_simd128__
  const size_t count = static_cast<size_t>(n), body = count / 4 * 4;
  float max = MaxOfVectors(row, body);
  for (size_t i = body; i < count; ++i) max = std::max(max, row[i]);
  const v128_t vscale = Splat(scale), shift = Splat(max * scale), min = Splat(kExpMin);
  v128_t low = wasm_f64x2_splat(0.0), high = wasm_f64x2_splat(0.0);
  v128_t weighted_low = low, weighted_high = low;
  // Each block of kSumBlock weights is summed in float lanes (each lane at most kSumBlock / 4
  // terms, so within (kSumBlock / 4 - 1) float roundings), the blocks' sums in double.
  constexpr size_t kSumBlock = 64;
  v128_t block_z = Splat(0.0f), block_weighted = block_z;
  const auto exp_step = [&](v128_t s) {
    // x <= 0 or NaN (rounding is monotone: s scale <= max scale), so only the lower clamp is
    // needed. Below kExpMin the weight is 0, and x is clamped there, so that e x is 0 too
    // (x = -inf would make it NaN); elsewhere the clamped x is x.
    const v128_t x = wasm_f32x4_sub(wasm_f32x4_mul(s, vscale), shift);
    const v128_t clamped = wasm_f32x4_pmax(x, min);  // NaN kept (see Exp4)
    const v128_t e = wasm_v128_andnot(ExpInRange(clamped), wasm_f32x4_lt(x, min));  // pad lanes: 0
    block_z = wasm_f32x4_add(block_z, e);
    block_weighted = wasm_f32x4_add(block_weighted, wasm_f32x4_mul(e, clamped));
    return e;
  };
  const auto flush = [&] {
    AddAsDoubles(block_z, low, high);
    AddAsDoubles(block_weighted, weighted_low, weighted_high);
    block_z = block_weighted = Splat(0.0f);
  };
  size_t i = 0;
  for (; i + kSumBlock <= body; i += kSumBlock) {
    for (size_t j = i; j < i + kSumBlock; j += 4) wasm_v128_store(row + j, exp_step(wasm_v128_load(row + j)));
    flush();
  }
  for (; i < body; i += 4) wasm_v128_store(row + i, exp_step(wasm_v128_load(row + i)));
  if (body < count) StoreTail(exp_step(LoadTail(row + body, count - body, -kInf)), row + body, count - body);
  flush();
  z = HorizontalSum(low, high);
  weighted = HorizontalSum(weighted_low, weighted_high);
  const v128_t inverse = Splat(static_cast<float>(1.0 / z));
  // The normalisation pass also takes the maximum, its first position and the sum of the
  // stored weights.
  ScanRow(count, [&](size_t i) {
    const v128_t p = wasm_f32x4_mul(wasm_v128_load(row + i), inverse);
    wasm_v128_store(row + i, p);
    return p;
  }, [&](size_t i) {  // pad lanes hold 0 and are not candidates for the maximum
    const v128_t p = wasm_f32x4_mul(LoadTail(row + i, count - i, 0.0f), inverse);
    StoreTail(p, row + i, count - i);
    return p;
  }, &out);
#else
  Eigen::Map<Eigen::ArrayXf> x(row, n);
  x *= scale;
  x -= x.maxCoeff();
  static thread_local Eigen::ArrayXf e;
  e = x.exp();
  z = e.cast<double>().sum();
  // e x tends to 0 as x goes to -inf; Eigen's exp leaves a denormal there (row_math.h), which
  // times -inf would be -inf.
  for (Eigen::Index j = 0; j < n; ++j) {
    if (e[j] != 0.0f && x[j] != -std::numeric_limits<float>::infinity()) weighted += static_cast<double>(e[j]) * x[j];
  }
  x = e * static_cast<float>(1.0 / z);
  Eigen::Index argmax = 0;
  out.max = x.maxCoeff(&argmax);
  out.argmax = static_cast<int32_t>(argmax);
  out.sum = x.cast<double>().sum();
#endif
  // -sum p log p with p_j = e_j / Z and log p_j = x_j - log Z.
  out.entropy = static_cast<float>(std::max(0.0, std::log(z) - weighted / z));
  return out;
}

double SumAsDouble(const float* values, int32_t n) {
  if (n <= 0) return 0.0;
#ifdef __wasm_simd128__
  const size_t count = static_cast<size_t>(n);
  v128_t low = wasm_f64x2_splat(0.0), high = wasm_f64x2_splat(0.0);
  size_t i = 0;
  for (; i + 4 <= count; i += 4) AddAsDoubles(wasm_v128_load(values + i), low, high);
  if (i < count) AddAsDoubles(LoadTail(values + i, count - i, 0.0f), low, high);
  return HorizontalSum(low, high);
#else
  return Eigen::Map<const Eigen::ArrayXf>(values, n).cast<double>().sum();
#endif
}

RowSummary SummarizeRow(const float* p, int32_t n) {
  RowSummary out;
  if (n <= 0) return out;
#ifdef __wasm_simd128__
  const size_t count = static_cast<size_t>(n);
  v128_t entropy = Splat(0.0f);
  const auto with_entropy = [&](v128_t v) {
    entropy = wasm_f32x4_add(entropy, wasm_f32x4_mul(v, Log4(v)));
    return v;
  };
  // Pad lanes hold 0: they add nothing to the sum or the entropy.
  ScanRow(count, [&](size_t i) { return with_entropy(wasm_v128_load(p + i)); },
          [&](size_t i) { return with_entropy(LoadTail(p + i, count - i, 0.0f)); }, &out);
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
