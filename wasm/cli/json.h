// Minimal JSON output helpers shared by the CLI's subcommands.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/analysis.h"
#include "core/tokenizer.h"

namespace attn::cli {

// Writes s as a JSON string literal (with quotes). Input is valid UTF-8 from the core.
inline void WriteJsonString(FILE* out, std::string_view s) {
  std::fputc('"', out);
  for (unsigned char c : s) {
    switch (c) {
      case '"': std::fputs("\\\"", out); break;
      case '\\': std::fputs("\\\\", out); break;
      case '\n': std::fputs("\\n", out); break;
      case '\r': std::fputs("\\r", out); break;
      case '\t': std::fputs("\\t", out); break;
      default:
        if (c < 0x20) std::fprintf(out, "\\u%04x", c);
        else std::fputc(c, out);
    }
  }
  std::fputc('"', out);
}

// Floats with enough digits to round-trip a float32 exactly.
inline void WriteJsonFloat(FILE* out, float v) { std::fprintf(out, "%.9g", static_cast<double>(v)); }

// The "tokens" array of the result schema (docs/ARCHITECTURE.md):
// [{"id","text","start","end","word"}, ...].
inline void WriteJsonTokens(FILE* out, const std::vector<Token>& tokens) {
  std::fputc('[', out);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    std::fprintf(out, "%s{\"id\":%d,\"text\":", i ? "," : "", t.id);
    WriteJsonString(out, t.text);
    std::fprintf(out, ",\"start\":%d,\"end\":%d,\"word\":%d}", t.start, t.end, t.word);
  }
  std::fputc(']', out);
}

// The "head_profiles" array of the result schema: one object per head, layer-major, with the
// fractions of rows whose argmax is each category and the mean row statistics.
inline void WriteJsonHeadProfiles(FILE* out, const std::vector<HeadProfile>& profiles, int heads) {
  std::fputc('[', out);
  for (size_t k = 0; k < profiles.size(); ++k) {
    const HeadProfile& p = profiles[k];
    std::fprintf(out, "%s{\"layer\":%d,\"head\":%d,\"label\":", k ? "," : "",
                 static_cast<int>(k / static_cast<size_t>(heads)),
                 static_cast<int>(k % static_cast<size_t>(heads)));
    WriteJsonString(out, HeadLabelName(p.Label()));
    std::fprintf(out,
                 ",\"previous_token\":%.6g,\"next_token\":%.6g,\"cls\":%.6g,\"sep\":%.6g,"
                 "\"self\":%.6g,\"punctuation\":%.6g,\"mean_entropy\":%.6g,"
                 "\"mean_normalized_entropy\":%.6g,\"mean_ratio_to_uniform\":%.6g}",
                 p.Fraction(p.previous_token), p.Fraction(p.next_token), p.Fraction(p.cls),
                 p.Fraction(p.sep), p.Fraction(p.self), p.Fraction(p.punctuation), p.mean_entropy(),
                 p.mean_normalized_entropy(), p.mean_ratio_to_uniform());
  }
  std::fputc(']', out);
}

}  // namespace attn::cli
