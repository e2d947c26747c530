// Tokenizer tests. Expected ids in the main table come from @huggingface/tokenizers 0.2.0, an
// independent JS implementation, via tests/js/make_tokenizer_cases.mjs; the rows marked
// "library rewrite" are cases where that library departs from Python's BertTokenizer, and their
// ids were taken from the library on a Python-equivalent text (see tokenizer_parity.test.mjs).
// The comment under each row gives the pieces (vocab.txt lines) for review by eye. Offsets,
// long-word and truncation expectations are worked out by hand from vocab.txt.
#include "core/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace attn {
namespace {

const std::string kVocabPath = std::string(ATTN_SOURCE_DIR) + "/model_data/vocab.txt";

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Vocab vocab;
    const Status status = Vocab::FromFile(kVocabPath, &vocab);
    ASSERT_TRUE(status.ok()) << status.message();
    tokenizer_ = new Tokenizer();
    const Status created = Tokenizer::Create(std::move(vocab), tokenizer_);
    ASSERT_TRUE(created.ok()) << created.message();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }

  static std::vector<int32_t> Ids(std::string_view text, int32_t max_length = 1 << 30) {
    std::vector<int32_t> ids;
    for (const Token& t : tokenizer_->Encode(text, max_length).tokens) ids.push_back(t.id);
    return ids;
  }

  static Tokenizer* tokenizer_;
};

Tokenizer* TokenizerTest::tokenizer_ = nullptr;

struct IdCase {
  const char* name;
  const char* text;
  std::vector<int32_t> ids;
};

TEST_F(TokenizerTest, IdsMatchTheIndependentReference) {
  const IdCase cases[] = {
      {"plain", "Hello, world!", {101, 7592, 1010, 2088, 999, 102}},
      // [CLS] hello , world ! [SEP]
      {"accents", "Café naïve RÉSUMÉ Ångström", {101, 7668, 15743, 13746, 17076, 15687, 102}},
      // [CLS] cafe naive resume ang ##strom [SEP]
      {"decomposed accents", "Cafe\u0301 nai\u0308ve", {101, 7668, 15743, 102}},
      // [CLS] cafe naive [SEP]
      {"turkish dotted capital I", "İstanbul İZMİR", {101, 9960, 1045, 2480, 14503, 102}},
      // [CLS] istanbul i ##z ##mir [SEP]
      {"turkish dotless i", "ılık ışık",
       {101, 1104, 2140, 11722, 2243, 1104, 2015, 11722, 2243, 102}},
      // [CLS] ı ##l ##ı ##k ı ##s ##ı ##k [SEP]
      {"german sharp s", "Straße STRASSE ẞ", {101, 2358, 27807, 2358, 8180, 3366, 1096, 102}},
      // [CLS] st ##raße st ##ras ##se ß [SEP]
      {"cjk ideographs split", "東京は日本の首都です",
       {101, 1879, 1755, 1672, 1864, 1876, 1671, 100, 1961, 1665, 30184, 102}},
      // [CLS] 東 京 は 日 本 の [UNK] 都 て ##す [SEP]
      {"hangul and kana stay whole", "한국어 ひらがな",
       {101, 1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008, 1673, 30211, 30177, 30193,
        102}},
      // [CLS] ᄒ ##ᅡ ##ᆫ ##ᄀ ##ᅮ ##ᆨ ##ᄋ ##ᅥ ひ ##ら ##か ##な [SEP]
      {"cjk beyond the bmp (library rewrite: astral-cjk)", "𠀀𪜀x", {101, 100, 100, 1060, 102}},
      // [CLS] [UNK] [UNK] x [SEP]
      {"emoji", "I ❤\uFE0F NY 😀👍🏽", {101, 1045, 100, 6396, 100, 102}},
      // [CLS] i [UNK] ny [UNK] [SEP]
      {"zero-width characters", "zero\u200Bwidth\u200C\u200Djoin\uFEFF",
       {101, 5717, 9148, 11927, 2232, 5558, 2378, 102}},
      // [CLS] zero ##wi ##dt ##h ##jo ##in [SEP]
      {"control characters", "a\001b\002c\177d\302\205e", {101, 5925, 3207, 102}},
      // [CLS] abc ##de [SEP]
      {"combining marks alone", "\u0301\u0308 x\u0327\u0301", {101, 1060, 102}},
      // [CLS] x [SEP]
      {"arabic", "مرحبا بالعالم ال\u0652ع\u064Eر\u064Eب\u0650ي\u064E\u0651ة",
       {101, 1295, 17149, 29820, 29816, 25573, 1271, 25573, 23673, 29830, 25573, 23673, 22192,
        1270, 23673, 29830, 17149, 29816, 14498, 19433, 102}},
      // [CLS] م ##ر ##ح ##ب ##ا ب ##ا ##ل ##ع ##ا ##ل ##م ا ##ل ##ع ##ر ##ب ##ي ##ة [SEP]
      {"hebrew", "ש\u05B8\u05C1לו\u05B9ם עולם",
       {101, 1266, 29799, 29792, 29800, 1259, 29792, 29799, 29800, 102}},
      // [CLS] ש ##ל ##ו ##ם ע ##ו ##ל ##ם [SEP]
      {"greek final sigma (library rewrite: final-sigma)", "ΟΔΟΣ Σίσυφος",
       {101, 1169, 29722, 29730, 29733, 1173, 18199, 29733, 29735, 29736, 15297, 102}},
      // [CLS] ο ##δ ##ο ##σ σ ##ι ##σ ##υ ##φ ##ος [SEP]
      {"punctuation runs", "Wait...what?!?! (yes) [no] {maybe} --- «quoted»",
       {101, 3524, 1012, 1012, 1012, 2054, 1029, 999, 1029, 999, 1006, 2748, 1007, 1031, 2053,
        1033, 1063, 2672, 1065, 1011, 1011, 1011, 1077, 9339, 1090, 102}},
      // [CLS] wait . . . what ? ! ? ! ( yes ) [ no ] { maybe } - - - « quoted » [SEP]
      {"contractions", "don't can't I'm y'all",
       {101, 2123, 1005, 1056, 2064, 1005, 1056, 1045, 1005, 1049, 1061, 1005, 2035, 102}},
      // [CLS] don ' t can ' t i ' m y ' all [SEP]
      {"numbers with separators", "1,234,567.89 and 3.14 or 1.000,5",
       {101, 1015, 1010, 22018, 1010, 5179, 2581, 1012, 6486, 1998, 1017, 1012, 2403, 2030,
        1015, 1012, 2199, 1010, 1019, 102}},
      // [CLS] 1 , 234 , 56 ##7 . 89 and 3 . 14 or 1 . 000 , 5 [SEP]
      {"url and email", "https://example.com/path?q=1&r=2 user@example.org",
       {101, 16770, 1024, 1013, 1013, 2742, 1012, 4012, 1013, 4130, 1029, 1053, 1027, 1015,
        1004, 1054, 1027, 1016, 5310, 1030, 2742, 1012, 8917, 102}},
      // [CLS] https : / / example . com / path ? q = 1 & r = 2 user @ example . org [SEP]
      {"whitespace only", " \t\n\r\u00A0\u3000\u2028", {101, 102}},
      {"empty", "", {101, 102}},
      {"typed special tokens", "the [MASK] sat on [CLS] the [SEP] mat [PAD] [UNK]",
       {101, 1996, 103, 2938, 2006, 101, 1996, 102, 13523, 0, 100, 102}},
      // [CLS] the [MASK] sat on [CLS] the [SEP] mat [PAD] [UNK] [SEP]
      {"special tokens need exact case", "[mask] [Mask]",
       {101, 1031, 7308, 1033, 1031, 7308, 1033, 102}},
      // [CLS] [ mask ] [ mask ] [SEP]
      {"special tokens glued to words", "a[MASK]b[[MASK]]", {101, 1037, 103, 1038, 1031, 103, 1033, 102}},
      // [CLS] a [MASK] b [ [MASK] ] [SEP]
      // transformers lowercases before it looks for special tokens, so a zero-width space
      // inside one leaves "[mask]", which is split as punctuation and text.
      {"zero-width space inside a special token", "[MA\u200BSK]", {101, 1031, 7308, 1033, 102}},
      // [CLS] [ mask ] [SEP]
      {"private use and unassigned (library rewrite: unassigned)", "x\uE000y\u0378z",
       {101, 1060, 2100, 2480, 102}},
      // [CLS] x ##y ##z [SEP]
      {"ligature is not decomposed", "ﬁne", {101, 1984, 2638, 102}},
      // [CLS] ﬁ ##ne [SEP]
  };
  for (const IdCase& c : cases) {
    EXPECT_EQ(Ids(c.text), c.ids) << c.name;
  }
}

// Capital sigma in every position. str.lower() on a word turns a word-final Σ into ς (Unicode's
// Final_Sigma rule), but transformers' BertTokenizer lowercases one character at a time (a regex
// in PreTrainedTokenizer.tokenize) and its fast tokenizer maps each char with Rust's
// char::to_lowercase, so both give σ wherever Σ stands; so does this tokenizer. Ids from
// tests/py/bert_reference.py, the independent reference of the differential test.
TEST_F(TokenizerTest, CapitalSigmaIsAlwaysSmallSigma) {
  const IdCase cases[] = {
      {"word-final", "\u03A3\u0391\u03A3", {101, 1173, 14608, 29733, 102}},
      // [CLS] σ ##α ##σ [SEP]  (not ##ς, 19579)
      {"alone", "\u03A3", {101, 1173, 102}},
      // [CLS] σ [SEP]
      {"doubled", "\u03A3\u03A3", {101, 1173, 29733, 102}},
      // [CLS] σ ##σ [SEP]
      {"before a combining acute", "\u0391\u03A3\u0301", {101, 1155, 29733, 102}},
      // [CLS] α ##σ [SEP]
      {"after a combining acute", "\u0391\u0301\u03A3", {101, 1155, 29733, 102}},
      // [CLS] α ##σ [SEP]
      {"after an apostrophe", "\u0391'\u03A3", {101, 1155, 1005, 1173, 102}},
      // [CLS] α ' σ [SEP]
      {"after a soft hyphen", "\u0391\u00AD\u03A3", {101, 1155, 29733, 102}},
      // [CLS] α ##σ [SEP]
      {"mid-word", "\u0391\u03A3\u0391", {101, 1155, 29733, 14608, 102}},
      // [CLS] α ##σ ##α [SEP]
      {"before an apostrophe and a letter", "\u0391\u03A3'\u0391",
       {101, 1155, 29733, 1005, 1155, 102}},
      // [CLS] α ##σ ' α [SEP]
      {"before a full stop", "\u0391\u03A3.", {101, 1155, 29733, 1012, 102}},
      // [CLS] α ##σ . [SEP]
      {"before a typed special token", "\u0391\u03A3[MASK]", {101, 1155, 29733, 103, 102}},
      // [CLS] α ##σ [MASK] [SEP]
      {"after a digit", "\u03911\u03A3", {101, 1155, 2487, 29733, 102}},
      // [CLS] α ##1 ##σ [SEP]
      {"odysseus", "\u1F48\u0394\u03A5\u03A3\u03A3\u0395\u038E\u03A3",
       {101, 1169, 29722, 29735, 29733, 29733, 29723, 29735, 29733, 102}},
      // [CLS] ο ##δ ##υ ##σ ##σ ##ε ##υ ##σ [SEP]
      {"next to a cjk ideograph", "\u0391\u03A3\u6771", {101, 1155, 29733, 1879, 102}},
      // [CLS] α ##σ 東 [SEP]
      {"dotted capital I before sigma", "\u0130\u03A3", {101, 1045, 29733, 102}},
      // [CLS] i ##σ [SEP]
      {"small final sigma stays final", "\u03C3\u03B1\u03C2", {101, 1173, 14608, 19579, 102}},
      // [CLS] σ ##α ##ς [SEP]
  };
  for (const IdCase& c : cases) {
    EXPECT_EQ(Ids(c.text), c.ids) << c.name;
  }
}

TEST_F(TokenizerTest, NulBytesAreDropped) {
  EXPECT_EQ(Ids(std::string("a\0b\0c", 5)), (std::vector<int32_t>{101, 5925, 102}));  // abc
  EXPECT_EQ(Ids(std::string(1000, '\0')), (std::vector<int32_t>{101, 102}));
}

TEST_F(TokenizerTest, LongWords) {
  const int32_t unk = 100, a = 1037, ok = 7929, bb = 22861, cont_bb = 10322;
  // 101 letters is over the limit of 100 code points: one [UNK] for the whole word.
  EXPECT_EQ(Ids(std::string(101, 'a') + " ok"), (std::vector<int32_t>{101, unk, ok, 102}));
  // Exactly 100 letters is allowed: "bb" then 49 x "##bb" (vocab.txt lines 22862 and 10323).
  std::vector<int32_t> expected = {101, bb};
  expected.insert(expected.end(), 49, cont_bb);
  expected.push_back(102);
  EXPECT_EQ(Ids(std::string(100, 'b')), expected);
  // The limit counts characters after accent stripping: 60 x "e + U+0301" is 60 letters.
  std::string accented;
  for (int i = 0; i < 60; ++i) accented += "e\u0301";
  EXPECT_EQ(Ids(accented).size(), 32u);  // [CLS] ee + 29 x ##ee [SEP]
  // 101 precomposed é are 101 letters after stripping: over the limit.
  std::string precomposed;
  for (int i = 0; i < 101; ++i) precomposed += "é";
  EXPECT_EQ(Ids(precomposed), (std::vector<int32_t>{101, unk, 102}));
  // Punctuation splits a long run into short words.
  EXPECT_EQ(Ids(std::string(60, 'a') + "." + std::string(1, 'a')).back(), 102);
  EXPECT_EQ(Ids("a.a"), (std::vector<int32_t>{101, a, 1012, a, 102}));
}

struct Span {
  std::string text;
  int32_t start, end, word;
};

std::vector<Span> Spans(const Encoding& e) {
  std::vector<Span> out;
  for (const Token& t : e.tokens) out.push_back({t.text, t.start, t.end, t.word});
  return out;
}

bool operator==(const Span& a, const Span& b) {
  return a.text == b.text && a.start == b.start && a.end == b.end && a.word == b.word;
}

std::ostream& operator<<(std::ostream& os, const Span& s) {
  return os << "{" << s.text << " " << s.start << ".." << s.end << " w" << s.word << "}";
}

TEST_F(TokenizerTest, OffsetsAreCodePointsOfTheInput) {
  const Span cls{"[CLS]", -1, -1, -1}, sep{"[SEP]", -1, -1, -1};
  struct Case {
    const char* name;
    std::string text;
    std::vector<Span> spans;
  };
  const Case cases[] = {
      {"words and punctuation", "Hello, world!",
       {cls, {"hello", 0, 5, 0}, {",", 5, 6, 1}, {"world", 7, 12, 2}, {"!", 12, 13, 3}, sep}},
      // İ lowercases to two characters; both stand for input code point 0.
      {"expanding lowercase", "İstanbul", {cls, {"istanbul", 0, 8, 0}, sep}},
      // A separate combining mark is dropped and belongs to no piece.
      {"decomposed accent", "Cafe\u0301 x", {cls, {"cafe", 0, 4, 0}, {"x", 6, 7, 1}, sep}},
      {"precomposed accent", "été", {cls, {"et", 0, 2, 0}, {"##e", 2, 3, 0}, sep}},
      {"ideographs are words", "東京", {cls, {"東", 0, 1, 0}, {"京", 1, 2, 1}, sep}},
      {"typed special token", "a[MASK]b",
       {cls, {"a", 0, 1, 0}, {"[MASK]", 1, 7, 1}, {"b", 7, 8, 2}, sep}},
      {"wordpieces share a word", "straße", {cls, {"st", 0, 2, 0}, {"##raße", 2, 6, 0}, sep}},
      // "😀" (one code point, U+1F600) glued to "x": an [UNK] spans its whole word.
      {"unknown word", "\U0001F600x", {cls, {"[UNK]", 0, 2, 0}, sep}},
      // One Hangul syllable decomposes into three jamo pieces, all from code point 0.
      {"decomposed syllable", "한",
       {cls, {"ᄒ", 0, 1, 0}, {"##ᅡ", 0, 1, 0}, {"##ᆫ", 0, 1, 0}, sep}},
      // The dropped zero-width space lies inside the word's span.
      {"dropped character inside a word", "a\u200Bb", {cls, {"ab", 0, 3, 0}, sep}},
      // Invalid UTF-8 counts as one U+FFFD code point per maximal subpart.
      {"invalid UTF-8", "x\xE2\x82y\xFFz",
       {cls, {"x", 0, 1, 0}, {"##y", 2, 3, 0}, {"##z", 4, 5, 0}, sep}},
      {"astral characters count once", "\U0001F600 ok", {cls, {"[UNK]", 0, 1, 0}, {"ok", 2, 4, 1}, sep}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Spans(tokenizer_->Encode(c.text)), c.spans) << c.name;
  }
}

TEST_F(TokenizerTest, Truncation) {
  std::string text;
  for (int i = 0; i < 600; ++i) text += "a ";
  const Encoding e = tokenizer_->Encode(text);
  ASSERT_EQ(e.tokens.size(), 512u);
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(e.full_length, 602);
  EXPECT_EQ(e.tokens.front().id, tokenizer_->cls_id());
  EXPECT_EQ(e.tokens.back().id, tokenizer_->sep_id());
  EXPECT_EQ(e.tokens[510].word, 509);

  std::string exact;
  for (int i = 0; i < 510; ++i) exact += "a ";
  const Encoding fits = tokenizer_->Encode(exact);
  EXPECT_EQ(fits.tokens.size(), 512u);
  EXPECT_FALSE(fits.truncated);
  EXPECT_EQ(fits.full_length, 512);

  const Encoding tiny = tokenizer_->Encode("a b", 3);
  EXPECT_EQ(tiny.tokens.size(), 3u);
  EXPECT_TRUE(tiny.truncated);
  const Encoding none = tokenizer_->Encode("a b", 0);
  EXPECT_EQ(none.tokens.size(), 2u);
  EXPECT_TRUE(none.truncated);
  EXPECT_EQ(none.full_length, 4);
}

TEST_F(TokenizerTest, EncodeIdsMatchesEncode) {
  std::string long_text;
  for (int i = 0; i < 700; ++i) long_text += "word ";
  for (const std::string& text : {std::string("Hello, [MASK] world!"), std::string("東京 İ é"),
                                  long_text, std::string()}) {
    std::vector<int32_t> ids;
    tokenizer_->EncodeIds(text, &ids);
    EXPECT_EQ(ids, Ids(text));
  }
}

// Whatever the bytes, the result is well formed: [CLS] first, [SEP] last, ids in range,
// offsets inside the decoded text, word indices non-decreasing.
void ExpectWellFormed(const Tokenizer& tokenizer, const Encoding& e, size_t code_points) {
  ASSERT_GE(e.tokens.size(), 2u);
  EXPECT_EQ(e.tokens.front().id, tokenizer.cls_id());
  EXPECT_EQ(e.tokens.back().id, tokenizer.sep_id());
  int32_t last_word = -1;
  for (size_t i = 1; i + 1 < e.tokens.size(); ++i) {
    const Token& t = e.tokens[i];
    ASSERT_GE(t.id, 0);
    ASSERT_LT(t.id, tokenizer.vocab().size());
    ASSERT_EQ(t.text, tokenizer.vocab().piece(t.id));
    ASSERT_LE(0, t.start);
    ASSERT_LT(t.start, t.end);
    ASSERT_LE(static_cast<size_t>(t.end), code_points);
    ASSERT_GE(t.word, last_word);
    last_word = t.word;
  }
}

TEST_F(TokenizerTest, OneMegabyteOfText) {
  std::string text;
  const char* words[] = {"The ", "quick ", "brown ", "fox, ", "naïve ", "東京 ", "[MASK] ",
                         "İ ", "😀 ", "\t", "don't "};
  size_t i = 0;
  while (text.size() < (1u << 20)) text += words[i++ % 11];
  const Encoding e = tokenizer_->Encode(text);
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(e.tokens.size(), 512u);
  EXPECT_GT(e.full_length, 100000);
  std::vector<int32_t> ids;
  tokenizer_->EncodeIds(text, &ids);
  EXPECT_EQ(static_cast<int32_t>(ids.size()), e.full_length);
}

// One word of 100,000 combining marks in descending class (230, 220, 202, 1) after "a": the
// canonical ordering step sorts the run per class in O(n log n); the marks are then stripped,
// so the word is "a". An insertion sort took minutes here (security review F4); the bound only
// catches that coming back.
TEST_F(TokenizerTest, LongRunOfCombiningMarks) {
  std::string text = "a";
  for (const char* mark : {"\u0301", "\u0316", "\u0327", "\u0334"}) {
    for (int k = 0; k < 25000; ++k) text += mark;
  }
  text += " cat";
  const auto start = std::chrono::steady_clock::now();
  const Encoding e = tokenizer_->Encode(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  const Span cls{"[CLS]", -1, -1, -1}, sep{"[SEP]", -1, -1, -1};
  EXPECT_EQ(Spans(e), (std::vector<Span>{cls, {"a", 0, 1, 0}, {"cat", 100002, 100005, 1}, sep}));
}

TEST_F(TokenizerTest, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    std::string bytes(rng() % 400, '\0');
    for (char& b : bytes) b = static_cast<char>(rng() & 0xFF);
    const Encoding e = tokenizer_->Encode(bytes, 1 << 30);
    // Each byte decodes to at most one code point.
    ExpectWellFormed(*tokenizer_, e, bytes.size());
  }
  std::string megabyte(1u << 20, '\0');
  for (char& b : megabyte) b = static_cast<char>(rng() & 0xFF);
  ExpectWellFormed(*tokenizer_, tokenizer_->Encode(megabyte), megabyte.size());
}

TEST_F(TokenizerTest, InvalidUtf8IsCleanedAway) {
  EXPECT_EQ(Ids("\xFF\xFE\xC0\xAF\xED\xA0\x80"), (std::vector<int32_t>{101, 102}));
  EXPECT_EQ(Ids("hel\xFFlo"), Ids("hello"));
  EXPECT_EQ(Ids("\xF0\x9F\x98"), (std::vector<int32_t>{101, 102}));  // truncated emoji
}

// ---------------------------------------------------------------------------------------
// Vocabulary loading.

TEST(VocabTest, LoadsTheShippedFile) {
  Vocab vocab;
  ASSERT_TRUE(Vocab::FromFile(kVocabPath, &vocab).ok());
  EXPECT_EQ(vocab.size(), 30522);
  EXPECT_EQ(vocab.Find("[PAD]"), 0);
  EXPECT_EQ(vocab.Find("[UNK]"), 100);
  EXPECT_EQ(vocab.Find("[CLS]"), 101);
  EXPECT_EQ(vocab.Find("[SEP]"), 102);
  EXPECT_EQ(vocab.Find("[MASK]"), 103);
  EXPECT_EQ(vocab.Find("##s"), 2015);
  EXPECT_EQ(vocab.Find("not-a-piece"), -1);
  EXPECT_EQ(vocab.piece(1996), "the");
}

TEST(VocabTest, RejectsCorruptText) {
  struct Case {
    const char* name;
    std::string text;
    const char* message_part;
  };
  const Case cases[] = {
      {"empty", "", "empty"},
      {"empty line", "a\n\nb\n", "line 2"},
      {"duplicate", "a\nb\na\n", "duplicate"},
      {"windows line endings", "a\r\nb\r\n", "carriage return"},
      {"invalid UTF-8", "a\n\xFF\xFE\n", "UTF-8"},
      {"NUL byte", std::string("a\nb\0c\n", 6), "UTF-8"},
  };
  for (const Case& c : cases) {
    Vocab vocab;
    const Status status = Vocab::FromText(c.text, &vocab);
    EXPECT_FALSE(status.ok()) << c.name;
    EXPECT_NE(status.message().find(c.message_part), std::string::npos)
        << c.name << ": " << status.message();
  }
  Vocab vocab;
  EXPECT_TRUE(Vocab::FromText("a\nb", &vocab).ok());  // no final newline is fine
  EXPECT_EQ(vocab.size(), 2);
}

TEST(VocabTest, MissingFileSaysWhichFile) {
  Vocab vocab;
  const Status status = Vocab::FromFile("/nonexistent/vocab.txt", &vocab);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent/vocab.txt"), std::string::npos);
}

TEST(VocabTest, TokenizerNeedsEverySpecialToken) {
  Vocab vocab;
  ASSERT_TRUE(Vocab::FromText("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n", &vocab).ok());
  Tokenizer tokenizer;
  const Status status = Tokenizer::Create(std::move(vocab), &tokenizer);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("[MASK]"), std::string::npos) << status.message();

  Vocab small;
  ASSERT_TRUE(Vocab::FromText("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##re\n", &small).ok());
  ASSERT_TRUE(Tokenizer::Create(std::move(small), &tokenizer).ok());
  const Encoding e = tokenizer.Encode("There the x");
  std::vector<int32_t> ids;
  for (const Token& t : e.tokens) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 5, 6, 5, 1, 3}));
}

// BertTokenizer's other settings on a small cased vocabulary (the differential test compares
// every setting with the independent reference over the whole of Unicode).
TEST(VocabTest, CasedSettings) {
  const auto make = [](TokenizerOptions options) {
    Vocab vocab;
    EXPECT_TRUE(Vocab::FromText("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nCafé\ncafe\nCafe\n\xe6\x9d\xb1\xe4\xba\xac\n\xe6\x9d\xb1\n##\xe4\xba\xac\n", &vocab).ok());
    Tokenizer tokenizer;
    EXPECT_TRUE(Tokenizer::Create(std::move(vocab), &tokenizer, options).ok());
    return tokenizer;
  };
  const auto pieces = [](const Tokenizer& tokenizer, std::string_view text) {
    std::vector<std::string> out;
    for (const Token& t : tokenizer.Encode(text).tokens) {
      out.push_back(t.text + "@" + std::to_string(t.start) + "-" + std::to_string(t.end));
    }
    return out;
  };
  TokenizerOptions cased;
  cased.lowercase = false;
  EXPECT_FALSE(cased.strips_accents());
  const Tokenizer keep = make(cased);
  // "é" typed as e + U+0301 is composed (NFC) and spans both input code points.
  EXPECT_EQ(pieces(keep, "Cafe\xcc\x81"), (std::vector<std::string>{"[CLS]@-1--1", "Café@0-5", "[SEP]@-1--1"}));
  EXPECT_EQ(pieces(keep, "Café"), (std::vector<std::string>{"[CLS]@-1--1", "Café@0-4", "[SEP]@-1--1"}));
  cased.accents = TokenizerOptions::Accents::kStrip;
  EXPECT_EQ(pieces(make(cased), "Café"), (std::vector<std::string>{"[CLS]@-1--1", "Cafe@0-4", "[SEP]@-1--1"}));
  TokenizerOptions uncased;
  EXPECT_TRUE(uncased.strips_accents());
  EXPECT_EQ(pieces(make(uncased), "Café"), (std::vector<std::string>{"[CLS]@-1--1", "cafe@0-4", "[SEP]@-1--1"}));
  uncased.accents = TokenizerOptions::Accents::kKeep;
  EXPECT_EQ(pieces(make(uncased), "Café"), (std::vector<std::string>{"[CLS]@-1--1", "[UNK]@0-4", "[SEP]@-1--1"}));  // "café" is not in it
  // CJK ideographs are words of their own unless tokenize_chinese_chars is false.
  EXPECT_EQ(pieces(keep, "\xe6\x9d\xb1\xe4\xba\xac").size(), 4u);
  TokenizerOptions whole = cased;
  whole.accents = TokenizerOptions::Accents::kFollowLowercase;
  whole.split_chinese_chars = false;
  EXPECT_EQ(pieces(make(whole), "\xe6\x9d\xb1\xe4\xba\xac"), (std::vector<std::string>{"[CLS]@-1--1", "\xe6\x9d\xb1\xe4\xba\xac@0-2", "[SEP]@-1--1"}));
}

// ---------------------------------------------------------------------------------------
// The CLI: exit codes and messages for bad input.

struct CliResult {
  int exit_code;
  std::string out, err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CliResult RunCli(const std::string& args, const std::string& stdin_text = "") {
  // ctest runs tests in parallel processes: the files are named by process id.
  const std::string dir = std::string(ATTN_BINARY_DIR);
  const std::string stem = dir + "/tokenizer_test." + std::to_string(getpid());
  const std::string in = stem + ".in", out = stem + ".out", err = stem + ".err";
  std::ofstream(in, std::ios::binary) << stdin_text;
  const std::string command = dir + "/attention-cli tokenize " + args + " <" + in + " >" + out +
                              " 2>" + err;
  const int status = std::system(command.c_str());
  CliResult result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadAll(out), ReadAll(err)};
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  return result;
}

TEST(TokenizeCliTest, PlainJsonAndLines) {
  const std::string vocab = "--vocab " + kVocabPath;
  CliResult r = RunCli(vocab + " 'Hello, world!'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "101\t[CLS]\t-1\t-1\t-1\n7592\thello\t0\t5\t0\n1010\t,\t5\t6\t1\n"
            "2088\tworld\t7\t12\t2\n999\t!\t12\t13\t3\n102\t[SEP]\t-1\t-1\t-1\n");

  r = RunCli(vocab + " --json -", "a \"b\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"tokens\":[{\"id\":101,\"text\":\"[CLS]\",\"start\":-1,\"end\":-1,\"word\":-1},"
            "{\"id\":1037,\"text\":\"a\",\"start\":0,\"end\":1,\"word\":0},"
            "{\"id\":1000,\"text\":\"\\\"\",\"start\":2,\"end\":3,\"word\":1},"
            "{\"id\":1038,\"text\":\"b\",\"start\":3,\"end\":4,\"word\":2},"
            "{\"id\":1000,\"text\":\"\\\"\",\"start\":4,\"end\":5,\"word\":3},"
            "{\"id\":102,\"text\":\"[SEP]\",\"start\":-1,\"end\":-1,\"word\":-1}],"
            "\"truncated\":false,\"full_length\":6}\n");

  std::string many;
  for (int i = 0; i < 600; ++i) many += "a ";
  r = RunCli(vocab + " --lines", "Hello world\n\n" + many + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "101 7592 2088 102");
  std::getline(lines, line);
  EXPECT_EQ(line, "101 102");
  std::getline(lines, line);
  EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 601);  // 602 ids: never truncated
}

TEST(TokenizeCliTest, ErrorsExitNonZeroWithAMessage) {
  CliResult r = RunCli("--vocab /nonexistent/vocab.txt hello");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/vocab.txt"), std::string::npos) << r.err;

  const std::string corrupt =
      std::string(ATTN_BINARY_DIR) + "/tokenizer_test_corrupt_vocab." + std::to_string(getpid());
  std::ofstream(corrupt, std::ios::binary) << "[PAD]\n[PAD]\n\xFF\n";
  r = RunCli("--vocab " + corrupt + " hello");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("corrupt"), std::string::npos) << r.err;
  std::remove(corrupt.c_str());

  r = RunCli("--model " + kVocabPath + " hello");  // not a model file
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.err.empty());

  r = RunCli("hello");  // no vocabulary
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--vocab"), std::string::npos) << r.err;
  r = RunCli("--vocab " + kVocabPath);  // no text
  EXPECT_EQ(r.exit_code, 2);
  r = RunCli("--vocab " + kVocabPath + " --bogus hello");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  r = RunCli("--vocab " + kVocabPath + " --max-length 1 hello");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace attn
