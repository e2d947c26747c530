// Unicode primitives for the tokenizer, over the generated tables in unicode_tables.h
// (Unicode 15.0, the version of Python 3.12's unicodedata). The predicates reproduce the
// character classes of Hugging Face's BasicTokenizer exactly.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/unicode_tables.h"

namespace attn::unicode {

constexpr char32_t kReplacementCharacter = 0xFFFD;

Category GetCategory(char32_t cp);
// Canonical combining class (0 for starters).
int CombiningClass(char32_t cp);

// Python's str.lower() on one code point (full mapping, unconditional SpecialCasing entries:
// U+0130 becomes "i" U+0307). Writes 1..3 code points to out and returns the count. The
// context-dependent final-sigma rule is not applied (the caller lowercases one code point at
// a time, as transformers' PreTrainedTokenizer.tokenize does).
int ToLower(char32_t cp, char32_t out[3]);

// Full canonical decomposition of one code point (NFD without the reordering step).
// Writes 1..kMaxDecompositionLength code points to out and returns the count.
int Decompose(char32_t cp, char32_t out[kMaxDecompositionLength]);

// Stable sort of each maximal run of non-starters by combining class (the canonical ordering
// step of NFD), applied to parallel arrays: code points and something that travels with each
// one. Each run is sorted with std::stable_sort, O(k log k) for a run of k marks: an insertion
// sort would be quadratic, and one word of 20,000 marks in descending class held the engine for
// seconds (security review F4).
template <typename Payload>
void CanonicalOrder(std::vector<char32_t>* code_points, std::vector<Payload>* payload) {
  struct Mark {
    int ccc;
    char32_t cp;
    Payload payload;
  };
  std::vector<char32_t>& cps = *code_points;
  std::vector<Payload>& carried = *payload;
  std::vector<Mark> run;
  size_t i = 0;
  while (i < cps.size()) {
    run.clear();
    size_t end = i;
    while (end < cps.size()) {
      const int ccc = CombiningClass(cps[end]);
      if (ccc == 0) break;
      run.push_back({ccc, cps[end], carried[end]});
      ++end;
    }
    if (run.size() > 1) {
      std::stable_sort(run.begin(), run.end(),
                       [](const Mark& a, const Mark& b) { return a.ccc < b.ccc; });
      for (size_t k = 0; k < run.size(); ++k) {
        cps[i + k] = run[k].cp;
        carried[i + k] = run[k].payload;
      }
    }
    i = end == i ? i + 1 : end;
  }
}

// Canonical composition of two code points (UAX #15): the primary composite they form (the
// kCompositions table) or the Hangul syllable an L+V or LV+T pair forms; 0 when they do not
// compose.
char32_t Compose(char32_t first, char32_t second);

// The canonical composition step of NFC, in place, over code points in canonical order (the
// output of Decompose and CanonicalOrder), with something that travels with each one: a
// character that composes into the last starter before it is removed, unless a character
// between them has a class of 0 or at least its own (it is then blocked), and merge(starter's
// payload, its payload) becomes the composite's. NFD followed by this is NFC.
template <typename Payload, typename Merge>
void CanonicalCompose(std::vector<char32_t>* code_points, std::vector<Payload>* payload, Merge merge) {
  std::vector<char32_t>& cps = *code_points;
  std::vector<Payload>& carried = *payload;
  if (cps.empty()) return;
  size_t starter = 0;
  // 256: a sequence that opens with a non-starter has no starter for anything to compose into.
  int last_class = CombiningClass(cps[0]) == 0 ? 0 : 256;
  size_t kept = 1;
  for (size_t i = 1; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const int cls = CombiningClass(c);
    const char32_t composite = last_class < 256 ? Compose(cps[starter], c) : 0;
    if (composite != 0 && (last_class < cls || last_class == 0)) {
      cps[starter] = composite;
      carried[starter] = merge(carried[starter], carried[i]);
      continue;
    }
    if (cls == 0) starter = kept;
    last_class = cls;
    cps[kept] = c;
    carried[kept] = carried[i];
    ++kept;
  }
  cps.resize(kept);
  carried.resize(kept);
}

// Hugging Face's BasicTokenizer character classes (tokenization_bert.py):
// _is_control: category C* except tab, newline and carriage return. Unassigned code points
// (Cn) and private use (Co) count, so they are dropped.
bool IsBertControl(char32_t cp);
// _is_whitespace: space, tab, newline, carriage return, or category Zs.
bool IsBertWhitespace(char32_t cp);
// _is_punctuation: the ASCII symbol ranges 33-47, 58-64, 91-96, 123-126, or category P*.
bool IsBertPunctuation(char32_t cp);
// _is_chinese_char: the CJK ideograph blocks Hugging Face lists.
bool IsCjkIdeograph(char32_t cp);
// Python's str.split() separators among characters that survive _clean_text: besides the
// space it produces, U+2028 and U+2029 (categories Zl and Zp) also split words.
bool IsSplitSpace(char32_t cp);

// Decodes UTF-8 as Python's bytes.decode("utf-8", errors="replace") does: each maximal
// subpart of an ill-formed sequence becomes one U+FFFD. Never fails.
void DecodeUtf8(std::string_view bytes, std::vector<char32_t>* out);
// Appends the UTF-8 encoding of a valid scalar value.
void AppendUtf8(char32_t cp, std::string* out);

// s with every control character written as a visible escape, for messages and text output that
// quote a string from a file (a tensor name, a vocabulary entry, a model's name): C0 controls
// (tab and newline included) and DEL become \xNN, C1 controls and U+2028/U+2029 become \uNNNN,
// and each ill-formed UTF-8 subpart becomes U+FFFD. ESC, BEL or CSI printed raw would set a
// terminal's title or clear its screen (security review F7), and a page would show them as
// nothing. The result is for people: backslashes are not doubled, so it does not read back
// exactly.
std::string Printable(std::string_view s);
// True when bytes is well-formed UTF-8.
bool IsValidUtf8(std::string_view bytes);

}  // namespace attn::unicode
