// The model file (.attn, format version 1; layout in model_data/README.md): reading and
// validating it, and the loaded model as read-only Eigen views into one float buffer.
// Every tensor is dequantised to f32 at load, whatever its dtype in the file.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_table.h"

namespace attn {

// Fixed layout constants of format version 1.
struct ModelFileFormat {
  static constexpr char kMagic[9] = "ATTNBERT";
  static constexpr uint32_t kVersion = 1;
  static constexpr uint32_t kHeaderBytes = 256;
  static constexpr uint32_t kTensorEntryBytes = 128;
  static constexpr uint32_t kTensorNameBytes = 64;
  static constexpr uint32_t kDataAlignment = 64;
};

// kRans: integers with per-group scales like kInt8, at any number of levels, entropy-coded
// (core/rans.h).
enum class DType : uint32_t { kF32 = 0, kF16 = 1, kInt8 = 2, kRans = 3 };
constexpr uint32_t kDTypeCount = 4;
const char* DTypeName(DType dtype);  // "f32", "f16", "int8", "rans"

// zlib's CRC-32 (reflected polynomial 0xEDB88320), the same value as Python's zlib.crc32.
// Pass a previous result as crc to continue over more bytes.
uint32_t Crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

// Row-major, as PyTorch stores weights: an nn.Linear weight is (out, in).
using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;

struct LayerWeights {
  ConstMatrixMap query_weight{nullptr, 0, 0};              // (d, d)
  ConstVectorMap query_bias{nullptr, 0};                   // (d)
  ConstMatrixMap key_weight{nullptr, 0, 0};                // (d, d)
  ConstVectorMap key_bias{nullptr, 0};                     // (d)
  ConstMatrixMap value_weight{nullptr, 0, 0};              // (d, d)
  ConstVectorMap value_bias{nullptr, 0};                   // (d)
  ConstMatrixMap attention_output_weight{nullptr, 0, 0};   // (d, d)
  ConstVectorMap attention_output_bias{nullptr, 0};        // (d)
  ConstVectorMap attention_output_norm_weight{nullptr, 0};  // (d)
  ConstVectorMap attention_output_norm_bias{nullptr, 0};    // (d)
  ConstMatrixMap intermediate_weight{nullptr, 0, 0};       // (f, d)
  ConstVectorMap intermediate_bias{nullptr, 0};            // (f)
  ConstMatrixMap output_weight{nullptr, 0, 0};             // (d, f)
  ConstVectorMap output_bias{nullptr, 0};                  // (d)
  ConstVectorMap output_norm_weight{nullptr, 0};           // (d)
  ConstVectorMap output_norm_bias{nullptr, 0};             // (d)
};

struct Weights {
  ConstMatrixMap word_embeddings{nullptr, 0, 0};        // (V, d)
  ConstMatrixMap position_embeddings{nullptr, 0, 0};    // (P, d)
  ConstMatrixMap token_type_embeddings{nullptr, 0, 0};  // (T, d)
  ConstVectorMap embeddings_norm_weight{nullptr, 0};    // (d)
  ConstVectorMap embeddings_norm_bias{nullptr, 0};      // (d)
  std::vector<LayerWeights> layers;                     // L

  bool has_pooler = false;
  ConstMatrixMap pooler_weight{nullptr, 0, 0};  // (d, d)
  ConstVectorMap pooler_bias{nullptr, 0};       // (d)

  // Masked-LM head; its decoder weight is word_embeddings (tied, as in BertForMaskedLM).
  bool has_masked_lm_head = false;
  ConstMatrixMap mlm_transform_weight{nullptr, 0, 0};   // (d, d)
  ConstVectorMap mlm_transform_bias{nullptr, 0};        // (d)
  ConstVectorMap mlm_transform_norm_weight{nullptr, 0};  // (d)
  ConstVectorMap mlm_transform_norm_bias{nullptr, 0};    // (d)
  ConstVectorMap mlm_bias{nullptr, 0};                   // (V)
};

// One tensor as the file recorded it and where its f32 values now live.
struct TensorInfo {
  TensorSpec spec;           // name, shape, kind, layer, group
  DType dtype = DType::kF32;  // as stored in the file
  uint32_t group_size = 0;   // int8 and rans: elements sharing one scale
  uint64_t file_offset = 0;  // absolute byte offset in the file
  uint64_t byte_count = 0;   // bytes in the file
  uint64_t float_offset = 0;  // index of its first value in the model's float buffer
};

class Model {
 public:
  // Validates everything (model_data/README.md) and dequantises to f32. The bytes are not
  // kept. On failure *out is untouched and the status says what is wrong and what to do.
  static Status FromBuffer(const uint8_t* data, size_t size, std::unique_ptr<Model>* out);
  static Status FromFile(const std::string& path, std::unique_ptr<Model>* out);

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const std::string& name() const { return name_; }
  const std::string& provenance() const { return provenance_; }  // a JSON object
  const std::string& vocab_text() const { return vocab_text_; }  // vocab.txt content
  const Weights& weights() const { return weights_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // file order
  // The dtypes present in the file, joined by '+' in the order f32, f16, int8, rans:
  // "f32", "f16+int8", "f32+rans".
  const std::string& precision() const { return precision_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint32_t crc32() const { return crc32_; }
  uint64_t parameter_count() const { return buffer_.size(); }

  // Calls visit(const TensorInfo&, const float* values) for every tensor in file order;
  // values holds info.spec.numel() floats.
  template <typename Visitor>
  void ForEachTensor(Visitor&& visit) const {
    for (const TensorInfo& info : tensors_) visit(info, buffer_.data() + info.float_offset);
  }

 private:
  Model() = default;
  void BindWeights();

  ModelConfig config_;
  std::string name_, provenance_, vocab_text_, precision_;
  uint64_t file_bytes_ = 0;
  uint32_t crc32_ = 0;
  std::vector<TensorInfo> tensors_;
  std::vector<float> buffer_;  // every tensor's values, f32, in file order
  Weights weights_;            // views into buffer_
};

}  // namespace attn
