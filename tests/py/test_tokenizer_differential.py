"""Differential test of the C++ tokenizer (attention-cli tokenize) against tests/py/bert_reference.py,
an independent Python BertTokenizer written from Hugging Face's documented steps.

It runs for bert-base-uncased's settings and for the other settings of BertTokenizer a
checkpoint's tokenizer_config.json may give (do_lower_case false as in bert-base-cased and the
multilingual cased models, strip_accents true or false, tokenize_chinese_chars false); the
cased settings use a cased vocabulary made here from the uncased one (cased_vocabulary: the real
bert-base-cased vocab.txt cannot be downloaded on these machines), with capitalised and
upper-case words and NFC accented letters, so that case and NFC decide which ids come out.

Three parts, each run through the CLI in one batched call:
  - every code point, alone, inside a word ("a" c "b") and before a capital sigma that
    str.lower() would make final ("Α" c "Σ"), 64 space-separated words to a --lines line;
  - a seeded corpus of generated strings mixing scripts, casing, combining marks, case-ignorable
    characters around Σ in every position, controls, odd whitespace, typed special tokens and
    every SpecialCasing.txt entry, sent as bytes (--batch-hex), some with ill-formed UTF-8;
  - a hand-made list of the cases this test was written for.
Any id mismatch fails the test and prints the first few inputs with both id lists.

The reference uses the running Python's unicodedata (Debian 12's Python 3.11: Unicode 14.0) and
the C++ tables are Unicode 15.0 (Python 3.12, the target): code points whose assignment differs
between the two versions (read from DerivedAge.txt) are left out of every part, and counted.
"""

import json
import os
import random
import subprocess
import tempfile
import unicodedata
import unittest

from bert_reference import BertReference, SPECIALS
from helpers import cased_vocabulary, ROOT, require_input

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
VOCAB = os.path.join(ROOT, "model_data", "vocab.txt")
UCD = "/usr/share/unicode"
SEED = 20240917
GENERATED = 40000       # strings in the generated corpus
ILL_FORMED = 4000       # of which this many get ill-formed UTF-8 spliced in
WORDS_PER_LINE = 64
SHOWN = 8


def version_tuple(text):
    return tuple(int(x) for x in text.split("."))


def read_ages():
    """{code point: (major, minor)} from DerivedAge.txt (the tables' Unicode version)."""
    ages = {}
    with open(os.path.join(UCD, "DerivedAge.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            span, age = (x.strip() for x in line.split(";"))
            lo, _, hi = span.partition("..")
            for cp in range(int(lo, 16), int(hi or lo, 16) + 1):
                ages[cp] = version_tuple(age)
    return ages


def comparable_code_points():
    """Scalar values on which Python's Unicode and the tables' agree about assignment, and the
    number left out because they do not."""
    ages = read_ages()
    python = version_tuple(unicodedata.unidata_version)[:2]
    keep, left_out = [], 0
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        age = ages.get(cp)
        newer_in_tables = age is not None and age > python
        newer_in_python = age is None and unicodedata.category(chr(cp)) != "Cn"
        if newer_in_tables or newer_in_python:
            left_out += 1
        else:
            keep.append(cp)
    return keep, left_out


def special_casing_code_points():
    out = set()
    with open(os.path.join(UCD, "SpecialCasing.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.add(int(line.split(";")[0], 16))
    return sorted(out)


# BertTokenizer's settings, as BertReference's arguments, and the vocabulary each is run with.
SETTINGS = {
    "uncased": ("uncased", dict(do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True)),
    "cased": ("cased", dict(do_lower_case=False, strip_accents=None, tokenize_chinese_chars=True)),
    "cased, strip_accents=True": ("cased", dict(do_lower_case=False, strip_accents=True, tokenize_chinese_chars=True)),
    "uncased, strip_accents=False": ("cased", dict(do_lower_case=True, strip_accents=False, tokenize_chinese_chars=True)),
    "cased, tokenize_chinese_chars=False": ("cased", dict(do_lower_case=False, strip_accents=None, tokenize_chinese_chars=False)),
}


def cli_settings(settings):
    word = lambda v: "none" if v is None else "true" if v else "false"
    return ["--do-lower-case", word(settings["do_lower_case"]), "--strip-accents", word(settings["strip_accents"]),
            "--tokenize-chinese-chars", word(settings["tokenize_chinese_chars"])]


def run_cli(args, stdin, vocab=VOCAB):
    result = subprocess.run([CLI, "tokenize", "--vocab", vocab] + args, input=stdin,
                            capture_output=True, check=False)
    if result.returncode != 0:
        raise AssertionError("attention-cli failed: " + result.stderr.decode(errors="replace"))
    # Split on "\n" only: str.splitlines() would also split inside the JSON's piece texts.
    return result.stdout.decode("utf-8").rstrip("\n").split("\n") if result.stdout else []


def cli_ids_of_lines(texts, vocab=VOCAB, settings=()):
    """--lines: one text per line (no newline inside); ids per text."""
    stdin = "".join(t + "\n" for t in texts).encode("utf-8")
    lines = run_cli(["--lines", *settings], stdin, vocab)
    assert len(lines) == len(texts), "one output line per input line"
    return [[int(x) for x in line.split()] for line in lines]


def cli_ids_of_bytes(byte_strings, vocab=VOCAB, settings=()):
    """--batch-hex: any bytes; ids per text (the JSON is read for its ids only)."""
    stdin = b"".join(b.hex().encode("ascii") + b"\n" for b in byte_strings)
    lines = run_cli(["--batch-hex", "--max-length", "1000000", *settings], stdin, vocab)
    assert len(lines) == len(byte_strings), "one output line per input text"
    out = []
    for line in lines:
        encoding = json.loads(line)
        assert not encoding["truncated"]
        out.append([t["id"] for t in encoding["tokens"]])
    return out


# ---------------------------------------------------------------------------------------
# The generated corpus.

GREEK_CASED = "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΤΥΦΧΨΩαβγδεζηθικλμνξοπρστυφχψωςΆΈΉΊΌΎΏάέήίόύώϊϋΐΰ"
# Case-ignorable (Unicode 3.13, D136) characters that may sit between a letter and a Σ: combining
# marks (Mn, Me), format characters (Cf), modifier letters and symbols (Lm, Sk), and the
# Word_Break MidLetter / MidNumLet / Single_Quote characters.
CASE_IGNORABLE = ["\u0301", "\u0308", "\u0342", "\u0345", "\u20dd", "\u00ad", "\u200b", "\u200d",
                  "\u2060", "\ufeff", "'", "\u2019", ".", ":", "\u00b7", "\u0387", "\u05f4",
                  "\u2018", "\u2024", "\ufe52", "\uff07", "\uff0e", "\u02b9", "\u02bc", "\u0374",
                  "\u1fbd", "\u00b4", "^", "`", "\u3005", "\u0640", "\U000e0001", "\u034f"]
NEITHER = [" ", "1", "-", ",", "!", "\u2014", "(", ")", "\u00a0", "\u3000", "\u4e00", "\u05d0",
           "\u0627", "\t", "\n", "\u0085", "[MASK]", "\u2028", "\U0001f600", ""]

POOLS = {
    "ascii": ["the", "quick", "Hello", "WORLD", "don't", "isn't", "rock'n'roll", "U.S.A.",
              "e-mail", "3.14", "1,000,000", "https://example.com/a/b?c=d&e=f#g", "user@example.org",
              "C++", "#hashtag", "$100", "50%", "2024-01-01", "O'Neill", "tokenization",
              "unaffable", "Transformers", "xyzzy", "x86_64", "--flag=1", "I"],
    "latin": ["café", "naïve", "résumé", "Ångström", "Straße", "STRASSE", "ẞ", "İstanbul", "İZMİR",
              "ıi", "Œuvre", "Æsir", "ǅungla", "ﬁne", "ﬀ", "Ǆ", "crème brûlée", "São Paulo",
              "Zürich", "Łódź", "Đặng", "Việt Nam", "ǰ", "ŉ", "\u212b", "\u212a", "Ꭰ", "ꭰ"],
    "greek": ["ΟΔΟΣ", "Σίσυφος", "ΣΑΣ", "ς", "ΐ", "Ω", "\u2126", "\u1fef", "ὈΔΥΣΣΕΎΣ",
              "σοφία", "ᾼ", "ᾈ", "ῼ", "Ι\u0345", "ΆΣ", "ΑΣ.", "ΣΣ", "Σ", "ϹϽ", "ϴ"],
    "cyrillic": ["Москва", "Ёлка", "й", "ПРИВЕТ", "Ѐ", "Ӏӏ", "Ꙋ", "Ѷ"],
    "arabic": ["مرحبا بالعالم", "الْعَرَبِيَّة", "٣٫١٤", "؟", "ﻻ", "\u0640\u0640", "\u0610\u0611"],
    "hebrew": ["שָׁלוֹם", "עברית", "״", "ﬠ", "\ufb1d"],
    "indic": ["नमस्ते", "हिन्दी", "क़", "ভাষা", "தமிழ்", "ภาษาไทย", "ພາສາລາວ", "\u0958"],
    "cjk": ["東京", "中文字符", "日本語", "한국어", "ひらがな", "カタカナ", "\uf900", "\u3400", "〇",
            "\U00020000", "\U0002a700", "\U0002f800", "\U0002b820", "\U0002b81d", "\U0002ceaf",
            "\U0002ceb0", "\U00030000", "丽\U0002f801", "漢字かな交じり文", "\u2f00", "\u3007",
            "\ufa0e"],
    "emoji": ["😀", "👍🏽", "👨‍👩‍👧", "🇩🇪", "❤️", "1️⃣", "🤖", "☃", "♥", "\U0001f3fb"],
    "whitespace": [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u2029",
                   "\u0085", "\u000b", "\u000c", "\u001c", "\u001f", "\u1680", "\u200a",
                   "\u202f", "\u205f", "\u180e"],
    "invisible": ["\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\u2060", "\u061c", "\u0000",
                  "\u0001", "\u001b", "\u007f", "\u0080", "\u009f", "\ufffd", "\ue000",
                  "\U000f0000", "\ufdd0", "\ufffe", "\U0001ffff", "\u0378", "\U000e0001",
                  "\U000e0100", "\U0010ffff"],
    "marks": ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "o\u0323\u0302", "q\u0307",
              "x\u0316\u0301", "\u0301", "\u20dd", "\u0903", "\u093f", "a\u034f\u0301",
              "\U0001d15e", "\U0001d160", "i\u0307", "\u0345", "\u0e31", "a\u0328\u0301",
              "\u302e", "\u0f73", "\u0344", "\u1e9b\u0323", "Cafe\u0301", "A\u030a", "u\u0308ber",
              "\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8", "\u1112\u1161\u11ab\u1100\u116e\u11a8",
              "\u1100\u0301\u1161", "e\u0327\u0301", "e\u0301\u0327", "o\u031b\u0323"],
    "punctuation": ["!!!", "?!", "...", "—", "–", "«»", "„“", "¿¡", "()", "[]{}", "<>", "…", "‰",
                    "§", "¶", "†", "•", "、。", "「」", "・", "'\"", "`~^", "$€£¥", "+=-*/",
                    "|\\", "_", "‽", "⸮", "﹏", "＂", "！", "\U00016e97"],
    "specials": list(SPECIALS) + ["[mask]", "[Mask]", "[MA\u200bSK]", "[[MASK]]", "x[MASK]y",
                                  "[UNK", "MASK]", "[CLS][SEP]", "[MAS\u0301K]", "Σ[SEP]Σ",
                                  "ΑΣ[MASK]", "[ MASK ]", "[\u0130]"],
    "numbers": ["1,234.56", "١٢٣", "①", "½", "10⁶", "3×4", "٣", "𝟙𝟚", "Ⅻ", "ⅻ", "0x1F", "Ⓐ"],
    "long": ["a" * 100, "a" * 101, "ab" * 60, "supercalifragilisticexpialidocious",
             "é" * 100, "é" * 101, "e\u0301" * 60, "x" * 99 + "é", "İ" * 60, "İ" * 40,
             "ﬃ" * 101, "Σ" * 101],
}


def sigma_word(rng):
    """A word with Σ (or σ, ς) at a random position among cased letters, case-ignorable
    characters and characters that are neither."""
    parts = []
    for _ in range(rng.randint(1, 7)):
        r = rng.random()
        if r < 0.3:
            parts.append(rng.choice("ΣΣΣσς"))
        elif r < 0.6:
            parts.append(rng.choice(GREEK_CASED) if rng.random() < 0.8 else rng.choice("AbZß"))
        elif r < 0.85:
            parts.append("".join(rng.choice(CASE_IGNORABLE) for _ in range(rng.randint(1, 3))))
        else:
            parts.append(rng.choice(NEITHER))
    return "".join(parts)


def special_casing_word(rng, special):
    c = chr(rng.choice(special))
    forms = [c, c + c, "a" + c + "b", c.upper(), "Σ" + c + "Σ", c + "\u0301",
             "İ" + c, c + "[MASK]"]
    return rng.choice(forms)


def random_code_points(rng, comparable, n):
    return "".join(chr(rng.choice(comparable)) for _ in range(n))


def generate(vocab_lines, comparable, special, count, seed):
    rng = random.Random(seed)
    names = sorted(POOLS)
    separators = POOLS["whitespace"] + POOLS["invisible"]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.22:
                part = rng.choice(vocab_lines)
                if part.startswith("##"):
                    part = part[2:]
                roll = rng.random()
                part = part.upper() if roll < 0.25 else part.title() if roll < 0.4 else part
            elif r < 0.37:
                part = sigma_word(rng)
            elif r < 0.45:
                part = special_casing_word(rng, special)
            elif r < 0.55:
                part = random_code_points(rng, comparable, rng.randint(1, 4))
            else:
                part = rng.choice(POOLS[rng.choice(names)])
            parts.append(part)
            s = rng.random()
            parts.append(" " if s < 0.55 else "" if s < 0.75 else rng.choice(separators))
        texts.append("".join(parts))
    return texts


BAD_UTF8 = [b"\x80", b"\xbf", b"\xc0\xaf", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80", b"\xff", b"\xfe\xfe", b"\xc2", b"\xe0\x80\x80", b"\xf8\x88",
            b"\xce", b"\xcf\x83\x80"]


def splice_ill_formed(text, rng):
    data = bytearray(text.encode("utf-8"))
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(data))
        while at < len(data) and (data[at] & 0xC0) == 0x80:  # at a character boundary
            at += 1
        data[at:at] = rng.choice(BAD_UTF8)
    return bytes(data)


# ---------------------------------------------------------------------------------------

class DifferentialChecks:
    """The comparisons, for one setting of BertTokenizer (SETTING, a key of SETTINGS); FORMS are
    the code-point forms compared (all three for the uncased default)."""
    SETTING = "uncased"
    FORMS = (("alone", "{}"), ("inside a word", "a{}b"),
             ("before a word-final capital sigma", "\u0391{}\u03a3"))

    @classmethod
    def setUpClass(cls):
        with open(VOCAB, encoding="utf-8") as f:
            cls.vocab_lines = f.read().rstrip("\n").split("\n")
        kind, settings = SETTINGS[cls.SETTING]
        cls.vocab_path = VOCAB
        if kind == "cased":
            cls.vocab_lines = cased_vocabulary(cls.vocab_lines)
            cls.scratch = tempfile.TemporaryDirectory()
            cls.vocab_path = os.path.join(cls.scratch.name, "vocab.txt")
            with open(cls.vocab_path, "w", encoding="utf-8") as f:
                f.write("\n".join(cls.vocab_lines) + "\n")
        cls.settings = cli_settings(settings)
        cls.reference = BertReference(cls.vocab_lines, **settings)
        cls.comparable, cls.left_out = comparable_code_points()
        cls.special = special_casing_code_points()

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "scratch"):
            cls.scratch.cleanup()

    def setUp(self):
        require_input(CLI, "build it with `cmake --build --preset native -j 2`", executable=True)
        require_input(os.path.join(UCD, "DerivedAge.txt"), "apt-get install unicode-data")

    def cli_lines(self, texts):
        return cli_ids_of_lines(texts, self.vocab_path, self.settings)

    def cli_bytes(self, byte_strings):
        return cli_ids_of_bytes(byte_strings, self.vocab_path, self.settings)

    def assert_no_mismatch(self, label, inputs, expected, got, describe=None):
        describe = describe or (lambda b: repr(b.decode("utf-8", errors="backslashreplace")))
        mismatches = [(x, e, g) for x, e, g in zip(inputs, expected, got) if e != g]
        print(f"\n{self.SETTING}: {label}: {len(inputs)} inputs, {len(mismatches)} id mismatches")
        if mismatches:
            lines = [f"{describe(x)}\n    reference {e}\n    cli       {g}"
                     for x, e, g in mismatches[:SHOWN]]
            self.fail(f"{self.SETTING}: {label}: {len(mismatches)} of {len(inputs)} inputs disagree; first:\n"
                      + "\n".join(lines))

    def test_every_code_point(self):
        items = [cp for cp in self.comparable if cp != 0x0A]  # --lines: one text per line
        print(f"\n{self.SETTING}: every code point: {len(items)} scalar values compared, {self.left_out} left "
              f"out (assigned in only one of Python's Unicode "
              f"{unicodedata.unidata_version} and the tables' version)")
        for label, form in self.FORMS:
            words = [form.format(chr(cp)) for cp in items]
            lines = [" ".join(words[i:i + WORDS_PER_LINE])
                     for i in range(0, len(words), WORDS_PER_LINE)]
            got = self.cli_lines(lines)
            expected = [self.reference.encode(text) for text in lines]
            bad = [i for i, (e, g) in enumerate(zip(expected, got)) if e != g]
            if bad:  # name the code points: each word of the failing lines on its own
                suspects = [w for i in bad[:SHOWN] for w in lines[i].split(" ")]
                self.assert_no_mismatch(
                    f"code points {label}", suspects,
                    [self.reference.encode(w) for w in suspects], self.cli_lines(suspects),
                    describe=lambda w: " ".join("U+%04X" % ord(c) for c in w))
                self.fail(f"code points {label}: lines disagree but no single word does")
            print(f"{self.SETTING}: code points {label}: {len(words)} words in {len(lines)} lines, 0 id mismatches")

    def test_generated_corpus(self):
        texts = generate(self.vocab_lines, self.comparable, self.special, GENERATED, SEED)
        rng = random.Random(SEED + 1)
        inputs = [t.encode("utf-8") for t in texts[:GENERATED - ILL_FORMED]]
        inputs += [splice_ill_formed(t, rng) for t in texts[GENERATED - ILL_FORMED:]]
        got = self.cli_bytes(inputs)
        expected = [self.reference.encode(b) for b in inputs]
        sigmas = sum(1 for t in texts if "\u03a3" in t)
        print(f"\n{self.SETTING}: generated corpus: seed {SEED}, {len(texts)} strings, {sigmas} with a capital "
              f"sigma, {ILL_FORMED} with ill-formed UTF-8")
        self.assert_no_mismatch("generated corpus", inputs, expected, got)
        # The cased settings' point: case and NFC change ids here, so the comparison is not the
        # uncased one again.
        if self.SETTING != "uncased":
            uncased = BertReference(self.vocab_lines)
            differ = sum(1 for b, e in zip(inputs[:2000], expected[:2000]) if uncased.encode(b) != e)
            print(f"{self.SETTING}: {differ} of the first 2000 texts get other ids than the uncased settings give")
            self.assertGreater(differ, 200)

    def test_special_casing_entries(self):
        words = []
        for cp in self.special:
            c = chr(cp)
            words += [c, "a" + c, c + "b", "a" + c + "b", "\u0391" + c + "\u03a3",
                      "\u0391\u03a3" + c, c + c + c, c.upper()]
        inputs = [w.encode("utf-8") for w in words]
        self.assert_no_mismatch(f"SpecialCasing.txt entries ({len(self.special)} code points)",
                                inputs, [self.reference.encode(b) for b in inputs],
                                self.cli_bytes(inputs))


class TokenizerDifferentialTest(DifferentialChecks, unittest.TestCase):
    def test_the_reference_on_hand_checked_cases(self):
        # Ids are 0-based vocab.txt lines: σ 1173, ##α 14608, ##σ 29733, ##ς 19579.
        line = {p: i for i, p in enumerate(self.vocab_lines)}
        encode = self.reference.encode
        self.assertEqual(encode("Hello, world!"), [101, line["hello"], line[","], line["world"],
                                                   line["!"], 102])
        # transformers lowercases one character at a time: Σ is σ wherever it stands.
        self.assertEqual(encode("ΣΑΣ"), [101, 1173, 14608, 29733, 102])
        self.assertEqual(encode("σας"), [101, 1173, 14608, 19579, 102])
        self.assertEqual(encode("İ"), [101, line["i"], 102])
        self.assertEqual(encode("[MASK] [mask]"), [101, 103, line["["], line["mask"], line["]"],
                                                   102])
        self.assertEqual(encode("a" * 101), [101, 100, 102])
        self.assertEqual(encode(b"a\xffb"), [101, line["ab"], 102])



class CasedTokenizerTest(DifferentialChecks, unittest.TestCase):
    """bert-base-cased's settings (and the multilingual cased models'): no lowercasing, accents
    kept, the text in NFC."""
    SETTING = "cased"
    FORMS = (("inside a word", "a{}b"), ("after a capital", "A{}"))

    def test_the_reference_on_hand_checked_cases(self):
        line = {p: i for i, p in enumerate(self.vocab_lines)}
        encode = self.reference.encode
        self.assertEqual(encode("Café"), [101, line["Café"], 102])
        # NFC: an accent typed as its own code point is composed with its letter.
        self.assertEqual(encode("Cafe\u0301"), [101, line["Café"], 102])
        self.assertEqual(encode("Hello"), [101, line["Hello"], 102])
        self.assertNotEqual(encode("Hello"), encode("hello"))
        self.assertEqual(encode("\u1100\u1161"), [101, line["\uac00"], 102])
        # Typed special tokens still need their exact case.
        self.assertEqual(encode("[MASK] [mask]"), [101, 103, line["["], line["mask"], line["]"], 102])

    def test_offsets_of_a_composed_character(self):
        result = subprocess.run([CLI, "tokenize", "--vocab", self.vocab_path, "--json", *self.settings, "Cafe\u0301 x"],
                                capture_output=True, check=True)
        tokens = json.loads(result.stdout)["tokens"]
        # "é" comes from "e" and U+0301: the piece spans both input code points.
        self.assertEqual([(t["text"], t["start"], t["end"]) for t in tokens[1:-1]], [("Café", 0, 5), ("x", 6, 7)])


class CasedStripAccentsTest(DifferentialChecks, unittest.TestCase):
    SETTING = "cased, strip_accents=True"
    FORMS = (("inside a word", "a{}b"),)


class UncasedKeepAccentsTest(DifferentialChecks, unittest.TestCase):
    SETTING = "uncased, strip_accents=False"
    FORMS = (("inside a word", "a{}b"),)


class CasedWholeCjkTest(DifferentialChecks, unittest.TestCase):
    SETTING = "cased, tokenize_chinese_chars=False"
    FORMS = (("inside a word", "a{}b"),)


if __name__ == "__main__":
    unittest.main()
