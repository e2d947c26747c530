// The independent reference for the tokenizer tests: @huggingface/tokenizers (npm, pure JS)
// given a bert-base-uncased tokenizer.json built from model_data/vocab.txt, plus the pieces the
// parity test needs to derive offsets and to explain where the library departs from Hugging
// Face's Python BertTokenizer (see tokenizer_parity.test.mjs).
import { existsSync, readFileSync } from "node:fs";

export const SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const DERIVED_AGE = "/usr/share/unicode/DerivedAge.txt";

// ---------------------------------------------------------------------------------------
// The reference tokenizer.json (bert-base-uncased, as transformers writes it).

export function buildTokenizerJson(vocabLines) {
  const vocab = {};
  vocabLines.forEach((piece, id) => (vocab[piece] = id));
  const special = (content) => ({
    id: vocab[content], content, single_word: false, lstrip: false, rstrip: false,
    normalized: false, special: true,
  });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: SPECIALS.map(special),
    normalizer: {
      type: "BertNormalizer", clean_text: true, handle_chinese_chars: true,
      strip_accents: null, lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
        { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } },
      ],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [vocab["[CLS]"]], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [vocab["[SEP]"]], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: {
      type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##",
      max_input_chars_per_word: 100, vocab,
    },
  };
}

// ---------------------------------------------------------------------------------------
// Unicode 15.0 assignment (the Python target's version), from the UCD's DerivedAge.txt.

export function loadAssigned15() {
  if (!existsSync(DERIVED_AGE)) {
    throw new Error("install Debian's unicode-data (apt-get install unicode-data)");
  }
  const ranges = [];
  for (const line of readFileSync(DERIVED_AGE, "utf8").split("\n")) {
    const m = line.match(/^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*(\d+)\.(\d+)/);
    if (!m) continue;
    const [major, minor] = [Number(m[3]), Number(m[4])];
    if (major > 15 || (major === 15 && minor > 0)) continue;
    ranges.push([parseInt(m[1], 16), parseInt(m[2] ?? m[1], 16)]);
  }
  ranges.sort((a, b) => a[0] - b[0]);
  return (cp) => {
    if ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe) return false;  // noncharacters are Cn
    let lo = 0, hi = ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < ranges[mid][0]) hi = mid - 1;
      else if (cp > ranges[mid][1]) lo = mid + 1;
      else return true;
    }
    return false;
  };
}

export const isAstralCjk = (cp) =>
  (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
  (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
  (cp >= 0x2f800 && cp <= 0x2fa1f);

// ---------------------------------------------------------------------------------------
// The derived reference: ids, offsets and word indices, patched to the Python semantics.

export function makeReference(tokenizer, assigned15) {
  const normalizer = tokenizer.normalizer;
  const model = tokenizer.model;
  const wordPattern = new RegExp(tokenizer.pre_tokenizer.pattern.source, "gu");
  const id = (piece) => model.tokens_to_ids.get(piece);
  const cache = new Map();
  const normalizeOne = (ch) => {
    let out = cache.get(ch);
    if (out === undefined) {
      const cp = ch.codePointAt(0);
      if (isAstralCjk(cp)) out = ` ${ch} `;           // astral-cjk
      else if (!assigned15(cp)) out = "";              // unassigned
      else out = normalizer(ch);
      cache.set(ch, out);
    }
    return out;
  };

  return function encode(text) {
    const cps = [...text];
    const tokens = [{ id: id("[CLS]"), start: -1, end: -1, word: -1 }];
    let word = 0;
    let segment = [];  // input indices of the current stretch between typed special tokens

    const flush = () => {
      const chars = [];   // normalized characters
      const origin = [];  // (chars.length) input index of each
      for (const i of segment) {
        for (const ch of normalizeOne(cps[i])) {
          chars.push(ch);
          origin.push(i);
        }
      }
      segment = [];
      const joined = chars.join("");
      // UTF-16 offset of each character, to map regex matches back to characters.
      const charAt = new Map();
      let unit = 0;
      chars.forEach((ch, k) => { charAt.set(unit, k); unit += ch.length; });
      for (const m of joined.matchAll(wordPattern)) {
        const first = charAt.get(m.index);
        const length = [...m[0]].length;
        const span = (a, b) => {
          const o = origin.slice(first + a, first + b);
          return [Math.min(...o), Math.max(...o) + 1];
        };
        let offset = 0;
        for (const piece of model.encode([m[0]])) {
          if (piece === "[UNK]") {
            const [start, end] = span(0, length);
            tokens.push({ id: id(piece), start, end, word });
            offset = length;
            continue;
          }
          const n = [...(offset > 0 ? piece.slice(2) : piece)].length;
          const [start, end] = span(offset, offset + n);
          tokens.push({ id: id(piece), start, end, word });
          offset += n;
        }
        word += 1;
      }
    };

    for (let i = 0; i < cps.length; ) {
      const special = cps[i] === "[" &&
        SPECIALS.find((s) => cps.slice(i, i + s.length).join("") === s);
      if (special) {
        flush();
        tokens.push({ id: id(special), start: i, end: i + special.length, word: word++ });
        i += special.length;
      } else {
        segment.push(i++);
      }
    }
    flush();
    tokens.push({ id: id("[SEP]"), start: -1, end: -1, word: -1 });
    return tokens;
  };
}

// The text rewritten so that the library, on it, must give Python's ids for the original:
// each rewrite leaves Python's ids unchanged and removes one documented library deviation.
// Returns the rewritten text and the reasons that changed it.
export function pythonEquivalent(text, assigned15) {
  const reasons = new Set();
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (isAstralCjk(cp)) {
      out += ` ${ch} `;
      reasons.add("astral-cjk");
    } else if (!assigned15(cp)) {
      reasons.add("unassigned");
    } else if (ch === "Σ") {
      out += "σ";
      reasons.add("final-sigma");
    } else {
      out += ch;
    }
  }
  return { text: out, reasons: [...reasons] };
}
