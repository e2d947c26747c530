"""An independent BertTokenizer in plain Python, for tests/py/test_tokenizer_differential.py.

Written from the steps Hugging Face's transformers documents and runs for
BertTokenizer(do_lower_case=True) (PreTrainedTokenizer.tokenize, BasicTokenizer,
WordpieceTokenizer in tokenization_utils.py and tokenization_bert.py); it shares no code and no
tables with wasm/core: the character properties are Python's own unicodedata.

  1. PreTrainedTokenizer.tokenize, because BertTokenizer has do_lower_case: every character
     outside a typed special token is lowercased on its own, by
     re.sub(r"(<specials>)|(.+?)", lambda m: m.groups()[0] or m.groups()[1].lower(), text).
     `.+?` matches one character, so str.lower() never sees a word and its conditional
     Final_Sigma rule never fires: "ΣΑΣ" becomes "σασ", not "σας". (The fast tokenizer agrees:
     its BertNormalizer maps each char through Rust's char::to_lowercase, which has no context.)
  2. The text is split around the typed special tokens ([UNK] [SEP] [PAD] [CLS] [MASK], exact
     case, leftmost match; they are kept whole); every other stretch goes to steps 3-6.
  3. BasicTokenizer: _clean_text (drop U+0000, U+FFFD and category C* except \\t \\n \\r; turn
     \\t \\n \\r and Zs into a space), _tokenize_chinese_chars (a space each side of a CJK
     ideograph of the listed blocks, supplementary planes included), NFC, str.split().
  4. Per whitespace token: token.lower() (now a no-op: step 1 lowercased everything), NFD, drop
     Mn (_run_strip_accents), split off every punctuation character (_is_punctuation: the ASCII
     ranges 33-47, 58-64, 91-96, 123-126, or category P*).
  5. WordpieceTokenizer: greedy longest match first with "##" continuations; a word longer than
     100 characters, or one that cannot be matched to the end, is a single [UNK].
  6. [CLS] ... [SEP] around the ids.

The other settings (BertReference's arguments, as a checkpoint's tokenizer_config.json gives
them) change steps 1, 3 and 4 as BasicTokenizer does: without do_lower_case there is no step 1
and no lower() in step 4, whose accent stripping then runs only if strip_accents is True (with
do_lower_case, unless it is False); without tokenize_chinese_chars step 3 adds no spaces.

Bytes are read as UTF-8 with errors="replace", as the project's tokenizer documents.
"""

import re
import unicodedata

SPECIALS = ("[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]")
MAX_CHARS_PER_WORD = 100

_SPECIALS_PATTERN = "|".join(re.escape(s) for s in SPECIALS)
_LOWERCASE = re.compile(r"(" + _SPECIALS_PATTERN + r")|" + r"(.+?)")
_SPLIT_SPECIALS = re.compile(r"(" + _SPECIALS_PATTERN + r")")


def lowercase_like_transformers(text):
    """Step 1: str.lower() one character at a time, typed special tokens left alone."""
    return _LOWERCASE.sub(lambda m: m.groups()[0] or m.groups()[1].lower(), text)


def is_whitespace(ch):
    if ch in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(ch) == "Zs"


def is_control(ch):
    if ch in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(ch).startswith("C")


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def clean_text(text):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        out.append(" " if is_whitespace(ch) else ch)
    return "".join(out)


def tokenize_chinese_chars(text):
    out = []
    for ch in text:
        if is_chinese_char(ord(ch)):
            out.extend((" ", ch, " "))
        else:
            out.append(ch)
    return "".join(out)


def strip_accents(token):
    return "".join(ch for ch in unicodedata.normalize("NFD", token)
                   if unicodedata.category(ch) != "Mn")


def split_on_punctuation(token):
    words, current = [], []
    for ch in token:
        if is_punctuation(ch):
            if current:
                words.append("".join(current))
                current = []
            words.append(ch)
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


def basic_tokenize(text, do_lower_case=True, strip_accents_setting=None, split_chinese=True):
    """Step 3 and 4 on a stretch without typed special tokens, with BasicTokenizer's settings
    (do_lower_case, strip_accents: None, True or False, tokenize_chinese_chars)."""
    text = clean_text(text)
    if split_chinese:
        text = tokenize_chinese_chars(text)
    text = unicodedata.normalize("NFC", text)
    words = []
    for token in text.split():
        if do_lower_case:
            token = token.lower()
            if strip_accents_setting is not False:
                token = strip_accents(token)
        elif strip_accents_setting:
            token = strip_accents(token)
        words.extend(split_on_punctuation(token))
    return " ".join(words).split()


class BertReference:
    def __init__(self, vocab_lines, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True):
        self.vocab = {piece: i for i, piece in enumerate(vocab_lines)}
        self.unk = self.vocab["[UNK]"]
        self.settings = (do_lower_case, strip_accents, tokenize_chinese_chars)

    def wordpiece(self, word):
        chars = list(word)
        if len(chars) > MAX_CHARS_PER_WORD:
            return [self.unk]
        ids, start = [], 0
        while start < len(chars):
            end, found = len(chars), None
            while start < end:
                piece = "".join(chars[start:end])
                if start > 0:
                    piece = "##" + piece
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def encode(self, text):
        """Ids, [CLS] and [SEP] included, of a str (or of bytes, read as UTF-8 with replacement)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if self.settings[0]:
            text = lowercase_like_transformers(text)
        ids = [self.vocab["[CLS]"]]
        for k, stretch in enumerate(_SPLIT_SPECIALS.split(text)):
            if k % 2 == 1:  # a typed special token (the pattern's capture group)
                ids.append(self.vocab[stretch])
                continue
            for word in basic_tokenize(stretch, *self.settings):
                ids.extend(self.wordpiece(word))
        ids.append(self.vocab["[SEP]"])
        return ids
