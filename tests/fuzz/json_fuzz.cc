// Fuzz target for the CLI's JSON writer (cli/json.h). The input's bytes, whatever they are
// (invalid UTF-8, NULs, controls, encoded surrogates, overlongs), go out as a string, and tokens,
// floats and head profiles are made from them. Every output must be valid UTF-8 and one JSON
// value that the strict parser below accepts: RFC 8259's grammar written out here, independently
// of the writer, with no raw control characters in strings, only the RFC's escapes, and a \u
// high surrogate only when a low one follows. Then what was written must read back: a string
// as its input when that is valid UTF-8, and otherwise as its input with each maximal ill-formed
// subpart replaced by U+FFFD (Unicode 15.0 section 3.9, the writer's documented behaviour; the
// reference here is table 3-7 as data); a finite float as the same float; a NaN or infinity,
// which JSON cannot hold, as null; token and profile fields as the values given.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/json.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "json_fuzz: broken promise: %s\n", what);
    std::abort();
  }
}

// ---- UTF-8 by table 3-7: each row is one form of well-formed sequence, byte ranges per position.

struct Form {
  size_t length;
  uint8_t lo[4], hi[4];
};
constexpr Form kWellFormed[] = {
    {1, {0x00}, {0x7F}},
    {2, {0xC2, 0x80}, {0xDF, 0xBF}},
    {3, {0xE0, 0xA0, 0x80}, {0xE0, 0xBF, 0xBF}},
    {3, {0xE1, 0x80, 0x80}, {0xEC, 0xBF, 0xBF}},
    {3, {0xED, 0x80, 0x80}, {0xED, 0x9F, 0xBF}},
    {3, {0xEE, 0x80, 0x80}, {0xEF, 0xBF, 0xBF}},
    {4, {0xF0, 0x90, 0x80, 0x80}, {0xF0, 0xBF, 0xBF, 0xBF}},
    {4, {0xF1, 0x80, 0x80, 0x80}, {0xF3, 0xBF, 0xBF, 0xBF}},
    {4, {0xF4, 0x80, 0x80, 0x80}, {0xF4, 0x8F, 0xBF, 0xBF}},
};

// How many bytes from s[at] start a sequence of this form (a whole one when it is form.length).
size_t Matched(const Form& form, std::string_view s, size_t at) {
  size_t k = 0;
  while (k < form.length && at + k < s.size()) {
    const auto b = static_cast<uint8_t>(s[at + k]);
    if (b < form.lo[k] || b > form.hi[k]) break;
    ++k;
  }
  return k;
}

// Length of the well-formed sequence at s[at], or 0 with *subpart the length of the maximal
// subpart there: the longest start of any well-formed sequence, at least one byte.
size_t WellFormedAt(std::string_view s, size_t at, size_t* subpart) {
  size_t longest = 1;
  for (const Form& form : kWellFormed) {
    const size_t m = Matched(form, s, at);
    if (m == form.length) return m;
    if (m > longest) longest = m;
  }
  *subpart = longest;
  return 0;
}

// s with each maximal ill-formed subpart replaced by U+FFFD.
std::string Replaced(std::string_view s, bool* valid) {
  std::string out;
  *valid = true;
  size_t at = 0;
  while (at < s.size()) {
    size_t subpart = 0;
    const size_t n = WellFormedAt(s, at, &subpart);
    if (n != 0) {
      out.append(s.substr(at, n));
      at += n;
    } else {
      out += "\xEF\xBF\xBD";
      at += subpart;
      *valid = false;
    }
  }
  return out;
}

bool IsUtf8(std::string_view s) {
  bool valid;
  Replaced(s, &valid);
  return valid;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | cp >> 6);
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | cp >> 12);
    *out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | cp >> 18);
    *out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
    *out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ---- A strict RFC 8259 parser, enough to read back what the writer produces.

struct Value {
  enum Kind { kNull, kTrue, kFalse, kNumber, kString, kArray, kObject } kind = kNull;
  std::string text;                // a number's literal, a string's decoded UTF-8
  std::vector<std::string> keys;   // an object's keys, in order
  std::vector<Value> items;        // an array's elements, an object's values
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  // The whole text must be one value with optional whitespace around it.
  bool Document(Value* v) {
    SkipSpace();
    if (!Parse(v, 0)) return false;
    SkipSpace();
    return at_ == s_.size();
  }

 private:
  bool Peek(char c) const { return at_ < s_.size() && s_[at_] == c; }
  bool Eat(char c) {
    if (!Peek(c)) return false;
    ++at_;
    return true;
  }
  bool EatWord(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.substr(at_, n) != word) return false;
    at_ += n;
    return true;
  }
  void SkipSpace() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool Digit() const { return at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9'; }

  bool Parse(Value* v, int depth) {
    if (depth > 16 || at_ >= s_.size()) return false;
    const char c = s_[at_];
    if (c == '"') {
      v->kind = Value::kString;
      return String(&v->text);
    }
    if (c == '[') {
      v->kind = Value::kArray;
      ++at_;
      SkipSpace();
      if (Eat(']')) return true;
      do {
        SkipSpace();
        v->items.emplace_back();
        if (!Parse(&v->items.back(), depth + 1)) return false;
        SkipSpace();
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '{') {
      v->kind = Value::kObject;
      ++at_;
      SkipSpace();
      if (Eat('}')) return true;
      do {
        SkipSpace();
        v->keys.emplace_back();
        if (!Peek('"') || !String(&v->keys.back())) return false;
        SkipSpace();
        if (!Eat(':')) return false;
        SkipSpace();
        v->items.emplace_back();
        if (!Parse(&v->items.back(), depth + 1)) return false;
        SkipSpace();
      } while (Eat(','));
      return Eat('}');
    }
    for (const auto& [word, kind] : {std::pair{"null", Value::kNull}, std::pair{"true", Value::kTrue},
                                     std::pair{"false", Value::kFalse}}) {
      if (EatWord(word)) {
        v->kind = kind;
        return true;
      }
    }
    v->kind = Value::kNumber;
    return Number(&v->text);
  }

  // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  bool Number(std::string* literal) {
    const size_t begin = at_;
    Eat('-');
    if (Eat('0')) {
    } else if (Digit()) {
      while (Digit()) ++at_;
    } else {
      return false;
    }
    if (Eat('.')) {
      if (!Digit()) return false;
      while (Digit()) ++at_;
    }
    if (Eat('e') || Eat('E')) {
      if (!Eat('+')) Eat('-');
      if (!Digit()) return false;
      while (Digit()) ++at_;
    }
    literal->assign(s_.substr(begin, at_ - begin));
    return true;
  }

  bool Hex4(uint32_t* v) {
    if (at_ + 4 > s_.size()) return false;
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[at_++];
      uint32_t d;
      if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
      else return false;
      *v = *v << 4 | d;
    }
    return true;
  }

  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (at_ < s_.size()) {
      const auto c = static_cast<uint8_t>(s_[at_]);
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++at_;
        if (at_ >= s_.size()) return false;
        const char e = s_[at_++];
        switch (e) {
          case '"': *out += '"'; break;
          case '\\': *out += '\\'; break;
          case '/': *out += '/'; break;
          case 'b': *out += '\b'; break;
          case 'f': *out += '\f'; break;
          case 'n': *out += '\n'; break;
          case 'r': *out += '\r'; break;
          case 't': *out += '\t'; break;
          case 'u': {
            uint32_t cp;
            if (!Hex4(&cp)) return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t low;
              if (!EatWord("\\u") || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            AppendUtf8(cp, out);
            break;
          }
          default:
            return false;
        }
        continue;
      }
      size_t subpart;
      const size_t n = WellFormedAt(s_, at_, &subpart);
      if (n == 0) return false;
      out->append(s_.substr(at_, n));
      at_ += n;
    }
    return false;
  }

  std::string_view s_;
  size_t at_ = 0;
};

// ---- Running the writer into memory and reading its output back.

template <typename Write>
Value WriteAndParse(Write write) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buffer, &size);
  Check(f != nullptr, "open_memstream");
  write(f);
  std::fclose(f);
  const std::string text(buffer, size);
  std::free(buffer);
  Check(IsUtf8(text), "the output is valid UTF-8");
  Value v;
  Check(Parser(text).Document(&v), "the output is one strict JSON value");
  return v;
}

void CheckString(const Value& v, std::string_view input) {
  Check(v.kind == Value::kString, "a string is written as a JSON string");
  bool valid;
  const std::string want = Replaced(input, &valid);
  Check(!valid || want == input, "the reference keeps valid UTF-8 as it is");
  Check(v.text == want, "a string reads back as its input, ill-formed subparts as U+FFFD");
}

void CheckInteger(const Value& v, int64_t want) {
  Check(v.kind == Value::kNumber, "an integer field is a number");
  Check(std::strtoll(v.text.c_str(), nullptr, 10) == want && std::to_string(want) == v.text,
        "an integer field reads back as its value");
}

// %.6g-style numbers: within the rounding of six significant digits; non-finite ones null.
void CheckShortNumber(const Value& v, double want) {
  if (!std::isfinite(want)) {
    Check(v.kind == Value::kNull, "a NaN or infinity is written as null");
    return;
  }
  Check(v.kind == Value::kNumber, "a finite value is a number");
  const double got = std::strtod(v.text.c_str(), nullptr);
  Check(std::fabs(got - want) <= std::fabs(want) * 1e-5 + 1e-300, "a number reads back as its value");
}

void CheckFloat(const Value& v, float want) {
  if (!std::isfinite(want)) {
    Check(v.kind == Value::kNull, "a NaN or infinite float is written as null");
    return;
  }
  Check(v.kind == Value::kNumber, "a finite float is a number");
  const float got = std::strtof(v.text.c_str(), nullptr);
  Check(std::memcmp(&got, &want, sizeof got) == 0, "a float reads back exactly");
}

double AnyDouble(FuzzedDataProvider& in) {
  const uint64_t bits = in.ConsumeIntegral<uint64_t>();
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

void Tokens(FuzzedDataProvider& in) {
  std::vector<attn::Token> tokens(in.ConsumeIntegralInRange<size_t>(0, 3));
  for (attn::Token& t : tokens) {
    t.text = in.ConsumeRandomLengthString(24);
    t.id = in.ConsumeIntegral<int32_t>();
    t.start = in.ConsumeIntegral<int32_t>();
    t.end = in.ConsumeIntegral<int32_t>();
    t.word = in.ConsumeIntegral<int32_t>();
  }
  const Value v = WriteAndParse([&](FILE* f) { attn::cli::WriteJsonTokens(f, tokens); });
  Check(v.kind == Value::kArray && v.items.size() == tokens.size(), "tokens: one object each");
  const std::vector<std::string> keys = {"id", "text", "start", "end", "word"};
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Value& o = v.items[i];
    Check(o.kind == Value::kObject && o.keys == keys, "a token has id, text, start, end, word");
    CheckInteger(o.items[0], tokens[i].id);
    CheckString(o.items[1], tokens[i].text);
    CheckInteger(o.items[2], tokens[i].start);
    CheckInteger(o.items[3], tokens[i].end);
    CheckInteger(o.items[4], tokens[i].word);
  }
}

void Floats(FuzzedDataProvider& in) {
  for (int k = 0; k < 4 && in.remaining_bytes() > 0; ++k) {
    const uint32_t bits = in.ConsumeIntegral<uint32_t>();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    CheckFloat(WriteAndParse([&](FILE* out) { attn::cli::WriteJsonFloat(out, f); }), f);
  }
}

// Profiles as accumulation leaves them (counts within the rows), with sums that are any double.
void Profiles(FuzzedDataProvider& in) {
  const int heads = in.ConsumeIntegralInRange<int>(1, 3);
  std::vector<attn::HeadProfile> profiles(in.ConsumeIntegralInRange<size_t>(0, 4));
  for (attn::HeadProfile& p : profiles) {
    p.rows = in.ConsumeIntegralInRange<int64_t>(0, int64_t{1} << 40);
    for (int64_t* count : {&p.previous_token, &p.next_token, &p.cls, &p.sep, &p.self, &p.punctuation}) {
      *count = in.ConsumeIntegralInRange<int64_t>(0, p.rows);
    }
    const bool any = in.ConsumeBool();
    for (double* sum : {&p.entropy_sum, &p.normalized_entropy_sum, &p.ratio_to_uniform_sum}) {
      *sum = any ? AnyDouble(in) : static_cast<double>(p.rows) * in.ConsumeProbability<double>();
    }
  }
  const Value v = WriteAndParse([&](FILE* f) { attn::cli::WriteJsonHeadProfiles(f, profiles, heads); });
  Check(v.kind == Value::kArray && v.items.size() == profiles.size(), "profiles: one object each");
  const std::vector<std::string> keys = {"layer", "head", "label", "previous_token", "next_token",
                                         "cls", "sep", "self", "punctuation", "mean_entropy",
                                         "mean_normalized_entropy", "mean_ratio_to_uniform"};
  for (size_t k = 0; k < profiles.size(); ++k) {
    const attn::HeadProfile& p = profiles[k];
    const Value& o = v.items[k];
    Check(o.kind == Value::kObject && o.keys == keys, "a profile has its twelve fields in order");
    CheckInteger(o.items[0], static_cast<int64_t>(k) / heads);
    CheckInteger(o.items[1], static_cast<int64_t>(k) % heads);
    CheckString(o.items[2], attn::HeadLabelName(p.Label()));
    const double numbers[] = {p.Fraction(p.previous_token), p.Fraction(p.next_token),
                              p.Fraction(p.cls), p.Fraction(p.sep), p.Fraction(p.self),
                              p.Fraction(p.punctuation), p.mean_entropy(),
                              p.mean_normalized_entropy(), p.mean_ratio_to_uniform()};
    for (size_t j = 0; j < 9; ++j) CheckShortNumber(o.items[3 + j], numbers[j]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckString(WriteAndParse([&](FILE* f) { attn::cli::WriteJsonString(f, text); }), text);
  // The same bytes again, read as tokens, floats and profiles.
  FuzzedDataProvider in(data, size);
  Tokens(in);
  Floats(in);
  Profiles(in);
  return 0;
}
