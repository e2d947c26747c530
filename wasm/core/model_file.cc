// Reading the .attn model file. Every field is checked before it is used, so that a damaged
// or hostile file yields a Status naming the problem, never an out-of-bounds read: all
// offsets are checked against the buffer with overflow-free comparisons first.
#include "core/model_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

#include "core/rans.h"
#include "core/unicode.h"

namespace attn {
namespace {

constexpr const char* kReconvert = "; re-convert the model with scripts/model/convert_model.py";
constexpr const char* kCopyAgain =
    "; the file is truncated or damaged: download or copy it again, or re-convert it with "
    "scripts/model/convert_model.py";

uint32_t ReadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint64_t ReadU64(const uint8_t* p) { return uint64_t{ReadU32(p)} | uint64_t{ReadU32(p + 4)} << 32; }
float ReadF32(const uint8_t* p) {
  const uint32_t bits = ReadU32(p);
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// IEEE 754 binary16 to binary32, exact for every input including subnormals, inf and NaN.
float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal half: shift the mantissa up until its leading one is the implicit bit.
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::string Num(uint64_t v) { return std::to_string(v); }

struct Section {
  const char* what;
  uint64_t offset;
  uint64_t bytes;
};

// Bytes the file must hold for a tensor of numel elements in this dtype; for rans the least
// (header, scales, a state and a length per lane), since its streams are variable.
uint64_t ExpectedByteCount(DType dtype, uint64_t numel, uint32_t group_size) {
  switch (dtype) {
    case DType::kF32: return 4 * numel;
    case DType::kF16: return 2 * numel;
    case DType::kInt8: return (numel + 3) / 4 * 4 + 4 * (numel / group_size);
    case DType::kRans:
      return 8 + 4 * (numel / group_size) + 8 * ((numel + rans::kLaneLength - 1) / rans::kLaneLength);
  }
  return 0;
}

struct RawEntry {
  std::string name;
  uint32_t dtype, ndim, group_size;
  uint32_t shape[4];
  uint64_t offset, bytes;
  bool reserved_zero;
};

Status ParseEntryName(const uint8_t* p, size_t index, std::string* name) {
  const size_t kBytes = ModelFileFormat::kTensorNameBytes;
  size_t len = 0;
  while (len < kBytes && p[len] != 0) ++len;
  for (size_t k = len; k < kBytes; ++k) {
    if (p[k] != 0) {
      return Status::Error("tensor table entry " + Num(index) +
                           ": name has bytes after its NUL terminator" + std::string(kCopyAgain));
    }
  }
  if (len == 0 || !unicode::IsValidUtf8(std::string_view(reinterpret_cast<const char*>(p), len))) {
    return Status::Error("tensor table entry " + Num(index) + ": name is " +
                         (len == 0 ? "empty" : "not valid UTF-8") + std::string(kCopyAgain));
  }
  name->assign(reinterpret_cast<const char*>(p), len);
  return Status::Ok();
}

// Checks the names in the table against the expected list: missing, extra, duplicated, out of
// order. Presence of the optional groups is read from the names themselves.
Status CheckTensorNames(const ModelConfig& config, const std::vector<RawEntry>& entries,
                        std::vector<TensorSpec>* expected_out) {
  bool any_pooler = false, any_mlm = false;
  for (const RawEntry& e : entries) {
    any_pooler |= e.name.rfind("pooler.", 0) == 0;
    any_mlm |= e.name.rfind("cls.", 0) == 0;
  }
  std::vector<TensorSpec> expected = ExpectedTensors(config, any_pooler, any_mlm);
  std::unordered_map<std::string, size_t> expected_index;
  for (size_t i = 0; i < expected.size(); ++i) expected_index.emplace(expected[i].name, i);

  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].name;
    auto previous = seen.find(name);
    if (previous != seen.end()) {
      return Status::Error("tensor '" + unicode::Printable(name) + "' appears twice in the tensor table (entries " +
                           Num(previous->second) + " and " + Num(i) + ")" + kReconvert);
    }
    seen.emplace(name, i);
    if (expected_index.count(name) == 0) {
      return Status::Error("unexpected tensor '" + unicode::Printable(name) + "' (entry " + Num(i) +
                           "): not part of a BertModel with this config (" +
                           Num(config.num_hidden_layers) + " layers)" + kReconvert);
    }
  }
  for (const TensorSpec& spec : expected) {
    if (seen.count(spec.name) == 0) {
      std::string group;
      if (spec.group == TensorGroup::kPooler) group = " (the pooler group is all or none)";
      if (spec.group == TensorGroup::kMaskedLmHead) {
        group = " (the masked-LM head group is all or none)";
      }
      return Status::Error("missing tensor '" + spec.name + "'" + group + kReconvert);
    }
  }
  // Same set, same size: any difference left is order.
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].name != expected[i].name) {
      return Status::Error("tensor table entry " + Num(i) + " is '" + unicode::Printable(entries[i].name) +
                           "', expected '" + expected[i].name +
                           "' (tensors must be in the order of model_data/README.md)" +
                           kReconvert);
    }
  }
  *expected_out = std::move(expected);
  return Status::Ok();
}

// rows_per_shard: nonzero for the word embeddings of a core file, whose entry holds only the
// tensor's rans header (the rows are in shard files).
Status CheckEntry(const RawEntry& e, const TensorSpec& spec, uint64_t data_bytes,
                  uint32_t rows_per_shard) {
  const std::string where = "tensor '" + unicode::Printable(e.name) + "': ";
  if (rows_per_shard != 0) {
    const uint64_t shard_values = uint64_t{rows_per_shard} * spec.shape[1];
    if (e.dtype != static_cast<uint32_t>(DType::kRans) || e.ndim != 2 || e.shape[0] != spec.shape[0] ||
        e.shape[1] != spec.shape[1] || e.group_size == 0 || shard_values % e.group_size != 0 ||
        (e.group_size % spec.shape[1] != 0 && spec.shape[1] % e.group_size != 0) || e.bytes < 8 ||
        e.offset % ModelFileFormat::kDataAlignment != 0 || e.offset > data_bytes ||
        e.bytes > data_bytes - e.offset || !e.reserved_zero) {
      return Status::Error(where + "in a core file of the split layout the word embeddings must be "
                           "rans " + ShapeString(spec.ndim, spec.shape) + " with a group size that "
                           "divides a shard's values and only its rans header in the file" +
                           kReconvert);
    }
    return Status::Ok();
  }
  if (e.dtype >= kDTypeCount) {
    return Status::Error(where + "dtype is " + Num(e.dtype) +
                         ", expected 0 (f32), 1 (f16), 2 (int8) or 3 (rans)" + kReconvert);
  }
  if (e.ndim != spec.ndim) {
    return Status::Error(where + "got ndim " + Num(e.ndim) + ", expected " + Num(spec.ndim) +
                         kReconvert);
  }
  for (uint32_t k = e.ndim; k < 4; ++k) {
    if (e.shape[k] != 0) {
      return Status::Error(where + "shape dimension " + Num(k) + " is " + Num(e.shape[k]) +
                           ", expected 0 for a " + Num(e.ndim) + "-D tensor" + kReconvert);
    }
  }
  const std::array<uint32_t, 2> got = {e.shape[0], e.ndim == 2 ? e.shape[1] : 0u};
  if (got != spec.shape) {
    return Status::Error(where + "got shape " + ShapeString(e.ndim, got) + ", expected " +
                         ShapeString(spec.ndim, spec.shape) +
                         " from the config in the header" + kReconvert);
  }
  if (!e.reserved_zero) {
    return Status::Error(where + "reserved bytes of its table entry are not zero" + kCopyAgain);
  }
  const DType dtype = static_cast<DType>(e.dtype);
  const uint64_t numel = spec.numel();
  if (dtype == DType::kInt8 || dtype == DType::kRans) {
    const uint64_t row = spec.ndim == 2 ? spec.shape[1] : numel;
    const uint64_t g = e.group_size;
    const bool divides_row = g != 0 && row % g == 0;
    const bool whole_rows = g != 0 && g % row == 0;
    if (g == 0 || numel % g != 0 || !(divides_row || whole_rows)) {
      return Status::Error(where + DTypeName(dtype) + " group size " + Num(g) +
                           " is invalid: it must divide the element count " + Num(numel) +
                           " and divide, or be a multiple of, the row length " + Num(row) +
                           kReconvert);
    }
  } else if (e.group_size != 0) {
    return Status::Error(where + "group size is " + Num(e.group_size) + ", expected 0 for " +
                         DTypeName(dtype) + kReconvert);
  }
  const uint64_t want = ExpectedByteCount(dtype, numel, e.group_size);
  if (dtype == DType::kRans && e.bytes < want) {
    return Status::Error(where + "byte count is " + Num(e.bytes) + ", expected at least " +
                         Num(want) + " for " + Num(numel) + " rans values" + kReconvert);
  }
  if (dtype != DType::kRans && e.bytes != want) {
    return Status::Error(where + "byte count is " + Num(e.bytes) + ", expected " + Num(want) +
                         " for " + Num(numel) + " " + DTypeName(dtype) + " values" + kReconvert);
  }
  if (e.offset % ModelFileFormat::kDataAlignment != 0) {
    return Status::Error(where + "data offset " + Num(e.offset) + " is not a multiple of " +
                         Num(ModelFileFormat::kDataAlignment) + kReconvert);
  }
  if (e.offset > data_bytes || e.bytes > data_bytes - e.offset) {
    return Status::Error(where + "bytes [" + Num(e.offset) + ", " + Num(e.offset + e.bytes) +
                         ") lie outside the data section of " + Num(data_bytes) + " bytes" +
                         kCopyAgain);
  }
  return Status::Ok();
}

// Converts one tensor to f32 and checks that every value is finite.
Status Dequantise(const TensorInfo& info, const uint8_t* src, float* dst) {
  const uint64_t numel = info.spec.numel();
  switch (info.dtype) {
    case DType::kF32:
      for (uint64_t i = 0; i < numel; ++i) dst[i] = ReadF32(src + 4 * i);
      break;
    case DType::kF16:
      for (uint64_t i = 0; i < numel; ++i) {
        dst[i] = HalfToFloat(static_cast<uint16_t>(src[2 * i] | src[2 * i + 1] << 8));
      }
      break;
    case DType::kInt8: {
      const uint8_t* scales = src + (numel + 3) / 4 * 4;
      for (uint64_t i = 0; i < numel; ++i) {
        const float scale = ReadF32(scales + 4 * (i / info.group_size));
        dst[i] = static_cast<float>(static_cast<int8_t>(src[i])) * scale;
      }
      break;
    }
    case DType::kRans: {
      const Status status = rans::DecodeTensor(src, info.byte_count, numel, info.group_size, dst);
      if (!status.ok()) {
        return Status::Error("tensor '" + info.spec.name + "': " + status.message() + kCopyAgain);
      }
      break;
    }
  }
  for (uint64_t i = 0; i < numel; ++i) {
    if (!std::isfinite(dst[i])) {
      std::string at = "index " + Num(i);
      if (info.spec.ndim == 2) {
        at += " (row " + Num(i / info.spec.shape[1]) + ", column " + Num(i % info.spec.shape[1]) +
              ")";
      }
      return Status::Error("tensor '" + info.spec.name + "': value at " + at + " is " +
                           (std::isnan(dst[i]) ? "NaN" : "infinite") +
                           "; the weights are broken: fix the checkpoint and re-convert it with "
                           "scripts/model/convert_model.py");
    }
  }
  return Status::Ok();
}

// The five sections the header locates, in file order.
enum SectionIndex { kName, kProvenance, kVocabulary, kTable, kData };

struct Header {
  ModelConfig config;
  uint32_t num_tensors = 0;
  uint32_t crc = 0;
  uint32_t rows_per_shard = 0;  // nonzero: a core file of the split layout
  TokenizerOptions tokenizer;
  Section sections[ModelFileFormat::kSectionCount];
};

// Magic, version, config, flags, reserved bytes, file size and checksum.
Status ParseHeader(const uint8_t* data, size_t size, Header* h) {
  using F = ModelFileFormat;
  if (data == nullptr || size < F::kHeaderBytes) {
    return Status::Error("model file is " + Num(size) + " bytes, shorter than its " +
                         Num(F::kHeaderBytes) + "-byte header" + kCopyAgain);
  }
  if (std::memcmp(data + F::kMagicAt, F::kMagic, 8) != 0) {
    return Status::Error(
        "not a model file: the first 8 bytes are not the magic 'ATTNBERT'; give the .attn file "
        "written by scripts/model/convert_model.py");
  }
  const uint32_t version = ReadU32(data + F::kVersionAt);
  if (version != F::kVersion) {
    return Status::Error("model file format version is " + Num(version) + ", expected " +
                         Num(F::kVersion) +
                         "; use the engine that matches the file or re-convert the model with "
                         "this release's scripts/model/convert_model.py");
  }
  const uint32_t header_bytes = ReadU32(data + F::kHeaderBytesAt);
  if (header_bytes != F::kHeaderBytes) {
    return Status::Error("model file header size is " + Num(header_bytes) + ", expected " +
                         Num(F::kHeaderBytes) + kCopyAgain);
  }
  ModelConfig& config = h->config;
  uint32_t* const fields[] = {&config.vocab_size, &config.hidden_size, &config.num_hidden_layers,
                              &config.num_attention_heads, &config.intermediate_size,
                              &config.max_position_embeddings, &config.type_vocab_size};
  for (size_t k = 0; k < 7; ++k) *fields[k] = ReadU32(data + F::kConfigAt + 4 * k);
  config.layer_norm_eps = ReadF32(data + F::kConfigAt + 4 * 7);
  Status status = ValidateConfig(config);
  if (!status.ok()) return status;
  h->num_tensors = ReadU32(data + F::kNumTensorsAt);
  const uint32_t flags = ReadU32(data + F::kFlagsAt);
  if ((flags & ~F::kFlagShardedWordEmbeddings) != 0) {
    return Status::Error("model file flags are " + Num(flags) +
                         ", expected 0 or 1 (bit 0, word-embedding rows in shard files, is the "
                         "only flag of version 1)" + kCopyAgain);
  }
  h->rows_per_shard = ReadU32(data + F::kRowsPerShardAt);
  if (flags & F::kFlagShardedWordEmbeddings) {
    const uint64_t shard_values = uint64_t{h->rows_per_shard} * config.hidden_size;
    if (h->rows_per_shard == 0 || shard_values % rans::kLaneLength != 0) {
      return Status::Error("model file is a core of the split layout with " +
                           Num(h->rows_per_shard) + " rows per shard; expected a positive count "
                           "whose rows hold a multiple of " + Num(rans::kLaneLength) + " values" +
                           kCopyAgain);
    }
  } else if (h->rows_per_shard != 0) {
    return Status::Error("model file header bytes 148..151 (rows per shard) are " +
                         Num(h->rows_per_shard) + ", expected 0 in a single file" + kCopyAgain);
  }
  const uint32_t tokenizer = ReadU32(data + F::kTokenizerAt);
  const uint32_t accents = (tokenizer & F::kTokenizerAccentsMask) >> F::kTokenizerAccentsShift;
  if ((tokenizer & ~F::kTokenizerKnownBits) != 0 || accents > 2) {
    return Status::Error("model file header bytes 152..155 (the tokenizer's settings) are " +
                         Num(tokenizer) + ", not a combination this engine knows (bits 0-3)" +
                         kCopyAgain);
  }
  h->tokenizer.lowercase = (tokenizer & F::kTokenizerCased) == 0;
  h->tokenizer.accents = static_cast<TokenizerOptions::Accents>(accents);
  h->tokenizer.split_chinese_chars = (tokenizer & F::kTokenizerWholeCjk) == 0;
  for (uint32_t i = F::kReservedAt; i < F::kHeaderBytes; ++i) {
    if (data[i] != 0) {
      return Status::Error("model file header byte " + Num(i) +
                           " (reserved) is not zero" + kCopyAgain);
    }
  }
  const uint64_t file_size = ReadU64(data + F::kFileBytesAt);
  if (file_size != size) {
    return Status::Error("model file header says the file is " + Num(file_size) +
                         " bytes, got " + Num(size) + kCopyAgain);
  }
  const uint32_t stored_crc = ReadU32(data + F::kCrcAt);
  h->crc = Crc32(data + F::kHeaderBytes, size - F::kHeaderBytes);
  if (h->crc != stored_crc) {
    char got[16], want[16];
    std::snprintf(got, sizeof got, "%08x", h->crc);
    std::snprintf(want, sizeof want, "%08x", stored_crc);
    return Status::Error(std::string("model file checksum mismatch: CRC-32 of bytes [256, end) is ") +
                         got + ", the header says " + want + kCopyAgain);
  }
  const char* const names[] = {"name", "provenance", "vocabulary", "tensor table", "tensor data"};
  for (uint32_t k = 0; k < F::kSectionCount; ++k) {
    const uint8_t* p = data + F::kSectionsAt + 16 * k;
    h->sections[k] = {names[k], ReadU64(p), ReadU64(p + 8)};
  }
  return Status::Ok();
}

// The sections lie inside the file in order without overlap; the table has one entry per
// tensor; the texts are UTF-8; the vocabulary has vocab_size lines.
Status CheckSections(const uint8_t* data, size_t size, const Header& h) {
  using F = ModelFileFormat;
  uint64_t previous_end = F::kHeaderBytes;
  const char* previous_what = "header";
  for (const Section& s : h.sections) {
    if (s.offset > size || s.bytes > size - s.offset) {
      return Status::Error(std::string("model file section '") + s.what + "' at offset " +
                           Num(s.offset) + " with " + Num(s.bytes) +
                           " bytes lies outside the file of " + Num(size) + " bytes" + kCopyAgain);
    }
    if (s.offset < previous_end) {
      return Status::Error(std::string("model file section '") + s.what + "' at offset " +
                           Num(s.offset) + " overlaps the " + previous_what + ", which ends at " +
                           Num(previous_end) + kCopyAgain);
    }
    previous_end = s.offset + s.bytes;
    previous_what = s.what;
  }
  const Section& table = h.sections[kTable];
  const Section& tensor_data = h.sections[kData];
  if (tensor_data.offset % F::kDataAlignment != 0) {
    return Status::Error("model file tensor data offset " + Num(tensor_data.offset) +
                         " is not a multiple of " + Num(F::kDataAlignment) + kReconvert);
  }
  if (table.bytes != uint64_t{h.num_tensors} * F::kTensorEntryBytes) {
    return Status::Error("model file tensor table is " + Num(table.bytes) + " bytes, expected " +
                         Num(h.num_tensors) + " entries x " + Num(F::kTensorEntryBytes) + " = " +
                         Num(uint64_t{h.num_tensors} * F::kTensorEntryBytes) + kCopyAgain);
  }
  for (SectionIndex k : {kName, kProvenance, kVocabulary}) {
    const Section& s = h.sections[k];
    if (!unicode::IsValidUtf8(std::string_view(reinterpret_cast<const char*>(data + s.offset),
                                               static_cast<size_t>(s.bytes)))) {
      return Status::Error(std::string("model file ") + s.what + " is not valid UTF-8" +
                           kReconvert);
    }
  }
  // The vocabulary: one entry per line, each followed by '\n'.
  const Section& vocab_s = h.sections[kVocabulary];
  const uint8_t* vocab = data + vocab_s.offset;
  const uint64_t vocab_lines =
      static_cast<uint64_t>(std::count(vocab, vocab + static_cast<size_t>(vocab_s.bytes), '\n'));
  if (vocab_s.bytes > 0 && vocab[vocab_s.bytes - 1] != '\n') {
    return Status::Error("model file vocabulary does not end with a newline (every entry is "
                         "followed by '\\n')" + std::string(kReconvert));
  }
  if (vocab_lines != h.config.vocab_size) {
    return Status::Error("model file vocabulary has " + Num(vocab_lines) +
                         " entries, expected vocab_size " + Num(h.config.vocab_size) +
                         " from the header" + kReconvert);
  }
  return Status::Ok();
}

// Every entry of the tensor table checked against the tensors the config expects, placed in
// the data section without overlap; *total_floats is the sum of the element counts of the tensors
// that are decoded (all but the pooler), *parameters that of all of them.
Status ReadTensorTable(const uint8_t* data, const Header& h, std::vector<TensorInfo>* tensors,
                       uint64_t* total_floats, uint64_t* parameters) {
  using F = ModelFileFormat;
  const Section& table = h.sections[kTable];
  const Section& tensor_data = h.sections[kData];
  // The table lies inside the file (CheckSections), so num_tensors is at most size / 128.
  std::vector<RawEntry> entries(h.num_tensors);
  for (uint32_t i = 0; i < h.num_tensors; ++i) {
    const uint8_t* p = data + table.offset + uint64_t{i} * F::kTensorEntryBytes;
    RawEntry& e = entries[i];
    Status status = ParseEntryName(p + F::kEntryNameAt, i, &e.name);
    if (!status.ok()) return status;
    e.dtype = ReadU32(p + F::kEntryDTypeAt);
    e.ndim = ReadU32(p + F::kEntryNdimAt);
    for (int k = 0; k < 4; ++k) e.shape[k] = ReadU32(p + F::kEntryShapeAt + 4 * k);
    e.offset = ReadU64(p + F::kEntryOffsetAt);
    e.bytes = ReadU64(p + F::kEntryBytesAt);
    e.group_size = ReadU32(p + F::kEntryGroupSizeAt);
    e.reserved_zero = std::all_of(p + F::kEntryReservedAt, p + F::kTensorEntryBytes,
                                  [](uint8_t b) { return b == 0; });
  }
  std::vector<TensorSpec> expected;
  Status status = CheckTensorNames(h.config, entries, &expected);
  if (!status.ok()) return status;

  tensors->assign(h.num_tensors, TensorInfo());
  // Each count is at most V x d < 2^36 (ConfigLimits) and there are fewer than 2^13 tensors,
  // so the sum cannot wrap 64 bits; CheckModelBudget then bounds it for this build.
  uint64_t total = 0;
  *parameters = 0;
  for (uint32_t i = 0; i < h.num_tensors; ++i) {
    status = CheckEntry(entries[i], expected[i], tensor_data.bytes,
                        h.rows_per_shard != 0 && expected[i].kind == TensorKind::kWordEmbeddings
                            ? h.rows_per_shard : 0);
    if (!status.ok()) return status;
    TensorInfo& info = (*tensors)[i];
    info.spec = expected[i];
    info.dtype = static_cast<DType>(entries[i].dtype);
    info.group_size = entries[i].group_size;
    info.file_offset = tensor_data.offset + entries[i].offset;
    info.byte_count = entries[i].bytes;
    *parameters += info.spec.numel();
    info.decoded = info.spec.group != TensorGroup::kPooler;
    if (!info.decoded) continue;
    info.float_offset = total;
    total += info.spec.numel();
  }
  std::vector<size_t> by_offset(h.num_tensors);
  for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = i;
  std::sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) {
    return (*tensors)[a].file_offset < (*tensors)[b].file_offset;
  });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const TensorInfo& a = (*tensors)[by_offset[k - 1]];
    const TensorInfo& b = (*tensors)[by_offset[k]];
    if (a.file_offset + a.byte_count > b.file_offset) {
      return Status::Error("tensors '" + a.spec.name + "' and '" + b.spec.name +
                           "' overlap in the data section" + kReconvert);
    }
  }
  *total_floats = total;
  return Status::Ok();
}

}  // namespace

// Refuses more values than the budget, and anything this build cannot address, before a byte
// is allocated: in a 32-bit build a 64-bit count would otherwise wrap in size_t.
Status CheckModelBudget(uint64_t total_floats) {
  const uint64_t addressable = static_cast<uint64_t>(SIZE_MAX) / sizeof(float);
  const uint64_t limit = std::min(MemoryBudget::kMaxModelFloats, addressable);
  if (total_floats <= limit) return Status::Ok();
  return Status::Error("the model declares " + CountString(total_floats) +
                       " values, more than this build loads (at most " + CountString(limit) +
                       " values, " + CountString(limit * sizeof(float)) +
                       " bytes); the file is damaged or hostile, or the model is too large for "
                       "this engine");
}

std::string CountString(uint64_t count) {
  char text[32];
  if (count >= 1'000'000'000) {
    std::snprintf(text, sizeof text, "%.1f billion", static_cast<double>(count) / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.1f million", static_cast<double>(count) / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(count));
  }
  return text;
}

namespace {

template <typename MapType, typename... Dims>
void Reseat(MapType* map, const float* data, Dims... dims) {
  // Eigen's documented way to point an existing Map at new storage.
  new (map) MapType(data, static_cast<Eigen::Index>(dims)...);
}

}  // namespace

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kInt8: return "int8";
    case DType::kRans: return "rans";
  }
  return "unknown";
}

uint32_t Crc32(const uint8_t* data, size_t size, uint32_t crc) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

Status Model::FromBuffer(const uint8_t* data, size_t size, std::unique_ptr<Model>* out) {
  Header header;
  Status status = ParseHeader(data, size, &header);
  if (status.ok()) status = CheckSections(data, size, header);
  std::vector<TensorInfo> tensors;
  uint64_t total_floats = 0, parameters = 0;
  if (status.ok()) status = ReadTensorTable(data, header, &tensors, &total_floats, &parameters);
  if (status.ok()) status = CheckModelBudget(total_floats);
  if (!status.ok()) return status;

  std::unique_ptr<Model> model(new Model());
  // 64-byte aligned (std::aligned_alloc wants a multiple of the alignment), so that Eigen's
  // loops over the weights sum in the same order wherever the heap places them.
  const size_t weight_bytes = (static_cast<size_t>(total_floats) * sizeof(float) + 63) / 64 * 64;
  model->buffer_.reset(static_cast<float*>(std::aligned_alloc(64, weight_bytes == 0 ? 64 : weight_bytes)));
  if (!model->buffer_ && total_floats > 0) {
    return Status::Error("not enough memory to load the model: its " + CountString(total_floats) +
                         " values need " + CountString(total_floats * sizeof(float)) +
                         " bytes; close other pages or use a smaller model");
  }
  model->float_count_ = total_floats;
  model->parameter_count_ = parameters;
  bool dtype_seen[kDTypeCount] = {};
  for (const TensorInfo& info : tensors) {
    dtype_seen[static_cast<uint32_t>(info.dtype)] = true;
    if (!info.decoded) continue;
    float* values = model->buffer_.get() + info.float_offset;
    if (header.rows_per_shard != 0 && info.spec.kind == TensorKind::kWordEmbeddings) {
      status = model->AdoptShardedWordEmbeddings(info, data + info.file_offset, header.rows_per_shard, values);
    } else {
      status = Dequantise(info, data + info.file_offset, values);
    }
    if (!status.ok()) return status;
  }
  for (uint32_t k = 0; k < kDTypeCount; ++k) {
    if (!dtype_seen[k]) continue;
    if (!model->precision_.empty()) model->precision_ += "+";
    model->precision_ += DTypeName(static_cast<DType>(k));
  }
  auto text = [data](const Section& s) {
    return std::string(reinterpret_cast<const char*>(data + s.offset), static_cast<size_t>(s.bytes));
  };
  model->config_ = header.config;
  model->tokenizer_options_ = header.tokenizer;
  model->name_ = text(header.sections[kName]);
  model->provenance_ = text(header.sections[kProvenance]);
  model->vocab_text_ = text(header.sections[kVocabulary]);
  model->file_bytes_ = size;
  model->crc32_ = header.crc;
  model->tensors_ = std::move(tensors);
  for (const TensorInfo& info : model->tensors_) {
    if (info.spec.kind == TensorKind::kWordEmbeddings) model->word_embeddings_info_ = &info;
  }
  model->BindWeights();
  *out = std::move(model);
  return Status::Ok();
}

void Model::FreeDeleter::operator()(float* p) const { std::free(p); }

Status Model::AdoptShardedWordEmbeddings(const TensorInfo& info, const uint8_t* src,
                                         uint32_t rows_per_shard, float* values) {
  // The entry is the tensor's rans header alone: levels, lanes of the whole tensor, and the
  // frequency table (plain or coded), checked as it is read; its byte count is exactly that.
  const uint64_t numel = info.spec.numel();
  const Status read = rans::ReadHeader(src, info.byte_count, &word_header_);
  if (!read.ok() || info.byte_count != word_header_.bytes ||
      word_header_.lanes != (numel + rans::kLaneLength - 1) / rans::kLaneLength) {
    return Status::Error("tensor '" + info.spec.name + "': the rans header of a core file is " +
                         Num(info.byte_count) + " bytes" +
                         (read.ok() ? " with levels " + Num(word_header_.levels) + " and " + Num(word_header_.lanes) +
                                          " lanes, its table ending at byte " + Num(word_header_.bytes)
                                    : " (" + read.message() + ")") +
                         "; expected levels 1.." + Num(rans::kMaxLevels) +
                         ", their frequency table and the whole tensor's lanes" + kReconvert);
  }
  std::memset(values, 0, static_cast<size_t>(numel) * sizeof(float));
  rows_per_shard_ = rows_per_shard;
  const uint64_t rows = info.spec.shape[0];
  shard_loaded_.assign(static_cast<size_t>((rows + rows_per_shard - 1) / rows_per_shard), 0);
  loaded_shards_ = 0;
  return Status::Ok();
}

Status Model::LoadWordEmbeddingShards(const uint8_t* data, size_t size, int32_t* count) {
  using S = ShardFileFormat;
  int32_t loaded = 0;
  if (count) *count = 0;
  if (data == nullptr || size == 0) return Status::Error("the all-rows file is empty; fetch it again");
  size_t offset = 0;
  while (offset < size) {
    const std::string where = "all-rows file, shard " + Num(loaded + 1) + " at byte " + Num(offset) + ": ";
    const size_t left = size - offset;
    if (left < S::kHeaderBytes) {
      return Status::Error(where + "the file ends " + Num(left) + " bytes into a 64-byte shard header" + kCopyAgain);
    }
    const uint64_t payload = ReadU64(data + offset + S::kPayloadBytesAt);
    if (payload > left - S::kHeaderBytes) {
      return Status::Error(where + "its header gives a payload of " + Num(payload) + " bytes, only " +
                           Num(left - S::kHeaderBytes) + " follow" + kCopyAgain);
    }
    const size_t bytes = S::kHeaderBytes + static_cast<size_t>(payload);
    Status status = LoadWordEmbeddingShard(data + offset, bytes);
    if (!status.ok()) return Status::Error(where + status.message());
    offset += bytes;
    ++loaded;
    if (count) *count = loaded;
  }
  return Status::Ok();
}

Status Model::LoadWordEmbeddingShard(const uint8_t* data, size_t size, int32_t* index) {
  using S = ShardFileFormat;
  if (!sharded()) {
    return Status::Error("this model is a single file with every word-embedding row in it; it "
                         "takes no shard files");
  }
  const std::string what = "word-embedding shard: ";
  if (data == nullptr || size < S::kHeaderBytes || std::memcmp(data + S::kMagicAt, S::kMagic, 8) != 0) {
    return Status::Error(what + "not a shard file (no 'ATTNROWS' header); fetch it again");
  }
  const uint32_t version = ReadU32(data + S::kVersionAt);
  if (version != S::kVersion || ReadU32(data + S::kHeaderBytesAt) != S::kHeaderBytes) {
    return Status::Error(what + "format version " + Num(version) + ", expected " + Num(S::kVersion) +
                         "; use the shards written with this core");
  }
  for (uint32_t i = S::kReservedAt; i < S::kHeaderBytes; ++i) {
    if (data[i] != 0) return Status::Error(what + "reserved header byte " + Num(i) + " is not zero" + kCopyAgain);
  }
  const uint32_t core_crc = ReadU32(data + S::kCoreCrcAt);
  if (core_crc != crc32_) {
    char got[16], want[16];
    std::snprintf(got, sizeof got, "%08x", core_crc);
    std::snprintf(want, sizeof want, "%08x", crc32_);
    return Status::Error(what + "it belongs to another model (core CRC-32 " + got + ", this core is " +
                         want + "); fetch the shards of this model");
  }
  const uint32_t k = ReadU32(data + S::kIndexAt);
  const uint64_t vocab = word_embeddings_info_->spec.shape[0], d = word_embeddings_info_->spec.shape[1];
  const uint64_t first = uint64_t{k} * rows_per_shard_;
  const uint64_t rows = first < vocab ? std::min<uint64_t>(rows_per_shard_, vocab - first) : 0;
  if (k >= shard_loaded_.size() || ReadU32(data + S::kFirstRowAt) != first ||
      ReadU32(data + S::kRowCountAt) != rows) {
    return Status::Error(what + "index " + Num(k) + ", first row " + Num(ReadU32(data + S::kFirstRowAt)) +
                         " and " + Num(ReadU32(data + S::kRowCountAt)) + " rows do not fit this core (" +
                         Num(shard_loaded_.size()) + " shards of " + Num(rows_per_shard_) + " rows)" + kCopyAgain);
  }
  const uint64_t payload = ReadU64(data + S::kPayloadBytesAt);
  if (payload != size - S::kHeaderBytes) {
    return Status::Error(what + "shard " + Num(k) + " says its payload is " + Num(payload) +
                         " bytes, got " + Num(size - S::kHeaderBytes) + kCopyAgain);
  }
  if (Crc32(data + S::kHeaderBytes, size - S::kHeaderBytes) != ReadU32(data + S::kPayloadCrcAt)) {
    return Status::Error(what + "shard " + Num(k) + " fails its checksum" + kCopyAgain);
  }
  // The rows decode with the core's header: the payload is the body of a rans tensor of their
  // own (scales, lane states and lengths, streams) as the single file had it.
  const uint64_t numel = rows * d;
  std::vector<float> decoded(static_cast<size_t>(numel));
  Status status = rans::DecodeBody(word_header_, data + S::kHeaderBytes, size - S::kHeaderBytes, numel,
                                   word_embeddings_info_->group_size, decoded.data());
  if (!status.ok()) return Status::Error(what + "shard " + Num(k) + ": " + status.message() + kCopyAgain);
  for (uint64_t i = 0; i < numel; ++i) {
    if (!std::isfinite(decoded[i])) {
      return Status::Error(what + "shard " + Num(k) + ": row " + Num(first + i / d) +
                           " holds a value that is not finite" + kCopyAgain);
    }
  }
  std::copy(decoded.begin(), decoded.end(),
            buffer_.get() + word_embeddings_info_->float_offset + first * d);
  if (!shard_loaded_[k]) {
    shard_loaded_[k] = 1;
    ++loaded_shards_;
  }
  if (index) *index = static_cast<int32_t>(k);
  return Status::Ok();
}

Status Model::FromFile(const std::string& path, std::unique_ptr<Model>* out) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::Error("cannot open model file '" + path + "': " + std::strerror(errno) +
                         "; check the path (model files are written by scripts/model/convert_model.py)");
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, file)) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    return Status::Error("cannot read model file '" + path + "'; check that it is a readable file");
  }
  Status status = FromBuffer(bytes.data(), bytes.size(), out);
  if (!status.ok()) return Status::Error(path + ": " + status.message());
  return status;
}

void Model::BindWeights() {
  const ModelConfig& c = config_;
  const Eigen::Index d = c.hidden_size, f = c.intermediate_size;
  // clear + resize, not assign: Eigen::Map has no copy assignment (libc++ would need it).
  weights_.layers.clear();
  weights_.layers.resize(c.num_hidden_layers);
  Weights& w = weights_;
  for (const TensorInfo& info : tensors_) {
    if (!info.decoded) continue;
    const float* p = buffer_.get() + info.float_offset;
    const Eigen::Index rows = info.spec.shape[0], cols = info.spec.shape[1];
    LayerWeights* layer =
        info.spec.layer >= 0 ? &w.layers[static_cast<size_t>(info.spec.layer)] : nullptr;
    switch (info.spec.kind) {
      case TensorKind::kWordEmbeddings: Reseat(&w.word_embeddings, p, rows, cols); break;
      case TensorKind::kPositionEmbeddings: Reseat(&w.position_embeddings, p, rows, cols); break;
      case TensorKind::kTokenTypeEmbeddings: Reseat(&w.token_type_embeddings, p, rows, cols); break;
      case TensorKind::kEmbeddingsNormWeight: Reseat(&w.embeddings_norm_weight, p, d); break;
      case TensorKind::kEmbeddingsNormBias: Reseat(&w.embeddings_norm_bias, p, d); break;
      case TensorKind::kQueryWeight: Reseat(&layer->query_weight, p, d, d); break;
      case TensorKind::kQueryBias: Reseat(&layer->query_bias, p, d); break;
      case TensorKind::kKeyWeight: Reseat(&layer->key_weight, p, d, d); break;
      case TensorKind::kKeyBias: Reseat(&layer->key_bias, p, d); break;
      case TensorKind::kValueWeight: Reseat(&layer->value_weight, p, d, d); break;
      case TensorKind::kValueBias: Reseat(&layer->value_bias, p, d); break;
      case TensorKind::kAttentionOutputWeight:
        Reseat(&layer->attention_output_weight, p, d, d);
        break;
      case TensorKind::kAttentionOutputBias: Reseat(&layer->attention_output_bias, p, d); break;
      case TensorKind::kAttentionOutputNormWeight:
        Reseat(&layer->attention_output_norm_weight, p, d);
        break;
      case TensorKind::kAttentionOutputNormBias:
        Reseat(&layer->attention_output_norm_bias, p, d);
        break;
      case TensorKind::kIntermediateWeight: Reseat(&layer->intermediate_weight, p, f, d); break;
      case TensorKind::kIntermediateBias: Reseat(&layer->intermediate_bias, p, f); break;
      case TensorKind::kOutputWeight: Reseat(&layer->output_weight, p, d, f); break;
      case TensorKind::kOutputBias: Reseat(&layer->output_bias, p, d); break;
      case TensorKind::kOutputNormWeight: Reseat(&layer->output_norm_weight, p, d); break;
      case TensorKind::kOutputNormBias: Reseat(&layer->output_norm_bias, p, d); break;
      case TensorKind::kPoolerWeight:
      case TensorKind::kPoolerBias: break;  // never decoded (TensorInfo::decoded)
      case TensorKind::kMlmTransformWeight:
        w.has_masked_lm_head = true;
        Reseat(&w.mlm_transform_weight, p, d, d);
        break;
      case TensorKind::kMlmTransformBias: Reseat(&w.mlm_transform_bias, p, d); break;
      case TensorKind::kMlmTransformNormWeight: Reseat(&w.mlm_transform_norm_weight, p, d); break;
      case TensorKind::kMlmTransformNormBias: Reseat(&w.mlm_transform_norm_bias, p, d); break;
      case TensorKind::kMlmBias: Reseat(&w.mlm_bias, p, rows); break;
    }
  }
}

}  // namespace attn
