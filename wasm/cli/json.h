// Minimal JSON output helpers shared by the CLI's subcommands.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

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

// The "tokens" array of the CLI's JSON (DESIGN.md): [{"id","text","start","end","word"}, ...].
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

}  // namespace attn::cli
