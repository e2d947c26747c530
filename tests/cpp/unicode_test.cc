// Tests of the Unicode primitives: hand-checked facts from the Unicode 15.0 charts, and the
// generated category and mapping tables re-derived from UnicodeData.txt by a separate parser.
#include "core/unicode.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace attn::unicode {
namespace {

std::vector<char32_t> Lower(char32_t cp) {
  char32_t out[3];
  const int n = ToLower(cp, out);
  return std::vector<char32_t>(out, out + n);
}

std::vector<char32_t> Nfd(char32_t cp) {
  char32_t out[kMaxDecompositionLength];
  const int n = Decompose(cp, out);
  return std::vector<char32_t>(out, out + n);
}

std::vector<char32_t> Decode(const std::string& bytes) {
  std::vector<char32_t> out;
  DecodeUtf8(bytes, &out);
  return out;
}

TEST(Unicode, StatesItsVersion) { EXPECT_STREQ(kUnicodeVersion, "15.0.0"); }

TEST(Unicode, Categories) {
  struct Case {
    char32_t cp;
    Category category;
  };
  const Case cases[] = {
      {U'A', Category::Lu},     {U'z', Category::Ll},     {0x0301, Category::Mn},
      {0x00A0, Category::Zs},   {0x200B, Category::Cf},   {0xE000, Category::Co},
      {0x0378, Category::Cn},   {0x1F600, Category::So},  {0x2028, Category::Zl},
      {0x2029, Category::Zp},   {0x3000, Category::Zs},   {0xFF01, Category::Po},
      {0x4E00, Category::Lo},   {0x9FFF, Category::Lo},   {0xAC00, Category::Lo},
      {0x0000, Category::Cc},   {0x0085, Category::Cc},   {0x00AD, Category::Cf},
      {0xD800, Category::Cs},   {0x01C5, Category::Lt},   {0x0903, Category::Mc},
      {0x20DD, Category::Me},   {0x0660, Category::Nd},   {0x2160, Category::Nl},
      {0x00BD, Category::No},   {0x005F, Category::Pc},   {0x2014, Category::Pd},
      {0x0029, Category::Pe},   {0x00BB, Category::Pf},   {0x00AB, Category::Pi},
      {0x0028, Category::Ps},   {0x20AC, Category::Sc},   {0x005E, Category::Sk},
      {0x002B, Category::Sm},   {0x10FFFF, Category::Cn}, {0x110000, Category::Cn},
      // New in Unicode 15.0: CJK Extension H and Kawi.
      {0x31350, Category::Lo},  {0x11F00, Category::Mn},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GetCategory(c.cp), c.category) << std::hex << "U+" << static_cast<uint32_t>(c.cp);
  }
}

TEST(Unicode, LowercaseIsPythonFullMapping) {
  EXPECT_EQ(Lower(U'A'), std::vector<char32_t>{U'a'});
  EXPECT_EQ(Lower(U'a'), std::vector<char32_t>{U'a'});
  EXPECT_EQ(Lower(0x0130), (std::vector<char32_t>{0x0069, 0x0307}));  // İ -> i + dot above
  EXPECT_EQ(Lower(0x0049), std::vector<char32_t>{0x0069});  // no Turkish tailoring
  EXPECT_EQ(Lower(0x03A3), std::vector<char32_t>{0x03C3});  // Σ -> σ, never ς
  EXPECT_EQ(Lower(0x212A), std::vector<char32_t>{0x006B});  // Kelvin sign
  EXPECT_EQ(Lower(0x1E9E), std::vector<char32_t>{0x00DF});  // capital sharp s
  EXPECT_EQ(Lower(0x00DF), std::vector<char32_t>{0x00DF});  // lower() keeps ß
  EXPECT_EQ(Lower(0x01C5), std::vector<char32_t>{0x01C6});  // titlecase Dž
  EXPECT_EQ(Lower(0x10400), std::vector<char32_t>{0x10428});  // Deseret
  EXPECT_EQ(Lower(0x4E00), std::vector<char32_t>{0x4E00});
}

std::vector<char32_t> ParseHexes(const std::string& field) {
  std::vector<char32_t> out;
  std::istringstream in(field);
  std::string hex;
  while (in >> hex) out.push_back(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
  return out;
}

// Every code point's lowercase against Python's own str.lower(), from a table that
// scripts/unicode/python_casing.py writes at test time with Debian's /usr/bin/python3 (the
// expected values are never typed by hand). Python's str.lower() on a whole word also applies
// the conditional Final_Sigma rule; transformers lowercases one character at a time, so the
// tokenizer must not (tokenizer.cc), and this test also pins that Final_Sigma is the only
// context Python ever applies: every other code point lowercases the same alone and in a word.
TEST(Unicode, LowercaseEqualsPythonForEveryCodePoint) {
  const std::string python = "/usr/bin/python3";
  const std::string path = std::string(ATTN_BINARY_DIR) + "/python_lowercase." +
                           std::to_string(getpid()) + ".txt";
  const std::string command = "cd '" + std::string(ATTN_SOURCE_DIR) + "' && " + python +
                              " -m scripts.unicode.python_casing '" + path + "'";
  if (access(python.c_str(), X_OK) != 0 || std::system(command.c_str()) != 0) {
    const char* allow_skip = std::getenv("ATTN_ALLOW_SKIP");
    const std::string message = "cannot run " + command + " (apt-get install python3)";
    std::remove(path.c_str());
    if (allow_skip != nullptr && std::string(allow_skip) == "1") GTEST_SKIP() << message;
    FAIL() << message;
  }
  std::ifstream in(path);
  std::string header;
  ASSERT_TRUE(std::getline(in, header)) << path;
  // Python's mappings of the listed code points; every other one maps to itself.
  std::map<char32_t, std::vector<char32_t>> alone, in_final_position;
  std::string line;
  size_t listed = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string cp_hex, alone_hex, final_hex;
    ASSERT_TRUE(std::getline(fields, cp_hex, '\t') && std::getline(fields, alone_hex, '\t') &&
                std::getline(fields, final_hex))
        << line;
    const char32_t cp = static_cast<char32_t>(std::stoul(cp_hex, nullptr, 16));
    ASSERT_LT(cp, 0x110000u) << line;
    alone[cp] = ParseHexes(alone_hex);
    in_final_position[cp] = ParseHexes(final_hex);
    ++listed;
  }
  in.close();
  std::remove(path.c_str());
  EXPECT_GT(listed, 1400u) << header;

  const auto python_lower = [](const std::map<char32_t, std::vector<char32_t>>& listed_map,
                                char32_t cp) {
    auto it = listed_map.find(cp);
    return it == listed_map.end() ? std::vector<char32_t>{cp} : it->second;
  };
  int mismatches = 0, multi = 0;
  std::vector<char32_t> context_dependent;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    const std::vector<char32_t> expected = python_lower(alone, cp);
    if (Lower(cp) != expected && ++mismatches <= 10) {
      ADD_FAILURE() << "lowercase of U+" << std::hex << static_cast<uint32_t>(cp)
                    << " differs from Python's (" << header << ")";
    }
    if (expected.size() > 1) ++multi;
    if (python_lower(in_final_position, cp) != expected) context_dependent.push_back(cp);
  }
  EXPECT_EQ(mismatches, 0) << header;
  EXPECT_EQ(multi, 1) << "U+0130 is the one code point whose lowercase is longer";
  EXPECT_EQ(alone[0x130], (std::vector<char32_t>{0x69, 0x307}));
  EXPECT_EQ(context_dependent, std::vector<char32_t>{0x3A3}) << "only Σ, by Final_Sigma";
  EXPECT_EQ(in_final_position[0x3A3], std::vector<char32_t>{0x3C2});
  EXPECT_EQ(Lower(0x3A3), std::vector<char32_t>{0x3C3});
}

TEST(Unicode, CanonicalDecomposition) {
  EXPECT_EQ(Nfd(0x00E9), (std::vector<char32_t>{0x0065, 0x0301}));
  EXPECT_EQ(Nfd(0x1E09), (std::vector<char32_t>{0x0063, 0x0327, 0x0301}));  // recursive
  EXPECT_EQ(Nfd(0x212B), (std::vector<char32_t>{0x0041, 0x030A}));  // Angstrom sign
  EXPECT_EQ(Nfd(0xD55C), (std::vector<char32_t>{0x1112, 0x1161, 0x11AB}));  // 한
  EXPECT_EQ(Nfd(0xAC00), (std::vector<char32_t>{0x1100, 0x1161}));  // 가, no trailing jamo
  EXPECT_EQ(Nfd(0xF900), std::vector<char32_t>{0x8C48});  // CJK compatibility ideograph
  EXPECT_EQ(Nfd(0x00A0), std::vector<char32_t>{0x00A0});  // compatibility only: untouched
  EXPECT_EQ(Nfd(0xFB01), std::vector<char32_t>{0xFB01});  // ﬁ is compatibility only
  EXPECT_EQ(Nfd(0x1FEF), std::vector<char32_t>{0x0060});  // Greek varia -> grave accent
}

TEST(Unicode, CombiningClassAndOrdering) {
  EXPECT_EQ(CombiningClass(U'a'), 0);
  EXPECT_EQ(CombiningClass(0x0301), 230);
  EXPECT_EQ(CombiningClass(0x0327), 202);
  EXPECT_EQ(CombiningClass(0x1D16D), 226);
  EXPECT_EQ(CombiningClass(0x1D165), 216);
  std::vector<char32_t> cps = {U'a', 0x0301, 0x0327, U'b', 0x1D16D, 0x1D165};
  std::vector<int> origin = {0, 1, 2, 3, 4, 5};
  CanonicalOrder(&cps, &origin);
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0x0327, 0x0301, U'b', 0x1D165, 0x1D16D}));
  EXPECT_EQ(origin, (std::vector<int>{0, 2, 1, 3, 5, 4}));
}

// Canonical composition: primary composites, Hangul syllables, exclusions, blocking. The whole
// table is checked against Python's NFC by the generator and, through the tokenizer, by
// tests/py/test_tokenizer_differential.py (its cased settings keep accents, so NFC decides ids).
TEST(Unicode, CanonicalComposition) {
  EXPECT_EQ(Compose(U'e', 0x0301), 0x00E9u);
  EXPECT_EQ(Compose(U'A', 0x030A), 0x00C5u);         // not the Angstrom sign, a singleton
  EXPECT_EQ(Compose(0x1100, 0x1161), 0xAC00u);       // L + V
  EXPECT_EQ(Compose(0xAC00, 0x11A8), 0xAC01u);       // LV + T
  EXPECT_EQ(Compose(0xAC01, 0x11A8), 0u);            // LVT + T: nothing
  EXPECT_EQ(Compose(0xAC00, 0x11A7), 0u);            // T_BASE itself is no trailing jamo
  EXPECT_EQ(Compose(0x0915, 0x093C), 0u);            // U+0958 is a composition exclusion
  EXPECT_EQ(Compose(0x0308, 0x0301), 0u);            // U+0344 decomposes to a non-starter
  EXPECT_EQ(Compose(U'a', U'b'), 0u);
  const auto nfc = [](std::vector<char32_t> cps) {
    std::vector<std::pair<int, int>> origin;
    for (size_t i = 0; i < cps.size(); ++i) origin.push_back({static_cast<int>(i), static_cast<int>(i)});
    CanonicalOrder(&cps, &origin);
    CanonicalCompose(&cps, &origin, [](std::pair<int, int> a, std::pair<int, int> b) {
      return std::make_pair(std::min(a.first, b.first), std::max(a.second, b.second));
    });
    return std::make_pair(cps, origin);
  };
  // o + dot below + circumflex: both compose, in canonical order (ộ).
  EXPECT_EQ(nfc({U'o', 0x0302, 0x0323}).first, std::vector<char32_t>{0x1ED9});
  EXPECT_EQ(nfc({U'o', 0x0302, 0x0323}).second, (std::vector<std::pair<int, int>>{{0, 2}}));
  // A second mark of the same class is blocked by the first: a + grave + acute is à + acute.
  EXPECT_EQ(nfc({U'a', 0x0300, 0x0301}).first, (std::vector<char32_t>{0x00E0, 0x0301}));
  // A starter between blocks; a leading non-starter composes with nothing.
  EXPECT_EQ(nfc({U'e', U'x', 0x0301}).first, (std::vector<char32_t>{U'e', U'x', 0x0301}));
  EXPECT_EQ(nfc({0x0301, U'e'}).first, (std::vector<char32_t>{0x0301, U'e'}));
  // Hangul jamo typed apart become one syllable (한).
  EXPECT_EQ(nfc({0x1112, 0x1161, 0x11AB}).first, std::vector<char32_t>{0xD55C});
}

// A run of 100,000 marks in descending class is the worst case for an insertion sort (about
// n^2/2 swaps, minutes); sorted per run it takes milliseconds. The bound only catches a
// quadratic sort coming back, so it is far above the real time even under the sanitizers.
TEST(Unicode, CanonicalOrderOfALongRunIsStableAndFast) {
  const char32_t marks[] = {0x0301, 0x0316, 0x0327, 0x0334};  // classes 230, 220, 202, 1
  constexpr size_t kPerClass = 25000;
  std::vector<char32_t> cps = {U'a'};
  std::vector<int> origin = {0};
  for (const char32_t mark : marks) {
    for (size_t k = 0; k < kPerClass; ++k) {
      cps.push_back(mark);
      origin.push_back(static_cast<int>(origin.size()));
    }
  }
  cps.push_back(U'b');
  origin.push_back(static_cast<int>(origin.size()));
  const auto start = std::chrono::steady_clock::now();
  CanonicalOrder(&cps, &origin);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  ASSERT_EQ(cps.size(), 4 * kPerClass + 2);
  EXPECT_EQ(cps.front(), U'a');
  EXPECT_EQ(cps.back(), U'b');
  EXPECT_EQ(origin.back(), static_cast<int>(4 * kPerClass + 1));
  // Ascending class, and within one class the input's order (origin increasing).
  for (size_t c = 0; c < 4; ++c) {
    const char32_t mark = marks[3 - c];
    const int first_origin = static_cast<int>(1 + (3 - c) * kPerClass);
    for (size_t k = 0; k < kPerClass; ++k) {
      const size_t at = 1 + c * kPerClass + k;
      ASSERT_EQ(cps[at], mark) << at;
      ASSERT_EQ(origin[at], first_origin + static_cast<int>(k)) << at;
    }
  }
}

TEST(Unicode, BertCharacterClasses) {
  for (char32_t c : {U'!', U'/', U':', U'@', U'[', U'`', U'{', U'~', U'$', U'+', U'^',
                     char32_t{0x00BF}, char32_t{0x2014}, char32_t{0x00A7}, char32_t{0x3002},
                     char32_t{0x061F}, char32_t{0x05BE}}) {
    EXPECT_TRUE(IsBertPunctuation(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'a', U'0', U' ', char32_t{0x20AC}, char32_t{0x00D7}, char32_t{0x1F600}}) {
    EXPECT_FALSE(IsBertPunctuation(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {char32_t{0}, char32_t{0x1B}, char32_t{0x7F}, char32_t{0x0085},
                     char32_t{0x200B}, char32_t{0x00AD}, char32_t{0xE000}, char32_t{0x0378},
                     char32_t{0xFEFF}, char32_t{0x10FFFD}}) {
    EXPECT_TRUE(IsBertControl(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'\t', U'\n', U'\r', U'a', char32_t{0x2028}}) EXPECT_FALSE(IsBertControl(c));
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', char32_t{0x00A0}, char32_t{0x3000},
                     char32_t{0x1680}, char32_t{0x202F}}) {
    EXPECT_TRUE(IsBertWhitespace(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {char32_t{0x2028}, char32_t{0x200B}, char32_t{0x000B}}) {
    EXPECT_FALSE(IsBertWhitespace(c));
  }
  EXPECT_TRUE(IsSplitSpace(0x2028));
  EXPECT_TRUE(IsSplitSpace(0x2029));
  for (char32_t c : {char32_t{0x4E00}, char32_t{0x9FFF}, char32_t{0x3400}, char32_t{0x20000},
                     char32_t{0x2A700}, char32_t{0x2CEAF}, char32_t{0xF900}, char32_t{0x2F800}}) {
    EXPECT_TRUE(IsCjkIdeograph(c)) << std::hex << static_cast<uint32_t>(c);
  }
  // Kana, Hangul and CJK extensions Hugging Face does not list stay unsplit.
  for (char32_t c : {char32_t{0x3042}, char32_t{0xAC00}, char32_t{0x30000}, char32_t{0x31350},
                     char32_t{0x2CEB0}}) {
    EXPECT_FALSE(IsCjkIdeograph(c)) << std::hex << static_cast<uint32_t>(c);
  }
}

TEST(Unicode, DecodeReplacesMaximalSubparts) {
  // The example of Unicode 15.0 section 3.9 (table 3-8), which Python follows.
  const std::string bytes = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const char32_t r = kReplacementCharacter;
  EXPECT_EQ(Decode(bytes), (std::vector<char32_t>{U'a', r, r, r, U'b', r, U'c', r, r, U'd'}));
  EXPECT_EQ(Decode("\xED\xA0\x80"), (std::vector<char32_t>{r, r, r}));  // a surrogate
  EXPECT_EQ(Decode("\xF4\x90\x80\x80"), (std::vector<char32_t>{r, r, r, r}));  // > U+10FFFF
  EXPECT_EQ(Decode("\xC0\xAF"), (std::vector<char32_t>{r, r}));  // overlong
  EXPECT_EQ(Decode("x\xE2\x82"), (std::vector<char32_t>{U'x', r}));  // truncated at the end
  EXPECT_EQ(Decode("\xF0\x9F\x98\x80"), std::vector<char32_t>{0x1F600});
  EXPECT_EQ(Decode(std::string("a\0b", 3)), (std::vector<char32_t>{U'a', 0, U'b'}));
  EXPECT_TRUE(Decode("").empty());
}

TEST(Unicode, Utf8RoundTripsEveryScalarValue) {
  std::string bytes;
  std::vector<char32_t> expected;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    AppendUtf8(cp, &bytes);
    expected.push_back(cp);
  }
  EXPECT_TRUE(IsValidUtf8(bytes));
  EXPECT_EQ(Decode(bytes), expected);
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

// The generated tables against UnicodeData.txt, read by a parser independent of the generator.
TEST(Unicode, TablesMatchUnicodeData) {
  std::ifstream in("/usr/share/unicode/UnicodeData.txt");
  if (!in) GTEST_SKIP() << "unicode-data is not installed (apt-get install unicode-data)";
  const char* names[] = {"Cn", "Cc", "Cf", "Co", "Cs", "Ll", "Lm", "Lo", "Lt", "Lu",
                         "Mc", "Me", "Mn", "Nd", "Nl", "No", "Pc", "Pd", "Pe", "Pf",
                         "Pi", "Po", "Ps", "Sc", "Sk", "Sm", "So", "Zl", "Zp", "Zs"};
  std::vector<int> expected(0x110000, 0);
  std::string line;
  long range_first = -1;
  int mismatches = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ';')) f.push_back(field);
    const long cp = std::stol(f[0], nullptr, 16);
    int category = -1;
    for (int i = 0; i < 30; ++i) {
      if (f[2] == names[i]) category = i;
    }
    ASSERT_GE(category, 0) << line;
    if (f[1].find(", First>") != std::string::npos) {
      range_first = cp;
      continue;
    }
    const long first = f[1].find(", Last>") != std::string::npos ? range_first : cp;
    for (long c = first; c <= cp; ++c) expected[static_cast<size_t>(c)] = category;
    // Simple lowercase (field 13); U+0130 is the one unconditional special mapping.
    if (f.size() > 13 && !f[13].empty() && cp != 0x130) {
      const std::vector<char32_t> want = {static_cast<char32_t>(std::stol(f[13], nullptr, 16))};
      if (Lower(static_cast<char32_t>(cp)) != want && ++mismatches < 10) {
        ADD_FAILURE() << "lowercase of U+" << std::hex << cp;
      }
    }
    // Canonical decompositions start with a code point, compatibility ones with a <tag>.
    if (f[5].empty() || f[5][0] == '<') {
      if (Nfd(static_cast<char32_t>(cp))[0] != static_cast<char32_t>(cp) && cp < 0xAC00) {
        ADD_FAILURE() << "U+" << std::hex << cp << " has no canonical decomposition";
      }
    } else {
      const long head = std::stol(f[5], nullptr, 16);
      std::vector<char32_t> full = Nfd(static_cast<char32_t>(head));
      const std::vector<char32_t> got = Nfd(static_cast<char32_t>(cp));
      // The full decomposition begins with the full decomposition of the first part.
      if (got.size() < full.size() || !std::equal(full.begin(), full.end(), got.begin())) {
        ADD_FAILURE() << "decomposition of U+" << std::hex << cp;
      }
    }
  }
  for (size_t c = 0; c < expected.size(); ++c) {
    if (static_cast<int>(GetCategory(static_cast<char32_t>(c))) != expected[c] && ++mismatches < 10) {
      ADD_FAILURE() << "category of U+" << std::hex << c;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace attn::unicode
