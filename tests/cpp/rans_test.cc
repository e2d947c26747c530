// Tests of the rans dtype (core/rans.h): payloads from the test writer's plain encoder decode to
// exactly the quantised values, in a model file and alone, for any levels, group size and lane
// count; and every kind of damage is refused with a message naming it.
#include "core/rans.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/model_file.h"
#include "test_model_writer.h"

namespace attn {
namespace {

using testing::FixSizeAndCrc;
using testing::GetU32;
using testing::Layout;
using testing::ModelParts;
using testing::PutU32;
using testing::QuantizeRans;
using testing::RandomModel;
using testing::RansPayload;
using testing::Serialize;
using testing::TinyConfig;
using testing::WithCodedTable;
using testing::WriterTensor;

#define EXPECT_HAS(haystack, needle) EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, haystack)

// A 2-D tensor of rows x cols normal values, quantised to rans.
WriterTensor RandomRansTensor(uint32_t rows, uint32_t cols, uint32_t group, uint32_t levels,
                              uint32_t seed, float stddev = 1.0f) {
  WriterTensor t;
  t.name = "t";
  t.ndim = 2;
  t.shape = {rows, cols, 0, 0};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  t.values.resize(t.numel());
  for (float& v : t.values) v = normal(rng);
  QuantizeRans(&t, group, levels);
  return t;
}

Status Decode(const std::vector<uint8_t>& payload, const WriterTensor& t, std::vector<float>* out) {
  out->assign(t.numel(), std::numeric_limits<float>::quiet_NaN());
  return rans::DecodeTensor(payload.data(), payload.size(), t.numel(), t.group_size, out->data());
}

std::string DecodeError(const std::vector<uint8_t>& payload, const WriterTensor& t) {
  std::vector<float> out;
  const Status status = Decode(payload, t, &out);
  EXPECT_FALSE(status.ok()) << "a damaged payload decoded";
  return status.message();
}

TEST(RansTest, DecodesExactlyForAnyLevelsGroupAndLaneCount) {
  struct Case {
    uint32_t rows, cols, group, levels;
  } cases[] = {
      {1, 16, 16, 1},        // three symbols
      {4, 16, 64, 7},        // one group over four rows
      {300, 16, 16, 127},    // 4800 values: two lanes, the last one short
      {256, 32, 8, 2047},    // 8192 values: exactly two full lanes, large alphabet
      {3, 4096, 4096, 511},  // three full lanes
      {1, 5, 5, 16383},      // the largest alphabet the format allows
  };
  for (const Case& c : cases) {
    const WriterTensor t = RandomRansTensor(c.rows, c.cols, c.group, c.levels, c.rows + c.levels);
    std::vector<float> out;
    const Status status = Decode(RansPayload(t), t, &out);
    ASSERT_TRUE(status.ok()) << status.message();
    for (uint64_t i = 0; i < t.numel(); ++i) {
      ASSERT_EQ(out[i], t.Expected(i)) << c.rows << "x" << c.cols << " levels " << c.levels << " at " << i;
    }
  }
}

TEST(RansTest, ConstantTensorCodesToNoStreamBytes) {
  WriterTensor t = RandomRansTensor(2, 16, 16, 127, 1);
  for (float& v : t.values) v = 0.0f;
  QuantizeRans(&t, 16, 127);
  const std::vector<uint8_t> payload = RansPayload(t);
  // Header, 255 frequencies padded to 512 bytes, 2 scales, 1 state, 1 length: no stream.
  EXPECT_EQ(payload.size(), 8u + 512u + 8u + 4u + 4u);
  std::vector<float> out;
  ASSERT_TRUE(Decode(payload, t, &out).ok());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(RansTest, EntropyCodingBeatsFixedWidthOnPeakedValues) {
  // Normal values quantised per row with 127 levels (the values of int8) hold about 7.5 bits of
  // information per value: the coded size must come close to that, below int8's 8.
  const WriterTensor t = RandomRansTensor(1024, 256, 256, 127, 3);
  const double bits = 8.0 * static_cast<double>(RansPayload(t).size()) / static_cast<double>(t.numel());
  EXPECT_LT(bits, 7.8);
  EXPECT_GT(bits, 7.0);
}

class BrokenRansTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tensor_ = RandomRansTensor(300, 16, 16, 127, 5);  // two lanes
    payload_ = RansPayload(tensor_);
    table_bytes_ = (2 * (2 * 127 + 1) + 3) / 4 * 4;
    states_at_ = 8 + table_bytes_ + 4 * tensor_.scales.size();
    lengths_at_ = states_at_ + 8;
    streams_at_ = lengths_at_ + 8;
  }
  WriterTensor tensor_;
  std::vector<uint8_t> payload_;
  size_t table_bytes_ = 0, states_at_ = 0, lengths_at_ = 0, streams_at_ = 0;
};

TEST_F(BrokenRansTest, HeaderFields) {
  EXPECT_HAS(DecodeError(std::vector<uint8_t>(payload_.begin(), payload_.begin() + 7), tensor_),
             "shorter than its 8-byte header");
  std::vector<uint8_t> p = payload_;
  PutU32(&p, 0, 0);
  EXPECT_HAS(DecodeError(p, tensor_), "rans levels is 0, expected 1..16383");
  PutU32(&p, 0, 16384);
  EXPECT_HAS(DecodeError(p, tensor_), "rans levels is 16384");
  p = payload_;
  PutU32(&p, 4, 3);
  EXPECT_HAS(DecodeError(p, tensor_), "rans lane count is 3, expected 2 for 4800 values");
  p = payload_;
  PutU32(&p, 0, 2000);  // a table that no longer fits the payload
  EXPECT_HAS(DecodeError(p, tensor_), "too short for its frequency table");
}

TEST_F(BrokenRansTest, FrequenciesThatDoNotSumToTheScale) {
  std::vector<uint8_t> p = payload_;
  p[8 + 2 * 127] ^= 0x01;  // the frequency of zero
  EXPECT_HAS(DecodeError(p, tensor_), "rans frequencies do not sum to 32768");
}

TEST_F(BrokenRansTest, StreamLengthsThatDisagreeWithThePayload) {
  std::vector<uint8_t> p = payload_;
  PutU32(&p, lengths_at_, GetU32(p, lengths_at_) + 1);
  EXPECT_HAS(DecodeError(p, tensor_), "rans streams take");
  p = payload_;
  p.push_back(0);  // a stray byte after the last stream
  EXPECT_HAS(DecodeError(p, tensor_), "but the tensor has " + std::to_string(payload_.size() + 1) + " bytes");
  // Bytes moved from one lane to the other: the total holds, each lane's end check fails.
  p = payload_;
  PutU32(&p, lengths_at_, GetU32(p, lengths_at_) - 1);
  PutU32(&p, lengths_at_ + 4, GetU32(p, lengths_at_ + 4) + 1);
  const std::string message = DecodeError(p, tensor_);
  EXPECT_TRUE(message.find("runs out of bytes") != std::string::npos ||
              message.find("does not end in its initial state") != std::string::npos)
      << message;
}

TEST_F(BrokenRansTest, LaneStatesAndStreamBytes) {
  std::vector<uint8_t> p = payload_;
  PutU32(&p, states_at_, 5);
  EXPECT_HAS(DecodeError(p, tensor_), "rans lane 0 starts in state 5, outside [2^23, 2^31)");
  p = payload_;
  PutU32(&p, states_at_ + 4, 0x80000000u);
  EXPECT_HAS(DecodeError(p, tensor_), "rans lane 1 starts in state 2147483648");
  // A changed byte in the middle of lane 0 leads the decoder astray; it must notice at the end.
  p = payload_;
  p[streams_at_ + 100] ^= 0x5a;
  EXPECT_HAS(DecodeError(p, tensor_), "rans lane 0");
}

TEST_F(BrokenRansTest, NonFiniteScale) {
  std::vector<uint8_t> p = payload_;
  PutU32(&p, 8 + table_bytes_ + 4 * 7, 0x7f800000u);  // +inf
  EXPECT_HAS(DecodeError(p, tensor_), "rans scale 7 is not finite");
}

TEST_F(BrokenRansTest, AnyChangedByteIsRefusedOrDecodedWithinBounds) {
  // Every single-byte change of every byte: the decoder must return, never read past the
  // payload (run under ASan by the native-asan preset), and never accept a changed header.
  size_t refused = 0, changes = 0;
  for (size_t at = 0; at < payload_.size(); ++at) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> p = payload_;
      p[at] ^= flip;
      std::vector<float> out;
      const bool ok = Decode(p, tensor_, &out).ok();
      refused += ok ? 0 : 1;
      ++changes;
      if (at < 8) EXPECT_FALSE(ok) << "header byte " << at;
    }
  }
  // Changes to scales decode (to other values): the file's CRC is what catches those.
  EXPECT_GT(refused, changes / 2);
}

// ---- In a model file ----

TEST(RansModelFileTest, LoadsRansTensorsNextToTheOtherDtypes) {
  ModelConfig config = TinyConfig();
  config.vocab_size = 300;  // 4800 word-embedding values: two lanes
  ModelParts parts = RandomModel(config, 21, /*pooler=*/false, /*masked_lm_head=*/true);
  QuantizeRans(parts.Find("embeddings.word_embeddings.weight"), 16, 1023);  // per row
  QuantizeRans(parts.Find("encoder.layer.0.attention.self.query.weight"), 256, 7);  // per tensor
  QuantizeRans(parts.Find("encoder.layer.1.intermediate.dense.weight"), 8, 127);  // half rows
  QuantizeRans(parts.Find("cls.predictions.bias"), 300, 31);  // 1-D
  testing::QuantizeInt8(parts.Find("encoder.layer.1.output.dense.weight"), 32);
  std::unique_ptr<Model> model;
  const std::vector<uint8_t> bytes = Serialize(parts);
  const Status status = Model::FromBuffer(bytes.data(), bytes.size(), &model);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(model->precision(), "f32+int8+rans");
  size_t index = 0;
  model->ForEachTensor([&](const TensorInfo& info, const float* values) {
    const WriterTensor& t = parts.tensors[index++];
    EXPECT_EQ(static_cast<uint32_t>(info.dtype), t.dtype) << t.name;
    for (uint64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(values[i], t.Expected(i)) << t.name << " " << i;
  });
  const WriterTensor* emb = parts.Find("embeddings.word_embeddings.weight");
  EXPECT_EQ(model->weights().word_embeddings(299, 3), emb->integers[299 * 16 + 3] * emb->scales[299]);
}

class BrokenRansFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    parts_ = RandomModel(TinyConfig(), 23);
    QuantizeRans(parts_.Find(kName), 16, 255);
    bytes_ = Serialize(parts_, &layout_);
    for (size_t i = 0; i < parts_.tensors.size(); ++i) {
      if (parts_.tensors[i].name == kName) entry_ = layout_.Entry(i);
    }
    data_ = layout_.data + testing::GetU64(bytes_, entry_ + 88);
  }
  std::string Error(std::vector<uint8_t> bytes) {
    FixSizeAndCrc(&bytes);
    std::unique_ptr<Model> model;
    const Status status = Model::FromBuffer(bytes.data(), bytes.size(), &model);
    EXPECT_FALSE(status.ok()) << "a damaged file loaded";
    EXPECT_EQ(model, nullptr);
    return status.message();
  }
  static constexpr const char* kName = "encoder.layer.1.attention.self.value.weight";
  ModelParts parts_;
  Layout layout_;
  std::vector<uint8_t> bytes_;
  size_t entry_ = 0, data_ = 0;
};

TEST_F(BrokenRansFileTest, ErrorsNameTheTensorAndTheFix) {
  std::vector<uint8_t> bytes = bytes_;
  PutU32(&bytes, data_, 0);  // levels
  std::string message = Error(bytes);
  EXPECT_HAS(message, std::string("tensor '") + kName + "': rans levels is 0");
  EXPECT_HAS(message, "download or copy it again");

  bytes = bytes_;
  bytes[data_ + 8 + 2 * 255] ^= 0x02;
  EXPECT_HAS(Error(bytes), std::string("tensor '") + kName + "': rans frequencies do not sum");
}

TEST_F(BrokenRansFileTest, GroupSizeAndByteCountInTheEntry) {
  std::vector<uint8_t> bytes = bytes_;
  PutU32(&bytes, entry_ + 104, 0);
  EXPECT_HAS(Error(bytes), std::string("tensor '") + kName + "': rans group size 0 is invalid");
  bytes = bytes_;
  PutU32(&bytes, entry_ + 104, 24);
  EXPECT_HAS(Error(bytes), "rans group size 24 is invalid");
  bytes = bytes_;
  // Below the least a rans tensor of 256 values in groups of 16 needs: 8 + 16 x 4 + 8.
  testing::PutU64(&bytes, entry_ + 96, 79);
  EXPECT_HAS(Error(bytes), std::string("tensor '") + kName + "': byte count is 79, expected at least 80");
  bytes = bytes_;
  testing::PutU64(&bytes, entry_ + 96, testing::GetU64(bytes_, entry_ + 96) - 1);
  EXPECT_HAS(Error(bytes), "rans streams take");
}

TEST_F(BrokenRansFileTest, TruncatedAtEveryByteOfTheTensor) {
  // Each shorter byte count (with a consistent CRC) must be refused without reading past it.
  const uint64_t full = testing::GetU64(bytes_, entry_ + 96);
  for (uint64_t n = 0; n < full; ++n) {
    std::vector<uint8_t> bytes = bytes_;
    testing::PutU64(&bytes, entry_ + 96, n);
    FixSizeAndCrc(&bytes);
    std::unique_ptr<Model> model;
    ASSERT_FALSE(Model::FromBuffer(bytes.data(), bytes.size(), &model).ok()) << n;
  }
}


TEST(RansCodedTableTest, DecodesAsThePlainTableForAnyParameter) {
  for (uint32_t levels : {1u, 15u, 127u, 2047u, 16383u}) {
    const WriterTensor t = RandomRansTensor(64, 256, 256, levels, levels);
    const std::vector<uint8_t> plain = RansPayload(t);
    std::vector<float> want, got;
    ASSERT_TRUE(Decode(plain, t, &want).ok());
    for (uint32_t k : {0u, 2u, 7u, 14u}) {
      const std::vector<uint8_t> coded = WithCodedTable(plain, k);
      const Status status = Decode(coded, t, &got);
      ASSERT_TRUE(status.ok()) << "levels " << levels << ", k " << k << ": " << status.message();
      EXPECT_EQ(got, want) << "levels " << levels << ", k " << k;
      rans::Header header;
      ASSERT_TRUE(rans::ReadHeader(coded.data(), coded.size(), &header).ok());
      EXPECT_EQ(header.levels, levels);
      EXPECT_EQ(header.bytes, 16 + GetU32(coded, 12));
    }
  }
}

TEST(RansCodedTableTest, DamageIsRefusedWithItsCause) {
  const WriterTensor t = RandomRansTensor(300, 16, 16, 127, 5);
  const std::vector<uint8_t> good = WithCodedTable(RansPayload(t), 4);
  std::vector<uint8_t> p = good;
  PutU32(&p, 8, 15);
  EXPECT_HAS(DecodeError(p, t), "parameter 15");
  p = good;
  PutU32(&p, 12, GetU32(good, 12) + 2);
  EXPECT_HAS(DecodeError(p, t), "length a multiple of 4");
  p = good;
  PutU32(&p, 12, 1u << 30);
  EXPECT_HAS(DecodeError(p, t), "do not fit");
  // All ones: a unary run longer than any frequency may be.
  p = good;
  for (size_t i = 16; i < 16 + GetU32(good, 12); ++i) p[i] = 0xFF;
  EXPECT_HAS(DecodeError(p, t), "exceeds 2^15");
  // One flipped bit of the code: another frequency, or a code that ends early.
  p = good;
  p[16 + 9] ^= 0x10;
  const std::string flipped = DecodeError(p, t);
  EXPECT_TRUE(flipped.find("do not sum to 32768") != std::string::npos ||
              flipped.find("coded frequency table") != std::string::npos) << flipped;
  // A set bit in the padding after the last symbol.
  p = good;
  p[16 + GetU32(good, 12) - 1] |= 0x80;
  EXPECT_HAS(DecodeError(p, t), "padding is not zero");
  // Cut inside the code's header or the code itself.
  EXPECT_HAS(DecodeError(std::vector<uint8_t>(good.begin(), good.begin() + 12), t), "16-byte header");
  EXPECT_HAS(DecodeError(std::vector<uint8_t>(good.begin(), good.begin() + 20), t), "do not fit");
}

}  // namespace
}  // namespace attn
