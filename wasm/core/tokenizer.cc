// WordPiece tokenizer with the semantics of Hugging Face's Python BertTokenizer.
//
// Python's pipeline (transformers PreTrainedTokenizer.tokenize, BasicTokenizer,
// WordpieceTokenizer), for do_lower_case=True:
//   1. Typed special tokens ([CLS] [SEP] [UNK] [PAD] [MASK], exact case) are split out; every
//      other character is lowercased on its own (a regex replaces one character at a time,
//      so str.lower()'s conditional Final_Sigma rule never applies: Σ always becomes σ; the
//      fast tokenizer agrees, mapping each char with Rust's char::to_lowercase).
//   2. _clean_text drops NUL, U+FFFD and category C* except \t \n \r, and turns whitespace
//      into spaces; CJK ideographs get spaces around them.
//   3. NFC, then split on whitespace (Python's str.split(), which also splits on U+2028 and
//      U+2029, the only separators _clean_text leaves behind).
//   4. Per word: lower() again, NFD, drop Mn (accent stripping), split off each punctuation
//      character.
//   5. WordPiece, greedy longest match first with "##"; a word that fails anywhere, or has
//      more than 100 code points, becomes a single [UNK].
// This file does the same per code point, with two shortcuts that
// scripts/unicode/gen_unicode_tables.py proves exact for the Unicode version of the tables:
//   - NFC is skipped: NFD(NFC(x)) == NFD(x), and NFC neither creates nor removes separators;
//   - the second lower() is skipped: once every code point is lowercased, NFC cannot compose
//     a character that lower() would change.
//
// Other settings (TokenizerOptions, from a checkpoint's tokenizer_config.json): without
// do_lower_case step 1 and the lower() of step 4 are left out; strip_accents=false keeps the
// accents (step 4 is then only the punctuation split) and strip_accents=true strips them
// without lowercasing; tokenize_chinese_chars=false leaves out the spaces around CJK
// ideographs. Where accents are kept, a word is brought to NFC as step 3 does: NFD (Decompose,
// CanonicalOrder) then canonical composition (CanonicalCompose), which is NFC per word, and
// NFC of the whole text since words are separated by starters that nothing composes with.
//
// Offsets. Every character produced along the way remembers the index of the input code point
// it came from (lowercasing and decomposition may turn one code point into several; all of
// them keep its index). A piece spans [first, last + 1) over the indices its characters came
// from. Characters that are dropped (controls, stripped combining marks, whitespace) belong to
// no piece, so an accent typed as a separate combining mark after a word's last letter lies
// just outside that word's span. An [UNK] spans its whole word. Where accents are kept, NFC
// may compose a character from several input code points ("e" and U+0301 typed apart make
// "é"); it then remembers the first and the last of them.
#include "core/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/unicode.h"

namespace attn {
namespace {

constexpr char kContinuingPrefix[] = "##";
constexpr size_t kContinuingPrefixBytes = 2;
// A vocab.txt is 231,508 bytes; anything vastly larger is not a vocabulary.
constexpr size_t kMaxVocabFileBytes = 64u << 20;

std::string LineMessage(size_t line, const std::string& what) {
  return "line " + std::to_string(line) + ": " + what;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Vocab

Status Vocab::FromText(std::string_view text, Vocab* out) {
  Vocab vocab;
  size_t pos = 0;
  size_t line = 0;
  while (pos < text.size()) {
    size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos) newline = text.size();
    const std::string_view entry = text.substr(pos, newline - pos);
    pos = newline + 1;
    ++line;
    if (entry.empty()) {
      return Status::Error(LineMessage(line, "empty entry; a vocab.txt has one piece per line"));
    }
    if (entry.find('\r') != std::string_view::npos) {
      return Status::Error(LineMessage(line, "carriage return; convert the file to '\\n' line endings"));
    }
    if (entry.find('\0') != std::string_view::npos || !unicode::IsValidUtf8(entry)) {
      return Status::Error(LineMessage(line, "not valid UTF-8 text; the file is not a vocab.txt"));
    }
    const int32_t id = static_cast<int32_t>(vocab.pieces_.size());
    auto inserted = vocab.ids_.emplace(std::string(entry), id);
    if (!inserted.second) {
      return Status::Error(LineMessage(line, "duplicate entry '" + std::string(entry) +
                                                 "' (first on line " +
                                                 std::to_string(inserted.first->second + 1) + ")"));
    }
    vocab.pieces_.emplace_back(entry);
    vocab.max_piece_bytes_ = std::max(vocab.max_piece_bytes_, entry.size());
  }
  if (vocab.pieces_.empty()) return Status::Error("the vocabulary is empty");
  *out = std::move(vocab);
  return Status::Ok();
}

Status Vocab::FromFile(const std::string& path, Vocab* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Error("cannot open vocab file '" + path +
                         "'; pass the bert-base-uncased vocab.txt (model_data/vocab.txt)");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::Error("cannot read vocab file '" + path + "'");
  const std::string text = buffer.str();
  if (text.size() > kMaxVocabFileBytes) {
    return Status::Error("vocab file '" + path + "' is " + std::to_string(text.size()) +
                         " bytes, too large for a vocab.txt");
  }
  Status status = FromText(text, out);
  if (!status.ok()) {
    return Status::Error("vocab file '" + path + "' is corrupt: " + status.message() +
                         " (model_data/vocab.txt is the expected file)");
  }
  return Status::Ok();
}

int32_t Vocab::Find(std::string_view piece) const {
  auto it = ids_.find(std::string(piece));
  return it == ids_.end() ? -1 : it->second;
}

// ---------------------------------------------------------------------------------------
// Tokenizer

Status Tokenizer::Create(Vocab vocab, Tokenizer* out, TokenizerOptions options) {
  Tokenizer tokenizer;
  tokenizer.options_ = options;
  struct Special {
    const char* text;
    int32_t* id;
  };
  const Special specials[] = {{"[CLS]", &tokenizer.cls_id_}, {"[SEP]", &tokenizer.sep_id_},
                              {"[UNK]", &tokenizer.unk_id_}, {"[PAD]", &tokenizer.pad_id_},
                              {"[MASK]", &tokenizer.mask_id_}};
  for (const Special& special : specials) {
    *special.id = vocab.Find(special.text);
    if (*special.id < 0) {
      return Status::Error(std::string("the vocabulary has no ") + special.text +
                           " entry; it is not a BERT WordPiece vocabulary");
    }
    std::u32string code_points(special.text, special.text + std::char_traits<char>::length(special.text));
    tokenizer.typed_specials_.emplace_back(std::move(code_points), *special.id);
  }
  tokenizer.vocab_ = std::move(vocab);
  *out = std::move(tokenizer);
  return Status::Ok();
}

// Runs the pipeline over one text, appending pieces. One instance per call: its buffers are
// reused from word to word so that the per-character work allocates nothing.
class Tokenizer::Splitter {
  // The first and the last input code point a character came from (the same one, unless NFC
  // composed it from several).
  struct Origin {
    int32_t first, last;
  };

 public:
  Splitter(const Tokenizer& tokenizer, std::vector<Piece>* pieces)
      : tokenizer_(tokenizer), pieces_(pieces) {}

  void Run(std::string_view utf8) {
    unicode::DecodeUtf8(utf8, &text_);
    const size_t n = text_.size();
    size_t i = 0;
    while (i < n) {
      if (text_[i] == '[') {
        const size_t length = TypedSpecialAt(i);
        if (length > 0) {
          EndWord();
          pieces_->push_back({special_id_, Index(i), Index(i + length), next_word_++});
          i += length;
          continue;
        }
      }
      if (tokenizer_.options_.lowercase) {
        char32_t lowered[3];
        const int count = unicode::ToLower(text_[i], lowered);
        for (int k = 0; k < count; ++k) Clean(lowered[k], Index(i));
      } else {
        Clean(text_[i], Index(i));
      }
      ++i;
    }
    EndWord();
  }

 private:
  static int32_t Index(size_t i) { return static_cast<int32_t>(i); }

  // Length in code points of the typed special token starting at text_[i], or 0.
  size_t TypedSpecialAt(size_t i) {
    for (const auto& special : tokenizer_.typed_specials_) {
      const std::u32string& s = special.first;
      if (text_.size() - i >= s.size() && std::equal(s.begin(), s.end(), text_.begin() + i)) {
        special_id_ = special.second;
        return s.size();
      }
    }
    return 0;
  }

  // _clean_text, the CJK split and the whitespace split for one (lowercased) character.
  void Clean(char32_t c, int32_t origin) {
    if (c < 0x80) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        EndWord();
      } else if (c >= 0x20 && c != 0x7F) {
        word_.push_back(c);
        word_origin_.push_back({origin, origin});
      }
      return;
    }
    if (c == unicode::kReplacementCharacter || unicode::IsBertControl(c)) return;
    if (unicode::IsBertWhitespace(c) || unicode::IsSplitSpace(c)) {
      EndWord();
      return;
    }
    const bool cjk = tokenizer_.options_.split_chinese_chars && unicode::IsCjkIdeograph(c);
    if (cjk) EndWord();
    word_.push_back(c);
    word_origin_.push_back({origin, origin});
    if (cjk) EndWord();
  }

  // A whitespace-delimited word is complete: NFD, then accent stripping or NFC, punctuation
  // split.
  void EndWord() {
    if (word_.empty()) return;
    normalized_.clear();
    normalized_origin_.clear();
    bool reorder = false;
    for (size_t k = 0; k < word_.size(); ++k) {
      char32_t parts[unicode::kMaxDecompositionLength];
      const int count = unicode::Decompose(word_[k], parts);
      for (int j = 0; j < count; ++j) {
        normalized_.push_back(parts[j]);
        normalized_origin_.push_back(word_origin_[k]);
        if (parts[j] >= 0x300 && unicode::CombiningClass(parts[j]) != 0) reorder = true;
      }
    }
    word_.clear();
    word_origin_.clear();
    if (reorder) unicode::CanonicalOrder(&normalized_, &normalized_origin_);

    if (tokenizer_.options_.strips_accents()) {
      size_t kept = 0;  // accent stripping, in place
      for (size_t k = 0; k < normalized_.size(); ++k) {
        const char32_t c = normalized_[k];
        if (c >= 0x300 && unicode::GetCategory(c) == unicode::Category::Mn) continue;
        normalized_[kept] = c;
        normalized_origin_[kept] = normalized_origin_[k];
        ++kept;
      }
      normalized_.resize(kept);
      normalized_origin_.resize(kept);
    } else {
      unicode::CanonicalCompose(&normalized_, &normalized_origin_, [](Origin a, Origin b) {
        return Origin{std::min(a.first, b.first), std::max(a.last, b.last)};
      });
    }
    const size_t kept = normalized_.size();

    size_t begin = 0;
    for (size_t k = 0; k < kept; ++k) {
      if (unicode::IsBertPunctuation(normalized_[k])) {
        if (k > begin) WordPiece(begin, k);
        WordPiece(k, k + 1);
        begin = k + 1;
      }
    }
    if (begin < kept) WordPiece(begin, kept);
  }

  // Greedy longest-match-first WordPiece over normalized_[begin, end).
  void WordPiece(size_t begin, size_t end) {
    const int32_t word = next_word_++;
    const size_t first_piece = pieces_->size();
    const size_t length = end - begin;
    if (length > static_cast<size_t>(kMaxCharsPerWord)) {
      pieces_->push_back({tokenizer_.unk_id_, SpanStart(begin, end), SpanEnd(begin, end), word});
      return;
    }
    bytes_.clear();
    byte_offset_.clear();
    for (size_t k = begin; k < end; ++k) {
      byte_offset_.push_back(bytes_.size());
      unicode::AppendUtf8(normalized_[k], &bytes_);
    }
    byte_offset_.push_back(bytes_.size());

    const Vocab& vocab = tokenizer_.vocab_;
    size_t start = 0;
    while (start < length) {
      const size_t prefix = start > 0 ? kContinuingPrefixBytes : 0;
      int32_t id = -1;
      size_t stop = length;
      for (; stop > start; --stop) {
        const size_t piece_bytes = byte_offset_[stop] - byte_offset_[start];
        if (prefix + piece_bytes > vocab.max_piece_bytes_) continue;
        key_.assign(kContinuingPrefix, prefix);
        key_.append(bytes_, byte_offset_[start], piece_bytes);
        auto it = vocab.ids_.find(key_);
        if (it != vocab.ids_.end()) {
          id = it->second;
          break;
        }
      }
      if (id < 0) {
        pieces_->resize(first_piece);
        pieces_->push_back({tokenizer_.unk_id_, SpanStart(begin, end), SpanEnd(begin, end), word});
        return;
      }
      pieces_->push_back({id, SpanStart(begin + start, begin + stop),
                          SpanEnd(begin + start, begin + stop), word});
      start = stop;
    }
  }

  // Canonical reordering can move a character past one from a later input code point, so the
  // span is the minimum and maximum, not the first and last.
  int32_t SpanStart(size_t begin, size_t end) const {
    int32_t first = normalized_origin_[begin].first;
    for (size_t k = begin + 1; k < end; ++k) first = std::min(first, normalized_origin_[k].first);
    return first;
  }
  int32_t SpanEnd(size_t begin, size_t end) const {
    int32_t last = normalized_origin_[begin].last;
    for (size_t k = begin + 1; k < end; ++k) last = std::max(last, normalized_origin_[k].last);
    return last + 1;
  }

  const Tokenizer& tokenizer_;
  std::vector<Piece>* pieces_;
  int32_t next_word_ = 0;
  int32_t special_id_ = -1;
  std::vector<char32_t> text_;             // (n) the decoded input
  std::vector<char32_t> word_;             // the current whitespace-delimited word
  std::vector<Origin> word_origin_;        // (word_.size()) input index of each character
  std::vector<char32_t> normalized_;       // the word after NFD and accent stripping (or NFC)
  std::vector<Origin> normalized_origin_;  // (normalized_.size())
  std::string bytes_;                      // UTF-8 of one punctuation-split word
  std::vector<size_t> byte_offset_;        // (characters + 1) offsets into bytes_
  std::string key_;                        // the vocabulary candidate being looked up
};

void Tokenizer::Split(std::string_view utf8, std::vector<Piece>* pieces) const {
  pieces->clear();
  Splitter(*this, pieces).Run(utf8);
}

Encoding Tokenizer::Encode(std::string_view utf8, int32_t max_length) const {
  std::vector<Piece> pieces;
  Split(utf8, &pieces);
  const size_t limit = static_cast<size_t>(std::max<int32_t>(max_length, 2));
  const size_t kept = std::min(pieces.size(), limit - 2);

  Encoding encoding;
  encoding.truncated = kept < pieces.size();
  encoding.full_length = static_cast<int32_t>(
      std::min<size_t>(pieces.size() + 2, std::numeric_limits<int32_t>::max()));
  encoding.tokens.reserve(kept + 2);
  encoding.tokens.push_back({cls_id_, vocab_.piece(cls_id_), -1, -1, -1});
  for (size_t i = 0; i < kept; ++i) {
    const Piece& p = pieces[i];
    encoding.tokens.push_back({p.id, vocab_.piece(p.id), p.start, p.end, p.word});
  }
  encoding.tokens.push_back({sep_id_, vocab_.piece(sep_id_), -1, -1, -1});
  return encoding;
}

void Tokenizer::EncodeIds(std::string_view utf8, std::vector<int32_t>* ids) const {
  std::vector<Piece> pieces;
  Split(utf8, &pieces);
  ids->clear();
  ids->reserve(pieces.size() + 2);
  ids->push_back(cls_id_);
  for (const Piece& p : pieces) ids->push_back(p.id);
  ids->push_back(sep_id_);
}

}  // namespace attn
