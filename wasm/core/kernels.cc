// The encoder's matrix products (see kernels.h): SIMD128 kernels in the wasm build, Eigen's GEMM
// elsewhere.
#include "core/kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/encoder.h"  // Gelu, for the Eigen path

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

#include <vector>
#endif

namespace attn {
namespace {

using Eigen::Index;
using StridedConstMap = Eigen::Map<const RowMajorMatrix, 0, Eigen::OuterStride<>>;
using StridedMap = Eigen::Map<RowMajorMatrix, 0, Eigen::OuterStride<>>;

constexpr int kPanel = PackedLinear::kPanelWidth;
// 64 bytes; the packed panels exist only in the wasm SIMD build.
[[maybe_unused]] constexpr size_t kAlignFloats = 16;

size_t PanelCount(int32_t outputs) { return (static_cast<size_t>(outputs) + kPanel - 1) / kPanel; }
size_t PanelFloats(int32_t outputs, int32_t inputs) {
  return PanelCount(outputs) * kPanel * static_cast<size_t>(inputs);
}

// The same products as Eigen expressions; the native path, and the wasm fallback when packing
// could not allocate.
void EigenLinear(const PackedLinear& w, const float* x, ptrdiff_t ldx, int32_t n, float* y,
                 ptrdiff_t ldy, Epilogue epilogue) {
  const Index N = w.outputs(), K = w.inputs();
  const StridedConstMap xs(x, n, K, Eigen::OuterStride<>(ldx));
  StridedMap ys(y, n, N, Eigen::OuterStride<>(ldy));
  ys.noalias() = xs * ConstMatrixMap(w.weight(), N, K).transpose();
  ys.rowwise() += ConstVectorMap(w.bias(), N).transpose();
  if (epilogue == Epilogue::kBiasGelu) {
    if (ldy == N) {
      Gelu(y, static_cast<size_t>(n) * static_cast<size_t>(N));
    } else {
      for (Index i = 0; i < n; ++i) Gelu(y + i * ldy, static_cast<size_t>(N));
    }
  }
}

#ifdef __wasm_simd128__

// Eigen's erf (generic_fast_erf_float: clamp to [-4, 4], a 13/8-degree rational function), with
// the same operations in the same order, so that in wasm (no FMA) it gives the same floats as the
// scalar Gelu of encoder.cc: GELU(x) = 0.5 x (1 + erf(x / sqrt 2)).
inline v128_t Gelu4(v128_t x) {
  const v128_t t = wasm_f32x4_mul(x, wasm_f32x4_splat(0.70710678118654752440f));
  const v128_t c = wasm_f32x4_pmax(wasm_f32x4_pmin(t, wasm_f32x4_splat(4.f)), wasm_f32x4_splat(-4.f));
  const v128_t c2 = wasm_f32x4_mul(c, c);
  auto madd = [](v128_t a, v128_t b, float k) {
    return wasm_f32x4_add(wasm_f32x4_mul(a, b), wasm_f32x4_splat(k));
  };
  v128_t p = madd(c2, wasm_f32x4_splat(-2.72614225801306e-10f), 2.77068142495902e-08f);
  p = madd(c2, p, -2.10102402082508e-06f);
  p = madd(c2, p, -5.69250639462346e-05f);
  p = madd(c2, p, -7.34990630326855e-04f);
  p = madd(c2, p, -2.95459980854025e-03f);
  p = madd(c2, p, -1.60960333262415e-02f);
  p = wasm_f32x4_mul(c, p);
  v128_t q = madd(c2, wasm_f32x4_splat(-1.45660718464996e-05f), -2.13374055278905e-04f);
  q = madd(c2, q, -1.68282697438203e-03f);
  q = madd(c2, q, -7.37332916720468e-03f);
  q = madd(c2, q, -1.42647390514189e-02f);
  const v128_t erf = wasm_f32x4_div(p, q);
  return wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_splat(0.5f), x),
                        wasm_f32x4_add(wasm_f32x4_splat(1.0f), erf));
}

// Packs columns [0, N) of B^T into panels, where element (k, j) of the product's right-hand
// side (K, N) is at b[j * col_stride + k * row_stride]; columns past N are zero.
void PackPanels(const float* b, ptrdiff_t row_stride, ptrdiff_t col_stride, int32_t K, int32_t N,
                float* panels) {
  const size_t panels_n = PanelCount(N);
  for (size_t p = 0; p < panels_n; ++p) {
    float* panel = panels + p * kPanel * static_cast<size_t>(K);
    const int32_t j0 = static_cast<int32_t>(p) * kPanel;
    const int32_t cols = std::min(kPanel, N - j0);
    if (col_stride == 1 && cols == kPanel) {
      for (int32_t k = 0; k < K; ++k) std::memcpy(panel + k * kPanel, b + k * row_stride + j0, sizeof(float) * kPanel);
      continue;
    }
    if (cols < kPanel) std::fill(panel, panel + kPanel * static_cast<size_t>(K), 0.0f);
    for (int32_t j = 0; j < cols; ++j) {  // one column of the panel: row j0 + j of W, read in order
      const float* source = b + (j0 + j) * col_stride;
      for (int32_t k = 0; k < K; ++k) panel[k * kPanel + j] = source[k * row_stride];
    }
  }
}

// a * b + c. In the relaxed-SIMD build (-mrelaxed-simd, the engine's second wasm file) one
// f32x4.relaxed_madd, fused where the hardware has FMA: clang 14's prototype builtin emits the
// prototype opcode f32x4.fma with the operands in this order, which scripts/wasm/relaxed_madd.mjs
// rewrites to f32x4.relaxed_madd after linking. Elsewhere a multiply and an add.
inline v128_t MultiplyAdd(v128_t a, v128_t b, v128_t c) {
#ifdef __wasm_relaxed_simd__
  return __builtin_wasm_fma_f32x4(a, b, c);
#else
  return wasm_f32x4_add(c, wasm_f32x4_mul(a, b));
#endif
}

// One tile: rows [0, MR) of x (MR = 1 or 2) times one panel, into 16 columns of y (only `cols`
// of them are stored). Each output is summed over k in order from 0, then the bias is added.
template <int MR>
inline void Tile(const float* x, ptrdiff_t ldx, int32_t K, const float* panel, const float* bias,
                 Epilogue epilogue, float* y, ptrdiff_t ldy, int32_t cols) {
  const float* x0 = x;
  const float* x1 = x + (MR > 1 ? ldx : 0);
  v128_t c00 = wasm_f32x4_splat(0.f), c01 = c00, c02 = c00, c03 = c00;
  v128_t c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  for (int32_t k = 0; k < K; ++k) {
    const float* wk = panel + k * kPanel;
    const v128_t w0 = wasm_v128_load(wk), w1 = wasm_v128_load(wk + 4);
    const v128_t w2 = wasm_v128_load(wk + 8), w3 = wasm_v128_load(wk + 12);
    const v128_t a0 = wasm_v128_load32_splat(x0 + k);
    c00 = MultiplyAdd(a0, w0, c00);
    c01 = MultiplyAdd(a0, w1, c01);
    c02 = MultiplyAdd(a0, w2, c02);
    c03 = MultiplyAdd(a0, w3, c03);
    if (MR > 1) {
      const v128_t a1 = wasm_v128_load32_splat(x1 + k);
      c10 = MultiplyAdd(a1, w0, c10);
      c11 = MultiplyAdd(a1, w1, c11);
      c12 = MultiplyAdd(a1, w2, c12);
      c13 = MultiplyAdd(a1, w3, c13);
    }
  }
  v128_t rows[2][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}};
  float padded_bias[kPanel];
  if (bias != nullptr && cols < kPanel) {
    for (int32_t j = 0; j < kPanel; ++j) padded_bias[j] = j < cols ? bias[j] : 0.0f;
    bias = padded_bias;
  }
  for (int r = 0; r < MR; ++r) {
    float* out = y + r * ldy;
    alignas(16) float spill[kPanel];
    for (int q = 0; q < 4; ++q) {
      v128_t v = rows[r][q];
      if (bias != nullptr) v = wasm_f32x4_add(v, wasm_v128_load(bias + 4 * q));
      if (epilogue == Epilogue::kBiasGelu) v = Gelu4(v);
      if (cols == kPanel) {
        wasm_v128_store(out + 4 * q, v);
      } else {
        wasm_v128_store(spill + 4 * q, v);
      }
    }
    if (cols < kPanel) std::memcpy(out, spill, sizeof(float) * static_cast<size_t>(cols));
  }
}

// Rows of x per block: each panel sweeps one block of x's rows at a time, so that the block
// (at most 64 x K floats: 256 KiB for K = 1024) stays in the L2 cache while every panel passes
// over it, instead of all of x streaming from further away once per panel at large n.
constexpr int32_t kRowBlock = 64;

// y (n, N) = epilogue(x (n, K) B + bias), B given as panels (bias may be null: no bias).
void PanelProduct(const float* panels, int32_t K, int32_t N, const float* bias, const float* x,
                  ptrdiff_t ldx, int32_t n, float* y, ptrdiff_t ldy, Epilogue epilogue) {
  const size_t panels_n = PanelCount(N);
  for (int32_t i0 = 0; i0 < n; i0 += kRowBlock) {
    const int32_t i1 = std::min(n, i0 + kRowBlock);
    for (size_t p = 0; p < panels_n; ++p) {
      const float* panel = panels + p * kPanel * static_cast<size_t>(K);
      const int32_t j0 = static_cast<int32_t>(p) * kPanel;
      const int32_t cols = std::min(kPanel, N - j0);
      const float* b = bias ? bias + j0 : nullptr;
      int32_t i = i0;
      for (; i + 2 <= i1; i += 2) {
        Tile<2>(x + i * ldx, ldx, K, panel, b, epilogue, y + i * ldy + j0, ldy, cols);
      }
      if (i < i1) Tile<1>(x + i * ldx, ldx, K, panel, b, epilogue, y + i * ldy + j0, ldy, cols);
    }
  }
}

// The attention products pack their right-hand side per call (O(n d_head), against the
// product's O(n^2 d_head)) into this buffer; the engine is single-threaded in wasm.
std::vector<float>& Scratch(size_t floats) {
  static std::vector<float> scratch;
  if (scratch.size() < floats) scratch.resize(floats);
  return scratch;
}

#endif  // __wasm_simd128__

}  // namespace

bool SimdKernels() {
#ifdef __wasm_simd128__
  return true;
#else
  return false;
#endif
}

const char* KernelName() {
#ifdef __wasm_relaxed_simd__
  return "wasm-relaxed-simd 2x16";
#else
  return SimdKernels() ? "wasm-simd128 2x16" : "eigen";
#endif
}

PackedLinear::PackedLinear(const float* weight, const float* bias, int32_t outputs, int32_t inputs)
    : weight_(weight), bias_(bias), outputs_(outputs), inputs_(inputs) {
#ifdef __wasm_simd128__
  const size_t floats = PanelFloats(outputs, inputs);
  if (floats == 0) return;
  // aligned_alloc wants a multiple of the alignment; a failure leaves the Eigen fallback.
  const size_t bytes = (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats * sizeof(float);
  panels_ = static_cast<float*>(std::aligned_alloc(kAlignFloats * sizeof(float), bytes));
  if (panels_ != nullptr) PackPanels(weight, 1, inputs, inputs, outputs, panels_);
#endif
}

PackedLinear::PackedLinear(const ConstMatrixMap& weight, const ConstVectorMap& bias)
    : PackedLinear(weight.data(), bias.data(), static_cast<int32_t>(weight.rows()),
                   static_cast<int32_t>(weight.cols())) {}

PackedLinear::~PackedLinear() { std::free(panels_); }

PackedLinear::PackedLinear(PackedLinear&& other) noexcept
    : weight_(other.weight_), bias_(other.bias_), outputs_(other.outputs_),
      inputs_(other.inputs_), panels_(std::exchange(other.panels_, nullptr)) {}

PackedLinear& PackedLinear::operator=(PackedLinear&& other) noexcept {
  if (this != &other) {
    std::free(panels_);
    weight_ = other.weight_;
    bias_ = other.bias_;
    outputs_ = other.outputs_;
    inputs_ = other.inputs_;
    panels_ = std::exchange(other.panels_, nullptr);
  }
  return *this;
}

size_t PackedLinear::packed_bytes() const {
  return panels_ ? PanelFloats(outputs_, inputs_) * sizeof(float) : 0;
}

void Linear(const PackedLinear& w, const float* x, ptrdiff_t ldx, int32_t n, float* y,
            ptrdiff_t ldy, Epilogue epilogue) {
  if (n <= 0 || w.outputs() <= 0) return;
#ifdef __wasm_simd128__
  if (w.panels() != nullptr) {
    PanelProduct(w.panels(), w.inputs(), w.outputs(), w.bias(), x, ldx, n, y, ldy, epilogue);
    return;
  }
#endif
  EigenLinear(w, x, ldx, n, y, ldy, epilogue);
}

void Linear(const PackedLinear& w, const Eigen::Ref<const RowMajorMatrix>& x,
            Eigen::Ref<RowMajorMatrix> y, Epilogue epilogue) {
  Linear(w, x.data(), x.outerStride(), static_cast<int32_t>(x.rows()), y.data(), y.outerStride(),
         epilogue);
}

void MatMulTransposed(const Eigen::Ref<const RowMajorMatrix>& a,
                      const Eigen::Ref<const RowMajorMatrix>& b, Eigen::Ref<RowMajorMatrix> c) {
#ifdef __wasm_simd128__
  const int32_t n = static_cast<int32_t>(a.rows()), K = static_cast<int32_t>(a.cols());
  const int32_t N = static_cast<int32_t>(b.rows());
  if (n == 0 || N == 0) return;
  std::vector<float>& panels = Scratch(PanelFloats(N, K));
  PackPanels(b.data(), 1, b.outerStride(), K, N, panels.data());  // (k, j) = b(j, k)
  PanelProduct(panels.data(), K, N, nullptr, a.data(), a.outerStride(), n, c.data(),
               c.outerStride(), Epilogue::kBias);
#else
  c.noalias() = a * b.transpose();
#endif
}

void MatMul(const Eigen::Ref<const RowMajorMatrix>& a, const Eigen::Ref<const RowMajorMatrix>& b,
            Eigen::Ref<RowMajorMatrix> c) {
#ifdef __wasm_simd128__
  const int32_t n = static_cast<int32_t>(a.rows()), K = static_cast<int32_t>(a.cols());
  const int32_t N = static_cast<int32_t>(b.cols());
  if (n == 0 || N == 0) return;
  std::vector<float>& panels = Scratch(PanelFloats(N, K));
  PackPanels(b.data(), b.outerStride(), 1, K, N, panels.data());  // (k, j) = b(k, j)
  PanelProduct(panels.data(), K, N, nullptr, a.data(), a.outerStride(), n, c.data(),
               c.outerStride(), Epilogue::kBias);
#else
  c.noalias() = a * b;
#endif
}

PackedLayer::PackedLayer(const LayerWeights& w)
    : query(w.query_weight, w.query_bias),
      key(w.key_weight, w.key_bias),
      value(w.value_weight, w.value_bias),
      attention_output(w.attention_output_weight, w.attention_output_bias),
      intermediate(w.intermediate_weight, w.intermediate_bias),
      output(w.output_weight, w.output_bias) {}

size_t PackedLayer::packed_bytes() const {
  return query.packed_bytes() + key.packed_bytes() + value.packed_bytes() +
         attention_output.packed_bytes() + intermediate.packed_bytes() + output.packed_bytes();
}

}  // namespace attn
