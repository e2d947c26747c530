// Reading attention results, shared by every widget and by scripts/site/make_examples.mjs. A
// "result" is the engine's analyze() output, or the same schema decoded from a precomputed
// example (web/engine/result.js describes it and holds every accessor); an example carries, in
// place of hidden_states, queries, keys, values and contexts, the vectors of its one opening
// selection (x, q, the head's keys and values of every token, the token's context row).
import { attentionPosition, attentionRow, CHECKPOINT_CONVERTER, HEAD_LABEL, headLabel, headProfile, ROLE, rowStat, tokenVector } from '../engine/result.js';
import { headName, thousands } from './format.js';

// The statistics of a row the core did not analyse (a rollout row, a row recomputed here), in
// the core's field names (ROW_STAT), with n, the uniform share 1/n and the entropy's ceiling ln n.
export function rowSummary(row) {
  const n = row.length;
  let sum = 0;
  let max = -Infinity;
  let argmax = 0;
  let entropy = 0;
  for (let j = 0; j < n; ++j) {
    const p = row[j];
    sum += p;
    if (p > max) {
      max = p;
      argmax = j;
    }
    if (p > 0) entropy -= p * Math.log(p);
  }
  const maxEntropy = Math.log(n);
  return {
    n, sum, max, argmax,
    uniform: 1 / n,
    ratio_to_uniform: max * n,
    entropy,
    max_entropy: maxEntropy,
    normalized_entropy: n > 1 ? entropy / maxEntropy : 0,
  };
}

// Two sentences that differ in a few tokens (a Winograd pair: one word changed), token by token:
// the tokens both begin with and both end with are matched by place; between them, the tokens
// that differ are matched in order as far as both have them, and the rest stand alone. Returns
// the pairs {a, b} in reading order (-1 where a token has no partner) and `partner`, for each
// token of the first sentence its partner's position in the second, or -1.
export function alignTokens(first, second) {
  const a = first.tokens;
  const b = second.tokens;
  let start = 0;
  while (start < a.length && start < b.length && a[start].text === b[start].text) ++start;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end].text === b[b.length - 1 - end].text) ++end;
  const pairs = [];
  for (let i = 0; i < start; ++i) pairs.push({ a: i, b: i });
  const middleA = a.length - start - end;
  const middleB = b.length - start - end;
  for (let k = 0; k < Math.max(middleA, middleB); ++k) pairs.push({ a: k < middleA ? start + k : -1, b: k < middleB ? start + k : -1 });
  for (let k = end; k > 0; --k) pairs.push({ a: a.length - k, b: b.length - k });
  const partner = new Int32Array(a.length).fill(-1);
  for (const p of pairs) if (p.a >= 0) partner[p.a] = p.b;
  return { pairs, partner };
}

// Row A minus row B over aligned pairs (alignTokens): a token without a partner is compared with
// a weight of 0, so that the differences, like two rows that each sum to 1, sum to 0.
export function rowDifference(pairs, rowA, rowB) {
  return Float64Array.from(pairs, (p) => (p.a >= 0 ? rowA[p.a] : 0) - (p.b >= 0 ? rowB[p.b] : 0));
}

// Every head's reading of one token's row (the core's row statistics), in layer-major order.
export function headsForToken(result, token) {
  const out = [];
  for (let layer = 0; layer < result.layers; ++layer) {
    for (let head = 0; head < result.heads; ++head) out.push({ layer, head, ...rowStat(result, layer, head, token) });
  }
  return out;
}

// The labels (HEAD_LABELS) of heads that are not content heads: the positional ones (they look at
// the previous or the next token) and those fixed on one token (the token itself, [CLS] or
// [SEP]). Such a head says the same thing whatever the words are, so the page never opens on one
// by default (the trap of "the sharpest head": for every ordinary token of the preset sentences
// it is a previous- or next-token head). The posts' label chips use the same three kinds.
export const POSITIONAL_LABELS = Object.freeze([HEAD_LABEL.previous, HEAD_LABEL.next]);
export const FIXED_LABELS = Object.freeze([HEAD_LABEL.self, HEAD_LABEL.sink]);
export const NOT_CONTENT_LABELS = Object.freeze([...POSITIONAL_LABELS, ...FIXED_LABELS]);

// The default-head rule, as the page states it (web/index.html quotes it; the posts too).
export const SELECTION_RULE = 'Unless you choose a head, the figures show the one with the highest ratio to uniform for the word '
  + 'among its content heads: heads the model does not label previous-token, next-token, self or [CLS]/[SEP] sink over this sentence, '
  + 'whose largest weight for the word is on another word (not the token just before or after, not a piece of the same word, '
  + 'not punctuation, [CLS] or [SEP]; where no head qualifies, the sharpest head not so labelled).';

// Whether the core's label for the head over this sentence is not positional, self or sink.
export function isContentHead(result, layer, head) {
  return !NOT_CONTENT_LABELS.includes(headLabel(result, layer, head));
}

// Whether a row's largest weight (at `argmax`) is on another word: an ordinary token two or more
// places away that is not a piece of the token's own word (SELECTION_RULE says the same).
export function isContentRow(result, token, argmax) {
  return Math.abs(argmax - token) > 1 && result.roles[argmax] === ROLE.ordinary && result.tokens[argmax].word !== result.tokens[token].word;
}

// For one token: `sharpest`, the content head of SELECTION_RULE (largest ratio to uniform among
// content heads whose row is a content row; failing that, among content heads; failing that,
// among all heads: `tier` says which, 1 to 3), `broadest` (smallest ratio to uniform) and
// `overall`, the sharpest of all heads, with its label (often positional).
export function sharpestAndBroadest(result, token) {
  const heads = headsForToken(result, token);
  const sharpest = ruleHead(result, token, () => true, heads);
  // Broadest by the same measure as sharpest, so that the prose's range of ratios runs from the
  // broadest head's ratio to the sharpest one's.
  let broadest = heads[0];
  for (const x of heads) if (x.ratio_to_uniform < broadest.ratio_to_uniform) broadest = x;
  const overall = sharpestOf(heads);
  return { sharpest, broadest, overall: { ...overall, label: headLabel(result, overall.layer, overall.head) } };
}

// Where a row's largest weight (at `argmax`) falls, relative to the row's token, in words:
// 'the next token', 'the previous token', 'the word itself', '[CLS]', '[SEP]', or '' for another word.
export function rowRelation(result, token, argmax) {
  if (argmax === token + 1) return 'the next token';
  if (argmax === token - 1) return 'the previous token';
  if (argmax === token) return 'the word itself';
  if (result.roles[argmax] === ROLE.cls) return '[CLS]';
  if (result.roles[argmax] === ROLE.sep) return '[SEP]';
  return '';
}

// The share of the sentence's rows behind a head's label (previous-token: the rows whose largest
// weight is on the previous token, ...), or null for a label that names no single category.
export function labelShare(result, layer, head) {
  const p = headProfile(result, layer, head);
  if (!p) return null;
  switch (p.label) {
    case HEAD_LABEL.previous: return p.previous_token;
    case HEAD_LABEL.next: return p.next_token;
    case HEAD_LABEL.self: return p.self;
    case HEAD_LABEL.sink: return p.cls + p.sep;
    case HEAD_LABEL.punctuation: return p.punctuation;
    default: return null;
  }
}

// A head's name with its label, for wherever a head is named: "layer 2, head 2 · next-token"
// (`name`: HeadName at the start of a line).
export function labelledHeadName(result, layer, head, name = headName) {
  const label = headLabel(result, layer, head);
  return `${name(layer, head)}${label ? ` \u00b7 ${label}` : ''}`;
}

// A label short enough to stand, visible, beside a head wherever one is drawn small (Figure 1's
// picker, Figure 5's panels): "prev", "next", "self", "sink", "punct", "broad", "mixed".
export const SHORT_LABELS = Object.freeze({
  [HEAD_LABEL.previous]: 'prev', [HEAD_LABEL.next]: 'next', [HEAD_LABEL.self]: 'self', [HEAD_LABEL.sink]: 'sink', [HEAD_LABEL.punctuation]: 'punct', [HEAD_LABEL.broad]: 'broad', [HEAD_LABEL.mixed]: 'mixed',
});
export function shortHeadLabel(label) {
  return label ? SHORT_LABELS[label] ?? label : '';
}

// The token the page opens on: the first token spelled `wordText`, else the first ordinary one.
export function defaultToken(result, wordText) {
  const byText = result.tokens.findIndex((t) => t.text === wordText);
  if (byText >= 0) return byText;
  const ordinary = result.tokens.findIndex((_, i) => result.roles[i] === ROLE.ordinary);
  return ordinary >= 0 ? ordinary : 0;
}

// Fills in any unset (-1 or out of range) token, layer and head of a selection; an unset head
// is the content head of SELECTION_RULE for the token.
export function resolveSelection(result, selection, wordText) {
  let { token, layer, head } = selection;
  if (!(token >= 0 && token < result.n)) token = defaultToken(result, wordText);
  if (!(layer >= 0 && layer < result.layers && head >= 0 && head < result.heads)) {
    ({ layer, head } = sharpestAndBroadest(result, token).sharpest);
  }
  return { token, layer, head };
}

// The head SELECTION_RULE picks for `token`, the one home of the rule, among the heads that
// `keep({layer, head})` admits (all for the default head; a layer given alone, a head given alone
// for an author's attributes): the largest ratio to uniform among content heads whose row is a
// content row; failing that, among content heads; failing that, among all. The head's row
// statistics, with `tier` (1 to 3) saying which.
export function ruleHead(result, token, keep = () => true, heads = headsForToken(result, token)) {
  const admitted = heads.filter(keep);
  const content = admitted.filter((x) => isContentHead(result, x.layer, x.head));
  const tiers = [content.filter((x) => isContentRow(result, token, x.argmax)), content, admitted];
  const tier = tiers.findIndex((list) => list.length > 0);
  return { ...sharpestOf(tiers[tier]), tier: tier + 1 };
}

// The head with the largest ratio to uniform in `list` (the first of equals).
const sharpestOf = (list) => list.reduce((a, b) => (b.ratio_to_uniform > a.ratio_to_uniform ? b : a), list[0]);

// A word of the sentence as the author would type it: its pieces joined ("token" + "##ized"),
// compared without case or accents (the tokenizer lowercases and strips accents).
const plain = (text) => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
function wordTokens(result, given) {
  const want = plain(given);
  const words = new Map();
  result.tokens.forEach((t, i) => {
    if (result.roles[i] === ROLE.cls || result.roles[i] === ROLE.sep) return;
    const key = t.word ?? i;
    const w = words.get(key) ?? { first: i, text: '' };
    w.text += t.text.replace(/^##/, '');
    words.set(key, w);
  });
  for (const w of words.values()) if (plain(w.text) === want) return w.first;
  return -1;
}

// The selection an author's attributes ask for ({word, layer, head} as written, null where
// absent), resolved on a result: {token, layer, head, notes}. `word` is a token's position
// (0 is [CLS]), a piece's text or a whole word as typed (its first piece); layer and head count
// from 1; a layer alone (or a head alone) gets the head SELECTION_RULE picks within it. Every
// attribute that could not be honoured gives a note {attribute, value, message} saying what was
// asked, what the model allows and what is shown instead. wordText: the default token's text;
// token: a position chosen already (the reader's), which replaces `word`.
export function resolveAttributes(result, { token: chosen, word = null, layer = null, head = null } = {}, wordText = '') {
  const notes = [];
  const pending = [];
  const quote = (text) => `\u201c${text}\u201d`;
  let token = Number.isInteger(chosen) && chosen < result.n ? chosen : -1;
  if (token < 0 && word !== null) {
    const w = word.trim();
    if (/^\d+$/.test(w)) {
      token = Number(w);
      if (token >= result.n) {
        pending.push(['word', word, `the sentence has tokens 0 to ${result.n - 1} (0 is [CLS])`, 'token']);
        token = -1;
      }
    } else if (w) {
      token = result.tokens.findIndex((t, i) => plain(t.text) === plain(w) && result.roles[i] !== ROLE.cls);
      if (token < 0) token = wordTokens(result, w);
      if (token < 0) pending.push(['word', word, 'it matches no word or token of the sentence', 'token']);
    } else {
      pending.push(['word', word, 'it is empty', 'token']);
    }
  }
  if (token < 0) token = defaultToken(result, wordText);
  const count = (name, value, limit) => {
    if (value === null) return -1;
    const v = value.trim();
    if (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= limit) return Number(v) - 1;
    pending.push([name, value, `the model has ${name}s 1 to ${limit}`, 'head']);
    return -1;
  };
  let l = count('layer', layer, result.layers);
  let hd = count('head', head, result.heads);
  if (l >= 0 && hd < 0) {
    hd = ruleHead(result, token, (x) => x.layer === l).head;
    if (head === null) notes.push({ attribute: 'layer', value: layer, message: `layer=${quote(layer)} without head: showing head ${hd + 1} of layer ${l + 1}, the one the default rule picks in that layer.` });
  } else if (hd >= 0 && l < 0) {
    l = ruleHead(result, token, (x) => x.head === hd).layer;
    if (layer === null) notes.push({ attribute: 'head', value: head, message: `head=${quote(head)} without layer: showing layer ${l + 1}, head ${hd + 1}, the layer the default rule picks for that head.` });
  } else if (l < 0 && hd < 0) {
    ({ layer: l, head: hd } = ruleHead(result, token));
  }
  const shown = { token: `${quote(result.tokens[token].text)} (token ${token})`, head: `layer ${l + 1}, head ${hd + 1}` };
  for (const [attribute, value, why, what] of pending) {
    notes.unshift({ attribute, value, message: `${attribute}=${quote(value)} was not used: ${why}; showing ${shown[what]} instead.` });
  }
  return { token, layer: l, head: hd, notes };
}

// Softmax in double precision, shifted by the largest score so that exp never overflows.
export function softmax(scores) {
  let max = -Infinity;
  for (const s of scores) max = Math.max(max, s);
  const exps = Array.from(scores, (s) => Math.exp(s - max));
  const total = exps.reduce((a, b) => a + b, 0);
  return { exps, total, weights: exps.map((e) => e / total), shift: max };
}

// The vectors behind one attention row, and the row recomputed from them: the input x_i to the
// layer (d), the query q_i = x_i W_Q^T + b_Q (d), its slice for the head (d_head), each key k_j's
// slice (n rows of d_head), the dot products q.k_j, the same over sqrt(d_head), and the softmax.
// Then the value side, where the result holds it (values and contexts): each token's value slice
// v_j for the head (n rows of d_head), the engine's context c_i = sum_j a_ij v_j for the head
// (d_head), the same sum recomputed here from the engine's row and the value slices, their
// largest difference, and the token's whole context row (d: every head's context side by side,
// what W_O multiplies). values is null without them.
// Returns null when the result holds no vectors for this selection (an example's other rows, or
// an engine result analysed without {vectors: true}).
export function mechanism(result, layer, head, token) {
  const { n, hidden: d, heads } = result;
  const dHead = d / heads;
  let x;
  let q;
  const keys = [];
  let values = null;
  let contextRow = null;
  if (result.queries && result.keys && result.hidden_states) {
    x = tokenVector(result.hidden_states, result, layer, token);
    q = tokenVector(result.queries, result, layer, token);
    for (let j = 0; j < n; ++j) keys.push(tokenVector(result.keys, result, layer, j).subarray(head * dHead, (head + 1) * dHead));
    if (result.values && result.contexts) {
      values = [];
      for (let j = 0; j < n; ++j) values.push(tokenVector(result.values, result, layer, j).subarray(head * dHead, (head + 1) * dHead));
      contextRow = tokenVector(result.contexts, result, layer, token);
    }
  } else {
    const v = result.vectors;
    if (!v || v.layer !== layer || v.head !== head || v.token !== token) return null;
    x = v.x;
    q = v.q;
    for (let j = 0; j < n; ++j) keys.push(v.keys.subarray(j * dHead, (j + 1) * dHead));
    if (v.values && v.context) {
      values = [];
      for (let j = 0; j < n; ++j) values.push(v.values.subarray(j * dHead, (j + 1) * dHead));
      contextRow = v.context;
    }
  }
  const qHead = q.subarray(head * dHead, (head + 1) * dHead);
  const scale = Math.sqrt(dHead);
  const dots = keys.map((k) => {
    let s = 0;
    for (let c = 0; c < dHead; ++c) s += qHead[c] * k[c];
    return s;
  });
  const scores = dots.map((s) => s / scale);
  const { weights } = softmax(scores);
  const engineRow = attentionRow(result, layer, head, token);
  let maxDifference = 0;
  for (let j = 0; j < n; ++j) maxDifference = Math.max(maxDifference, Math.abs(weights[j] - engineRow[j]));
  let context = null;
  let weightedSum = null;
  let valueDifference = null;
  if (values) {
    context = contextRow.subarray(head * dHead, (head + 1) * dHead);
    weightedSum = new Float64Array(dHead);
    for (let j = 0; j < n; ++j) for (let c = 0; c < dHead; ++c) weightedSum[c] += engineRow[j] * values[j][c];
    valueDifference = 0;
    for (let c = 0; c < dHead; ++c) valueDifference = Math.max(valueDifference, Math.abs(weightedSum[c] - context[c]));
  }
  return {
    d, dHead, scale, x, q, qHead, keys, dots, scores, weights, engineRow, maxDifference,
    unscaled: softmax(dots).weights,
    values, context, contextRow, weightedSum, valueDifference,
  };
}

// How far one model's attention is from a reference's on the same sentence: the selected row's
// absolute differences and largest one, and the largest over every layer, head and row of the
// sentence with where it is. Both results must hold the same tokens (same vocabulary and text).
// A model file's precision (its dtypes joined by '+', as the core names them: "f32+rans") in
// words a reader can follow.
const DTYPE_WORDS = Object.freeze({
  f32: '32-bit floats', f16: '16-bit floats', int8: '8-bit integers with a scale per group',
  rans: 'weights rounded to a few levels and packed with an entropy coder (rANS)',
});
export function precisionWords(precision) {
  const parts = String(precision ?? '').split('+').filter(Boolean).map((d) => DTYPE_WORDS[d] ?? d);
  return parts.length ? parts.join(' and ') : 'unknown precision';
}

export function attentionDifference(reference, other, layer, head, token) {
  const n = reference.n;
  const same = other.n === n && other.layers === reference.layers && other.heads === reference.heads
    && reference.tokens.every((t, i) => t.id === other.tokens[i].id);
  if (!same) throw new Error('The two models did not read the sentence as the same tokens, so their attention cannot be compared.');
  const a = attentionRow(reference, layer, head, token);
  const b = attentionRow(other, layer, head, token);
  const row = new Float64Array(n);
  let rowMax = 0;
  for (let j = 0; j < n; ++j) {
    row[j] = Math.abs(a[j] - b[j]);
    rowMax = Math.max(rowMax, row[j]);
  }
  let sentenceMax = 0;
  let at = 0;
  const x = reference.attention;
  const y = other.attention;
  for (let k = 0; k < x.length; ++k) {
    const d = Math.abs(x[k] - y[k]);
    if (d > sentenceMax) {
      sentenceMax = d;
      at = k;
    }
  }
  return { row, rowMax, sentenceMax, where: attentionPosition(reference, at), reference: a, other: b, rows: reference.layers * reference.heads * n };
}

// A precomputed example (scripts/site/make_examples.mjs) as a result the widgets can read: the
// result schema with its arrays as JSON arrays, decoded into the engine's typed arrays.
export function resultFromExample(example) {
  const a = example.analysis;
  const v = a.vectors;
  return {
    ...a,
    attention: Float32Array.from(a.attention),
    rollout: Float32Array.from(a.rollout),
    row_stats: Float32Array.from(a.row_stats),
    roles: Uint8Array.from(a.roles),
    vectors: {
      token: v.token, layer: v.layer, head: v.head, x: Float32Array.from(v.x), q: Float32Array.from(v.q), keys: Float32Array.from(v.keys),
      // Examples written before the value side have neither.
      ...(v.values && v.context ? { values: Float32Array.from(v.values), context: Float32Array.from(v.context) } : {}),
    },
  };
}

// What the model is, read from its provenance (a JSON string in the model file): a model
// trained for this project, a converted Hugging Face checkpoint, or random test weights.
export function describeModel(info) {
  let provenance = {};
  try {
    const parsed = JSON.parse(info?.provenance ?? '{}');
    if (parsed && typeof parsed === 'object') provenance = parsed;
  } catch {
    // An unreadable provenance is reported as unknown below.
  }
  const source = typeof provenance.source === 'string' ? provenance.source : '';
  // The weights' terms, as the file states them (an SPDX id such as GPL-2.0-or-later); '' if none.
  const license = [provenance.license, provenance.licence].find((v) => typeof v === 'string' && v.trim())?.trim().slice(0, 200) ?? '';
  const name = String(info?.name ?? 'unnamed model');
  const text = `${name} ${source} ${provenance.generator ?? ''}`.toLowerCase();
  const trainingKeys = ['training', 'steps', 'tokens_seen', 'train_seconds', 'corpus_manifest_sha256', 'corpus'];
  const trained = trainingKeys.some((k) => k in provenance) || /trained here|train_default_model/.test(text);
  let kind;
  let note;
  if (/random/.test(text) && !trained) {
    kind = 'random';
    note = 'random weights made for tests, not a trained model: its heads show no learned pattern';
  } else if (trained) {
    kind = 'trained';
    // A name that already says it is not the original needs no second disclaimer; the note
    // then says how much training it had.
    const disclaimed = /not\s+(the\s+original\s+|[\w.-]+\/)?bert-mini/i.test(name);
    const run = trainingTotals(provenance.training ?? provenance);
    note = !disclaimed ? 'trained for this project, not the original bert-mini'
      : run ? `trained for this project: ${thousands(run.steps)} steps, ${(run.tokens / 1e6).toFixed(1)}M tokens`
        : 'trained for this project';
  } else if (provenance.converter === CHECKPOINT_CONVERTER) {
    // Made in the reader's browser from a checkpoint (web/engine/checkpoint.js).
    const hub = /^hf:(.+)@([0-9a-f]{40})$/.exec(source);
    kind = hub ? 'hub' : 'local';
    note = hub ? `downloaded from the Hugging Face hub by your browser (commit ${hub[2].slice(0, 10)}) and converted there`
      : 'opened from your computer and converted in your browser';
  } else if (provenance.converter && source && !provenance.derived_from) {
    kind = 'converted';
    note = `a converted Hugging Face checkpoint (${source})`;
  } else {
    kind = 'unknown';
    note = source ? `source: ${source}` : 'no provenance recorded';
  }
  // The shape, where the engine's info gives it (a precomputed example's model does not: its
  // analysis carries layers, heads and hidden): the feed-forward width, the vocabulary, and
  // whether the file has the masked-LM head.
  const count = (value) => (Number.isInteger(value) && value > 0 ? value : null);
  return {
    name, kind, note, source, license, precision: info?.precision ?? '',
    intermediate: count(info?.intermediate), vocabSize: count(info?.vocab_size),
    maskedLm: typeof info?.has_masked_lm_head === 'boolean' ? info.has_masked_lm_head : null,
  };
}

// Steps and tokens of a training record, through the runs it continued (train_default_model.py
// writes the earlier run's record as initialised_from); null when the record has neither.
function trainingTotals(record) {
  let steps = 0;
  let tokens = 0;
  for (let r = record, depth = 0; r && typeof r === 'object' && depth < 20; r = r.initialised_from, ++depth) {
    if (Number.isFinite(r.steps)) steps += r.steps;
    if (Number.isFinite(r.tokens_seen)) tokens += r.tokens_seen;
  }
  return steps > 0 && tokens > 0 ? { steps, tokens } : null;
}

// The model, said once: its name and its note in one pair of brackets ("NAME (trained here; not
// prajjwal1/bert-mini; 8,697 steps, 60.2M tokens)"), not the name's brackets and the note's.
export function modelPhrase(model) {
  const name = model?.name ?? 'the model';
  const note = (model?.note ?? '').replace(/^trained for this project:\s*/, (m) => (/\(.*trained here/i.test(name) ? '' : m));
  if (!note) return name;
  const bracketed = /^(.*\S)\s*\(([^()]*)\)$/.exec(name);
  return bracketed ? `${bracketed[1]} (${bracketed[2]}; ${note})` : `${name} (${note})`;
}
