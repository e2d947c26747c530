// The series' sentence sets: web/posts/sentences.txt is the file the site build computes the set
// statistics over, opening with the article's presets, and web/posts/heldout.txt the held-out
// sentences every claim is checked on; each is the size the posts' claims need (at least 200 and
// 150 sentences, one per line, none repeated, none empty), and no held-out sentence is in the set.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { PRESETS } from '../../web/content.js';
import { partitionPercents } from '../../web/posts/common.js';

const read = (name) => readFileSync(new URL(`../../web/posts/${name}`, import.meta.url), 'utf8').split('\n');
const lines = read('sentences.txt');
const heldout = read('heldout.txt');

for (const [name, file, least] of [['sentences.txt', lines, 200], ['heldout.txt', heldout, 150]]) {
  test(`${name} holds at least ${least} distinct sentences, one per line`, () => {
    assert.equal(file.at(-1), '', 'the file ends with a newline');
    const sentences = file.slice(0, -1);
    assert.ok(sentences.length >= least, `${sentences.length} sentences`);
    assert.ok(sentences.every((s) => s.trim() === s && s.length > 0), 'no empty line or stray space');
    assert.equal(new Set(sentences).size, sentences.length, 'no sentence twice');
  });
}

test('the set opens with the article\u2019s presets, and no held-out sentence is in it', () => {
  assert.deepEqual([...PRESETS], lines.slice(0, PRESETS.length));
  const set = new Set(lines);
  assert.deepEqual(heldout.slice(0, -1).filter((s) => set.has(s)), []);
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
