// Fuzz target for the split layout's shard loaders (Model::LoadWordEmbeddingShard and the
// all-rows file's LoadWordEmbeddingShards), which read bytes a server sends. A small core and
// its shards are written once by the tests' own splitter (tests/cpp/test_model_writer.h); each
// input then gives a fresh core one of:
//  - the input's bytes as one shard, or as an all-rows file;
//  - real shards back to back, chosen and ordered by the input, with a few bytes changed, the
//    end cut, or a header's payload length replaced (so that most inputs reach the per-shard
//    checks and the rANS decoder rather than stopping at the magic).
// A refusal must come with a message (an all-rows one naming the shard's place); whatever
// loaded must be bit for bit the single file's rows, and a load that reports success for every
// shard must leave every row loaded.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "../cpp/test_model_writer.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "shards_fuzz: broken promise: %s\n", what);
    std::abort();
  }
}

constexpr uint32_t kRows = 64;  // 64 rows x 64 values: one rANS lane per shard

struct Fixture {
  std::vector<uint8_t> core;
  std::vector<std::vector<uint8_t>> shards;
  std::vector<float> rows;  // the single file's word embeddings, (V, d)
};

const Fixture& Shared() {
  static const Fixture fixture = [] {
    attn::ModelConfig c = attn::testing::TinyConfig();
    c.vocab_size = 600;  // 10 shards, the last of 24 rows
    c.hidden_size = 64;
    attn::testing::ModelParts parts = attn::testing::RandomModel(c, 31, false, true);
    attn::testing::QuantizeRans(parts.Find("embeddings.word_embeddings.weight"), 64, 1023);
    const std::vector<uint8_t> single = attn::testing::Serialize(parts);
    attn::testing::SplitFiles split = attn::testing::Split(parts, kRows);
    Fixture f{split.core, split.shards, {}};
    std::unique_ptr<attn::LoadedModel> whole;
    Check(attn::LoadedModel::FromBuffer(single.data(), single.size(), &whole).ok(), "the single file loads");
    const auto& table = whole->model().weights().word_embeddings;
    f.rows.assign(table.data(), table.data() + table.size());
    return f;
  }();
  return fixture;
}

void PutU64(std::vector<uint8_t>* b, size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) (*b)[at + static_cast<size_t>(k)] = static_cast<uint8_t>(v >> (8 * k));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = Shared();
  FuzzedDataProvider in(data, size);
  std::unique_ptr<attn::LoadedModel> core;
  Check(attn::LoadedModel::FromBuffer(f.core.data(), f.core.size(), &core).ok(), "the core loads");
  const int mode = in.ConsumeIntegralInRange<int>(0, 2);
  std::vector<uint8_t> bytes;
  if (mode < 2) {
    bytes = in.ConsumeRemainingBytes<uint8_t>();
  } else {
    const size_t count = in.ConsumeIntegralInRange<size_t>(0, 2 * f.shards.size());
    for (size_t k = 0; k < count; ++k) {
      const auto& shard = f.shards[in.ConsumeIntegralInRange<size_t>(0, f.shards.size() - 1)];
      bytes.insert(bytes.end(), shard.begin(), shard.end());
    }
    const int damage = in.ConsumeIntegralInRange<int>(0, 3);
    if (!bytes.empty() && damage == 1) {
      for (int k = in.ConsumeIntegralInRange<int>(1, 4); k > 0; --k) {
        bytes[in.ConsumeIntegralInRange<size_t>(0, bytes.size() - 1)] ^= in.ConsumeIntegral<uint8_t>() | 1;
      }
    } else if (!bytes.empty() && damage == 2) {
      bytes.resize(in.ConsumeIntegralInRange<size_t>(0, bytes.size() - 1));
    } else if (bytes.size() >= 64 && damage == 3) {
      PutU64(&bytes, 32, in.ConsumeIntegral<uint64_t>());  // the first shard's payload length
    }
  }
  // An allocation of exactly the input's size, so that ASan sees a read past its end.
  std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size() ? bytes.size() : 1]);
  if (!bytes.empty()) std::memcpy(exact.get(), bytes.data(), bytes.size());
  int32_t count = -1;
  const attn::Status status = mode == 0 ? core->LoadShard(exact.get(), bytes.size())
                                        : core->LoadShards(bytes.empty() ? nullptr : exact.get(), bytes.size(), &count);
  if (!status.ok()) {
    Check(!status.message().empty(), "a refusal says why");
    if (mode > 0 && !bytes.empty()) Check(status.message().find("all-rows file") != std::string::npos, "an all-rows refusal names the file");
  }
  if (mode > 0) Check(count >= 0, "the count of loaded shards is set");
  // Whatever loaded is the single file's rows, bit for bit; a row not loaded is zero.
  const attn::Model& model = core->model();
  const auto& table = model.weights().word_embeddings;
  const int64_t d = table.cols();
  for (int64_t row = 0; row < table.rows(); ++row) {
    const float* got = table.data() + row * d;
    const float* want = f.rows.data() + row * d;
    if (model.RowLoaded(static_cast<int32_t>(row))) {
      Check(std::memcmp(got, want, sizeof(float) * static_cast<size_t>(d)) == 0, "a loaded row equals the single file's");
    } else {
      for (int64_t k = 0; k < d; ++k) Check(got[k] == 0.0f, "a row not loaded is zero");
    }
  }
  if (status.ok() && mode > 0) Check(static_cast<size_t>(count) * 64 <= bytes.size(), "no more shards than the bytes hold");
  return 0;
}
