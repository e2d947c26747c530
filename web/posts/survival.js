// Which vocabulary entries survive being typed: each of the model's entries is typed back as
// text and tokenized, and an entry survives when its own id comes back. Shared by the vocabulary
// post (web/posts/vocabulary.js, in the reader's browser) and tests/js/vocabulary_survival.test.mjs
// (which runs it with the wasm engine and with the native CLI tokenizer and compares them).
//
// The typing-back rule:
//   - An entry that does not start with "##" is a whole word: it is typed as itself, alone.
//     It survives when the text tokenizes to [CLS], the entry's id, [SEP].
//   - A "##" piece continues a word, so it is typed after a prefix that starts the word: first
//     "a" ("##ing" is typed "aing"). It survives when the text tokenizes to [CLS], the prefix's
//     id, the piece's id, [SEP]. Where "a" fails, the greedy longest match may simply have taken
//     part of the piece into the first token ("aing" is "ain" + "##g"), so the piece is typed
//     once more after the continuation prefix: a one-letter entry that no longer whole-word
//     entry begins with (continuationPrefix below), after which the longest match has to stop.
//     Failing both, it does not survive.
// The rest of this file says why an entry failed (failureCause).

export const FIRST_PREFIX = 'a';

const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u{20000}-\u{2a6df}\u{2a700}-\u{2ebef}\u{2f800}-\u{2fa1f}]/u;
// BERT splits at every Unicode punctuation character and every ASCII character that is neither
// a letter, a digit nor a space ($, +, <, =, >, ^, `, |, ~ included).
const PUNCTUATION = /[\p{P}!-/:-@[-`{-~]/u;

// The first one-letter (lower-case, not CJK) whole-word entry that begins no other whole-word
// entry, or null: after it, the longest match of a word can only stop at the letter.
export function continuationPrefix(vocab) {
  const starts = new Map();
  for (const entry of vocab) {
    if (entry.startsWith('##') || entry.length < 2) continue;
    const first = String.fromCodePoint(entry.codePointAt(0));
    if (first !== entry) starts.set(first, true);
  }
  for (const entry of vocab) {
    if (entry.startsWith('##') || [...entry].length !== 1 || CJK.test(entry) || !/\p{Ll}/u.test(entry)) continue;
    if (!starts.has(entry)) return entry;
  }
  return null;
}

const isPiece = (entry) => entry.startsWith('##') && entry.length > 2;

// One text per entry for the first pass (whole words as themselves, pieces after "a").
export function firstTexts(vocab) {
  return vocab.map((entry) => (isPiece(entry) ? FIRST_PREFIX + entry.slice(2) : entry));
}

const same = (ids, expected) => ids.length === expected.length && ids.every((v, k) => v === expected[k]);

// Types every entry back. `idsOf(texts)` gives, for each text, its ids with [CLS] and [SEP]
// (an array of arrays, or a promise of one). Returns the survivors' count, the failures
// ({id, entry, text, ids}), how many pieces failed after "a" alone and came back after the
// continuation prefix, and every text typed (for the tests' comparison with another tokenizer).
export async function typeBack(vocab, idsOf) {
  const index = new Map(vocab.map((entry, id) => [entry, id]));
  const cls = index.get('[CLS]');
  const sep = index.get('[SEP]');
  const prefix = continuationPrefix(vocab);
  const texts = firstTexts(vocab);
  const first = await idsOf(texts);
  const expected = (id) => {
    const entry = vocab[id];
    return isPiece(entry) ? [cls, index.get(FIRST_PREFIX), id, sep] : [cls, id, sep];
  };
  const retry = [];
  const failures = new Map();
  for (let id = 0; id < vocab.length; ++id) {
    if (same(first[id], expected(id))) continue;
    if (isPiece(vocab[id]) && prefix !== null) retry.push(id);
    else failures.set(id, { id, entry: vocab[id], text: texts[id], ids: first[id] });
  }
  const retryTexts = retry.map((id) => prefix + vocab[id].slice(2));
  const second = retry.length ? await idsOf(retryTexts) : [];
  let rescued = 0;
  retry.forEach((id, k) => {
    if (same(second[k], [cls, index.get(prefix), id, sep])) ++rescued;
    else failures.set(id, { id, entry: vocab[id], text: retryTexts[k], ids: second[k] });
  });
  const list = [...failures.values()].sort((a, b) => a.id - b.id);
  return {
    total: vocab.length, survivors: vocab.length - list.length, failures: list, prefix,
    firstPassPieceFailures: retry.length, rescued, texts: [...texts, ...retryTexts],
  };
}

// The causes, in the order failureCause tries them, with what the page says of each.
export const CAUSES = Object.freeze({
  unused: 'unused placeholders ([unused0] and the rest): typed, they are cut at the brackets, which are punctuation',
  special: 'special entries that do not come back when typed',
  unknown: 'entries with a character that has no entry of its own after normalisation, so the word becomes [UNK]',
  cjk: 'CJK splitting: every CJK ideograph becomes a word of its own, so it can never continue a word (##) nor share one',
  punctuation: 'punctuation split: the tokenizer cuts a word at every punctuation character before matching, so punctuation can never continue a word (##) nor share one',
  split: 'split at a space or a control character',
  accents: 'accent stripping: accented text is decomposed and its accents dropped, so an accented entry is never matched',
  case: 'lower-casing: the text is lower-cased, so an entry with a capital is never matched',
  normalisation: 'other normalisation before matching',
  greedy: 'unreachable by greedy longest match: a longer entry always wins',
});

// Why one failure failed, from the tokens the tokenizer gave for its typed text
// ({id, text, start, end, word} with [CLS] and [SEP]), `unkId` the id of [UNK].
export function failureCause(failure, tokens, unkId) {
  const { entry, text } = failure;
  if (/^\[unused\d+\]$/.test(entry)) return 'unused';
  if (/^\[[A-Z]+\]$/.test(entry)) return 'special';
  const inner = tokens.filter((t) => t.word >= 0);
  if (inner.some((t) => t.id === unkId)) return 'unknown';
  if (new Set(inner.map((t) => t.word)).size > 1) {
    if (CJK.test(entry)) return 'cjk';
    if (PUNCTUATION.test(entry)) return 'punctuation';
    return 'split';
  }
  const joined = inner.map((t) => t.text.replace(/^##/, '')).join('');
  if (joined !== text) {
    if (/\p{M}/u.test(text.normalize('NFD'))) return 'accents';
    if (text.toLowerCase() !== text) return 'case';
    return 'normalisation';
  }
  return 'greedy';
}
