// The expected tensor table: names and shapes from the config (model_data/README.md).
#include "core/tensor_table.h"

#include <cmath>

namespace attn {
namespace {

Status CheckRange(const char* field, uint32_t value, uint32_t max) {
  if (value == 0 || value > max) {
    return Status::Error("model config: " + std::string(field) + " is " + std::to_string(value) +
                         ", expected 1.." + std::to_string(max) +
                         "; the file is damaged or was not written by scripts/model/convert_model.py");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateConfig(const ModelConfig& c) {
  const struct {
    const char* field;
    uint32_t value;
    uint32_t max;
  } checks[] = {
      {"vocab_size", c.vocab_size, ConfigLimits::kMaxVocab},
      {"hidden_size", c.hidden_size, ConfigLimits::kMaxHidden},
      {"num_hidden_layers", c.num_hidden_layers, ConfigLimits::kMaxLayers},
      {"num_attention_heads", c.num_attention_heads, ConfigLimits::kMaxHidden},
      {"intermediate_size", c.intermediate_size, ConfigLimits::kMaxIntermediate},
      {"max_position_embeddings", c.max_position_embeddings, ConfigLimits::kMaxPositions},
      {"type_vocab_size", c.type_vocab_size, ConfigLimits::kMaxTypeVocab},
  };
  for (const auto& check : checks) {
    Status status = CheckRange(check.field, check.value, check.max);
    if (!status.ok()) return status;
  }
  if (c.hidden_size % c.num_attention_heads != 0) {
    return Status::Error("model config: hidden_size " + std::to_string(c.hidden_size) +
                         " is not a multiple of num_attention_heads " +
                         std::to_string(c.num_attention_heads) +
                         "; the file is damaged or was not written by scripts/model/convert_model.py");
  }
  if (!std::isfinite(c.layer_norm_eps) || !(c.layer_norm_eps > 0.0f)) {
    return Status::Error("model config: layer_norm_eps is " + std::to_string(c.layer_norm_eps) +
                         ", expected a finite positive number (BERT uses 1e-12)");
  }
  return Status::Ok();
}

std::vector<TensorSpec> ExpectedTensors(const ModelConfig& c, bool with_pooler,
                                        bool with_masked_lm_head) {
  const uint32_t V = c.vocab_size, P = c.max_position_embeddings, T = c.type_vocab_size;
  const uint32_t d = c.hidden_size, f = c.intermediate_size;
  std::vector<TensorSpec> table;
  auto add = [&table](std::string name, TensorKind kind, int32_t layer, TensorGroup group,
                      uint32_t rows, uint32_t cols) {
    TensorSpec spec;
    spec.name = std::move(name);
    spec.kind = kind;
    spec.layer = layer;
    spec.group = group;
    spec.ndim = cols == 0 ? 1 : 2;
    spec.shape = {rows, cols};
    table.push_back(std::move(spec));
  };
  const TensorGroup E = TensorGroup::kEncoder;
  add("embeddings.word_embeddings.weight", TensorKind::kWordEmbeddings, -1, E, V, d);
  add("embeddings.position_embeddings.weight", TensorKind::kPositionEmbeddings, -1, E, P, d);
  add("embeddings.token_type_embeddings.weight", TensorKind::kTokenTypeEmbeddings, -1, E, T, d);
  add("embeddings.LayerNorm.weight", TensorKind::kEmbeddingsNormWeight, -1, E, d, 0);
  add("embeddings.LayerNorm.bias", TensorKind::kEmbeddingsNormBias, -1, E, d, 0);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    const auto layer = static_cast<int32_t>(l);
    add(p + "attention.self.query.weight", TensorKind::kQueryWeight, layer, E, d, d);
    add(p + "attention.self.query.bias", TensorKind::kQueryBias, layer, E, d, 0);
    add(p + "attention.self.key.weight", TensorKind::kKeyWeight, layer, E, d, d);
    add(p + "attention.self.key.bias", TensorKind::kKeyBias, layer, E, d, 0);
    add(p + "attention.self.value.weight", TensorKind::kValueWeight, layer, E, d, d);
    add(p + "attention.self.value.bias", TensorKind::kValueBias, layer, E, d, 0);
    add(p + "attention.output.dense.weight", TensorKind::kAttentionOutputWeight, layer, E, d, d);
    add(p + "attention.output.dense.bias", TensorKind::kAttentionOutputBias, layer, E, d, 0);
    add(p + "attention.output.LayerNorm.weight", TensorKind::kAttentionOutputNormWeight, layer,
        E, d, 0);
    add(p + "attention.output.LayerNorm.bias", TensorKind::kAttentionOutputNormBias, layer, E,
        d, 0);
    add(p + "intermediate.dense.weight", TensorKind::kIntermediateWeight, layer, E, f, d);
    add(p + "intermediate.dense.bias", TensorKind::kIntermediateBias, layer, E, f, 0);
    add(p + "output.dense.weight", TensorKind::kOutputWeight, layer, E, d, f);
    add(p + "output.dense.bias", TensorKind::kOutputBias, layer, E, d, 0);
    add(p + "output.LayerNorm.weight", TensorKind::kOutputNormWeight, layer, E, d, 0);
    add(p + "output.LayerNorm.bias", TensorKind::kOutputNormBias, layer, E, d, 0);
  }
  if (with_pooler) {
    const TensorGroup G = TensorGroup::kPooler;
    add("pooler.dense.weight", TensorKind::kPoolerWeight, -1, G, d, d);
    add("pooler.dense.bias", TensorKind::kPoolerBias, -1, G, d, 0);
  }
  if (with_masked_lm_head) {
    const TensorGroup G = TensorGroup::kMaskedLmHead;
    add("cls.predictions.transform.dense.weight", TensorKind::kMlmTransformWeight, -1, G, d, d);
    add("cls.predictions.transform.dense.bias", TensorKind::kMlmTransformBias, -1, G, d, 0);
    add("cls.predictions.transform.LayerNorm.weight", TensorKind::kMlmTransformNormWeight, -1, G,
        d, 0);
    add("cls.predictions.transform.LayerNorm.bias", TensorKind::kMlmTransformNormBias, -1, G, d,
        0);
    add("cls.predictions.bias", TensorKind::kMlmBias, -1, G, V, 0);
  }
  return table;
}

std::string ShapeString(uint32_t ndim, const std::array<uint32_t, 2>& shape) {
  if (ndim == 1) return "(" + std::to_string(shape[0]) + ")";
  return "(" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ")";
}

}  // namespace attn
