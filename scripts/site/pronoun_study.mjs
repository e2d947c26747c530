// Does any head of the model point a pronoun at its antecedent? Over web/posts/pronouns.tsv
// (sentences written for the article, each with a pronoun, its antecedent and the candidate
// nouns before it; half are Winograd-style pairs in which one changed word flips the
// antecedent), and over web/posts/pronouns_heldout.tsv (held-out cases written the same way
// before any result on them), for every head: how often the pronoun's row puts its largest
// weight on the antecedent (the first piece of that word), how often, among the candidate nouns
// alone, the antecedent gets the most weight, how often that choice is the first candidate, and
// in how many Winograd pairs it gets both sentences right (a pair: two neighbouring cases with
// the same pronoun and candidates and different antecedents; a head that picks by position
// gets at most one of a pair right). Three baselines on the same sentences: always choosing the
// nearest candidate before the pronoun, always choosing the first candidate (the subject bias
// of such sentences), and chance among the candidates (the mean of 1 / the number of
// candidates). The attention comes from the core (a result of the engine's schema: attention,
// tokens, n, layers, heads); this module only counts.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { attentionRow } from '../../web/engine/result.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PRONOUN_FILE = join(root, 'web', 'posts', 'pronouns.tsv');
export const HELDOUT_PRONOUN_FILE = join(root, 'web', 'posts', 'pronouns_heldout.tsv');

// [{sentence, pronoun, occurrence, antecedent, candidates}] from the file's text.
export function readPronounCases(text) {
  const [header, ...rows] = text.split('\n').filter((line) => line.trim());
  const columns = header.split('\t');
  const want = ['sentence', 'pronoun', 'pronoun_occurrence', 'antecedent', 'candidates'];
  if (want.some((name, k) => columns[k] !== name)) throw new Error(`pronouns.tsv: the header must be ${want.join(', ')}`);
  return rows.map((line, k) => {
    const [sentence, pronoun, occurrence, antecedent, candidates] = line.split('\t');
    const parsed = { sentence, pronoun, occurrence: Number(occurrence), antecedent, candidates: candidates?.split(',') ?? [] };
    if (!sentence || !pronoun || !(parsed.occurrence >= 1) || !parsed.candidates.includes(antecedent)) {
      throw new Error(`pronouns.tsv line ${k + 2}: need a sentence, a pronoun, its occurrence (1, 2, ...) and an antecedent among the candidates`);
    }
    return parsed;
  });
}

// Token positions of the words of a result: a word's text (its pieces joined) -> the position
// of its first piece, for each occurrence in order.
function wordPositions(result) {
  const byText = new Map();
  const add = (w) => byText.set(w.text, [...(byText.get(w.text) ?? []), w.position]);
  let current = null;
  for (let i = 1; i < result.n - 1; ++i) {
    const t = result.tokens[i];
    if (current && t.word === current.word) {
      current.text += t.text.replace(/^##/, '');
      continue;
    }
    if (current) add(current);
    current = { word: t.word, text: t.text, position: i };
  }
  if (current) add(current);
  return byText;
}

// P(X >= k) for X the number of successes of independent trials with these probabilities.
export function tailProbability(probabilities, k) {
  let dist = [1];
  for (const p of probabilities) {
    const next = new Array(dist.length + 1).fill(0);
    dist.forEach((q, m) => {
      next[m] += q * (1 - p);
      next[m + 1] += q * p;
    });
    dist = next;
  }
  return dist.slice(Math.max(0, k)).reduce((a, b) => a + b, 0);
}

// Where one case's pronoun and candidates are in its result: {pronoun, antecedent, candidates}
// as token positions (each candidate's last occurrence before the pronoun), or null when a word
// is missing (the case is then reported as skipped).
export function locateCase(result, c) {
  const words = wordPositions(result);
  const pronoun = (words.get(c.pronoun) ?? [])[c.occurrence - 1];
  if (pronoun === undefined) return null;
  const before = (word) => (words.get(word) ?? []).filter((p) => p < pronoun).at(-1);
  const candidates = c.candidates.map(before);
  if (candidates.some((p) => p === undefined)) return null;
  return { pronoun, antecedent: before(c.antecedent), candidates };
}

// The Winograd pairs among located cases, as index pairs: two neighbouring cases with the same
// pronoun and candidates and different antecedents, each case in one pair at most.
export function winogradPairs(located) {
  const out = [];
  for (let k = 0; k + 1 < located.length; ++k) {
    const a = located[k].c;
    const b = located[k + 1].c;
    if (a.pronoun === b.pronoun && a.candidates.join() === b.candidates.join() && a.antecedent !== b.antecedent) {
      out.push([k, k + 1]);
      ++k;
    }
  }
  return out;
}

// The study over cases and their results (results[k] analyses cases[k].sentence).
export function pronounStudy(cases, results) {
  const located = [];
  const skipped = [];
  cases.forEach((c, k) => {
    const where = locateCase(results[k], c);
    if (where) located.push({ c, r: results[k], ...where });
    else skipped.push(c.sentence);
  });
  const pairs = winogradPairs(located);
  const { layers, heads } = results[0];
  const perHead = [];
  for (let layer = 0; layer < layers; ++layer) {
    for (let head = 0; head < heads; ++head) {
      let top = 0;
      let amongCandidates = 0;
      let firstPicks = 0;
      const right = located.map((x) => {
        const row = attentionRow(x.r, layer, head, x.pronoun);
        let argmax = 0;
        for (let j = 1; j < row.length; ++j) if (row[j] > row[argmax]) argmax = j;
        top += argmax === x.antecedent;
        let best = x.candidates[0];
        for (const p of x.candidates) if (row[p] > row[best]) best = p;
        amongCandidates += best === x.antecedent;
        firstPicks += best === x.candidates[0];
        return best === x.antecedent;
      });
      const pairsBoth = pairs.filter(([a, b]) => right[a] && right[b]).length;
      perHead.push({ layer: layer + 1, head: head + 1, top, among_candidates: amongCandidates, first_picks: firstPicks, pairs_both: pairsBoth });
    }
  }
  const nearest = located.filter((x) => Math.max(...x.candidates) === x.antecedent).length;
  const first = located.filter((x) => x.candidates[0] === x.antecedent).length;
  const chances = located.map((x) => 1 / x.candidates.length);
  const chance = chances.reduce((a, b) => a + b, 0);
  const best = perHead.reduce((a, b) => (b.among_candidates > a.among_candidates ? b : a));
  // The best head's count against chance among the candidates: the exact tail, and the same
  // times the number of heads, since the best of many heads was picked after looking.
  const p = tailProbability(chances, best.among_candidates);
  return {
    cases: located.length, skipped, nearest, first, chance, pairs: pairs.length, per_head: perHead,
    best: { ...best, p_value: p, p_value_corrected: Math.min(1, p * perHead.length) },
  };
}

export function readPronounFile() {
  return readPronounCases(readFileSync(PRONOUN_FILE, 'utf8'));
}
