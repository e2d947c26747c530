#include "core/unicode.h"

#include <cstdio>

#include <algorithm>
#include <utility>

namespace attn::unicode {
namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

// Hangul syllables decompose algorithmically (Unicode 15.0, section 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kVCount = 21, kTCount = 28, kSCount = 19 * kVCount * kTCount;

template <typename Row, size_t N>
const Row* FindRow(const Row (&rows)[N], char32_t cp) {
  const Row* it = std::lower_bound(std::begin(rows), std::end(rows), cp,
                                   [](const Row& row, char32_t key) { return row.code_point < key; });
  return (it != std::end(rows) && it->code_point == cp) ? it : nullptr;
}

}  // namespace

Category GetCategory(char32_t cp) {
  if (cp > kMaxCodePoint) return Category::Cn;
  const uint32_t block = kCategoryStage1[cp >> kCategoryBlockShift];
  const uint32_t mask = (1u << kCategoryBlockShift) - 1;
  return static_cast<Category>(kCategoryStage2[(block << kCategoryBlockShift) | (cp & mask)]);
}

int CombiningClass(char32_t cp) {
  // Everything below U+0300 is a starter; most text never reaches the search.
  if (cp < 0x300) return 0;
  const CombiningClassRun* it = std::upper_bound(
      std::begin(kCombiningClasses), std::end(kCombiningClasses), cp,
      [](char32_t key, const CombiningClassRun& run) { return key < run.first; });
  if (it == std::begin(kCombiningClasses)) return 0;
  --it;
  return cp <= it->last ? it->combining_class : 0;
}

int ToLower(char32_t cp, char32_t out[3]) {
  if (cp < 0x80) {
    out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return 1;
  }
  const LowercaseMapping* row = FindRow(kLowercase, cp);
  if (row == nullptr) {
    out[0] = cp;
    return 1;
  }
  for (int i = 0; i < row->length; ++i) out[i] = row->mapping[i];
  return row->length;
}

int Decompose(char32_t cp, char32_t out[kMaxDecompositionLength]) {
  if (cp < 0xC0) {
    out[0] = cp;
    return 1;
  }
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const int s = static_cast<int>(cp - kSBase);
    out[0] = kLBase + s / (kVCount * kTCount);
    out[1] = kVBase + (s % (kVCount * kTCount)) / kTCount;
    if (s % kTCount == 0) return 2;
    out[2] = kTBase + s % kTCount;
    return 3;
  }
  const Decomposition* row = FindRow(kDecompositions, cp);
  if (row == nullptr) {
    out[0] = cp;
    return 1;
  }
  for (int i = 0; i < row->length; ++i) out[i] = kDecompositionPool[row->offset + i];
  return row->length;
}

char32_t Compose(char32_t first, char32_t second) {
  // Hangul: L + V makes an LV syllable, LV + T an LVT syllable.
  if (first >= kLBase && first < kLBase + 19 && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const Composition* it = std::lower_bound(
      std::begin(kCompositions), std::end(kCompositions), std::make_pair(first, second),
      [](const Composition& row, const std::pair<char32_t, char32_t>& key) {
        return row.first != key.first ? row.first < key.first : row.second < key.second;
      });
  return (it != std::end(kCompositions) && it->first == first && it->second == second) ? it->composite : 0;
}

bool IsBertControl(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (GetCategory(cp)) {
    case Category::Cn:
    case Category::Cc:
    case Category::Cf:
    case Category::Co:
    case Category::Cs:
      return true;
    default:
      return false;
  }
}

bool IsBertWhitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return GetCategory(cp) == Category::Zs;
}

bool IsBertPunctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  switch (GetCategory(cp)) {
    case Category::Pc:
    case Category::Pd:
    case Category::Pe:
    case Category::Pf:
    case Category::Pi:
    case Category::Po:
    case Category::Ps:
      return true;
    default:
      return false;
  }
}

bool IsCjkIdeograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool IsSplitSpace(char32_t cp) { return cp == ' ' || cp == 0x2028 || cp == 0x2029; }

void DecodeUtf8(std::string_view bytes, std::vector<char32_t>* out) {
  out->clear();
  out->reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b0 = p[i];
    if (b0 < 0x80) {
      out->push_back(b0);
      ++i;
      continue;
    }
    // Well-formed sequences (Unicode 15.0, table 3-7): the lead byte fixes the length and the
    // allowed range of the second byte; later bytes are 80..BF.
    int length = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      length = 2;
      cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      length = 3;
      cp = b0 & 0x0F;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      length = 4;
      cp = b0 & 0x07;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    if (length == 0) {  // C0, C1, F5..FF and stray continuation bytes
      out->push_back(kReplacementCharacter);
      ++i;
      continue;
    }
    int taken = 1;
    bool valid = true;
    for (; taken < length; ++taken) {
      if (i + taken >= n) {
        valid = false;
        break;
      }
      const unsigned char b = p[i + taken];
      if (b < lo || b > hi) {
        valid = false;
        break;
      }
      cp = (cp << 6) | (b & 0x3F);
      lo = 0x80;
      hi = 0xBF;
    }
    // An ill-formed sequence becomes one U+FFFD for its maximal valid prefix.
    out->push_back(valid ? cp : kReplacementCharacter);
    i += taken;
  }
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsValidUtf8(std::string_view bytes) {
  std::vector<char32_t> decoded;
  DecodeUtf8(bytes, &decoded);
  std::string again;
  again.reserve(bytes.size());
  for (char32_t cp : decoded) AppendUtf8(cp, &again);
  return again == bytes;
}

std::string Printable(std::string_view s) {
  std::vector<char32_t> code_points;
  DecodeUtf8(s, &code_points);
  std::string out;
  out.reserve(s.size());
  char escape[8];
  for (char32_t c : code_points) {
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(c));
      out += escape;
    } else if ((c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029) {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      out += escape;
    } else {
      AppendUtf8(c, &out);
    }
  }
  return out;
}

}  // namespace attn::unicode
