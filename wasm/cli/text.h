// The CLI's text (non-JSON) output: strings that come from files, made safe for a terminal.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/unicode.h"

namespace attn::cli {

// s with every control character written as a visible escape. A model file's name, provenance,
// tensor names and vocabulary are checked only for being UTF-8, and ESC, BEL or CSI in them,
// printed raw, would set the terminal's title, clear its screen or write its clipboard (security
// review F7). So every string from a file, or a core message that quotes one, goes through this
// before a text-mode print: C0 controls (tab and newline included) and DEL become \xNN, C1
// controls and U+2028/U+2029 become \uNNNN, and each ill-formed UTF-8 subpart becomes U+FFFD, as
// WriteJsonString (json.h) reads it. The result is for people: backslashes are not doubled, so it
// does not read back exactly; --json output is the exact form.
inline std::string Printable(std::string_view s) {
  std::vector<char32_t> code_points;
  unicode::DecodeUtf8(s, &code_points);
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
      unicode::AppendUtf8(c, &out);
    }
  }
  return out;
}

}  // namespace attn::cli
