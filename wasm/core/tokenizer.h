// WordPiece tokenizer with the semantics of Hugging Face's Python BertTokenizer, for uncased
// vocabularies (do_lower_case=True, the default) and cased ones (TokenizerOptions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace attn {

// One token of the encoded sentence. start/end are Unicode code point offsets into the
// input text (end exclusive); [CLS] and [SEP] added by the tokenizer have start = end = -1
// and word = -1. word is the index of the whitespace/punctuation-split word the piece came
// from, so WordPieces of one word share it. A piece spans from the first to the last input
// code point its characters came from (a code point that lowercasing or NFD expands may feed
// several pieces; a character NFC composed from several input code points, when accents are
// kept, comes from all of them); dropped characters (controls, stripped combining marks)
// belong to no piece; an [UNK] spans its whole word. Invalid UTF-8 counts one code point per
// U+FFFD.
struct Token {
  int32_t id = 0;
  std::string text;  // the vocabulary piece, e.g. "##ing"
  int32_t start = -1;
  int32_t end = -1;
  int32_t word = -1;
};

struct Encoding {
  std::vector<Token> tokens;   // [CLS] ... [SEP]
  bool truncated = false;      // true when the text needed more than max_length positions
  int32_t full_length = 0;     // positions the whole text would need, with [CLS] and [SEP]
};

// The settings of Hugging Face's BertTokenizer that change what it makes of a text, as a
// checkpoint's tokenizer_config.json states them. The defaults are bert-base-uncased's.
struct TokenizerOptions {
  // strip_accents: null (follow do_lower_case), true, false.
  enum class Accents : uint8_t { kFollowLowercase = 0, kStrip = 1, kKeep = 2 };

  bool lowercase = true;                           // do_lower_case
  Accents accents = Accents::kFollowLowercase;     // strip_accents
  bool split_chinese_chars = true;                 // tokenize_chinese_chars

  // BasicTokenizer strips accents (NFD, then drops Mn) when it lowercases and strip_accents is
  // not false, or when strip_accents is true; otherwise a word keeps its NFC form.
  bool strips_accents() const {
    return accents == Accents::kStrip || (lowercase && accents == Accents::kFollowLowercase);
  }
};

class Vocab {
 public:
  // Parses vocab.txt content: one entry per line, id = line number.
  static Status FromText(std::string_view text, Vocab* out);
  static Status FromFile(const std::string& path, Vocab* out);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  // -1 when absent.
  int32_t Find(std::string_view piece) const;
  // Bytes in the longest entry: WordPiece never needs to look up a longer candidate.
  size_t max_piece_bytes() const { return max_piece_bytes_; }

 private:
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int32_t> ids_;
  size_t max_piece_bytes_ = 0;

  // WordPiece looks candidates up through a reused std::string key, without the allocation
  // Find(std::string_view) may make.
  friend class Tokenizer;
};

class Tokenizer {
 public:
  static constexpr int32_t kDefaultMaxLength = 512;
  static constexpr int32_t kMaxCharsPerWord = 100;

  // Fails when the vocabulary lacks [CLS], [SEP], [UNK], [PAD] or [MASK].
  static Status Create(Vocab vocab, Tokenizer* out, TokenizerOptions options = {});

  // Any bytes are accepted; invalid UTF-8 becomes U+FFFD (and is then cleaned away).
  // The result always holds [CLS] and [SEP]; when the text needs more than max_length
  // positions it is cut to max_length (with [SEP] last) and truncated is set.
  // A max_length below 2 is treated as 2.
  Encoding Encode(std::string_view utf8, int32_t max_length = kDefaultMaxLength) const;
  // The ids of Encode without truncation, offsets or piece texts: the fast path for
  // tokenizing a corpus. ids is overwritten with [CLS] ... [SEP].
  void EncodeIds(std::string_view utf8, std::vector<int32_t>* ids) const;

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t mask_id() const { return mask_id_; }

 private:
  // A WordPiece before [CLS]/[SEP] are added, with the offsets Token documents.
  struct Piece {
    int32_t id, start, end, word;
  };
  class Splitter;
  void Split(std::string_view utf8, std::vector<Piece>* pieces) const;

  Vocab vocab_;
  TokenizerOptions options_;
  // Special tokens typed in the text, matched with exact case: (code points, id).
  std::vector<std::pair<std::u32string, int32_t>> typed_specials_;
  int32_t cls_id_ = -1, sep_id_ = -1, unk_id_ = -1, pad_id_ = -1, mask_id_ = -1;
};

}  // namespace attn
