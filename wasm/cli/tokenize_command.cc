// attention-cli tokenize: the tokenizer on the command line.
//
//   attention-cli tokenize (--vocab FILE | --model FILE) [--json | --lines] [--max-length N]
//                          [--do-lower-case B] [--strip-accents B|none] [--tokenize-chinese-chars B] TEXT|-
//
// The last three are BertTokenizer's settings of those names (B: true or false), for a
// vocabulary file; their defaults are bert-base-uncased's (true, none, true). A model file
// brings its own (its header's tokenizer field).
// Plain output is one token per line: id, piece, start, end, word (tab-separated). --json
// prints {"tokens": [{"id","text","start","end","word"}, ...], "truncated", "full_length"}.
// --lines tokenizes a corpus: every line of standard input is one text, and every output line
// holds that text's ids, [CLS] and [SEP] included, space-separated, never truncated.
// --batch-hex is for tests: every input line is one text as hex-encoded bytes (so that any
// bytes, newlines included, can be sent) and every output line is that text's --json object.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "cli/text.h"
#include "core/model_file.h"
#include "core/tokenizer.h"

namespace attn::cli {
namespace {

constexpr char kUsage[] =
    "usage: attention-cli tokenize (--vocab FILE | --model FILE) [--json | --lines] "
    "[--max-length N] TEXT|-\n"
    "  TEXT '-' reads the text from standard input.\n"
    "  --json        one JSON object: tokens (id, text, start, end, word), truncated, full_length\n"
    "  --lines       each stdin line is one text; prints its ids ([CLS] ... [SEP]) per line\n"
    "  --max-length  positions including [CLS] and [SEP] (default 512; --lines never truncates)\n"
    "  --do-lower-case true|false, --strip-accents true|false|none, --tokenize-chinese-chars true|false\n"
    "                Hugging Face BertTokenizer's settings (defaults: true, none, true)\n";

enum class Mode { kPlain, kJson, kLines, kBatchHex };

int UsageError(const std::string& message) {
  std::fprintf(stderr, "attention-cli tokenize: %s\n%s", message.c_str(), kUsage);
  return 2;
}

Status LoadTokenizer(const std::string& vocab_path, const std::string& model_path,
                     const TokenizerOptions& options, Tokenizer* tokenizer) {
  Vocab vocab;
  if (!model_path.empty()) {
    std::unique_ptr<Model> model;
    Status status = Model::FromFile(model_path, &model);
    if (!status.ok()) return status;
    status = Vocab::FromText(model->vocab_text(), &vocab);
    if (!status.ok()) {
      return Status::Error("model file '" + model_path + "' has a corrupt vocabulary: " +
                           status.message());
    }
    return Tokenizer::Create(std::move(vocab), tokenizer, model->tokenizer_options());
  } else {
    Status status = Vocab::FromFile(vocab_path, &vocab);
    if (!status.ok()) return status;
  }
  return Tokenizer::Create(std::move(vocab), tokenizer, options);
}

// "true" or "false" (and "none" where allowed) into *out; false for anything else.
bool ParseSetting(const std::string& value, bool allow_none, int* out) {
  if (value == "true") *out = 1;
  else if (value == "false") *out = 0;
  else if (allow_none && value == "none") *out = -1;
  else return false;
  return true;
}

void WriteJson(FILE* out, const Encoding& encoding) {
  std::fputs("{\"tokens\":", out);
  WriteJsonTokens(out, encoding.tokens);
  std::fprintf(out, ",\"truncated\":%s,\"full_length\":%d}\n",
               encoding.truncated ? "true" : "false", encoding.full_length);
}

void WritePlain(FILE* out, const Encoding& encoding) {
  for (const Token& t : encoding.tokens) {
    std::fprintf(out, "%d\t%s\t%d\t%d\t%d\n", t.id, Printable(t.text).c_str(), t.start, t.end,
                 t.word);
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool DecodeHex(const std::string& hex, std::string* bytes) {
  if (hex.size() % 2 != 0) return false;
  bytes->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

int RunLines(const Tokenizer& tokenizer) {
  std::string line, out;
  std::vector<int32_t> ids;
  while (std::getline(std::cin, line)) {
    tokenizer.EncodeIds(line, &ids);
    out.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out.push_back(' ');
      out += std::to_string(ids[i]);
    }
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return 0;
}

int RunBatchHex(const Tokenizer& tokenizer, int32_t max_length) {
  std::string line, text;
  size_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    if (!DecodeHex(line, &text)) {
      std::fprintf(stderr, "attention-cli tokenize: --batch-hex line %zu is not hex\n", number);
      return 2;
    }
    WriteJson(stdout, tokenizer.Encode(text, max_length));
  }
  return 0;
}

}  // namespace

int RunTokenize(int argc, char** argv) {
  std::string vocab_path, model_path, text;
  bool have_text = false;
  Mode mode = Mode::kPlain;
  int32_t max_length = Tokenizer::kDefaultMaxLength;
  TokenizerOptions options;
  bool settings_given = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--do-lower-case" || arg == "--strip-accents" || arg == "--tokenize-chinese-chars") {
      if (!has_value) return UsageError(arg + " needs a value");
      const std::string value = argv[++i];
      const bool accents = arg == "--strip-accents";
      int setting = 0;
      if (!ParseSetting(value, accents, &setting)) {
        return UsageError(arg + " takes true or false" + (accents ? " or none" : "") + ", got '" + value + "'");
      }
      if (arg == "--do-lower-case") options.lowercase = setting == 1;
      else if (arg == "--tokenize-chinese-chars") options.split_chinese_chars = setting == 1;
      else options.accents = setting < 0 ? TokenizerOptions::Accents::kFollowLowercase
                             : setting ? TokenizerOptions::Accents::kStrip : TokenizerOptions::Accents::kKeep;
      settings_given = true;
    } else if (arg == "--vocab" || arg == "--model" || arg == "--max-length") {
      if (!has_value) return UsageError(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--vocab") {
        vocab_path = value;
      } else if (arg == "--model") {
        model_path = value;
      } else {
        long n = 0;
        if (!ParseInteger(value.c_str(), 2, 1000000000, &n)) {
          return UsageError("--max-length needs an integer from 2 to 1000000000, got '" + value + "'");
        }
        max_length = static_cast<int32_t>(n);
      }
    } else if (arg == "--json" || arg == "--lines" || arg == "--batch-hex") {
      if (mode != Mode::kPlain) return UsageError("choose one of --json, --lines");
      mode = arg == "--json" ? Mode::kJson : arg == "--lines" ? Mode::kLines : Mode::kBatchHex;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg.size() > 1 && arg[0] == '-' && arg[1] == '-') {
      return UsageError("unknown option '" + arg + "'");
    } else {
      if (have_text) return UsageError("give one TEXT argument (quote it), or '-' for stdin");
      text = arg;
      have_text = true;
    }
  }
  if (vocab_path.empty() == model_path.empty()) {
    return UsageError("give exactly one of --vocab FILE (model_data/vocab.txt) or --model FILE");
  }
  if (settings_given && !model_path.empty()) {
    return UsageError("--do-lower-case, --strip-accents and --tokenize-chinese-chars go with --vocab; a model file states its own");
  }
  const bool batch = mode == Mode::kLines || mode == Mode::kBatchHex;
  if (batch && have_text) return UsageError("--lines reads standard input; drop the TEXT argument");
  if (!batch && !have_text) return UsageError("missing TEXT (or '-' to read standard input)");

  // Standard input is read only through std::cin and output written only through stdio.
  std::ios::sync_with_stdio(false);
  Tokenizer tokenizer;
  Status status = LoadTokenizer(vocab_path, model_path, options, &tokenizer);
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli tokenize: %s\n", Printable(status.message()).c_str());
    return 1;
  }

  int code = 0;
  if (mode == Mode::kLines) {
    code = RunLines(tokenizer);
  } else if (mode == Mode::kBatchHex) {
    code = RunBatchHex(tokenizer, max_length);
  } else {
    if (text == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    }
    const Encoding encoding = tokenizer.Encode(text, max_length);
    if (mode == Mode::kJson) {
      WriteJson(stdout, encoding);
    } else {
      WritePlain(stdout, encoding);
    }
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "attention-cli tokenize: writing the output failed: %s\n",
                 std::strerror(errno));
    return 1;
  }
  return code;
}

}  // namespace attn::cli
