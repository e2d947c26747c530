// Minimal JSON output helpers shared by the CLI's subcommands.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/analysis.h"
#include "core/tokenizer.h"
#include "core/unicode.h"

namespace attn::cli {

// Writes s as a JSON string literal (with quotes). Text from the core is valid UTF-8, but a path
// from the command line need not be; each maximal ill-formed subpart becomes one U+FFFD, as the
// tokenizer reads such text (unicode::DecodeUtf8), so that the output is always valid JSON and
// valid UTF-8 input reads back unchanged.
inline void WriteJsonString(FILE* out, std::string_view s) {
  std::vector<char32_t> code_points;
  unicode::DecodeUtf8(s, &code_points);
  std::string utf8;
  std::fputc('"', out);
  for (char32_t c : code_points) {
    switch (c) {
      case '"': std::fputs("\\\"", out); break;
      case '\\': std::fputs("\\\\", out); break;
      case '\n': std::fputs("\\n", out); break;
      case '\r': std::fputs("\\r", out); break;
      case '\t': std::fputs("\\t", out); break;
      default:
        if (c < 0x20) {
          std::fprintf(out, "\\u%04x", static_cast<unsigned>(c));
        } else if (c < 0x80) {
          std::fputc(static_cast<int>(c), out);
        } else {
          utf8.clear();
          unicode::AppendUtf8(c, &utf8);
          std::fwrite(utf8.data(), 1, utf8.size(), out);
        }
    }
  }
  std::fputc('"', out);
}

// A number with `significant` digits, or null where it is not finite: JSON has no NaN or
// infinity (printf would write "nan", which no parser reads), so those become null, as
// JSON.stringify writes them; a model whose weights overflow can produce them.
inline void WriteJsonNumber(FILE* out, double v, int significant) {
  if (std::isfinite(v)) std::fprintf(out, "%.*g", significant, v);
  else std::fputs("null", out);
}

// Floats with enough digits (9) to round-trip a float32 exactly.
inline void WriteJsonFloat(FILE* out, float v) { WriteJsonNumber(out, static_cast<double>(v), 9); }

// A statistic with six significant digits.
inline void WriteJsonStatistic(FILE* out, double v) { WriteJsonNumber(out, v, 6); }

// The "model" object of the CLI's JSON: {"name", "layers", "heads", "hidden", "vocab_size",
// "precision"}.
inline void WriteJsonModel(FILE* out, const Model& model) {
  const ModelConfig& c = model.config();
  std::fputs("{\"name\":", out);
  WriteJsonString(out, model.name());
  std::fprintf(out, ",\"layers\":%u,\"heads\":%u,\"hidden\":%u,\"vocab_size\":%u,\"precision\":",
               c.num_hidden_layers, c.num_attention_heads, c.hidden_size, c.vocab_size);
  WriteJsonString(out, model.precision());
  std::fputc('}', out);
}

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
    for (const auto& [name, value] : HeadProfileFractions(p)) {
      std::fprintf(out, ",\"%s\":", name);
      WriteJsonStatistic(out, value);
    }
    std::fputc('}', out);
  }
  std::fputc(']', out);
}

}  // namespace attn::cli
