// A benchmark-only wasm module (built by scripts/bench/bench_ort.mjs, never shipped): the core's
// analysis and forward pass without the JS bindings around them, the dense-layer products with
// the SIMD kernels (core/kernels.h) and with Eigen as the encoder used to call it, and a profile
// of the forward pass by operation. It compiles against any revision of wasm/core that has
// LoadedModel and AnalyzeText, with or without kernels.h, so that before and after can be built
// from the same source. Timings come from loops inside wasm: a browser's clock is too coarse
// (100 us without cross-origin isolation) for one small product.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <unsupported/Eigen/SpecialFunctions>

#include "core/analysis.h"
#include "core/encoder.h"
#if __has_include("core/kernels.h")
#include "core/kernels.h"
#define BENCH_HAVE_KERNELS 1
#else
#define BENCH_HAVE_KERNELS 0
#endif

namespace {

using attn::RowMajorMatrix;
using Eigen::Index;

std::unique_ptr<attn::LoadedModel> loaded;
attn::SentenceAnalysis analysis;
attn::Activations forward_out;
std::string last_text;  // of the last bench_analyze
double load_ms = 0;

double Now() { return emscripten_get_now(); }

// The encoder's products before core/kernels.h: an Eigen expression, then the bias.
template <typename X, typename Y>
void EigenDense(const X& x, const attn::ConstMatrixMap& w, const attn::ConstVectorMap& b, Y&& y) {
  y.noalias() = x * w.transpose();
  y.rowwise() += b.transpose();
}

#if BENCH_HAVE_KERNELS
struct LayerPacks {
  std::vector<attn::PackedLayer> layers;
};
std::unique_ptr<LayerPacks> packs;
#endif

// The outputs the page's engine asks for (row statistics and head profiles; no rollout matrix,
// no hidden states, so that the last layer stops at its attention): the core's whole analysis
// without the JS bindings.
attn::AnalysisOptions PageOptions() {
  attn::AnalysisOptions options;
  options.outputs = attn::kEngineOutputs;
  return options;
}
}  // namespace

extern "C" {

// Loads a model file from size bytes at data; 0 on success, else -1 (the message is printed).
EMSCRIPTEN_KEEPALIVE int bench_load(const uint8_t* data, int size) {
  const double start = Now();
  attn::Status status = attn::LoadedModel::FromBuffer(data, static_cast<size_t>(size), &loaded);
  load_ms = Now() - start;
  if (!status.ok()) {
    emscripten_log(EM_LOG_ERROR, "%s", status.message().c_str());
    return -1;
  }
#if BENCH_HAVE_KERNELS
  packs = std::make_unique<LayerPacks>();
  for (const attn::LayerWeights& w : loaded->model().weights().layers) packs->layers.emplace_back(w);
#endif
  return 0;
}

EMSCRIPTEN_KEEPALIVE double bench_load_ms() { return load_ms; }
EMSCRIPTEN_KEEPALIVE int bench_has_kernels() { return BENCH_HAVE_KERNELS; }

// The encoder's own packing, as LoadedModel made it: bytes beyond the model and milliseconds.
EMSCRIPTEN_KEEPALIVE double bench_packed_bytes() {
#if BENCH_HAVE_KERNELS
  return loaded ? static_cast<double>(loaded->encoder().packed_bytes()) : 0;
#else
  return 0;
#endif
}
EMSCRIPTEN_KEEPALIVE double bench_pack_ms() {
#if BENCH_HAVE_KERNELS
  return loaded ? loaded->encoder().pack_milliseconds() : 0;
#else
  return 0;
#endif
}

// AnalyzeText as the page's engine runs it (PageOptions). Returns the number of tokens, or -1.
EMSCRIPTEN_KEEPALIVE int bench_analyze(const char* text) {
  if (!loaded) return -1;
  const attn::AnalysisOptions options = PageOptions();
  last_text = text;
  attn::Status status = attn::AnalyzeText(*loaded, last_text, options, &analysis);
  return status.ok() ? analysis.tokens() : -1;
}

// The forward pass alone, over the ids of the last bench_analyze. Returns n, or -1.
EMSCRIPTEN_KEEPALIVE int bench_forward() {
  if (!loaded || analysis.activations.ids.empty()) return -1;
  attn::Status status = loaded->encoder().Forward(analysis.activations.ids, &forward_out);
  return status.ok() ? forward_out.tokens : -1;
}

// Milliseconds per product y (n, N) = x (n, K) W^T + b on random data, the median of `rounds`
// rounds of enough calls to last about 20 ms each. which: 0 the SIMD kernel (packed W),
// 1 Eigen as the encoder called it before the kernels. -1 when the kernel is not built.
EMSCRIPTEN_KEEPALIVE double bench_dense(int which, int n, int K, int N, int rounds) {
#if !BENCH_HAVE_KERNELS
  if (which == 0) return -1;
#endif
  RowMajorMatrix x = RowMajorMatrix::Random(n, K), w = RowMajorMatrix::Random(N, K);
  Eigen::VectorXf b = Eigen::VectorXf::Random(N);
  RowMajorMatrix y(n, N);
  const attn::ConstMatrixMap wm(w.data(), N, K);
  const attn::ConstVectorMap bm(b.data(), N);
#if BENCH_HAVE_KERNELS
  const attn::PackedLinear packed(w.data(), b.data(), N, K);
#endif
  auto once = [&]() {
#if BENCH_HAVE_KERNELS
    if (which == 0) {
      attn::Linear(packed, x, y);
      return;
    }
#endif
    EigenDense(x, wm, bm, y);
  };
  once();
  double t0 = Now();
  int calls = 0;
  while (Now() - t0 < 5) {
    once();
    ++calls;
  }
  const int per_round = std::max(1, calls * 4);  // about 20 ms
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    t0 = Now();
    for (int c = 0; c < per_round; ++c) once();
    times.push_back((Now() - t0) / per_round);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Where one forward pass's time goes, by operation, on the activations of the last
// bench_analyze (n tokens), each timed as `reps` repetitions over all layers, in ms per forward:
// out[0] Q, K, V products; [1] attention output product; [2] intermediate product with its
// GELU as the encoder runs it; [3] output product; [4] scores and context (all heads);
// [5] scale and softmax with the rows' summaries; [6] the two residual + LayerNorms; [7] GELU
// alone (n x f, the scalar Gelu of encoder.cc, for reference); [8] the whole forward pass;
// [9] the whole AnalyzeText.
EMSCRIPTEN_KEEPALIVE int bench_profile(int reps, double* out) {
  if (!loaded || analysis.activations.ids.empty()) return -1;
  const attn::Activations& a = analysis.activations;
  const attn::Model& model = loaded->model();
  const attn::ModelConfig& c = model.config();
  const Index n = a.tokens, d = a.hidden, H = a.heads, dh = d / H, f = c.intermediate_size;
  const Index L = a.layers;
  const attn::ConstMatrixMap x(a.hidden_states.data(), n, d);
  RowMajorMatrix q(n, d), k(n, d), v(n, d), ctx(n, d), ao(n, d), inter(n, f), y(n, d);
  RowMajorMatrix probs(n, n);
  for (int s = 0; s < 10; ++s) out[s] = 0;
  // Every operand is filled once, in the encoder's order, before anything is timed: uninitialised
  // floats could be subnormal, which x86 handles slowly.
  const attn::LayerWeights& w0 = model.weights().layers[0];
  EigenDense(x, w0.query_weight, w0.query_bias, q);
  EigenDense(x, w0.key_weight, w0.key_bias, k);
  EigenDense(x, w0.value_weight, w0.value_bias, v);
  for (Index h = 0; h < H; ++h) {
    probs.noalias() = q.middleCols(h * dh, dh) * k.middleCols(h * dh, dh).transpose();
    attn::SoftmaxRows(probs);
    ctx.middleCols(h * dh, dh).noalias() = probs * v.middleCols(h * dh, dh);
  }
  EigenDense(ctx, w0.attention_output_weight, w0.attention_output_bias, ao);
  EigenDense(ao, w0.intermediate_weight, w0.intermediate_bias, inter);
  attn::Gelu(inter.data(), static_cast<size_t>(inter.size()));
  EigenDense(inter, w0.output_weight, w0.output_bias, y);
  auto timed = [&](int slot, auto&& body) {
    const double t0 = Now();
    for (int r = 0; r < reps; ++r) {
      for (Index l = 0; l < L; ++l) body(l);
    }
    out[slot] += (Now() - t0) / reps;
  };
  const auto& layers = model.weights().layers;
#if BENCH_HAVE_KERNELS
  const auto& P = packs->layers;
  timed(0, [&](Index l) {
    attn::Linear(P[l].query, x, q);
    attn::Linear(P[l].key, x, k);
    attn::Linear(P[l].value, x, v);
  });
  timed(1, [&](Index l) { attn::Linear(P[l].attention_output, ctx, ao); });
  timed(2, [&](Index l) { attn::Linear(P[l].intermediate, ao, inter, attn::Epilogue::kBiasGelu); });
  timed(3, [&](Index l) { attn::Linear(P[l].output, inter, y); });
  timed(4, [&](Index) {
    for (Index h = 0; h < H; ++h) {
      attn::MatMulTransposed(q.middleCols(h * dh, dh), k.middleCols(h * dh, dh), probs);
      attn::MatMul(probs, v.middleCols(h * dh, dh), ctx.middleCols(h * dh, dh));
    }
  });
#else
  timed(0, [&](Index l) {
    EigenDense(x, layers[l].query_weight, layers[l].query_bias, q);
    EigenDense(x, layers[l].key_weight, layers[l].key_bias, k);
    EigenDense(x, layers[l].value_weight, layers[l].value_bias, v);
  });
  timed(1, [&](Index l) {
    EigenDense(ctx, layers[l].attention_output_weight, layers[l].attention_output_bias, ao);
  });
  timed(2, [&](Index l) {
    EigenDense(ao, layers[l].intermediate_weight, layers[l].intermediate_bias, inter);
    attn::Gelu(inter.data(), static_cast<size_t>(inter.size()));
  });
  timed(3, [&](Index l) { EigenDense(inter, layers[l].output_weight, layers[l].output_bias, y); });
  timed(4, [&](Index) {
    for (Index h = 0; h < H; ++h) {
      probs.noalias() = q.middleCols(h * dh, dh) * k.middleCols(h * dh, dh).transpose();
      ctx.middleCols(h * dh, dh).noalias() = probs * v.middleCols(h * dh, dh);
    }
  });
#endif
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  RowMajorMatrix scores = q.leftCols(dh) * k.leftCols(dh).transpose();
  std::vector<attn::RowSummary> summaries(static_cast<size_t>(n));
  timed(5, [&](Index) {
    for (Index h = 0; h < H; ++h) {
      // A fresh copy each time, as the softmax works in place (memory.copy: Eigen's assignment
      // is a scalar loop in wasm).
      std::copy(scores.data(), scores.data() + scores.size(), probs.data());
      attn::SoftmaxRows(probs, scale, summaries.data());
    }
  });
  timed(6, [&](Index l) {
    ao = y;
    attn::AddLayerNorm(ao, x, layers[l].attention_output_norm_weight,
                       layers[l].attention_output_norm_bias, c.layer_norm_eps);
    attn::AddLayerNorm(ao, x, layers[l].output_norm_weight, layers[l].output_norm_bias,
                       c.layer_norm_eps);
  });
  // On a fresh copy of the intermediate activations each time: GELU applied to its own output
  // over and over drives the values into subnormals, which x86 handles slowly (at n = 128 that
  // had made this 14 ms, more than half a forward pass).
  const RowMajorMatrix gelu_input = inter;
  timed(7, [&](Index) {
    std::copy(gelu_input.data(), gelu_input.data() + gelu_input.size(), inter.data());
    attn::Gelu(inter.data(), static_cast<size_t>(inter.size()));
  });
  // The copies in [5], [6] and [7] (probs = scores, ao = y, the GELU's input) are timed with
  // them; they are small beside the operations.
  double t0 = Now();
  for (int r = 0; r < reps; ++r) loaded->encoder().Forward(a.ids, &forward_out);
  out[8] = (Now() - t0) / reps;
  const attn::AnalysisOptions options = PageOptions();
  t0 = Now();
  for (int r = 0; r < reps; ++r) attn::AnalyzeText(*loaded, last_text, options, &analysis);
  out[9] = (Now() - t0) / reps;
  return static_cast<int>(n);
}

}  // extern "C"

extern "C" {

// Where AnalyzeText's time beyond the forward pass goes, on the last bench_analyze, in ms per
// analysis (`reps` repetitions each): out[0] rollout (attn::Rollout, head averages included);
// [1] its L - 1 matrix products alone; [2] row statistics of every row of every head as
// AnalyzeText takes them (from the softmax's summaries); [3] the same re-read from the stored
// rows (SummarizeRow: a log per weight), for reference; [4] head profiles.
EMSCRIPTEN_KEEPALIVE int bench_analysis_profile(int reps, double* out) {
  if (!loaded || analysis.activations.ids.empty()) return -1;
  const attn::Activations& a = analysis.activations;
  const int32_t n = a.tokens;
  for (int s = 0; s < 5; ++s) out[s] = 0;
  RowMajorMatrix rollout;
  double t0 = Now();
  for (int r = 0; r < reps; ++r) rollout = attn::Rollout(a);
  out[0] = (Now() - t0) / reps;
  RowMajorMatrix product(n, n), left = rollout, right = rollout;
  t0 = Now();
  for (int rep = 0; rep < reps; ++rep) {
    for (int32_t l = 1; l < a.layers; ++l) {
#if BENCH_HAVE_KERNELS
      attn::MatMul(left, right, product);
#else
      product.noalias() = left * right;
#endif
    }
  }
  out[1] = (Now() - t0) / reps;
  // Every head's row statistics, packed as AnalyzeText packs them, from rows_of(l, h); in ms.
  std::vector<float> stats(static_cast<size_t>(a.layers) * a.heads * n * attn::kRowStatFields);
  const auto time_stats = [&](auto rows_of) {
    const double start = Now();
    for (int rep = 0; rep < reps; ++rep) {
      float* packed = stats.data();
      for (int32_t l = 0; l < a.layers; ++l) {
        for (int32_t h = 0; h < a.heads; ++h) {
          for (const attn::RowStats& row : rows_of(l, h)) {
            attn::PackRowStats(row, packed);
            packed += attn::kRowStatFields;
          }
        }
      }
    }
    return (Now() - start) / reps;
  };
  out[2] = time_stats([&](int32_t l, int32_t h) { return attn::ComputeRowStats(a, l, h); });
  out[3] = time_stats([&](int32_t l, int32_t h) {
    std::vector<attn::RowStats> rows(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = attn::ComputeRowStats(a.AttentionRow(l, h, i), n);
    return rows;
  });
  t0 = Now();
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<attn::HeadProfile> profiles;
    attn::AccumulateHeadProfiles(a, analysis.roles, &profiles);
  }
  out[4] = (Now() - t0) / reps;
  return n;
}

}  // extern "C"
