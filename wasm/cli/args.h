// Reading the CLI's numeric options: one parser for every subcommand's integers.
#pragma once

#include <cstdlib>

namespace attn::cli {

// A whole decimal integer in [low, high], and nothing after it: "12" but not "12x", "" or "1e3".
inline bool ParseInteger(const char* s, long low, long high, long* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < low || v > high) return false;
  *out = v;
  return true;
}

}  // namespace attn::cli
