// Parity of `attention-cli tokenize` with an independent tokenizer: @huggingface/tokenizers
// (npm, a pure JS implementation) loaded with a bert-base-uncased tokenizer.json built here from
// model_data/vocab.txt.
//
// The JS library reports ids but no offsets, so the reference offsets are derived with the
// library's own components: its BertNormalizer applied to one input code point at a time (so
// every normalized character knows the code point it came from), its BertPreTokenizer pattern,
// and its WordPiece model on each word. A piece spans the input code points its characters came
// from; that is the rule documented in wasm/core/tokenizer.cc.
//
// Where the JS library departs from Hugging Face's Python BertTokenizer (the target), the
// derived reference is patched to the Python behaviour, and every string on which the
// library's own encode() disagrees with the CLI must be explained by one of these reasons:
//   astral-cjk    the library isolates CJK ideographs only inside the BMP (it walks UTF-16
//                 units); Python isolates U+20000.. and U+2F800.. ranges too.
//   unassigned    Python 3.12 (Unicode 15.0) drops code points that are unassigned there (Cn,
//                 noncharacters included); the library keeps Cn, and Node's newer Unicode assigns
//                 some of them. Assignment is read from DerivedAge.txt of Unicode 15.0.
//   final-sigma   the library lowercases the whole text, so Σ at the end of a word becomes ς;
//                 transformers lowercases one character at a time, so Σ is always σ.
// Each reason comes with a rewrite of the text that leaves Python's ids unchanged and removes
// the deviation (space out astral ideographs, delete unassigned code points, write Σ as σ); the
// library's ids on the rewritten text must equal the CLI's ids on the original, for every text.
// (The library lowercases before stripping accents, as Python does, and skips NFC, which cannot
// change ids: NFD follows it.) The bar: zero disagreements with the patched reference (ids,
// offsets, word indices) and zero unexplained disagreements with the library's ids.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import {
  buildTokenizerJson, loadAssigned15, makeReference, pythonEquivalent,
} from "./tokenizer_reference.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CLI = process.env.ATTN_CLI ?? join(ROOT, "build", "native", "attention-cli");
const VOCAB_PATH = join(ROOT, "model_data", "vocab.txt");
const GENERATED_COUNT = 6000;
const SEED = 20240531;

// ---------------------------------------------------------------------------------------
// The CLI, called once for many texts (--batch-hex: one hex-encoded text per line in, one
// --json object per line out).

function runCli(byteStrings) {
  const input = byteStrings.map((b) => Buffer.from(b).toString("hex")).join("\n") + "\n";
  const result = spawnSync(
    CLI, ["tokenize", "--vocab", VOCAB_PATH, "--batch-hex", "--max-length", "1000000"],
    { input, maxBuffer: 1 << 30, encoding: "utf8" });
  assert.equal(result.status, 0, `attention-cli failed: ${result.stderr}`);
  const lines = result.stdout.trimEnd().split("\n");
  assert.equal(lines.length, byteStrings.length, "one output line per input text");
  return lines.map((line) => JSON.parse(line));
}

// Differences between the reference tokens and the CLI's, as readable lines.
function compare(reference, cli) {
  const diffs = [];
  if (cli.truncated) diffs.push("CLI truncated the text");
  const n = Math.max(reference.length, cli.tokens.length);
  for (let k = 0; k < n; ++k) {
    const r = reference[k], c = cli.tokens[k];
    if (!r || !c || r.id !== c.id || r.start !== c.start || r.end !== c.end || r.word !== c.word) {
      diffs.push(`#${k} reference ${JSON.stringify(r)} cli ${JSON.stringify(c)}`);
    }
  }
  return diffs;
}

// ---------------------------------------------------------------------------------------
// Generated strings: a seeded mix of scripts, marks, punctuation, whitespace and oddities.

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const POOLS = {
  ascii: ["the", "quick", "Hello", "WORLD", "don't", "isn't", "rock'n'roll", "U.S.A.", "e-mail",
    "3.14", "1,000,000", "1.234,56", "https://example.com/a/b?c=d&e=f#g", "user@example.org",
    "C++", "#hashtag", "@mention", "$100", "50%", "2024-01-01", "12:30", "O'Neill", "tokenization",
    "unaffable", "Transformers", "xyzzy", "qwertyuiop", "a", "I", "x86_64", "--flag=1"],
  accents: ["café", "naïve", "résumé", "Ångström", "Straße", "STRASSE", "ẞ", "İstanbul", "ıi",
    "Œuvre", "Æsir", "ǅungla", "ﬁne", "Ǆ", "crème brûlée", "São Paulo", "Zürich", "Łódź",
    "Đặng", "Việt Nam", "ǰ", "ŉ", "Å", "K"],
  marks: ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "q\u0307", "x\u0316\u0301", "\u0301",
    "\u20dd", "\u0903", "\u093f", "a\u034f\u0301", "\u1d16d\u1d165", "𝅘𝅥𝅮", "i\u0307", "\u0345",
    "Ι\u0345", "\u0e31", "a\u0328\u0301", "\u302e"],
  greek: ["ΟΔΟΣ", "Σίσυφος", "ΣΑΣ", "ς", "ΐ", "Ω", "\u2126", "\u1fef", "ὈΔΥΣΣΕΎΣ", "σοφία"],
  cyrillic: ["Москва", "Ёлка", "й", "ПРИВЕТ", "Ѐ"],
  arabic: ["مرحبا بالعالم", "الْعَرَبِيَّة", "٣٫١٤", "؟", "ﻻ", "\u0640\u0640"],
  hebrew: ["שָׁלוֹם", "עברית", "״", "ﬠ"],
  indic: ["नमस्ते", "हिन्दी", "ভাষা", "தமிழ்", "ภาษาไทย", "ພາສາລາວ"],
  cjk: ["東京", "中文字符", "日本語", "한국어", "ひらがな", "カタカナ", "\uf900", "\u3400", "〇",
    "\u{20000}", "\u{2a700}", "\u{2f800}", "\u{2b820}", "\u{30000}", "\u{31350}", "\u{2ebf0}",
    "丽\u{2f801}", "漢字かな交じり文"],
  emoji: ["😀", "👍🏽", "👨‍👩‍👧", "🇩🇪", "❤️", "1️⃣", "🤖", "☃", "♥"],
  whitespace: [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u2029", "\u0085",
    "\u000b", "\u000c", "\u1680", "\u200a", "\u202f", "\u205f"],
  invisible: ["\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\u2060", "\u180e", "\u061c",
    "\u0000", "\u0001", "\u001b", "\u007f", "\u0080", "\u009f", "\ufffd", "\ue000",
    "\u{f0000}", "\ufdd0", "\ufffe", "\u{1ffff}", "\u0378", "\u{e0001}", "\u{e0100}"],
  punctuation: ["!!!", "?!", "...", "—", "–", "«»", "„“", "¿¡", "()", "[]{}", "<>", "…", "‰",
    "§", "¶", "†", "•", "、。", "「」", "・", "'\"", "`~^", "$€£¥", "+=-*/", "|\\", "_", "‽",
    "⸮", "﹏", "＂", "！"],
  specials: ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[mask]", "[Mask]", "[MA\u200bSK]",
    "[[MASK]]", "x[MASK]y", "[UNK", "MASK]", "[CLS][SEP]", "[MAS\u0301K]"],
  numbers: ["1,234.56", "١٢٣", "①", "½", "10⁶", "3×4", "٣", "𝟙𝟚", "Ⅻ", "0x1F"],
  long: ["a".repeat(100), "a".repeat(101), "ab".repeat(60), "supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis", "é".repeat(101), "e\u0301".repeat(60),
    "x".repeat(99) + "é", "ü".repeat(100)],
};

function randomCodePoint(rand) {
  for (;;) {
    const cp = rand() < 0.7 ? Math.floor(rand() * 0x10000) : Math.floor(rand() * 0x110000);
    if (cp < 0xd800 || cp > 0xdfff) return String.fromCodePoint(cp);
  }
}

function generateStrings(count, vocabLines) {
  const rand = mulberry32(SEED);
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const names = Object.keys(POOLS);
  const out = [];
  for (let s = 0; s < count; ++s) {
    const parts = [];
    const n = 1 + Math.floor(rand() * 12);
    for (let k = 0; k < n; ++k) {
      const r = rand();
      let part;
      if (r < 0.25) {
        part = pick(vocabLines).replace(/^##/, "");
        if (rand() < 0.3) part = part.toUpperCase();
      } else if (r < 0.35) {
        part = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => randomCodePoint(rand)).join("");
      } else {
        part = pick(POOLS[pick(names)]);
      }
      parts.push(part);
      const sep = rand();
      parts.push(sep < 0.55 ? " " : sep < 0.75 ? "" : pick(POOLS.whitespace.concat(POOLS.invisible)));
    }
    out.push(parts.join(""));
  }
  return out;
}

// Texts as bytes with ill-formed UTF-8 spliced in; the reference reads them the way Python's
// errors="replace" and WHATWG's TextDecoder both do (one U+FFFD per maximal subpart).
function generateInvalidUtf8(texts) {
  const rand = mulberry32(SEED + 1);
  const bad = [[0x80], [0xbf], [0xc0, 0xaf], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80], [0xff], [0xfe, 0xfe], [0xc2], [0xe0, 0x80, 0x80], [0xf8, 0x88]];
  return texts.map((text) => {
    const bytes = [...Buffer.from(text, "utf8")];
    const n = 1 + Math.floor(rand() * 3);
    for (let k = 0; k < n; ++k) {
      let at = Math.floor(rand() * (bytes.length + 1));
      while (at < bytes.length && (bytes[at] & 0xc0) === 0x80) ++at;  // at a character boundary
      bytes.splice(at, 0, ...bad[Math.floor(rand() * bad.length)]);
    }
    return Uint8Array.from(bytes);
  });
}

// ---------------------------------------------------------------------------------------

let tokenizer, reference, assigned15, vocabLines;

before(() => {
  assert.ok(existsSync(CLI), `build the CLI first (scripts/build.sh native): ${CLI}`);
  vocabLines = readFileSync(VOCAB_PATH, "utf8").replace(/\n$/, "").split("\n");
  assert.equal(vocabLines.length, 30522);
  tokenizer = new Tokenizer(buildTokenizerJson(vocabLines), {});
  assigned15 = loadAssigned15();
  reference = makeReference(tokenizer, assigned15);
});

// Runs one set of texts through the CLI and both references; returns counts.
function check(label, texts, bytes = texts.map((t) => Buffer.from(t, "utf8"))) {
  const results = runCli(bytes);
  let disagreements = 0, unexplained = 0, libraryDeviations = 0;
  const byReason = {};
  const shown = [];
  texts.forEach((text, k) => {
    const cli = results[k];
    const diffs = compare(reference(text), cli);
    if (diffs.length) {
      disagreements += 1;
      if (shown.length < 5) shown.push(`${JSON.stringify(text)}\n    ${diffs.slice(0, 3).join("\n    ")}`);
    }
    const cliIds = cli.tokens.map((t) => t.id).join(" ");
    if (tokenizer.encode(text).ids.join(" ") !== cliIds) {
      libraryDeviations += 1;
      const equivalent = pythonEquivalent(text, assigned15);
      const libraryIds = tokenizer.encode(equivalent.text).ids.join(" ");
      if (libraryIds !== cliIds || equivalent.reasons.length === 0) {
        unexplained += 1;
        if (shown.length < 10) shown.push(`unexplained ${JSON.stringify(text)}: library ${libraryIds} cli ${cliIds}`);
      }
      for (const r of equivalent.reasons) byReason[r] = (byReason[r] ?? 0) + 1;
    }
  });
  console.log(`${label}: ${texts.length} texts; ${disagreements} disagreements with the patched ` +
    `reference (ids, offsets, words); the library's own ids differ on ${libraryDeviations}, ` +
    `${unexplained} of them unexplained; reasons present there: ${JSON.stringify(byReason)}`);
  assert.equal(disagreements + unexplained, 0, shown.join("\n"));
}

test("the tokenizer.json reproduces ids read off vocab.txt by hand", () => {
  // Ids are 0-based line numbers in vocab.txt.
  const line = (p) => vocabLines.indexOf(p);
  assert.deepEqual(tokenizer.encode("Hello world!").ids, [101, line("hello"), line("world"), line("!"), 102]);
  assert.deepEqual(tokenizer.encode("Tokenization").ids, [101, line("token"), line("##ization"), 102]);
  assert.deepEqual(reference("Hello world!").map((t) => [t.start, t.end, t.word]),
    [[-1, -1, -1], [0, 5, 0], [6, 11, 1], [11, 12, 2], [-1, -1, -1]]);
});

test("the comparison catches a wrong id, offset or word index", () => {
  const [cli] = runCli([Buffer.from("Hello world!")]);
  const ref = reference("Hello world!");
  assert.deepEqual(compare(ref, cli), []);
  for (const field of ["id", "start", "end", "word"]) {
    const broken = structuredClone(cli);
    broken.tokens[2][field] += 1;
    assert.equal(compare(ref, broken).length, 1, field);
  }
  const shorter = structuredClone(cli);
  shorter.tokens.splice(1, 1);
  assert.ok(compare(ref, shorter).length > 0);
});

test("every vocabulary entry typed as text", () => {
  check("vocabulary", vocabLines.map((p) => p.replace(/^##/, "")));
});

test(`${GENERATED_COUNT} generated strings`, () => {
  check("generated", generateStrings(GENERATED_COUNT, vocabLines));
});

test("generated strings with ill-formed UTF-8", () => {
  const texts = generateStrings(1000, vocabLines).map((t) => t + "!");
  const bytes = generateInvalidUtf8(texts);
  const decoded = bytes.map((b) => new TextDecoder("utf-8").decode(b));
  check("ill-formed UTF-8", decoded, bytes);
});
