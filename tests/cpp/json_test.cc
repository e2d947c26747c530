// Tests of the CLI's JSON writer (cli/json.h): its output is valid JSON and valid UTF-8 whatever
// it is given. The first two inputs are the ones tests/fuzz/json_fuzz.cc found: bytes that are
// not UTF-8 (a command-line path can hold any) went out raw, and a NaN went out as "nan".
#include "cli/json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace attn {
namespace {

template <typename Write>
std::string Written(Write write) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buffer, &size);
  EXPECT_NE(f, nullptr);
  write(f);
  std::fclose(f);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

std::string JsonString(std::string_view s) {
  return Written([&](FILE* f) { cli::WriteJsonString(f, s); });
}

std::string JsonFloat(float v) {
  return Written([&](FILE* f) { cli::WriteJsonFloat(f, v); });
}

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

TEST(JsonTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // json_fuzz's input 4a af 5b: a stray continuation byte.
  EXPECT_EQ(JsonString("J\xAF["), std::string("\"J") + kReplacement + "[\"");
  // One U+FFFD per maximal ill-formed subpart (Unicode 15.0 section 3.9), as Python's
  // errors="replace" and the tokenizer read such text.
  const std::string r = kReplacement;
  EXPECT_EQ(JsonString("\xED\xA0\x80"), "\"" + r + r + r + "\"");  // an encoded surrogate
  EXPECT_EQ(JsonString("\xC0\xAF"), "\"" + r + r + "\"");          // an overlong '/'
  EXPECT_EQ(JsonString("\xE2\x82x"), "\"" + r + "x\"");             // a cut-off sequence
  EXPECT_EQ(JsonString("\xF4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // above U+10FFFF
  EXPECT_EQ(JsonString("\xFF"), "\"" + r + "\"");
}

TEST(JsonTest, ValidUtf8AndControlsReadBack) {
  EXPECT_EQ(JsonString("caf\xC3\xA9 \xE2\x80\xA8 \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x80\xA8 \xF0\x9F\x98\x80\"");
  EXPECT_EQ(JsonString(std::string_view("a\0b\x1f\x7f", 5)), "\"a\\u0000b\\u001f\x7f\"");
  EXPECT_EQ(JsonString("\"\\\n\r\t/"), "\"\\\"\\\\\\n\\r\\t/\"");
}

TEST(JsonTest, NonFiniteFloatsAreNull) {
  // json_fuzz's input ff ff ff ff 24: a NaN made of the first four bytes.
  uint32_t bits = 0xFFFFFFFFu;
  float nan;
  std::memcpy(&nan, &bits, sizeof nan);
  EXPECT_EQ(JsonFloat(nan), "null");
  EXPECT_EQ(JsonFloat(std::numeric_limits<float>::infinity()), "null");
  EXPECT_EQ(JsonFloat(-std::numeric_limits<float>::infinity()), "null");
  EXPECT_EQ(JsonFloat(0.1f), "0.100000001");
  EXPECT_EQ(JsonFloat(-0.0f), "-0");
  EXPECT_EQ(JsonFloat(std::numeric_limits<float>::denorm_min()), "1.40129846e-45");
}

TEST(JsonTest, HeadProfileStatisticsThatAreNotFiniteAreNull) {
  HeadProfile p;
  p.rows = 4;
  p.previous_token = 3;
  p.entropy_sum = std::numeric_limits<double>::quiet_NaN();
  p.normalized_entropy_sum = 2.0;
  p.ratio_to_uniform_sum = std::numeric_limits<double>::infinity();
  const std::string json = Written([&](FILE* f) { cli::WriteJsonHeadProfiles(f, {p}, 1); });
  EXPECT_EQ(json,
            "[{\"layer\":0,\"head\":0,\"label\":\"previous-token\",\"previous_token\":0.75,"
            "\"next_token\":0,\"cls\":0,\"sep\":0,\"self\":0,\"punctuation\":0,\"mean_entropy\":null,"
            "\"mean_normalized_entropy\":0.5,\"mean_ratio_to_uniform\":null}]");
}

}  // namespace
}  // namespace attn
