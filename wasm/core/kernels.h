// The encoder's matrix products behind one interface: the dense layers y = x W^T + b (W row-major
// (N, K), as PyTorch stores an nn.Linear weight) with W packed once at load, and the two
// attention products (scores q k^T, context p v).
//
// In the WebAssembly build with SIMD128 (__wasm_simd128__) they are register-blocked kernels on
// <wasm_simd128.h>: a tile of 2 rows x 16 columns of the output in 8 f32x4 accumulators, reading
// W from panels of 16 output columns (K x 16 floats each, k-major, zero padded past N), so that
// each step of k loads 4 vectors of W and 2 broadcasts of x for 8 multiply-adds (a separate
// f32x4 mul and add: no FMA in plain SIMD128; one f32x4.relaxed_madd in the engine's
// relaxed-SIMD build, attention_engine.relaxed.wasm). Each output is summed in k order, then the
// bias added. Eigen 3.4 has no wasm packet math; in Chromium this runs the layer shapes at about twice
// its speed (scripts/bench/bench_ort.mjs). Everywhere else they are
// Eigen's own GEMM, which is faster natively (AVX-512, FMA) and keeps the native numbers those
// of the plain Eigen expressions: there PackedLinear keeps a view of W, no copy.
//
// Shapes: n rows of x, K inputs, N outputs. Strides are in floats between rows.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>

#include "core/model_file.h"

namespace attn {

// What the dense kernel applies to each output after the product.
enum class Epilogue : uint8_t {
  kBias,      // y = x W^T + b
  kBiasGelu,  // y = GELU(x W^T + b), the exact (erf) GELU of the feed-forward layer
};

// True when the SIMD128 kernels are compiled in (the wasm build); false where Eigen runs.
bool SimdKernels();
// "wasm-simd128 2x16", "wasm-relaxed-simd 2x16" (the relaxed-SIMD build) or "eigen", for
// benchmarks and reports.
const char* KernelName();

// One nn.Linear (weight (N, K), bias (N)) as the dense kernel reads it. The weight and bias
// must outlive it (the bias is always read in place; natively so is the weight).
class PackedLinear {
 public:
  static constexpr int kPanelWidth = 16;  // output columns per panel (the tile's width)

  PackedLinear() = default;
  // Packs W (N, K) row-major. If the panels cannot be allocated, the product falls back to
  // Eigen on W in place (slower in wasm, same results within float rounding): never an abort.
  PackedLinear(const float* weight, const float* bias, int32_t outputs, int32_t inputs);
  PackedLinear(const ConstMatrixMap& weight, const ConstVectorMap& bias);
  ~PackedLinear();
  PackedLinear(PackedLinear&& other) noexcept;
  PackedLinear& operator=(PackedLinear&& other) noexcept;
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  int32_t outputs() const { return outputs_; }  // N
  int32_t inputs() const { return inputs_; }    // K
  const float* weight() const { return weight_; }
  const float* bias() const { return bias_; }
  // The panels (nullptr where Eigen runs, or when packing failed) and the bytes they take
  // beyond the model's own weights.
  const float* panels() const { return panels_; }
  size_t packed_bytes() const;

 private:
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  int32_t outputs_ = 0, inputs_ = 0;
  float* panels_ = nullptr;  // ceil(N / 16) panels of K x 16 floats, 64-byte aligned
};

// y (n, N) = epilogue(x (n, K) W^T + b). x and y must not overlap.
void Linear(const PackedLinear& w, const float* x, ptrdiff_t ldx, int32_t n, float* y,
            ptrdiff_t ldy, Epilogue epilogue = Epilogue::kBias);
void Linear(const PackedLinear& w, const Eigen::Ref<const RowMajorMatrix>& x,
            Eigen::Ref<RowMajorMatrix> y, Epilogue epilogue = Epilogue::kBias);

// c (n, N) = a (n, K) b^T with b (N, K): the attention scores q k^T of one head.
void MatMulTransposed(const Eigen::Ref<const RowMajorMatrix>& a,
                      const Eigen::Ref<const RowMajorMatrix>& b, Eigen::Ref<RowMajorMatrix> c);
// c (n, N) = a (n, K) b with b (K, N): the context p v of one head.
void MatMul(const Eigen::Ref<const RowMajorMatrix>& a, const Eigen::Ref<const RowMajorMatrix>& b,
            Eigen::Ref<RowMajorMatrix> c);

// One encoder layer's six dense layers, packed once when the encoder is made.
struct PackedLayer {
  explicit PackedLayer(const LayerWeights& w);
  PackedLinear query, key, value, attention_output, intermediate, output;
  size_t packed_bytes() const;
};

}  // namespace attn
