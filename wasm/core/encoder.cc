// The BERT forward pass (see encoder.h). Each layer reads like the paper: self-attention,
// output projection, residual + LayerNorm, feed-forward with GELU, residual + LayerNorm.
#include "core/encoder.h"

#include <cmath>
#include <string>

#include <unsupported/Eigen/SpecialFunctions>

namespace attn {
namespace {

using Eigen::Index;

// Q, K, V for every head at once, then per head: scores q . k / sqrt(d_head), a row
// softmax, and the probability-weighted sum of values into the head's slice of context.
void SelfAttention(const LayerWeights& w, const ConstMatrixMap& x, int32_t heads,
                   MatrixMap query, MatrixMap key, RowMajorMatrix& value, float* attention_probs,
                   RowMajorMatrix& context) {
  const Index n = x.rows(), d = x.cols(), d_head = d / heads;
  query.noalias() = x * w.query_weight.transpose();
  query.rowwise() += w.query_bias.transpose();
  key.noalias() = x * w.key_weight.transpose();
  key.rowwise() += w.key_bias.transpose();
  value.noalias() = x * w.value_weight.transpose();
  value.rowwise() += w.value_bias.transpose();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
  for (int32_t h = 0; h < heads; ++h) {
    MatrixMap probs(attention_probs + h * n * n, n, n);  // (n, n)
    probs.noalias() = query.middleCols(h * d_head, d_head) * key.middleCols(h * d_head, d_head).transpose();
    probs *= scale;
    SoftmaxRows(probs);
    context.middleCols(h * d_head, d_head).noalias() = probs * value.middleCols(h * d_head, d_head);
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

void SoftmaxRows(Eigen::Ref<RowMajorMatrix> scores) {
  for (Index i = 0; i < scores.rows(); ++i) {
    auto row = scores.row(i);
    const float max = row.maxCoeff();
    row = (row.array() - max).exp();
    // Summed in double so that the row sums to 1 within float rounding of its entries.
    const double sum = row.cast<double>().sum();
    row *= static_cast<float>(1.0 / sum);
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

Encoder::Encoder(const Model& model) : model_(model) {}

double Encoder::ForwardFlops(const ModelConfig& c, int32_t n) {
  const double tokens = n, d = c.hidden_size, f = c.intermediate_size;
  const double dense = 2.0 * tokens * (4.0 * d * d + 2.0 * d * f);
  const double attention = 2.0 * 2.0 * tokens * tokens * d;  // scores and context, all heads
  return c.num_hidden_layers * (dense + attention);
}

Status Encoder::Forward(const std::vector<int32_t>& ids, Activations* out) {
  const ModelConfig& c = model_.config();
  const Weights& w = model_.weights();
  const Index n = static_cast<Index>(ids.size());
  if (n == 0) return Status::Error("no tokens to encode: give at least [CLS] and [SEP]");
  if (n > static_cast<Index>(c.max_position_embeddings)) {
    return Status::Error("sentence has " + std::to_string(n) + " tokens, more than the model's " +
                         std::to_string(c.max_position_embeddings) +
                         " positions; shorten the text");
  }
  for (Index i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= c.vocab_size) {
      return Status::Error("token id " + std::to_string(ids[i]) + " at position " +
                           std::to_string(i) + " is outside the vocabulary [0, " +
                           std::to_string(c.vocab_size) + "); tokenize with this model's vocabulary");
    }
  }
  const Index L = c.num_hidden_layers, H = c.num_attention_heads, d = c.hidden_size;
  const Index f = c.intermediate_size;
  Activations& a = *out;
  a.layers = static_cast<int32_t>(L);
  a.heads = static_cast<int32_t>(H);
  a.tokens = static_cast<int32_t>(n);
  a.hidden = static_cast<int32_t>(d);
  a.ids = ids;
  a.hidden_states.resize(static_cast<size_t>((L + 1) * n * d));
  a.attention_probs.resize(static_cast<size_t>(L * H * n * n));
  a.queries.resize(static_cast<size_t>(L * n * d));
  a.keys.resize(static_cast<size_t>(L * n * d));
  value_.resize(n, d);
  context_.resize(n, d);
  attention_out_.resize(n, d);
  intermediate_.resize(n, f);

  // Embeddings: word + position + token type 0, then LayerNorm.
  MatrixMap embeddings(a.hidden_states.data(), n, d);  // (n, d)
  for (Index i = 0; i < n; ++i) {
    embeddings.row(i) = w.word_embeddings.row(ids[i]) + w.position_embeddings.row(i) +
                        w.token_type_embeddings.row(0);
  }
  LayerNorm(embeddings, w.embeddings_norm_weight, w.embeddings_norm_bias, c.layer_norm_eps);

  for (Index l = 0; l < L; ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const ConstMatrixMap x(a.hidden_states.data() + l * n * d, n, d);  // (n, d)
    MatrixMap y(a.hidden_states.data() + (l + 1) * n * d, n, d);       // (n, d)
    MatrixMap query(a.queries.data() + l * n * d, n, d);
    MatrixMap key(a.keys.data() + l * n * d, n, d);
    SelfAttention(lw, x, static_cast<int32_t>(H), query, key, value_,
                  a.attention_probs.data() + l * H * n * n, context_);
    attention_out_.noalias() = context_ * lw.attention_output_weight.transpose();
    attention_out_.rowwise() += lw.attention_output_bias.transpose();
    AddLayerNorm(attention_out_, x, lw.attention_output_norm_weight, lw.attention_output_norm_bias,
                 c.layer_norm_eps);
    intermediate_.noalias() = attention_out_ * lw.intermediate_weight.transpose();
    intermediate_.rowwise() += lw.intermediate_bias.transpose();
    Gelu(intermediate_.data(), static_cast<size_t>(intermediate_.size()));
    y.noalias() = intermediate_ * lw.output_weight.transpose();
    y.rowwise() += lw.output_bias.transpose();
    AddLayerNorm(y, attention_out_, lw.output_norm_weight, lw.output_norm_bias, c.layer_norm_eps);
  }
  return Status::Ok();
}

Status Encoder::MaskedLmLogits(const Activations& activations, int32_t position,
                               std::vector<float>* logits) const {
  const Weights& w = model_.weights();
  const ModelConfig& c = model_.config();
  if (!w.has_masked_lm_head) {
    return Status::Error("this model file has no masked-LM head (cls.predictions.*); convert a "
                         "BertForMaskedLM checkpoint with scripts/convert_model.py to get one");
  }
  if (activations.layers != static_cast<int32_t>(c.num_hidden_layers) ||
      activations.hidden != static_cast<int32_t>(c.hidden_size)) {
    return Status::Error("activations do not come from this model; run Forward with it first");
  }
  if (position < 0 || position >= activations.tokens) {
    return Status::Error("position " + std::to_string(position) + " is outside the sentence [0, " +
                         std::to_string(activations.tokens) + ")");
  }
  RowMajorMatrix transformed = activations.HiddenState(activations.layers).row(position) *
                               w.mlm_transform_weight.transpose();  // (1, d)
  transformed += w.mlm_transform_bias.transpose();
  Gelu(transformed.data(), static_cast<size_t>(transformed.size()));
  LayerNorm(transformed, w.mlm_transform_norm_weight, w.mlm_transform_norm_bias, c.layer_norm_eps);
  logits->resize(c.vocab_size);
  Eigen::Map<Eigen::VectorXf> scores(logits->data(), c.vocab_size);  // (V)
  scores.noalias() = w.word_embeddings * transformed.row(0).transpose();
  scores += w.mlm_bias;
  return Status::Ok();
}

}  // namespace attn
