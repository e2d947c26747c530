// Test helper: builds .attn model files in memory (model_data/README.md layout), with random
// weights, any dtype per tensor, and hooks to break them on purpose. Header-only so that the
// test glob (tests/cpp/*_test.cc) needs no helper sources. Its byte layout is written here
// field by field from the README, independently of the reader in wasm/core/model_file.cc.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/model_file.h"
#include "core/tensor_table.h"

namespace attn::testing {

struct WriterTensor {
  std::string name;
  uint32_t dtype = 0;  // 0 f32, 1 f16, 2 int8, 3 rans
  uint32_t ndim = 1;
  std::array<uint32_t, 4> shape{};
  std::vector<float> values;       // f32 and f16 (f16: must be exactly representable)
  std::vector<int8_t> quantized;   // int8: numel values
  std::vector<float> scales;       // int8 and rans: numel / group_size
  std::vector<int32_t> integers;   // rans: numel values in [-levels, levels]
  uint32_t levels = 0;             // rans
  uint32_t group_size = 0;
  // rans only: every value is 0, written as one-symbol lanes (8 bytes per 4,096 values) with no
  // per-value data in memory, so that a small file can declare billions of values.
  bool constant_zero = false;
  // rans only: write the tensor's rans header alone (levels, lanes, frequencies), as a core file
  // of the split layout holds its word embeddings.
  bool header_only = false;
  // rans only: -1 writes the plain frequency table; 0..14 Rice-codes it with that parameter
  // (WithCodedTable).
  int32_t rice_parameter = -1;
  uint64_t numel() const {
    uint64_t n = 1;
    for (uint32_t k = 0; k < ndim; ++k) n *= shape[k];
    return n;
  }
  // The f32 value the loader must produce at index i.
  float Expected(uint64_t i) const {
    if (dtype == 2) return static_cast<float>(quantized[i]) * scales[i / group_size];
    if (dtype == 3) return static_cast<float>(integers[i]) * scales[i / group_size];
    return values[i];
  }
};

struct ModelParts {
  ModelConfig config;
  std::string name = "test model";
  std::string provenance = "{\"source\": \"tests/cpp/test_model_writer.h\"}";
  std::string vocab;  // vocab.txt content
  std::vector<WriterTensor> tensors;
  uint32_t version = 1;
  uint32_t flags = 0;
  uint32_t rows_per_shard = 0;  // header bytes 148..151, the split layout's R

  WriterTensor* Find(const std::string& tensor_name) {
    for (WriterTensor& t : tensors) {
      if (t.name == tensor_name) return &t;
    }
    return nullptr;
  }
};

// A small config that still has several heads and layers.
inline ModelConfig TinyConfig() {
  ModelConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 32;
  c.max_position_embeddings = 24;
  c.type_vocab_size = 2;
  c.layer_norm_eps = 1e-12f;
  return c;
}

// vocab_size lines: the five special tokens, some words and punctuation, then filler.
inline std::string TestVocab(uint32_t vocab_size) {
  const char* words[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",
                         "on",    "mat",   ".",     ",",     "a",      "dog", "##s", "ran"};
  std::string text;
  for (uint32_t i = 0; i < vocab_size; ++i) {
    text += i < std::size(words) ? std::string(words[i]) : "tok" + std::to_string(i);
    text += '\n';
  }
  return text;
}

// Random weights shaped like the expected table, all f32. LayerNorm weights near 1 and
// weight matrices large enough that attention rows are far from uniform.
inline ModelParts RandomModel(const ModelConfig& config, uint32_t seed = 1, bool pooler = false,
                              bool masked_lm_head = false) {
  ModelParts parts;
  parts.config = config;
  parts.vocab = TestVocab(config.vocab_size);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const TensorSpec& spec : ExpectedTensors(config, pooler, masked_lm_head)) {
    WriterTensor t;
    t.name = spec.name;
    t.ndim = spec.ndim;
    t.shape = {spec.shape[0], spec.ndim == 2 ? spec.shape[1] : 0u, 0u, 0u};
    const bool is_norm_weight = spec.name.find("LayerNorm.weight") != std::string::npos;
    const float stddev = spec.ndim == 2 ? 1.0f / std::sqrt(static_cast<float>(spec.shape[1])) * 1.5f : 0.1f;
    t.values.resize(spec.numel());
    for (float& v : t.values) v = (is_norm_weight ? 1.0f : 0.0f) + stddev * normal(rng);
    parts.tensors.push_back(std::move(t));
  }
  return parts;
}

// Rewrites tensor t as int8 with the given group size: scale = max |x| / 127 per group.
inline void QuantizeInt8(WriterTensor* t, uint32_t group_size) {
  const uint64_t numel = t->numel();
  t->dtype = 2;
  t->group_size = group_size;
  t->quantized.assign(numel, 0);
  t->scales.assign(numel / group_size, 0.0f);
  for (uint64_t g = 0; g < numel / group_size; ++g) {
    float max_abs = 0;
    for (uint64_t i = g * group_size; i < (g + 1) * group_size; ++i) {
      max_abs = std::max(max_abs, std::fabs(t->values[i]));
    }
    const float scale = max_abs > 0 ? max_abs / 127.0f : 1.0f;
    t->scales[g] = scale;
    for (uint64_t i = g * group_size; i < (g + 1) * group_size; ++i) {
      t->quantized[i] = static_cast<int8_t>(std::lround(t->values[i] / scale));
    }
  }
}

// Rewrites tensor t as rans with the given group size and levels: scale = max |x| / levels.
inline void QuantizeRans(WriterTensor* t, uint32_t group_size, uint32_t levels) {
  const uint64_t numel = t->numel();
  t->dtype = 3;
  t->group_size = group_size;
  t->levels = levels;
  t->integers.assign(numel, 0);
  t->scales.assign(numel / group_size, 0.0f);
  for (uint64_t g = 0; g < numel / group_size; ++g) {
    float max_abs = 0;
    for (uint64_t i = g * group_size; i < (g + 1) * group_size; ++i) {
      max_abs = std::max(max_abs, std::fabs(t->values[i]));
    }
    const float scale = max_abs > 0 ? max_abs / static_cast<float>(levels) : 1.0f;
    t->scales[g] = scale;
    const long top = static_cast<long>(levels);
    for (uint64_t i = g * group_size; i < (g + 1) * group_size; ++i) {
      t->integers[i] = static_cast<int32_t>(std::max(-top, std::min(top, std::lround(t->values[i] / scale))));
    }
  }
}

// The rans payload of tensor t, laid out field by field from model_data/README.md with a plain
// one-symbol-at-a-time rANS encoder (scripts/model/rans.py vectorises the same over lanes).
inline std::vector<uint8_t> ConstantZeroRansPayload(const WriterTensor& t);
inline std::vector<uint8_t> WithCodedTable(const std::vector<uint8_t>& plain, uint32_t k);

inline std::vector<uint8_t> RansPayload(const WriterTensor& t) {
  if (t.constant_zero) return ConstantZeroRansPayload(t);
  if (t.header_only) {
    WriterTensor whole = t;
    whole.header_only = false;
    std::vector<uint8_t> b = RansPayload(whole);
    const auto u32 = [&b](size_t at) { return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 | uint32_t{b[at + 3]} << 24; };
    b.resize(t.rice_parameter >= 0 ? 16 + size_t{u32(12)} : 8 + (2 * (2 * size_t{t.levels} + 1) + 3) / 4 * 4);
    return b;
  }
  if (t.rice_parameter >= 0) {
    WriterTensor plain = t;
    plain.rice_parameter = -1;
    return WithCodedTable(RansPayload(plain), static_cast<uint32_t>(t.rice_parameter));
  }
  constexpr uint32_t kProbScale = 1u << 15, kLane = 4096;
  const uint32_t alphabet = 2 * t.levels + 1;
  const uint64_t numel = t.numel();
  std::vector<uint32_t> freq(alphabet, 0);
  for (int32_t q : t.integers) freq[static_cast<uint32_t>(q + static_cast<int32_t>(t.levels))]++;
  uint32_t total = 0;
  for (uint32_t& f : freq) {
    if (f) f = std::max<uint32_t>(1, static_cast<uint32_t>(uint64_t{f} * kProbScale / numel));
    total += f;
  }
  // Settle the rounding on the commonest symbol, one unit at a time.
  while (total != kProbScale) {
    uint32_t& top = *std::max_element(freq.begin(), freq.end());
    if (total < kProbScale) { ++top; ++total; } else { --top; --total; }
  }
  std::vector<uint32_t> start(alphabet, 0);
  for (uint32_t s = 1; s < alphabet; ++s) start[s] = start[s - 1] + freq[s - 1];
  const uint32_t lanes = static_cast<uint32_t>((numel + kLane - 1) / kLane);
  std::vector<uint32_t> states;
  std::vector<std::vector<uint8_t>> streams;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    uint32_t x = 1u << 23;
    std::vector<uint8_t> pushed;
    const uint64_t first = uint64_t{lane} * kLane, last = std::min<uint64_t>(numel, first + kLane);
    for (uint64_t i = last; i-- > first;) {
      const uint32_t s = static_cast<uint32_t>(t.integers[i] + static_cast<int32_t>(t.levels));
      while (x >= (uint32_t{1} << 16) * freq[s]) {
        pushed.push_back(static_cast<uint8_t>(x));
        x >>= 8;
      }
      x = (x / freq[s] << 15) + x % freq[s] + start[s];
    }
    states.push_back(x);
    streams.emplace_back(pushed.rbegin(), pushed.rend());
  }
  std::vector<uint8_t> b;
  auto u32 = [&b](uint32_t v) { for (int k = 0; k < 4; ++k) b.push_back(static_cast<uint8_t>(v >> (8 * k))); };
  u32(t.levels);
  u32(lanes);
  for (uint32_t f : freq) {
    b.push_back(static_cast<uint8_t>(f));
    b.push_back(static_cast<uint8_t>(f >> 8));
  }
  while (b.size() % 4) b.push_back(0);
  for (float scale : t.scales) {
    uint32_t bits;
    std::memcpy(&bits, &scale, 4);
    u32(bits);
  }
  for (uint32_t x : states) u32(x);
  for (const auto& stream : streams) u32(static_cast<uint32_t>(stream.size()));
  for (const auto& stream : streams) b.insert(b.end(), stream.begin(), stream.end());
  return b;
}

// levels 1, the frequency table (0, 2^15, 0): the state never changes, so every lane is its
// start state 2^23 and an empty stream; one scale of 1 per group.
inline std::vector<uint8_t> ConstantZeroRansPayload(const WriterTensor& t) {
  const uint64_t numel = t.numel(), lanes = (numel + 4095) / 4096, groups = numel / t.group_size;
  std::vector<uint8_t> b;
  b.reserve(16 + 4 * groups + 8 * lanes);
  auto u32 = [&b](uint32_t v) { for (int k = 0; k < 4; ++k) b.push_back(static_cast<uint8_t>(v >> (8 * k))); };
  u32(1);
  u32(static_cast<uint32_t>(lanes));
  u32(uint32_t{1} << 31);  // freq(0) = 0, freq(1) = 2^15 (the next u16)
  u32(0);                  // freq(2) = 0, then padding to 4 bytes
  for (uint64_t g = 0; g < groups; ++g) u32(0x3f800000u);  // 1.0f
  for (uint64_t k = 0; k < lanes; ++k) u32(1u << 23);
  for (uint64_t k = 0; k < lanes; ++k) u32(0);
  return b;
}

// Every tensor of the config as constant-zero rans, and a vocabulary of empty lines: a file of
// a few MB whose declared size is whatever the config makes it, for the loader's size checks.
inline ModelParts ConstantZeroModel(const ModelConfig& config, bool masked_lm_head = false) {
  ModelParts parts;
  parts.config = config;
  parts.vocab.assign(config.vocab_size, '\n');
  for (const TensorSpec& spec : ExpectedTensors(config, false, masked_lm_head)) {
    WriterTensor t;
    t.name = spec.name;
    t.ndim = spec.ndim;
    t.shape = {spec.shape[0], spec.ndim == 2 ? spec.shape[1] : 0u, 0u, 0u};
    t.dtype = 3;
    t.levels = 1;
    t.constant_zero = true;
    // Groups of whole rows, as many as divide the row count up to 1,024, within a u32.
    uint64_t rows_per_group = 1;
    if (spec.ndim == 2) {
      while (rows_per_group < 1024 && spec.shape[0] % (rows_per_group * 2) == 0) rows_per_group *= 2;
    }
    t.group_size = static_cast<uint32_t>(spec.ndim == 2 ? rows_per_group * spec.shape[1] : spec.numel());
    parts.tensors.push_back(std::move(t));
  }
  return parts;
}

// Rewrites tensor t as f16, first rounding every value to a multiple of 2^-10 in [-2, 2), which
// binary16 holds exactly, so the loader's result is known without a second converter.
inline void ConvertToF16(WriterTensor* t) {
  t->dtype = 1;
  for (float& v : t->values) {
    v = std::max(-2.0f, std::min(2.0f - 1.0f / 1024, std::round(v * 1024.0f) / 1024.0f));
  }
}

// Binary16 bits of a value that is 0 or a normal half (the writer only makes such values).
inline uint16_t HalfBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) == 0) return static_cast<uint16_t>(sign);
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | ((bits >> 13) & 0x3ffu));
}

inline void PutU32(std::vector<uint8_t>* b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) (*b)[at + k] = static_cast<uint8_t>(v >> (8 * k));
}
inline void PutU64(std::vector<uint8_t>* b, size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) (*b)[at + k] = static_cast<uint8_t>(v >> (8 * k));
}
inline void PutF32(std::vector<uint8_t>* b, size_t at, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutU32(b, at, bits);
}
inline uint32_t GetU32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= uint32_t{b[at + k]} << (8 * k);
  return v;
}
// The same payload with its frequency table Rice-coded (model_data/README.md): the levels word
// gets bit 31, then parameter k, the code's length in bytes (a multiple of 4) and the code, per
// symbol its frequency >> k in unary (ones ended by a zero) and its k low bits, least
// significant bit first. Written here from the README, independently of scripts/model/rans.py.
inline std::vector<uint8_t> WithCodedTable(const std::vector<uint8_t>& plain, uint32_t k) {
  const uint32_t levels = GetU32(plain, 0), alphabet = 2 * levels + 1;
  const size_t plain_end = 8 + (2 * size_t{alphabet} + 3) / 4 * 4;
  std::vector<bool> bits;
  for (uint32_t s = 0; s < alphabet; ++s) {
    const uint32_t f = uint32_t{plain[8 + 2 * s]} | uint32_t{plain[9 + 2 * s]} << 8;
    for (uint32_t i = 0; i < (f >> k); ++i) bits.push_back(true);
    bits.push_back(false);
    for (uint32_t b = 0; b < k; ++b) bits.push_back((f >> b & 1) != 0);
  }
  std::vector<uint8_t> code((bits.size() + 31) / 32 * 4, 0);
  for (size_t i = 0; i < bits.size(); ++i) code[i / 8] |= static_cast<uint8_t>(bits[i] << (i % 8));
  std::vector<uint8_t> out(plain.begin(), plain.begin() + 8);
  PutU32(&out, 0, levels | 0x80000000u);  // the coded-table flag
  out.resize(16);
  PutU32(&out, 8, k);
  PutU32(&out, 12, static_cast<uint32_t>(code.size()));
  out.insert(out.end(), code.begin(), code.end());
  out.insert(out.end(), plain.begin() + static_cast<std::ptrdiff_t>(plain_end), plain.end());
  return out;
}

inline uint64_t GetU64(const std::vector<uint8_t>& b, size_t at) {
  return uint64_t{GetU32(b, at)} | uint64_t{GetU32(b, at + 4)} << 32;
}

// Recomputes the header's file size and CRC-32 after a test has edited the bytes.
inline void FixSizeAndCrc(std::vector<uint8_t>* bytes) {
  PutU64(bytes, 136, bytes->size());
  PutU32(bytes, 144, Crc32(bytes->data() + 256, bytes->size() - 256));
}

// Byte offsets of the pieces of a serialised file, for tests that break one on purpose.
struct Layout {
  uint64_t name = 0, provenance = 0, vocab = 0, table = 0, data = 0;
  uint64_t Entry(size_t index) const { return table + 128 * index; }
};

inline std::vector<uint8_t> Serialize(const ModelParts& parts, Layout* layout = nullptr) {
  auto align = [](uint64_t v, uint64_t a) { return (v + a - 1) / a * a; };
  Layout at;
  at.name = 256;
  at.provenance = at.name + parts.name.size();
  at.vocab = at.provenance + parts.provenance.size();
  at.table = align(at.vocab + parts.vocab.size(), 8);
  const uint64_t table_bytes = 128 * parts.tensors.size();
  at.data = align(at.table + table_bytes, 64);
  std::vector<uint64_t> offsets, byte_counts;
  uint64_t cursor = 0;
  for (const WriterTensor& t : parts.tensors) {
    const uint64_t n = t.numel();
    const uint64_t bytes = t.dtype == 0   ? 4 * n
                           : t.dtype == 1 ? 2 * n
                           : t.dtype == 2 ? align(n, 4) + 4 * t.scales.size()
                                          : RansPayload(t).size();
    offsets.push_back(cursor);
    byte_counts.push_back(bytes);
    cursor = align(cursor + bytes, 64);
  }
  const uint64_t data_bytes = parts.tensors.empty() ? 0 : offsets.back() + byte_counts.back();
  std::vector<uint8_t> b(at.data + data_bytes, 0);
  std::memcpy(b.data(), "ATTNBERT", 8);
  PutU32(&b, 8, parts.version);
  PutU32(&b, 12, 256);
  const ModelConfig& c = parts.config;
  const uint32_t dims[] = {c.vocab_size, c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
                           c.intermediate_size, c.max_position_embeddings, c.type_vocab_size};
  for (size_t k = 0; k < 7; ++k) PutU32(&b, 16 + 4 * k, dims[k]);
  PutF32(&b, 44, c.layer_norm_eps);
  PutU32(&b, 48, static_cast<uint32_t>(parts.tensors.size()));
  PutU32(&b, 52, parts.flags);
  PutU32(&b, 148, parts.rows_per_shard);
  const uint64_t sections[5][2] = {{at.name, parts.name.size()},
                                   {at.provenance, parts.provenance.size()},
                                   {at.vocab, parts.vocab.size()},
                                   {at.table, table_bytes},
                                   {at.data, data_bytes}};
  for (size_t k = 0; k < 5; ++k) {
    PutU64(&b, 56 + 16 * k, sections[k][0]);
    PutU64(&b, 64 + 16 * k, sections[k][1]);
  }
  std::memcpy(b.data() + at.name, parts.name.data(), parts.name.size());
  std::memcpy(b.data() + at.provenance, parts.provenance.data(), parts.provenance.size());
  std::memcpy(b.data() + at.vocab, parts.vocab.data(), parts.vocab.size());
  for (size_t i = 0; i < parts.tensors.size(); ++i) {
    const WriterTensor& t = parts.tensors[i];
    const size_t e = at.Entry(i);
    std::memcpy(b.data() + e, t.name.data(), std::min<size_t>(t.name.size(), 64));
    PutU32(&b, e + 64, t.dtype);
    PutU32(&b, e + 68, t.ndim);
    for (size_t k = 0; k < 4; ++k) PutU32(&b, e + 72 + 4 * k, t.shape[k]);
    PutU64(&b, e + 88, offsets[i]);
    PutU64(&b, e + 96, byte_counts[i]);
    PutU32(&b, e + 104, t.group_size);
    const size_t p = at.data + offsets[i];
    const uint64_t n = t.numel();
    if (t.dtype == 0) {
      for (uint64_t j = 0; j < n; ++j) PutF32(&b, p + 4 * j, t.values[j]);
    } else if (t.dtype == 1) {
      for (uint64_t j = 0; j < n; ++j) {
        const uint16_t h = HalfBits(t.values[j]);
        b[p + 2 * j] = static_cast<uint8_t>(h);
        b[p + 2 * j + 1] = static_cast<uint8_t>(h >> 8);
      }
    } else if (t.dtype == 3) {
      const std::vector<uint8_t> payload = RansPayload(t);
      std::memcpy(b.data() + p, payload.data(), payload.size());
    } else {
      for (uint64_t j = 0; j < n; ++j) b[p + j] = static_cast<uint8_t>(t.quantized[j]);
      for (size_t g = 0; g < t.scales.size(); ++g) PutF32(&b, p + align(n, 4) + 4 * g, t.scales[g]);
    }
  }
  FixSizeAndCrc(&b);
  if (layout) *layout = at;
  return b;
}

// The split layout (model_data/README.md, "Split layout for the page"), written here from the
// README independently of scripts/model/split_model.py: the core (flag 1, R at 148, the word
// embeddings' rans header alone) and one shard per R rows, each payload sliced from the single
// file's rans tensor. The word embeddings must be rans with one scale per row.
struct SplitFiles {
  std::vector<uint8_t> core;
  std::vector<std::vector<uint8_t>> shards;
};

inline SplitFiles Split(ModelParts parts, uint32_t rows_per_shard) {
  WriterTensor* w = parts.Find("embeddings.word_embeddings.weight");
  const std::vector<uint8_t> full = RansPayload(*w);
  const uint64_t d = w->shape[1], vocab = w->shape[0], group = w->group_size;
  // The header's length: plain table, or (bit 31 of the levels word) 16 bytes and the code.
  const uint64_t table = GetU32(full, 0) & 0x80000000u ? 16 + uint64_t{GetU32(full, 12)}
                                                      : 8 + (2 * (2 * uint64_t{w->levels} + 1) + 3) / 4 * 4;
  const uint64_t lanes = GetU32(full, 4), groups = vocab * d / group;
  const uint64_t states_at = table + 4 * groups, lengths_at = states_at + 4 * lanes;
  std::vector<uint64_t> stream_at(lanes + 1, lengths_at + 4 * lanes);
  for (uint64_t k = 0; k < lanes; ++k) stream_at[k + 1] = stream_at[k] + GetU32(full, lengths_at + 4 * k);
  w->header_only = true;
  parts.flags = 1;
  parts.rows_per_shard = rows_per_shard;
  SplitFiles out;
  out.core = Serialize(parts);
  const uint32_t core_crc = GetU32(out.core, 144);
  for (uint64_t first = 0, k = 0; first < vocab; first += rows_per_shard, ++k) {
    const uint64_t rows = std::min<uint64_t>(rows_per_shard, vocab - first);
    const uint64_t lane0 = first * d / 4096, lane_count = (rows * d + 4095) / 4096;
    std::vector<uint8_t> payload;
    auto slice = [&](uint64_t from, uint64_t bytes) {
      payload.insert(payload.end(), full.begin() + static_cast<std::ptrdiff_t>(from),
                     full.begin() + static_cast<std::ptrdiff_t>(from + bytes));
    };
    slice(table + 4 * (first * d / group), 4 * (rows * d / group));
    slice(states_at + 4 * lane0, 4 * lane_count);
    slice(lengths_at + 4 * lane0, 4 * lane_count);
    slice(stream_at[lane0], stream_at[lane0 + lane_count] - stream_at[lane0]);
    std::vector<uint8_t> shard(64, 0);
    std::memcpy(shard.data(), "ATTNROWS", 8);
    PutU32(&shard, 8, 1);
    PutU32(&shard, 12, 64);
    PutU32(&shard, 16, core_crc);
    PutU32(&shard, 20, static_cast<uint32_t>(k));
    PutU32(&shard, 24, static_cast<uint32_t>(first));
    PutU32(&shard, 28, static_cast<uint32_t>(rows));
    PutU64(&shard, 32, payload.size());
    PutU32(&shard, 40, Crc32(payload.data(), payload.size()));
    shard.insert(shard.end(), payload.begin(), payload.end());
    out.shards.push_back(std::move(shard));
  }
  return out;
}

}  // namespace attn::testing
