// Prints the rows of the table in tests/cpp/tokenizer_test.cc: for each input, the ids and
// pieces that @huggingface/tokenizers (independent of the C++ code) gives with the
// bert-base-uncased tokenizer.json of tokenizer_reference.mjs. Where that library departs from
// Python's BertTokenizer the ids come from the library on a Python-equivalent rewrite of the
// text (tokenizer_parity.test.mjs explains each rewrite) and the row says so.
//
// usage: node tests/js/make_tokenizer_cases.mjs > /tmp/rows.txt  (then review and paste)
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { buildTokenizerJson, loadAssigned15, pythonEquivalent } from "./tokenizer_reference.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const vocabLines = readFileSync(join(ROOT, "model_data", "vocab.txt"), "utf8")
  .replace(/\n$/, "").split("\n");
const tokenizer = new Tokenizer(buildTokenizerJson(vocabLines), {});
const assigned15 = loadAssigned15();

export const CASES = [
  ["plain", "Hello, world!"],
  ["accents", "Café naïve RÉSUMÉ Ångström"],
  ["decomposed accents", "Cafe\u0301 nai\u0308ve"],
  ["turkish dotted capital I", "İstanbul İZMİR"],
  ["turkish dotless i", "ılık ışık"],
  ["german sharp s", "Straße STRASSE ẞ"],
  ["cjk ideographs split", "東京は日本の首都です"],
  ["hangul and kana stay whole", "한국어 ひらがな"],
  ["cjk beyond the bmp", "\u{20000}\u{2A700}x"],
  ["emoji", "I ❤️ NY 😀👍🏽"],
  ["zero-width characters", "zero\u200bwidth\u200c\u200djoin\ufeff"],
  ["control characters", "a\u0001b\u0002c\u007fd\u0085e"],  // NUL: a separate test
  ["combining marks alone", "\u0301\u0308 x\u0327\u0301"],
  ["arabic", "مرحبا بالعالم الْعَرَبِيَّة"],
  ["hebrew", "שָׁלוֹם עולם"],
  ["greek final sigma", "ΟΔΟΣ Σίσυφος"],
  ["punctuation runs", "Wait...what?!?! (yes) [no] {maybe} --- «quoted»"],
  ["contractions", "don't can't I'm y'all"],
  ["numbers with separators", "1,234,567.89 and 3.14 or 1.000,5"],
  ["url and email", "https://example.com/path?q=1&r=2 user@example.org"],
  ["very long word", "a".repeat(101) + " ok"],
  ["word of exactly 100 letters", "b".repeat(100)],
  ["long word made short by accent stripping", "e\u0301".repeat(60)],
  ["whitespace only", " \t\n\r\u00a0\u3000\u2028"],
  ["empty", ""],
  ["typed special tokens", "the [MASK] sat on [CLS] the [SEP] mat [PAD] [UNK]"],
  ["special tokens need exact case", "[mask] [Mask]"],
  ["special tokens glued to words", "a[MASK]b[[MASK]]"],
  ["zero-width space inside a special token", "[MA\u200bSK]"],
  ["private use and unassigned", "x\ue000y\u0378z"],
  ["ligature is not decomposed", "ﬁne"],
];

const cppString = (text) => {
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      // Octal escapes of the UTF-8 bytes: C++ forbids universal character names for controls.
      for (const byte of Buffer.from(ch, "utf8")) out += "\\" + byte.toString(8).padStart(3, "0");
    }
    else if (cp >= 0xa0 && /[\p{C}\p{Z}\p{M}]/u.test(ch)) {
      out += cp > 0xffff ? `\\U${cp.toString(16).toUpperCase().padStart(8, "0")}`
                         : `\\u${cp.toString(16).toUpperCase().padStart(4, "0")}`;
    } else out += ch;
  }
  return `"${out}"`;
};

for (const [name, text] of CASES) {
  const equivalent = pythonEquivalent(text, assigned15);
  const raw = tokenizer.encode(text).ids.join(",");
  const ids = tokenizer.encode(equivalent.text).ids;
  const note = raw === ids.join(",") ? "" : ` (library rewrite: ${equivalent.reasons.join(", ")})`;
  const pieces = ids.map((id) => vocabLines[id]);
  console.log(`    {"${name}${note}", ${cppString(text)},\n     {${ids.join(", ")}},\n     // ${pieces.join(" ")}\n    },`);
}
