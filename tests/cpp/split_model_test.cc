// The split layout: a core file whose word-embedding rows arrive in shard files. The files are
// written by the tests' own splitter (test_model_writer.h, from the README); the checks are that
// a core loads with no rows, that the encoder refuses ids whose shard is missing, that every
// loaded row equals the single file's bit for bit, that analyses equal the single file's, and
// that a damaged, foreign or misplaced shard is refused without changing anything.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "test_model_writer.h"

#define EXPECT_HAS(haystack, needle) EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, haystack)

namespace attn {
namespace {

using testing::GetU32;
using testing::PutU32;

class SplitModelTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kRows = 64;  // 64 rows x 64 values = one 4,096-value lane
  void SetUp() override {
    ModelConfig c = testing::TinyConfig();
    c.vocab_size = 600;  // 10 shards, the last of 24 rows
    c.hidden_size = 64;
    parts_ = testing::RandomModel(c, 21, false, true);
    testing::QuantizeRans(parts_.Find("embeddings.word_embeddings.weight"), 64, 1023);
    single_ = testing::Serialize(parts_);
    split_ = testing::Split(parts_, kRows);
    ASSERT_EQ(split_.shards.size(), 10u);
    ASSERT_TRUE(LoadedModel::FromBuffer(single_.data(), single_.size(), &whole_).ok());
    const Status status = LoadedModel::FromBuffer(split_.core.data(), split_.core.size(), &core_);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  Status LoadShard(const std::vector<uint8_t>& bytes) { return core_->LoadShard(bytes.data(), bytes.size()); }

  testing::ModelParts parts_;
  std::vector<uint8_t> single_;
  testing::SplitFiles split_;
  std::unique_ptr<LoadedModel> whole_, core_;
};

TEST_F(SplitModelTest, ACoreLoadsWithoutRowsAndAnalysesOnceItsShardsAreIn) {
  const Model& core = core_->model();
  EXPECT_TRUE(core.sharded());
  EXPECT_EQ(core.rows_per_shard(), kRows);
  EXPECT_EQ(core.shard_count(), 10);
  EXPECT_FALSE(core.RowLoaded(5));
  EXPECT_LT(split_.core.size(), single_.size()) << "the core leaves the rows out";

  const std::string text = "the cat sat on the mat.";
  const std::vector<int32_t> missing = core_->MissingShards(text);
  ASSERT_FALSE(missing.empty());
  EXPECT_EQ(core_->MissingShards(core_->tokenizer().Encode(text, core_->MaxLength(0))), missing);
  SentenceAnalysis analysis;
  const Status refused = AnalyzeText(*core_, text, AnalysisOptions(), &analysis);
  ASSERT_FALSE(refused.ok());
  EXPECT_HAS(refused.message(), "which is not loaded; load that shard of the model first");

  for (int32_t k : missing) ASSERT_TRUE(LoadShard(split_.shards[static_cast<size_t>(k)]).ok()) << k;
  EXPECT_TRUE(core_->MissingShards(text).empty());
  SentenceAnalysis want;
  AnalysisOptions options;  // every layer's output, the last one's too
  options.outputs |= kOutputHiddenStates;
  ASSERT_TRUE(AnalyzeText(*core_, text, options, &analysis).ok());
  ASSERT_TRUE(AnalyzeText(*whole_, text, options, &want).ok());
  EXPECT_EQ(analysis.activations.attention_probs, want.activations.attention_probs);
  EXPECT_EQ(analysis.activations.hidden_states, want.activations.hidden_states);

  // The masked-LM head scores every entry, so it waits for every shard.
  std::vector<Prediction> top;
  EXPECT_HAS(core_->TopPredictions(analysis, 1, 3, &top).message(), "need the whole word-embedding table");
  for (const auto& shard : split_.shards) ASSERT_TRUE(LoadShard(shard).ok());
  ASSERT_TRUE(LoadShard(split_.shards[0]).ok()) << "a second load is harmless";
  EXPECT_TRUE(core_->model().AllRowsLoaded());
  ASSERT_TRUE(core_->TopPredictions(analysis, 1, 3, &top).ok());

  // Every value of every tensor equals the single file's, bit for bit.
  std::vector<std::vector<float>> values;
  whole_->model().ForEachTensor([&](const TensorInfo& info, const float* v) {
    values.emplace_back(v, v + info.spec.numel());
  });
  size_t t = 0;
  core_->model().ForEachTensor([&](const TensorInfo& info, const float* v) {
    EXPECT_EQ(std::vector<float>(v, v + info.spec.numel()), values[t++]) << info.spec.name;
  });
}

TEST(SplitCodedTableTest, ACoreWithARiceCodedWordTableDecodesItsShardsAsTheSingleFile) {
  // What the shipped core holds: the word embeddings' header with a Rice-coded table, whose
  // length is not the plain table's; every shard decodes with it, bit for bit the single file's.
  ModelConfig c = testing::TinyConfig();
  c.vocab_size = 600;
  c.hidden_size = 64;
  testing::ModelParts parts = testing::RandomModel(c, 22, false, true);
  testing::WriterTensor* words = parts.Find("embeddings.word_embeddings.weight");
  testing::QuantizeRans(words, 64, 4095);
  words->rice_parameter = 2;
  const std::vector<uint8_t> single = testing::Serialize(parts);
  const testing::SplitFiles split = testing::Split(parts, 64);
  std::unique_ptr<LoadedModel> whole, core;
  ASSERT_TRUE(LoadedModel::FromBuffer(single.data(), single.size(), &whole).ok());
  const Status status = LoadedModel::FromBuffer(split.core.data(), split.core.size(), &core);
  ASSERT_TRUE(status.ok()) << status.message();
  for (const auto& shard : split.shards) ASSERT_TRUE(core->LoadShard(shard.data(), shard.size()).ok());
  std::vector<std::vector<float>> values;
  whole->model().ForEachTensor([&](const TensorInfo& info, const float* v) { values.emplace_back(v, v + info.spec.numel()); });
  size_t t = 0;
  core->model().ForEachTensor([&](const TensorInfo& info, const float* v) {
    EXPECT_EQ(std::vector<float>(v, v + info.spec.numel()), values[t++]) << info.spec.name;
  });
}

TEST_F(SplitModelTest, TheAllRowsFileLoadsEveryShardAndNamesWhereItBreaks) {
  std::vector<uint8_t> all;
  for (const auto& shard : split_.shards) all.insert(all.end(), shard.begin(), shard.end());
  int32_t count = -1;
  Status status = core_->LoadShards(all.data(), all.size(), &count);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(count, 10);
  EXPECT_TRUE(core_->model().AllRowsLoaded());
  SentenceAnalysis analysis, want;
  AnalysisOptions options;  // every layer's output, the last one's too
  options.outputs |= kOutputHiddenStates;
  ASSERT_TRUE(AnalyzeText(*core_, "the cat sat on the mat.", options, &analysis).ok());
  ASSERT_TRUE(AnalyzeText(*whole_, "the cat sat on the mat.", options, &want).ok());
  EXPECT_EQ(analysis.activations.hidden_states, want.activations.hidden_states);

  // A fresh core for each damaged copy: the shards in front of the damage load, the rest not.
  const size_t third = split_.shards[0].size() + split_.shards[1].size();
  auto fresh = [&]() {
    EXPECT_TRUE(LoadedModel::FromBuffer(split_.core.data(), split_.core.size(), &core_).ok());
  };
  std::vector<uint8_t> bytes = all;
  bytes[third + 70] ^= 0x10;  // inside shard 3's payload
  fresh();
  status = core_->LoadShards(bytes.data(), bytes.size(), &count);
  EXPECT_HAS(status.message(), "all-rows file, shard 3 at byte " + std::to_string(third) + ": ");
  EXPECT_HAS(status.message(), "fails its checksum");
  EXPECT_EQ(count, 2);
  EXPECT_EQ(core_->model().loaded_shards(), 2u);
  bytes.assign(all.begin(), all.end() - 5);  // cut inside the last shard's payload
  fresh();
  EXPECT_HAS(core_->LoadShards(bytes.data(), bytes.size(), &count).message(), "only");
  EXPECT_EQ(count, 9);
  bytes.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(third + 20));  // inside a header
  fresh();
  EXPECT_HAS(core_->LoadShards(bytes.data(), bytes.size(), &count).message(), "ends 20 bytes into a 64-byte shard header");
  fresh();
  EXPECT_HAS(core_->LoadShards(nullptr, 0, &count).message(), "is empty");
  EXPECT_EQ(count, 0);
  // A payload length that would run past the end (or wrap) is refused before it is read.
  bytes = all;
  testing::PutU64(&bytes, 32, ~uint64_t{0});
  fresh();
  EXPECT_HAS(core_->LoadShards(bytes.data(), bytes.size(), &count).message(), "only");
  EXPECT_EQ(core_->model().loaded_shards(), 0u);
}

TEST_F(SplitModelTest, DamagedForeignAndMisplacedShardsAreRefusedAndChangeNothing) {
  std::vector<uint8_t> bytes = split_.shards[3];
  bytes.back() ^= 0x40;
  EXPECT_HAS(LoadShard(bytes).message(), "shard 3 fails its checksum");
  bytes = split_.shards[3];
  bytes.pop_back();
  EXPECT_HAS(LoadShard(bytes).message(), "says its payload is");
  bytes = split_.shards[3];
  PutU32(&bytes, 16, GetU32(bytes, 16) ^ 1u);
  EXPECT_HAS(LoadShard(bytes).message(), "belongs to another model");
  bytes = split_.shards[3];
  PutU32(&bytes, 20, 4);
  EXPECT_HAS(LoadShard(bytes).message(), "do not fit this core");
  bytes = split_.shards[3];
  bytes[0] = 'X';
  EXPECT_HAS(LoadShard(bytes).message(), "not a shard file");
  // A payload that passes its CRC but does not decode: a lane length changed, CRC redone.
  bytes = split_.shards[3];
  const size_t lengths_at = 64 + 4 * kRows + 4;  // after the scales and the one lane state
  PutU32(&bytes, lengths_at, GetU32(bytes, lengths_at) + 1);
  bytes.push_back(0);
  testing::PutU64(&bytes, 32, bytes.size() - 64);
  PutU32(&bytes, 40, Crc32(bytes.data() + 64, bytes.size() - 64));
  EXPECT_FALSE(LoadShard(bytes).ok());
  for (int32_t row = 3 * 64; row < 4 * 64; ++row) ASSERT_FALSE(core_->model().RowLoaded(row));
  EXPECT_EQ(core_->model().loaded_shards(), 0u);
  // A single file takes no shards.
  EXPECT_HAS(whole_->LoadShard(split_.shards[0].data(), split_.shards[0].size()).message(),
             "takes no shard files");
}

TEST_F(SplitModelTest, ACoreMustDescribeItsShards) {
  std::vector<uint8_t> bytes = split_.core;
  PutU32(&bytes, 148, 0);
  testing::FixSizeAndCrc(&bytes);
  std::unique_ptr<Model> model;
  EXPECT_HAS(Model::FromBuffer(bytes.data(), bytes.size(), &model).message(), "rows per shard");
  bytes = split_.core;
  PutU32(&bytes, 148, 10);  // 10 x 64 values: not whole lanes
  testing::FixSizeAndCrc(&bytes);
  EXPECT_HAS(Model::FromBuffer(bytes.data(), bytes.size(), &model).message(), "multiple of 4096 values");
  bytes = single_;
  PutU32(&bytes, 148, 64);  // R without the flag
  testing::FixSizeAndCrc(&bytes);
  EXPECT_HAS(Model::FromBuffer(bytes.data(), bytes.size(), &model).message(), "expected 0 in a single file");
  bytes = single_;
  PutU32(&bytes, 52, 2);
  testing::FixSizeAndCrc(&bytes);
  EXPECT_HAS(Model::FromBuffer(bytes.data(), bytes.size(), &model).message(), "flags are 2");
  // The flag on a file whose word embeddings are whole is refused too.
  bytes = single_;
  PutU32(&bytes, 52, 1);
  PutU32(&bytes, 148, 64);
  testing::FixSizeAndCrc(&bytes);
  EXPECT_FALSE(Model::FromBuffer(bytes.data(), bytes.size(), &model).ok());
}

}  // namespace
}  // namespace attn
