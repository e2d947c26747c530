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

#include "core/rans.h"
#include "core/status.h"
#include "core/tensor_table.h"
#include "core/tokenizer.h"

namespace attn {

// Fixed layout of format version 1: the byte offsets of every header and tensor-entry field,
// in the order of the tables in model_data/README.md (all integers little-endian).
struct ModelFileFormat {
  static constexpr char kMagic[9] = "ATTNBERT";
  static constexpr uint32_t kVersion = 1;
  static constexpr uint32_t kHeaderBytes = 256;
  static constexpr uint32_t kTensorEntryBytes = 128;
  static constexpr uint32_t kTensorNameBytes = 64;
  static constexpr uint32_t kDataAlignment = 64;

  // Header.
  static constexpr uint32_t kMagicAt = 0;        // 8 bytes
  static constexpr uint32_t kVersionAt = 8;      // u32
  static constexpr uint32_t kHeaderBytesAt = 12;  // u32
  static constexpr uint32_t kConfigAt = 16;      // 7 x u32 (ModelConfig's order), then f32 eps
  static constexpr uint32_t kNumTensorsAt = 48;  // u32
  static constexpr uint32_t kFlagsAt = 52;       // u32: kFlag* bits, zero for a single file
  static constexpr uint32_t kSectionsAt = 56;    // 5 x (u64 offset, u64 bytes): name,
                                                 // provenance, vocabulary, tensor table, data
  static constexpr uint32_t kSectionCount = 5;
  static constexpr uint32_t kFileBytesAt = 136;  // u64
  static constexpr uint32_t kCrcAt = 144;        // u32, CRC-32 of bytes [kHeaderBytes, end)
  static constexpr uint32_t kRowsPerShardAt = 148;  // u32: R with kFlagShardedWordEmbeddings, else 0
  static constexpr uint32_t kTokenizerAt = 152;  // u32: kTokenizer* bits; 0 is bert-base-uncased's
  static constexpr uint32_t kReservedAt = 156;   // zero to kHeaderBytes

  // The tokenizer's settings (Hugging Face's BertTokenizer; TokenizerOptions): zero in every
  // field is do_lower_case true, strip_accents null, tokenize_chinese_chars true, so a file
  // written before these bits existed reads as the uncased tokenizer it was made for.
  static constexpr uint32_t kTokenizerCased = 1;             // do_lower_case false
  static constexpr uint32_t kTokenizerAccentsShift = 1;      // 2 bits: 0 null, 1 true, 2 false
  static constexpr uint32_t kTokenizerAccentsMask = 3u << 1;
  static constexpr uint32_t kTokenizerWholeCjk = 1u << 3;    // tokenize_chinese_chars false
  static constexpr uint32_t kTokenizerKnownBits = 0xF;

  // A core file of the split layout: the word-embedding rows live in shard files of R rows
  // (ShardFileFormat); the table's entry holds only its rans header (levels, lanes, frequencies).
  static constexpr uint32_t kFlagShardedWordEmbeddings = 1;

  // Tensor table entry.
  static constexpr uint32_t kEntryNameAt = 0;        // kTensorNameBytes, NUL-padded UTF-8
  static constexpr uint32_t kEntryDTypeAt = 64;      // u32
  static constexpr uint32_t kEntryNdimAt = 68;       // u32
  static constexpr uint32_t kEntryShapeAt = 72;      // 4 x u32
  static constexpr uint32_t kEntryOffsetAt = 88;     // u64, from the data section's start
  static constexpr uint32_t kEntryBytesAt = 96;      // u64
  static constexpr uint32_t kEntryGroupSizeAt = 104;  // u32
  static constexpr uint32_t kEntryReservedAt = 108;  // zero to kTensorEntryBytes
};
static_assert(ModelFileFormat::kConfigAt + 8 * 4 == ModelFileFormat::kNumTensorsAt,
              "the config is 7 u32 and one f32");
static_assert(ModelFileFormat::kSectionsAt + ModelFileFormat::kSectionCount * 16 ==
                  ModelFileFormat::kFileBytesAt,
              "five sections of two u64 each");
static_assert(ModelFileFormat::kCrcAt + 4 == ModelFileFormat::kRowsPerShardAt, "");
static_assert(ModelFileFormat::kRowsPerShardAt + 4 == ModelFileFormat::kTokenizerAt, "");
static_assert(ModelFileFormat::kTokenizerAt + 4 == ModelFileFormat::kReservedAt, "");
static_assert(ModelFileFormat::kReservedAt < ModelFileFormat::kHeaderBytes, "");
static_assert(ModelFileFormat::kEntryNameAt + ModelFileFormat::kTensorNameBytes ==
                  ModelFileFormat::kEntryDTypeAt, "");
static_assert(ModelFileFormat::kEntryShapeAt + 4 * 4 == ModelFileFormat::kEntryOffsetAt, "");
static_assert(ModelFileFormat::kEntryReservedAt < ModelFileFormat::kTensorEntryBytes, "");

// A shard file of the split layout: rows [k R, min((k+1) R, V)) of the word embeddings, the
// payload copied verbatim from the single file's rans tensor (model_data/README.md, "Split
// layout for the page"): the rows' scales, their lanes' states and lengths, the streams.
struct ShardFileFormat {
  static constexpr char kMagic[9] = "ATTNROWS";
  static constexpr uint32_t kVersion = 1;
  static constexpr uint32_t kHeaderBytes = 64;
  static constexpr uint32_t kMagicAt = 0;
  static constexpr uint32_t kVersionAt = 8;
  static constexpr uint32_t kHeaderBytesAt = 12;
  static constexpr uint32_t kCoreCrcAt = 16;      // u32: the core file's CRC-32 (its kCrcAt)
  static constexpr uint32_t kIndexAt = 20;        // u32: k
  static constexpr uint32_t kFirstRowAt = 24;     // u32: k R
  static constexpr uint32_t kRowCountAt = 28;     // u32
  static constexpr uint32_t kPayloadBytesAt = 32;  // u64
  static constexpr uint32_t kPayloadCrcAt = 40;   // u32: CRC-32 of bytes [kHeaderBytes, end)
  static constexpr uint32_t kReservedAt = 44;     // zero to kHeaderBytes
};
static_assert(ShardFileFormat::kPayloadCrcAt + 4 == ShardFileFormat::kReservedAt, "");

// What a loaded model may cost in memory. Every tensor is decoded to f32, so a file of a few
// MB can declare gigabytes (rans needs 8 bytes per 4,096 values); the loader refuses a file
// whose values exceed the budget before it allocates anything. Native: 2^29 values (2 GiB),
// bert-large's 336M parameters with room, about 5 x bert-base's 110M. A 32-bit build
// (WebAssembly) shares at most 2-4 GB with the whole page and may run several engines:
// 192M values (768 MiB) still hold bert-base with room for its activations.
struct MemoryBudget {
  static constexpr uint64_t kMaxModelFloats =
      sizeof(size_t) >= 8 ? uint64_t{1} << 29 : uint64_t{192} << 20;
  // One forward pass's activations and scratch (Encoder::ActivationFloats) at the longest
  // sentence: bert-large at 512 tokens needs about 140M.
  static constexpr uint64_t kMaxActivationFloats =
      sizeof(size_t) >= 8 ? uint64_t{1} << 29 : uint64_t{96} << 20;
};
// "4.3 billion" / "61.4 million" / "512": for messages about sizes.
std::string CountString(uint64_t count);
// Ok when a model of total_floats values fits MemoryBudget and this build's address space.
Status CheckModelBudget(uint64_t total_floats);

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
  // False for the pooler: its entry is checked like any other, but nothing the engine computes
  // reads it, so its values are never decoded and take no memory.
  bool decoded = true;
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
  // The settings the vocabulary is tokenized with (the header's tokenizer field).
  const TokenizerOptions& tokenizer_options() const { return tokenizer_options_; }
  const Weights& weights() const { return weights_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // file order
  // The dtypes present in the file, joined by '+' in the order f32, f16, int8, rans:
  // "f32", "f16+int8", "f32+rans".
  const std::string& precision() const { return precision_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint32_t crc32() const { return crc32_; }
  uint64_t parameter_count() const { return parameter_count_; }  // every value the file holds
  uint64_t decoded_count() const { return float_count_; }  // those decoded (all but the pooler)

  // The split layout (a core file): the word-embedding rows arrive shard by shard; until a
  // shard is loaded its rows are zero and the encoder refuses the ids in it.
  bool sharded() const { return rows_per_shard_ != 0; }
  uint32_t rows_per_shard() const { return rows_per_shard_; }   // R; 0 for a single file
  int32_t shard_count() const { return static_cast<int32_t>(shard_loaded_.size()); }
  int32_t ShardOfRow(int32_t row) const {
    return sharded() ? static_cast<int32_t>(static_cast<uint32_t>(row) / rows_per_shard_) : -1;
  }
  // True for a single file, and for a core whose shard holding the row is loaded.
  bool RowLoaded(int32_t row) const {
    return !sharded() || shard_loaded_[static_cast<size_t>(ShardOfRow(row))] != 0;
  }
  bool AllRowsLoaded() const { return loaded_shards_ == shard_loaded_.size(); }
  size_t loaded_shards() const { return loaded_shards_; }
  // Validates one shard file against this core (magic, version, the core's CRC, index, rows,
  // payload size and CRC, every lane) and decodes its rows into place. On failure nothing
  // changes; loading a shard twice is harmless. *index (if given) is the shard's k.
  Status LoadWordEmbeddingShard(const uint8_t* data, size_t size, int32_t* index = nullptr);
  // Shard files back to back (the all-rows file of the split layout), each loaded as above;
  // each shard's length is its header's plus its payload's. The first failure stops, naming the
  // shard's place in the file; the shards before it stay loaded. *count: the shards loaded.
  Status LoadWordEmbeddingShards(const uint8_t* data, size_t size, int32_t* count = nullptr);

  // Calls visit(const TensorInfo&, const float* values) for every decoded tensor in file order
  // (every tensor but the pooler's); values holds info.spec.numel() floats.
  template <typename Visitor>
  void ForEachTensor(Visitor&& visit) const {
    for (const TensorInfo& info : tensors_) {
      if (info.decoded) visit(info, buffer_.get() + info.float_offset);
    }
  }

 private:
  Model() = default;
  void BindWeights();
  // A core file's word-embedding entry: keeps its rans header, zeroes the values, no shard in.
  Status AdoptShardedWordEmbeddings(const TensorInfo& info, const uint8_t* src,
                                    uint32_t rows_per_shard, float* values);

  ModelConfig config_;
  TokenizerOptions tokenizer_options_;
  std::string name_, provenance_, vocab_text_, precision_;
  uint64_t file_bytes_ = 0;
  uint32_t crc32_ = 0;
  std::vector<TensorInfo> tensors_;
  // Every tensor's values, f32, in file order: float_count_ of them. Allocated with aligned_alloc so
  // that a failed allocation is a status, not an abort (inside wasm an abort kills the page).
  struct FreeDeleter {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], FreeDeleter> buffer_;
  uint64_t float_count_ = 0;
  uint64_t parameter_count_ = 0;
  Weights weights_;  // views into buffer_
  // The split layout: R, which shards are in, and the word-embedding tensor's rans header
  // (levels, frequency table and the decoder's tables), read once, that every shard's lanes
  // decode with.
  uint32_t rows_per_shard_ = 0;
  std::vector<uint8_t> shard_loaded_;  // one flag per shard
  size_t loaded_shards_ = 0;
  rans::Header word_header_;
  const TensorInfo* word_embeddings_info_ = nullptr;
};

}  // namespace attn
