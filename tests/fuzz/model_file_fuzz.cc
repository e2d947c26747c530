// Structure-aware fuzz target for the model-file loader and everything a loaded model feeds:
// the input chooses a config (mostly small, sometimes at the format's limits), a dtype per
// tensor and the weights, and is serialised by the tests' independent writer
// (tests/cpp/test_model_writer.h) with a valid size and CRC, so that mutations reach the
// checks after the checksum, the decoders, the memory budget, Forward and the masked-LM head.
// Big tensors are written as one-symbol rans lanes (8 bytes per 4,096 values), which lets a
// small input declare billions of values, as a hostile file can.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "../cpp/test_model_writer.h"

namespace {

using attn::ModelConfig;
using attn::testing::WriterTensor;

// Declared sizes between these bounds would be accepted and really allocated; they cost the
// fuzzer gigabytes and time without reaching new code, so such inputs are skipped.
constexpr uint64_t kCheapFloats = uint64_t{1} << 20;

uint32_t Dim(FuzzedDataProvider& in, uint32_t small_max, uint32_t limit) {
  return in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(1, small_max)
                          : in.ConsumeIntegralInRange<uint32_t>(1, limit);
}

std::string Vocabulary(uint32_t size) {
  std::string text = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n.\n##s\n";
  for (uint32_t i = 9; i < size; ++i) text += "w" + std::to_string(i) + "\n";
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  ModelConfig c;
  c.num_attention_heads = Dim(in, 4, 1024);
  c.hidden_size = c.num_attention_heads * Dim(in, 8, 64);
  c.num_hidden_layers = Dim(in, 3, 256);
  c.intermediate_size = Dim(in, 32, 1u << 16);
  c.max_position_embeddings = Dim(in, 32, 1u << 16);
  c.type_vocab_size = Dim(in, 2, 1024);
  c.vocab_size = std::max<uint32_t>(9, Dim(in, 64, 1u << 22));
  c.layer_norm_eps = in.ConsumeBool() ? 1e-12f : in.ConsumeFloatingPoint<float>();
  if (!attn::ValidateConfig(c).ok()) return 0;
  const bool masked_lm = in.ConsumeBool();

  std::vector<attn::TensorSpec> specs = attn::ExpectedTensors(c, false, masked_lm);
  uint64_t declared = 0, lanes = 0;
  for (const attn::TensorSpec& spec : specs) {
    declared += spec.numel();
    lanes += (spec.numel() + 4095) / 4096;
  }
  // Files over about 16 MB only repeat what smaller ones reach, slowly.
  if (lanes > (uint64_t{2} << 20)) return 0;
  const uint64_t activations = attn::Encoder::ActivationFloats(
      c, static_cast<int32_t>(std::min<uint32_t>(c.max_position_embeddings, 512)));
  // The loader allocates whatever is within the budget, and Forward whatever its check allows.
  if (declared > kCheapFloats && declared <= attn::MemoryBudget::kMaxModelFloats) return 0;
  if (activations > kCheapFloats && activations <= attn::MemoryBudget::kMaxActivationFloats) return 0;
  // The vocabulary is written out in full only when it is small; else empty lines, which the
  // loader counts and the tokenizer then refuses.
  attn::testing::ModelParts parts = attn::testing::ConstantZeroModel(c, masked_lm);
  if (c.vocab_size <= 4096) parts.vocab = Vocabulary(c.vocab_size);

  for (WriterTensor& t : parts.tensors) {
    const uint64_t numel = t.numel();
    if (numel > 4096) continue;  // stays constant-zero rans
    const uint32_t dtype = in.ConsumeIntegralInRange<uint32_t>(0, 3);
    t.constant_zero = false;
    t.values.resize(numel);
    for (float& v : t.values) v = static_cast<float>(in.ConsumeIntegralInRange<int32_t>(-64, 64)) / 16.0f;
    if (dtype == 0) {
      t.dtype = 0;
      t.group_size = 0;
    } else if (dtype == 1) {
      attn::testing::ConvertToF16(&t);
      t.group_size = 0;
    } else {
      const uint32_t row = t.ndim == 2 ? t.shape[1] : static_cast<uint32_t>(numel);
      if (dtype == 2) {
        attn::testing::QuantizeInt8(&t, row);
      } else {
        attn::testing::QuantizeRans(&t, row, in.ConsumeIntegralInRange<uint32_t>(1, 300));
        // The frequency table plain or Rice-coded (model_data/README.md), as the writer chooses.
        t.rice_parameter = in.ConsumeIntegralInRange<int32_t>(-1, 14);
      }
    }
  }
  std::vector<uint8_t> bytes = attn::testing::Serialize(parts);
  // A few damaged bytes after the header, with the size and CRC made to match again.
  const int flips = in.ConsumeIntegralInRange<int>(0, 3);
  for (int k = 0; k < flips && bytes.size() > 256; ++k) {
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, bytes.size() - 1);
    bytes[at] ^= in.ConsumeIntegral<uint8_t>();
  }
  attn::testing::FixSizeAndCrc(&bytes);

  std::unique_ptr<attn::LoadedModel> loaded;
  if (!attn::LoadedModel::FromBuffer(bytes.data(), bytes.size(), &loaded).ok()) return 0;
  attn::AnalysisOptions options;
  options.outputs = attn::kDefaultOutputs;
  const std::string text = in.ConsumeRandomLengthString(256);
  attn::SentenceAnalysis analysis;
  if (attn::AnalyzeText(*loaded, text, options, &analysis).ok() && analysis.tokens() > 2) {
    std::vector<attn::Prediction> top;
    (void)loaded->TopPredictions(analysis, 1, 5, &top);
  }
  return 0;
}
