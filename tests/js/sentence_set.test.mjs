// The series' sentence set: web/posts/sentences.txt is the file the site build computes the set
// statistics over; web/posts/sentences.js (the confident post's live subset) must be its first
// lines, so that both posts name the same sentences; and the file is the size the posts' claims
// need (at least 200 sentences, one per line, none repeated, none empty).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { SENTENCE_SET } from '../../web/posts/sentences.js';
import { partitionPercents } from '../../web/posts/common.js';

const lines = readFileSync(new URL('../../web/posts/sentences.txt', import.meta.url), 'utf8').split('\n');

test('sentences.txt holds at least 200 distinct sentences, one per line', () => {
  assert.equal(lines.at(-1), '', 'the file ends with a newline');
  const sentences = lines.slice(0, -1);
  assert.ok(sentences.length >= 200, `${sentences.length} sentences`);
  assert.ok(sentences.every((s) => s.trim() === s && s.length > 0), 'no empty line or stray space');
  assert.equal(new Set(sentences).size, sentences.length, 'no sentence twice');
});

test('the confident post\u2019s sentences are the first lines of the set', () => {
  assert.deepEqual([...SENTENCE_SET], lines.slice(0, SENTENCE_SET.length));
});

test('partition percentages sum to exactly 100 and stay within a rounding step of each share', () => {
  const cases = [[1, 1, 1], [2, 1, 0, 0, 0], [995, 3, 1, 1, 0], [7, 0, 0], [1, 2, 3, 4, 5, 6, 7]];
  for (const counts of cases) {
    const shown = partitionPercents(counts);
    const total = counts.reduce((a, b) => a + b, 0);
    assert.equal(Math.round(10 * shown.reduce((a, b) => a + b, 0)), 1000, `${counts} -> ${shown}`);
    shown.forEach((p, k) => assert.ok(Math.abs(p - (100 * counts[k]) / total) < 0.1 + 1e-9, `${counts}: ${p}`));
  }
  assert.deepEqual(partitionPercents([1, 1, 1]), [33.4, 33.3, 33.3]);
  assert.deepEqual(partitionPercents([0, 0]), [0, 0]);
});
