// The one table of expected tensors, derived from a model config. The model-file reader
// checks every file against it and the encoder binds its weight views through it, so a
// tensor's name and shape are spelled in exactly one place (tensor_table.cc). The Python
// side (scripts/model/modelfile.py) derives the same list from the same rules, documented in
// model_data/README.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace attn {

// Hugging Face BertConfig fields, in the model file's header order.
struct ModelConfig {
  uint32_t vocab_size = 0;               // V
  uint32_t hidden_size = 0;              // d
  uint32_t num_hidden_layers = 0;        // L
  uint32_t num_attention_heads = 0;      // H
  uint32_t intermediate_size = 0;        // f
  uint32_t max_position_embeddings = 0;  // P
  uint32_t type_vocab_size = 0;          // T
  float layer_norm_eps = 0.0f;

  uint32_t head_size() const { return num_attention_heads ? hidden_size / num_attention_heads : 0; }
};

// Limits that keep every size derived from a config far from integer overflow (all products
// below stay under 2^62) while allowing any real BERT (bert-large: d 1024, L 24, f 4096).
struct ConfigLimits {
  static constexpr uint32_t kMaxVocab = 1u << 22;
  static constexpr uint32_t kMaxHidden = 1u << 14;
  static constexpr uint32_t kMaxLayers = 256;
  static constexpr uint32_t kMaxIntermediate = 1u << 16;
  static constexpr uint32_t kMaxPositions = 1u << 16;
  static constexpr uint32_t kMaxTypeVocab = 1u << 10;
};

// Nonzero sizes within ConfigLimits, hidden a multiple of heads, eps finite and positive.
// The message names the field, its value and what was expected.
Status ValidateConfig(const ModelConfig& config);

// The optional groups: each is present completely or not at all.
enum class TensorGroup : uint8_t { kEncoder, kPooler, kMaskedLmHead };

// What a tensor is, independent of its layer; the name is built from (kind, layer).
enum class TensorKind : uint8_t {
  kWordEmbeddings,        // (V, d)
  kPositionEmbeddings,    // (P, d)
  kTokenTypeEmbeddings,   // (T, d)
  kEmbeddingsNormWeight,  // (d)
  kEmbeddingsNormBias,    // (d)
  kQueryWeight,           // (d, d), per layer
  kQueryBias,             // (d)
  kKeyWeight,             // (d, d)
  kKeyBias,               // (d)
  kValueWeight,           // (d, d)
  kValueBias,             // (d)
  kAttentionOutputWeight,      // (d, d)
  kAttentionOutputBias,        // (d)
  kAttentionOutputNormWeight,  // (d)
  kAttentionOutputNormBias,    // (d)
  kIntermediateWeight,    // (f, d)
  kIntermediateBias,      // (f)
  kOutputWeight,          // (d, f)
  kOutputBias,            // (d)
  kOutputNormWeight,      // (d)
  kOutputNormBias,        // (d)
  kPoolerWeight,          // (d, d)
  kPoolerBias,            // (d)
  kMlmTransformWeight,    // (d, d)
  kMlmTransformBias,      // (d)
  kMlmTransformNormWeight,  // (d)
  kMlmTransformNormBias,    // (d)
  kMlmBias,               // (V); the decoder weight is tied to the word embeddings
};

struct TensorSpec {
  std::string name;                 // Hugging Face BertModel name
  TensorKind kind = TensorKind::kWordEmbeddings;
  int32_t layer = -1;               // -1 outside the encoder layers
  TensorGroup group = TensorGroup::kEncoder;
  uint32_t ndim = 1;                // 1 or 2
  std::array<uint32_t, 2> shape{};  // PyTorch order: nn.Linear.weight is (out, in)

  uint64_t numel() const { return ndim == 1 ? shape[0] : uint64_t{shape[0]} * shape[1]; }
};

// The tensors a file with this config must hold, in file order: the embeddings, each layer,
// then the pooler and the masked-LM head when asked for. The config must be valid.
std::vector<TensorSpec> ExpectedTensors(const ModelConfig& config, bool with_pooler,
                                        bool with_masked_lm_head);

// "(a, b)" or "(a)", as the loader's messages print shapes.
std::string ShapeString(uint32_t ndim, const std::array<uint32_t, 2>& shape);

}  // namespace attn
