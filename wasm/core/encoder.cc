// The BERT forward pass (see encoder.h). Each layer reads like the paper: self-attention,
// output projection, residual + LayerNorm, feed-forward with GELU, residual + LayerNorm.
#include "core/encoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include <unsupported/Eigen/SpecialFunctions>

#include "core/kernels.h"
#include "core/row_math.h"

namespace attn {
namespace {

using Eigen::Index;

// Q, K, V for every head at once, then per head: scores q . k / sqrt(d_head), a row
// softmax, and the probability-weighted sum of values into the head's slice of context.
// Without with_context, only the probabilities: no values and no context.
void SelfAttention(const PackedLayer& w, const ConstMatrixMap& x, int32_t heads,
                   const uint8_t* removed, MatrixMap query, MatrixMap key, RowMajorMatrix& value,
                   float* attention_probs, RowSummary* summaries, RowMajorMatrix& context,
                   bool with_context = true) {
  const Index n = x.rows(), d = x.cols(), d_head = d / heads;
  Linear(w.query, x, query);
  Linear(w.key, x, key);
  if (with_context) Linear(w.value, x, value);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
  for (int32_t h = 0; h < heads; ++h) {
    MatrixMap probs(attention_probs + h * n * n, n, n);  // (n, n)
    MatMulTransposed(query.middleCols(h * d_head, d_head), key.middleCols(h * d_head, d_head), probs);
    SoftmaxRows(probs, scale, summaries + h * n);
    if (!with_context) continue;
    if (removed != nullptr && removed[h]) {
      context.middleCols(h * d_head, d_head).setZero();
    } else {
      MatMul(probs, value.middleCols(h * d_head, d_head), context.middleCols(h * d_head, d_head));
    }
  }
}

}  // namespace

void LayerNorm(Eigen::Ref<RowMajorMatrix> x, const Eigen::Ref<const Eigen::VectorXf>& gamma,
               const Eigen::Ref<const Eigen::VectorXf>& beta, float eps) {
  AddLayerNorm(x, RowMajorMatrix(), gamma, beta, eps);
}

void AddLayerNorm(Eigen::Ref<RowMajorMatrix> x, const Eigen::Ref<const RowMajorMatrix>& residual,
                  const Eigen::Ref<const Eigen::VectorXf>& gamma,
                  const Eigen::Ref<const Eigen::VectorXf>& beta, float eps) {
  const Index d = x.cols();
  const bool add = residual.size() != 0;
  // The sum and the statistics in double: rounding the sum to float first, then dividing by a
  // small standard deviation, would cost most of the parity budget in deep, peaky models.
  for (Index i = 0; i < x.rows(); ++i) {
    float* row = x.row(i).data();
    const float* res = add ? residual.row(i).data() : nullptr;
    auto value = [&](Index j) { return double{row[j]} + (add ? double{res[j]} : 0.0); };
    double mean = 0;
    for (Index j = 0; j < d; ++j) mean += value(j);
    mean /= static_cast<double>(d);
    double variance = 0;
    for (Index j = 0; j < d; ++j) variance += (value(j) - mean) * (value(j) - mean);
    variance /= static_cast<double>(d);
    const double inv_std = 1.0 / std::sqrt(variance + static_cast<double>(eps));
    for (Index j = 0; j < d; ++j) {
      row[j] = static_cast<float>((value(j) - mean) * inv_std * gamma(j) + beta(j));
    }
  }
}

void SoftmaxRows(Eigen::Ref<RowMajorMatrix> scores, float scale, RowSummary* summaries) {
  // core/row_math.h: SIMD128 with a polynomial exp in wasm, Eigen natively.
  for (Index i = 0; i < scores.rows(); ++i) {
    const RowSummary summary = SoftmaxRowSummary(scores.row(i).data(), static_cast<int32_t>(scores.cols()), scale);
    if (summaries != nullptr) summaries[i] = summary;
  }
}

void Gelu(float* values, size_t count) {
  // Eigen's vectorised erf (within a few float ulps of the exact value) is some 30 times
  // faster than calling std::erf per element, which cost more than the GEMM before it.
  Eigen::Map<Eigen::ArrayXf> x(values, static_cast<Index>(count));
  x = 0.5f * x * (1.0f + (x * 0.70710678118654752440f).erf());
}

ConstMatrixMap Activations::HiddenState(int32_t index) const {
  const Index nd = Index{tokens} * hidden;
  return ConstMatrixMap(hidden_states.data() + index * nd, tokens, hidden);
}

ConstMatrixMap Activations::Attention(int32_t layer, int32_t head) const {
  const Index nn = Index{tokens} * tokens;
  return ConstMatrixMap(attention_probs.data() + (Index{layer} * heads + head) * nn, tokens, tokens);
}

ConstMatrixMap Activations::Query(int32_t layer) const {
  return ConstMatrixMap(queries.data() + Index{layer} * tokens * hidden, tokens, hidden);
}

ConstMatrixMap Activations::Key(int32_t layer) const {
  return ConstMatrixMap(keys.data() + Index{layer} * tokens * hidden, tokens, hidden);
}

const float* Activations::AttentionRow(int32_t layer, int32_t head, int32_t row) const {
  return Attention(layer, head).data() + Index{row} * tokens;
}

const RowSummary* Activations::RowSummaries(int32_t layer, int32_t head) const {
  return row_summaries.data() + (static_cast<size_t>(layer) * heads + head) * tokens;
}

Encoder::Encoder(const Model& model) : model_(model) {
  const auto start = std::chrono::steady_clock::now();
  packed_.reserve(model.weights().layers.size());
  for (const LayerWeights& w : model.weights().layers) {
    packed_.emplace_back(w);
    packed_bytes_ += packed_.back().packed_bytes();
  }
  pack_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double Encoder::ForwardFlops(const ModelConfig& c, int32_t n) {
  const double tokens = n, d = c.hidden_size, f = c.intermediate_size;
  const double dense = 2.0 * tokens * (4.0 * d * d + 2.0 * d * f);
  const double attention = 2.0 * 2.0 * tokens * tokens * d;  // scores and context, all heads
  return c.num_hidden_layers * (dense + attention);
}

uint64_t Encoder::ActivationFloats(const ModelConfig& c, int32_t n) {
  const uint64_t tokens = n > 0 ? static_cast<uint64_t>(n) : 0;
  const uint64_t L = c.num_hidden_layers, H = c.num_attention_heads, d = c.hidden_size;
  const uint64_t f = c.intermediate_size;
  // hidden states, attention, queries and keys, then the scratch: value, context, attention
  // output (n, d) and intermediate (n, f). ConfigLimits keep every product below 2^62.
  // The value norms (L, H, n) and their scratch (n, d) when asked for are counted too, and
  // the row summaries (L, H, n), as floats of their size.
  constexpr uint64_t summary_floats = (sizeof(RowSummary) + sizeof(float) - 1) / sizeof(float);
  // So are the values and contexts (L, n, d) each, kept when asked for.
  return (L + 1) * tokens * d + L * H * tokens * tokens + 4 * L * tokens * d + 3 * tokens * d +
         tokens * f + L * H * tokens + tokens * d + summary_floats * L * H * tokens;
}

Status Encoder::CheckIds(const std::vector<int32_t>& ids) const {
  const ModelConfig& c = model_.config();
  if (ids.empty()) return Status::Error("no tokens to encode: give at least [CLS] and [SEP]");
  if (ids.size() > c.max_position_embeddings) {
    return Status::Error("sentence has " + std::to_string(ids.size()) +
                         " tokens, more than the model's " +
                         std::to_string(c.max_position_embeddings) + " positions; shorten the text");
  }
  const uint64_t floats = ActivationFloats(c, static_cast<int32_t>(ids.size()));
  if (floats > MemoryBudget::kMaxActivationFloats) {
    return Status::Error("a forward pass over " + std::to_string(ids.size()) +
                         " tokens of this model needs " + CountString(floats) +
                         " activation values, more than this build allows (" +
                         CountString(MemoryBudget::kMaxActivationFloats) + "); shorten the text");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= c.vocab_size) {
      return Status::Error("token id " + std::to_string(ids[i]) + " at position " +
                           std::to_string(i) + " is outside the vocabulary [0, " +
                           std::to_string(c.vocab_size) + "); tokenize with this model's vocabulary");
    }
    if (!model_.RowLoaded(ids[i])) {
      return Status::Error("the word-embedding row of token id " + std::to_string(ids[i]) +
                           " is in shard " + std::to_string(model_.ShardOfRow(ids[i])) +
                           ", which is not loaded; load that shard of the model first");
    }
  }
  return Status::Ok();
}

void Encoder::Resize(int32_t n, Activations* out) {
  const ModelConfig& c = model_.config();
  const size_t L = c.num_hidden_layers, H = c.num_attention_heads, d = c.hidden_size;
  const size_t tokens = static_cast<size_t>(n);
  out->layers = static_cast<int32_t>(L);
  out->heads = static_cast<int32_t>(H);
  out->tokens = n;
  out->hidden = static_cast<int32_t>(d);
  out->hidden_states.resize((L + 1) * tokens * d);
  out->attention_probs.resize(L * H * tokens * tokens);
  out->row_summaries.resize(L * H * tokens);
  out->queries.resize(L * tokens * d);
  out->keys.resize(L * tokens * d);
  value_.resize(n, static_cast<Index>(d));
  context_.resize(n, static_cast<Index>(d));
  attention_out_.resize(n, static_cast<Index>(d));
  intermediate_.resize(n, static_cast<Index>(c.intermediate_size));
}

void Encoder::Embed(const std::vector<int32_t>& ids, MatrixMap x) const {
  const Weights& w = model_.weights();
  for (Index i = 0; i < x.rows(); ++i) {
    x.row(i) = w.word_embeddings.row(ids[static_cast<size_t>(i)]) + w.position_embeddings.row(i) +
               w.token_type_embeddings.row(0);
  }
  LayerNorm(x, w.embeddings_norm_weight, w.embeddings_norm_bias, model_.config().layer_norm_eps);
}

void Encoder::FeedForward(const LayerWeights& w, const PackedLayer& packed, const RowMajorMatrix& x,
                          MatrixMap y) {
  Linear(packed.intermediate, x, intermediate_, Epilogue::kBiasGelu);
  Linear(packed.output, intermediate_, y);
  AddLayerNorm(y, x, w.output_norm_weight, w.output_norm_bias, model_.config().layer_norm_eps);
}

void Encoder::ValueNorms(const LayerWeights& w, float* norms) const {
  const Index n = value_.rows(), d = value_.cols();
  const Index heads = model_.config().num_attention_heads, d_head = d / heads;
  RowMajorMatrix carried(n, d);  // (n, d): v_j^h W_O^h^T for one head
  for (Index h = 0; h < heads; ++h) {
    carried.noalias() = value_.middleCols(h * d_head, d_head) *
                        w.attention_output_weight.middleCols(h * d_head, d_head).transpose();
    Eigen::Map<Eigen::VectorXf>(norms + h * n, n) = carried.rowwise().norm();
  }
}

RowMajorMatrix Encoder::FinalHiddenRow(const Activations& a, int32_t position) const {
  if (position < 0 || position >= a.tokens || a.layers <= 0) return RowMajorMatrix();
  if (a.final_hidden) return a.HiddenState(a.layers).middleRows(position, 1);
  // The pass stopped at the last layer's attention, which it does only with no head removed:
  // the row's context is each head's attention row times that head's values.
  const int32_t l = a.layers - 1;
  const Index n = a.tokens, d = a.hidden, d_head = a.head_size();
  const ConstMatrixMap x = a.HiddenState(l);
  RowMajorMatrix value(n, d), context(1, d), y;
  Linear(packed_[static_cast<size_t>(l)].value, x, value);
  for (int32_t h = 0; h < a.heads; ++h) {
    const ConstMatrixMap row(a.AttentionRow(l, h, position), 1, n);
    MatMul(row, value.middleCols(h * d_head, d_head), context.middleCols(h * d_head, d_head));
  }
  FinishLayer(l, context, x.middleRows(position, 1), &y);
  return y;
}

void Encoder::FinishLayer(int32_t layer, const Eigen::Ref<const RowMajorMatrix>& context,
                          const Eigen::Ref<const RowMajorMatrix>& x, RowMajorMatrix* y) const {
  const LayerWeights& w = model_.weights().layers[static_cast<size_t>(layer)];
  const PackedLayer& packed = packed_[static_cast<size_t>(layer)];
  const float eps = model_.config().layer_norm_eps;
  const Index k = context.rows();
  RowMajorMatrix attended(k, context.cols());
  RowMajorMatrix intermediate(k, static_cast<Index>(model_.config().intermediate_size));
  Linear(packed.attention_output, context, attended);
  AddLayerNorm(attended, x, w.attention_output_norm_weight, w.attention_output_norm_bias, eps);
  y->resize(k, context.cols());
  Linear(packed.intermediate, attended, intermediate, Epilogue::kBiasGelu);
  Linear(packed.output, intermediate, *y);
  AddLayerNorm(*y, attended, w.output_norm_weight, w.output_norm_bias, eps);
}

Status ForwardOptions::Check(const ModelConfig& c, const std::vector<int32_t>& ids,
                             const Activations& previous) const {
  const size_t head_count = size_t{c.num_hidden_layers} * c.num_attention_heads;
  if (!removed_heads.empty() && removed_heads.size() != head_count) {
    return Status::Error("the head mask has " + std::to_string(removed_heads.size()) +
                         " entries, expected " + std::to_string(head_count) + " (layers x heads)");
  }
  const size_t d_head = c.num_attention_heads ? c.hidden_size / c.num_attention_heads : 0;
  if (!replacements.empty() && replacements.size() != head_count * d_head) {
    return Status::Error("the head replacements have " + std::to_string(replacements.size()) +
                         " values, expected " + std::to_string(head_count * d_head) + " (layers x heads x head size)");
  }
  for (float v : replacements) {
    if (!std::isfinite(v)) return Status::Error("a head replacement value is not a finite number");
  }
  if (first_layer < 0 || first_layer > static_cast<int32_t>(c.num_hidden_layers)) {
    return Status::Error("first_layer " + std::to_string(first_layer) + " is outside [0, " +
                         std::to_string(c.num_hidden_layers) + "]");
  }
  if (first_layer == 0) return Status::Ok();
  // The heads removed before first_layer, as the resumed pass recorded them (0 or 1 each).
  const size_t kept = static_cast<size_t>(first_layer) * c.num_attention_heads;
  bool same_heads = previous.removed_heads.size() == head_count;
  bool any_removed = false;
  for (size_t k = 0; same_heads && k < kept; ++k) {
    same_heads = previous.removed_heads[k] == ((k < removed_heads.size() && removed_heads[k] != 0) ? 1 : 0);
    any_removed = any_removed || previous.removed_heads[k] != 0;
  }
  if (any_removed && previous.replaced != !replacements.empty()) same_heads = false;
  if (previous.ids != ids || previous.layers != static_cast<int32_t>(c.num_hidden_layers) ||
      previous.heads != static_cast<int32_t>(c.num_attention_heads) ||
      previous.hidden != static_cast<int32_t>(c.hidden_size) || !same_heads ||
      (value_norms && previous.value_norms.size() != head_count * ids.size()) ||
      (values && previous.values.size() != size_t{c.num_hidden_layers} * ids.size() * c.hidden_size)) {
    return Status::Error("a pass resumed at layer " + std::to_string(first_layer + 1) +
                         " needs the activations of a pass over the same tokens with the same heads removed before it");
  }
  return Status::Ok();
}

Status Encoder::Forward(const std::vector<int32_t>& ids, Activations* out,
                        const ForwardOptions& options) {
  Status status = CheckIds(ids);
  if (status.ok()) status = options.Check(model_.config(), ids, *out);
  if (!status.ok()) return status;
  const ModelConfig& c = model_.config();
  const size_t head_count = size_t{c.num_hidden_layers} * c.num_attention_heads;
  const Index n = static_cast<Index>(ids.size());
  const int32_t first = options.first_layer;
  std::vector<uint8_t> flags(head_count, 0);
  for (size_t k = 0; k < options.removed_heads.size(); ++k) flags[k] = options.removed_heads[k] != 0;
  Resize(static_cast<int32_t>(n), out);
  Activations& a = *out;
  a.ids = ids;
  a.removed_heads = std::move(flags);
  a.replaced = !options.replacements.empty();
  const uint8_t* removed = options.removed_heads.empty() ? nullptr : a.removed_heads.data();
  const size_t layer_floats = static_cast<size_t>(n) * a.hidden;
  if (!options.values) {
    a.values.clear();
    a.contexts.clear();
  } else {
    a.values.resize(static_cast<size_t>(a.layers) * layer_floats);
    a.contexts.resize(static_cast<size_t>(a.layers) * layer_floats);
  }
  if (!options.value_norms) {
    a.value_norms.clear();
  } else if (first == 0) {
    a.value_norms.assign(head_count * static_cast<size_t>(n), 0.0f);
  }
  const Index H = a.heads, d = a.hidden;
  const float eps = model_.config().layer_norm_eps;
  // The last layer stops at its attention only when nothing else reads its context.
  const bool stop_early = options.last_layer_attention_only && removed == nullptr &&
                          !options.values && !options.value_norms;
  if (first < a.layers) a.final_hidden = !stop_early;
  if (first == 0) Embed(ids, MatrixMap(a.hidden_states.data(), n, d));
  for (Index l = first; l < a.layers; ++l) {
    const LayerWeights& w = model_.weights().layers[static_cast<size_t>(l)];
    const PackedLayer& packed = packed_[static_cast<size_t>(l)];
    const ConstMatrixMap x(a.hidden_states.data() + l * n * d, n, d);  // (n, d)
    const bool last_stops = stop_early && l == a.layers - 1;
    SelfAttention(packed, x, static_cast<int32_t>(H), removed ? removed + l * H : nullptr,
                  MatrixMap(a.queries.data() + l * n * d, n, d),
                  MatrixMap(a.keys.data() + l * n * d, n, d), value_,
                  a.attention_probs.data() + l * H * n * n, a.row_summaries.data() + l * H * n,
                  context_, !last_stops);
    if (last_stops) break;
    if (options.value_norms) ValueNorms(w, a.value_norms.data() + l * H * n);
    if (removed && a.replaced) {
      const Index d_head = d / H;
      for (Index h = 0; h < H; ++h) {
        if (!removed[l * H + h]) continue;
        const Eigen::Map<const Eigen::RowVectorXf> mean(options.replacements.data() + (l * H + h) * d_head, d_head);
        context_.middleCols(h * d_head, d_head).rowwise() = mean;
      }
    }
    if (options.values) {
      MatrixMap(a.values.data() + l * layer_floats, n, d) = value_;
      MatrixMap(a.contexts.data() + l * layer_floats, n, d) = context_;
    }
    Linear(packed.attention_output, context_, attention_out_);
    AddLayerNorm(attention_out_, x, w.attention_output_norm_weight, w.attention_output_norm_bias, eps);
    FeedForward(w, packed, attention_out_, MatrixMap(a.hidden_states.data() + (l + 1) * n * d, n, d));
  }
  return Status::Ok();
}

Status Encoder::CheckMaskedLm(const Activations& activations, int32_t position) const {
  const Weights& w = model_.weights();
  const ModelConfig& c = model_.config();
  if (!w.has_masked_lm_head) {
    return Status::Error("this model file has no masked-LM head (cls.predictions.*); convert a "
                         "BertForMaskedLM checkpoint with scripts/model/convert_model.py to get one");
  }
  if (!model_.AllRowsLoaded()) {
    return Status::Error("masked-LM predictions score every vocabulary entry, so they need the "
                         "whole word-embedding table: " + std::to_string(model_.loaded_shards()) +
                         " of " + std::to_string(model_.shard_count()) + " shards are loaded; load the rest first");
  }
  if (activations.layers != static_cast<int32_t>(c.num_hidden_layers) ||
      activations.hidden != static_cast<int32_t>(c.hidden_size)) {
    return Status::Error("activations do not come from this model; run Forward with it first");
  }
  if (position < 0 || position >= activations.tokens) {
    return Status::Error("position " + std::to_string(position) + " is outside the sentence [0, " +
                         std::to_string(activations.tokens) + ")");
  }
  return Status::Ok();
}

RowMajorMatrix Encoder::MaskedLmTransform(const Activations& activations, int32_t position) const {
  const Weights& w = model_.weights();
  RowMajorMatrix transformed = FinalHiddenRow(activations, position) *
                               w.mlm_transform_weight.transpose();  // (1, d)
  transformed += w.mlm_transform_bias.transpose();
  Gelu(transformed.data(), static_cast<size_t>(transformed.size()));
  LayerNorm(transformed, w.mlm_transform_norm_weight, w.mlm_transform_norm_bias, model_.config().layer_norm_eps);
  return transformed;
}

Status Encoder::MaskedLmLogits(const Activations& activations, int32_t position,
                               std::vector<float>* logits) const {
  Status status = CheckMaskedLm(activations, position);
  if (!status.ok()) return status;
  const Weights& w = model_.weights();
  const uint32_t V = model_.config().vocab_size;
  const RowMajorMatrix transformed = MaskedLmTransform(activations, position);
  logits->resize(V);
  Eigen::Map<Eigen::VectorXf> scores(logits->data(), V);  // (V)
  scores.noalias() = w.word_embeddings * transformed.row(0).transpose();
  scores += w.mlm_bias;
  return Status::Ok();
}

Status Encoder::MaskedLmLogitsBatch(const std::vector<const Activations*>& passes,
                                    const std::vector<int32_t>& positions, RowMajorMatrix* logits) const {
  if (passes.size() != positions.size()) {
    return Status::Error("give one position per pass: " + std::to_string(passes.size()) + " passes, " +
                         std::to_string(positions.size()) + " positions");
  }
  const Index k = static_cast<Index>(passes.size());
  const Index d = static_cast<Index>(model_.config().hidden_size);
  RowMajorMatrix transformed(k, d);
  for (Index r = 0; r < k; ++r) {
    if (passes[static_cast<size_t>(r)] == nullptr) return Status::Error("pass " + std::to_string(r) + " is missing");
    Status status = CheckMaskedLm(*passes[static_cast<size_t>(r)], positions[static_cast<size_t>(r)]);
    if (!status.ok()) return status;
    transformed.row(r) = MaskedLmTransform(*passes[static_cast<size_t>(r)], positions[static_cast<size_t>(r)]);
  }
  const Weights& w = model_.weights();
  logits->resize(k, static_cast<Index>(model_.config().vocab_size));
  logits->noalias() = transformed * w.word_embeddings.transpose();  // (k, V)
  logits->rowwise() += w.mlm_bias.transpose();
  return Status::Ok();
}

}  // namespace attn
