// The article's pronoun study (scripts/site/pronoun_study.mjs): its counts on a hand-made result
// whose attention is written out here, the exact chance tail on hand-worked cases, the file's
// format checks, the first-noun baseline and the Winograd pair score on a hand-made pair, and
// every case of web/posts/pronouns.tsv and of its held-out file found in the CLI tokenizer's
// tokens (a case the study would skip fails here instead).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

import { readFileSync } from 'node:fs';

import {
  HELDOUT_PRONOUN_FILE, locateCase, pronounStudy, readPronounCases, readPronounFile, tailProbability, winogradPairs,
} from '../../scripts/site/pronoun_study.mjs';
import { requireInputs } from './inputs.mjs';

const ROOT = new URL('../..', import.meta.url).pathname;
const CLI = `${ROOT}build/native/attention-cli`;
const VOCAB = `${ROOT}model_data/vocab.txt`;

// [CLS] the dog chased the cat because it was fast [SEP]: one layer, two heads.
const TOKENS = ['[CLS]', 'the', 'dog', 'chased', 'the', 'cat', 'because', 'it', 'was', 'fast', '[SEP]'];
function result(rowOfIt) {
  const n = TOKENS.length;
  const attention = new Float32Array(2 * n * n).fill(1 / n);
  rowOfIt.forEach((row, head) => {
    const start = (head * n + 7) * n;
    for (let j = 0; j < n; ++j) attention[start + j] = row[j] ?? 0;
  });
  return { tokens: TOKENS.map((text, i) => ({ text, word: i })), n, layers: 1, heads: 2, attention };
}

test('counts per head, the two baselines and the best head\u2019s tail', () => {
  const c = { sentence: 'The dog chased the cat because it was fast.', pronoun: 'it', occurrence: 1, antecedent: 'dog', candidates: ['dog', 'cat'] };
  // Head 1 puts its largest weight on "dog" (2); head 2 on "the" (4) but more on "cat" than "dog".
  const heads = [[0, 0, 0.6, 0.1, 0, 0.3], [0, 0, 0.1, 0, 0.6, 0.3]];
  const study = pronounStudy([c], [result(heads)]);
  assert.equal(study.cases, 1);
  assert.deepEqual(study.per_head.map((x) => [x.top, x.among_candidates]), [[1, 1], [0, 0]]);
  assert.equal(study.nearest, 0);  // the nearest candidate before "it" is "cat"
  assert.equal(study.chance, 0.5);
  assert.deepEqual([study.best.layer, study.best.head, study.best.among_candidates], [1, 1, 1]);
  assert.equal(study.best.p_value, 0.5);
  assert.equal(study.best.p_value_corrected, 1);
  assert.deepEqual(locateCase(result(heads), c), { pronoun: 7, antecedent: 2, candidates: [2, 5] });
  assert.equal(locateCase(result(heads), { ...c, occurrence: 2 }), null);
});

test('the first-noun baseline and the pair score: a head that always picks the first noun gets one of a pair', () => {
  const dog = { sentence: 'The dog chased the cat because it was fast.', pronoun: 'it', occurrence: 1, antecedent: 'dog', candidates: ['dog', 'cat'] };
  const cat = { ...dog, antecedent: 'cat' };
  // Head 1 always prefers "dog" (the first noun), head 2 always "cat".
  const heads = [[0, 0, 0.6, 0.1, 0, 0.3], [0, 0, 0.1, 0, 0.3, 0.6]];
  const study = pronounStudy([dog, cat], [result(heads), result(heads)]);
  assert.equal(study.pairs, 1);
  assert.equal(study.first, 1);
  assert.deepEqual(study.per_head.map((x) => [x.among_candidates, x.first_picks, x.pairs_both]), [[1, 2, 0], [1, 0, 0]]);
  // Neighbouring cases form a pair only with the same pronoun and candidates and another antecedent.
  const located = (cs) => cs.map((c) => ({ c }));
  assert.deepEqual(winogradPairs(located([dog, cat, dog, dog, cat])), [[0, 1], [3, 4]]);
  assert.deepEqual(winogradPairs(located([dog, { ...cat, candidates: ['cat', 'dog'] }])), []);
});

test('the chance tail is exact', () => {
  assert.equal(tailProbability([0.5, 0.5], 1), 0.75);
  assert.equal(tailProbability([0.5, 0.5], 2), 0.25);
  assert.ok(Math.abs(tailProbability([0.5, 1 / 3, 0.25], 2) - (0.5 * (1 / 3) * 0.75 + 0.5 * (2 / 3) * 0.25 + 0.5 * (1 / 3) * 0.25 + 0.5 * (1 / 3) * 0.25)) < 1e-15);
  assert.equal(tailProbability([0.2, 0.3], 0), 1);
});

test('the file format is checked', () => {
  assert.throws(() => readPronounCases('sentence\tpronoun\n'), /header must be/);
  assert.throws(() => readPronounCases('sentence\tpronoun\tpronoun_occurrence\tantecedent\tcandidates\nA cat.\tit\t1\tdog\tcat\n'), /line 2/);
});

test('every case of pronouns.tsv and of the held-out cases is found in the tokenizer\u2019s tokens', (t) => {
  if (!requireInputs(t, [CLI], 'build it with scripts/build.sh native')) return;
  const cases = readPronounFile();
  const heldout = readPronounCases(readFileSync(HELDOUT_PRONOUN_FILE, 'utf8'));
  assert.ok(cases.length >= 30, `${cases.length} cases`);
  assert.ok(heldout.length >= 30, `${heldout.length} held-out cases`);
  const written = new Set(cases.map((c) => c.sentence));
  assert.ok(heldout.every((c) => !written.has(c.sentence)), 'no held-out case is a case of the first file');
  for (const c of [...cases, ...heldout]) {
    const { tokens } = JSON.parse(execFileSync(CLI, ['tokenize', '--vocab', VOCAB, '--json', c.sentence]).toString());
    const where = locateCase({ tokens, n: tokens.length }, c);
    assert.ok(where, `not found: ${c.sentence}`);
    assert.ok(where.candidates.includes(where.antecedent) && where.candidates.every((p) => p < where.pronoun), c.sentence);
  }
});
