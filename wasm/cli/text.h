// The CLI's text (non-JSON) output: strings that come from files, made safe for a terminal.
#pragma once

#include <string>
#include <string_view>

#include "core/unicode.h"

namespace attn::cli {

// Strings from files (a model's name and provenance, tensor names, vocabulary entries) and core
// messages that quote them, made safe for a terminal before a text-mode print: the core's one
// escaper (unicode::Printable: control characters as \xNN or \uNNNN). --json output is the exact
// form.
using unicode::Printable;

}  // namespace attn::cli
