// Fuzz target for the tokenizer: any bytes, with the real bert-base-uncased vocabulary. Besides
// the sanitizers' checks it asserts what every encoding promises (core/tokenizer.h): [CLS]
// first and [SEP] last, ids inside the vocabulary, piece texts equal to their entries, offsets
// inside the text and in order, and the same ids from the fast path when nothing was cut.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/tokenizer.h"
#include "core/unicode.h"

namespace {

const attn::Tokenizer& SharedTokenizer() {
  static const attn::Tokenizer* tokenizer = [] {
    attn::Vocab vocab;
    auto* t = new attn::Tokenizer();
    if (!attn::Vocab::FromFile(ATTN_SOURCE_DIR "/model_data/vocab.txt", &vocab).ok() ||
        !attn::Tokenizer::Create(std::move(vocab), t).ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: cannot load model_data/vocab.txt\n");
      std::abort();
    }
    return t;
  }();
  return *tokenizer;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: broken promise: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const attn::Tokenizer& tokenizer = SharedTokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<char32_t> code_points;
  attn::unicode::DecodeUtf8(text, &code_points);
  const int32_t length = static_cast<int32_t>(code_points.size());
  const attn::Encoding encoding = tokenizer.Encode(text, 512);
  const auto& tokens = encoding.tokens;
  Check(tokens.size() >= 2 && tokens.size() <= 512, "between 2 and 512 tokens");
  Check(tokens.front().id == tokenizer.cls_id() && tokens.back().id == tokenizer.sep_id(),
        "[CLS] first, [SEP] last");
  int32_t previous_start = 0;
  for (size_t i = 1; i + 1 < tokens.size(); ++i) {
    const attn::Token& t = tokens[i];
    Check(t.id >= 0 && t.id < tokenizer.vocab().size(), "id inside the vocabulary");
    Check(t.text == tokenizer.vocab().piece(t.id), "piece text is its entry");
    Check(t.start >= 0 && t.start < t.end && t.end <= length, "offsets inside the text");
    Check(t.start >= previous_start, "offsets in order");
    previous_start = t.start;
  }
  if (!encoding.truncated) {
    std::vector<int32_t> ids;
    tokenizer.EncodeIds(text, &ids);
    Check(ids.size() == tokens.size(), "EncodeIds gives as many ids as Encode");
    for (size_t i = 0; i < ids.size(); ++i) Check(ids[i] == tokens[i].id, "EncodeIds equals Encode");
  }
  return 0;
}
