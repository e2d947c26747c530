// The article's data helpers (web/widgets/data.js, web/runtime/state.js) in Node: row statistics on
// hand-worked rows, the model description from each kind of provenance, the URL hash read as
// data, and the mechanism figure's recomputation of a row from q and k, and of the head's context
// from the row and the values, against the wasm engine.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine } from '../../web/engine/engine.js';
import { attentionRow, ROLE } from '../../web/engine/result.js';
import { formatHash, MAX_LINK_TEXT, parseHash } from '../../web/runtime/state.js';
import { describeModel, mechanism, resolveSelection, rowSummary, SELECTION_RULE, softmax } from '../../web/widgets/data.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixtures = process.env.ATTN_FIXTURES_DIR ?? join(root, 'build', 'fixtures');
// q.k/8 and the softmax in double precision against the engine's float32 forward pass.
const MECHANISM_TOLERANCE = 1e-5;
// sum_j a_ij v_j in double precision from the engine's float32 row and values, against the
// engine's float32 context (values of a few units, n terms: float32 rounding is about 1e-6).
const VALUE_TOLERANCE = 1e-5;

test('row summary of hand-worked rows', () => {
  const uniform = rowSummary(Float32Array.from([0.25, 0.25, 0.25, 0.25]));
  assert.equal(uniform.ratio_to_uniform, 1);
  assert.ok(Math.abs(uniform.entropy - Math.log(4)) < 1e-12);
  assert.ok(Math.abs(uniform.normalized_entropy - 1) < 1e-12);
  const peaked = rowSummary([0, 1, 0]);
  assert.deepEqual([peaked.argmax, peaked.max, peaked.ratio_to_uniform, peaked.entropy], [1, 1, 3, 0]);
  const mixed = rowSummary([0.5, 0.25, 0.25]);
  assert.ok(Math.abs(mixed.entropy - 1.5 * Math.log(2)) < 1e-12);
  assert.equal(mixed.ratio_to_uniform, 1.5);
});

test('softmax sums to 1, is shift-invariant and uniform for equal scores', () => {
  assert.deepEqual(softmax([-1000, -1000, -1000, -1000]).weights, [0.25, 0.25, 0.25, 0.25]);
  const a = softmax([1, 2, 3]).weights;
  const b = softmax([101, 102, 103]).weights;
  a.forEach((w, k) => assert.ok(Math.abs(w - b[k]) < 1e-15));
  assert.ok(Math.abs(a.reduce((x, y) => x + y, 0) - 1) < 1e-15);
  // e^0 : e^1 : e^2 over their sum, by hand.
  const z = 1 + Math.E + Math.E ** 2;
  assert.ok(Math.abs(a[2] - Math.E ** 2 / z) < 1e-15);
});

test('the model description follows the provenance', () => {
  const random = describeModel({ name: 'random-mini-L4-H256-A4-seed2', provenance: JSON.stringify({ generator: 'scripts/make_random_model.py', source: 'random weights for tests; not a trained model' }) });
  assert.equal(random.kind, 'random');
  const converted = describeModel({ name: 'prajjwal1/bert-mini', provenance: JSON.stringify({ source: 'https://huggingface.co/prajjwal1/bert-mini (revision main)', converter: 'scripts/model/convert_model.py to-attn', files: {} }) });
  assert.equal(converted.kind, 'converted');
  assert.match(converted.note, /huggingface\.co\/prajjwal1\/bert-mini/);
  const trained = describeModel({ name: 'attention-explainer-bert-mini-shaped (trained here; not prajjwal1/bert-mini)', provenance: JSON.stringify({ source: 'final', converter: 'scripts/model/convert_model.py to-attn', steps: 9000, tokens_seen: 1e8 }) });
  assert.equal(trained.kind, 'trained');
  // The name already disclaims the original, so the note says how much training there was,
  // summed over the runs the record chains (a run that continued an earlier one).
  assert.equal(trained.note, 'trained for this project: 9,000 steps, 100.0M tokens');
  const chained = describeModel({ name: trained.name, provenance: JSON.stringify({ training: { steps: 100, tokens_seen: 2e6, initialised_from: { steps: 50, tokens_seen: 1e6 } } }) });
  assert.equal(chained.note, 'trained for this project: 150 steps, 3.0M tokens');
  const plainName = describeModel({ name: 'my-small-bert', provenance: JSON.stringify({ training: { steps: 10 } }) });
  assert.equal(plainName.note, 'trained for this project, not the original bert-mini');
  const unknown = describeModel({ name: 'x', provenance: 'not json' });
  assert.equal(unknown.kind, 'unknown');
  assert.equal(unknown.name, 'x');
});

test('the URL hash is read as data only', () => {
  const state = { sentence: '<img src=x onerror=alert(1)> & #x', token: 3, layer: 1, head: 2, showSpecial: false };
  assert.deepEqual(parseHash(formatHash(state)), state);
  assert.deepEqual(parseHash('#t=-1&l=1e3&h=9999999&special=yes&constructor=1&__proto__=1'), {});
  // One limit for links: whatever the engine takes reads back; longer is never written.
  assert.deepEqual(parseHash(formatHash({ ...state, sentence: 'a'.repeat(MAX_LINK_TEXT) })).sentence.length, MAX_LINK_TEXT);
  assert.deepEqual(parseHash(`#s=${'a'.repeat(MAX_LINK_TEXT + 1)}`), {});
  assert.deepEqual(parseHash(undefined), {});
});

// The wasm engine in this thread on one model file (a manifest of its own in a temporary folder),
// or null when an input is missing (requireInputs has failed or skipped the test).
async function engineFor(t, modelPath) {
  const wasm = join(root, 'build', 'wasm', 'attention_engine.wasm');
  if (!requireInputs(t, [modelPath, wasm], 'run scripts/build.sh wasm and scripts/reference/make_test_fixtures.sh build/fixtures')) return null;
  const dir = mkdtempSync(join(tmpdir(), 'attn-article-'));
  const manifest = {
    default: 'm',
    models: { m: { file: pathToFileURL(modelPath).href, bytes: readFileSync(modelPath).length, sha256: 'test' } },
    engine: { glue: pathToFileURL(join(root, 'build', 'wasm', 'attention_engine.js')).href, wasm: pathToFileURL(wasm).href, bytes: 0, sha256: 'test' },
  };
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return createEngine({ manifestUrl: pathToFileURL(join(dir, 'manifest.json')).href });
}

test('the mechanism figure recomputes the engine\u2019s rows from q and k', async (t) => {
  const engine = await engineFor(t, join(fixtures, 'mini.attn'));
  if (!engine) return;
  const result = engine.analyze('The keys to the cabinet are on the table.', { vectors: true });
  let largest = 0;
  for (let layer = 0; layer < result.layers; ++layer) {
    for (let head = 0; head < result.heads; ++head) {
      for (let token = 0; token < result.n; ++token) {
        const m = mechanism(result, layer, head, token);
        largest = Math.max(largest, m.maxDifference);
        assert.equal(m.scale, Math.sqrt(result.hidden / result.heads));
      }
    }
  }
  t.diagnostic(`largest |softmax(q.k/sqrt(d_head)) - engine attention| = ${largest.toExponential(2)} (bar ${MECHANISM_TOLERANCE})`);
  assert.ok(largest <= MECHANISM_TOLERANCE, `mechanism differs from the engine by ${largest}`);
});

// The value side: for every layer, head and token, the weighted sum of the head's value slices with
// the engine's row must be the engine's context slice (what W_O mixes), on the fixture model and
// on the shipped default model. The same sum with another head's row must not be, or the check
// could not tell a right context from a wrong one.
for (const [name, file] of [['fixture model', () => join(fixtures, 'mini.attn')], ['shipped default model', () => join(root, 'model_data', 'explainer-mini.compact.attn')]]) {
  test(`the mechanism figure's weighted sum of the values is the engine's context (${name})`, async (t) => {
    const engine = await engineFor(t, file());
    if (!engine) return;
    const result = engine.analyze('The animal did not cross the street because it was too tired.', { vectors: true });
    assert.ok(result.values && result.contexts, 'analyze(text, {vectors: true}) gives values and contexts');
    assert.equal(result.values.length, result.layers * result.n * result.hidden);
    assert.equal(result.contexts.length, result.layers * result.n * result.hidden);
    let largest = 0;
    let smallestWrong = Infinity;
    for (let layer = 0; layer < result.layers; ++layer) {
      for (let head = 0; head < result.heads; ++head) {
        for (let token = 0; token < result.n; ++token) {
          const m = mechanism(result, layer, head, token);
          assert.equal(m.values.length, result.n);
          assert.equal(m.context.length, m.dHead);
          assert.equal(m.contextRow.length, result.hidden);
          largest = Math.max(largest, m.valueDifference);
          // The row of the next head weighting this head's values.
          const other = attentionRow(result, layer, (head + 1) % result.heads, token);
          let wrong = 0;
          for (let c = 0; c < m.dHead; ++c) {
            let sum = 0;
            for (let j = 0; j < result.n; ++j) sum += other[j] * m.values[j][c];
            wrong = Math.max(wrong, Math.abs(sum - m.context[c]));
          }
          smallestWrong = Math.min(smallestWrong, wrong);
        }
      }
    }
    t.diagnostic(`largest |sum_j a_ij v_j - engine context| = ${largest.toExponential(2)} (bar ${VALUE_TOLERANCE}); with another head's row, at least ${smallestWrong.toExponential(2)}`);
    assert.ok(largest <= VALUE_TOLERANCE, `the weighted sum of the values differs from the engine's context by ${largest}`);
    assert.ok(smallestWrong > VALUE_TOLERANCE, `another head's row gives the same context within ${smallestWrong}: the check has no power`);
  });
}

// The default-head rule (SELECTION_RULE), re-derived here from the raw rows, the roles, the words
// and the core's head labels, for every ordinary token of several sentences, on the fixture model
// and on the shipped default model: the page's choice must be the head the rule names. (The rule
// is not "the sharpest head": on the shipped model that is a previous- or next-token head for
// most tokens, which the diagnostic counts.)
const RULE_SENTENCES = [
  'The animal did not cross the street because it was too tired.',
  'Unbelievably, the embeddings were tokenized into wordpieces.',
  'The keys to the cabinet are on the table.',
  'a',
  'Dogs, cats... and birds?!',
];
const EXCLUDED_LABELS = ['previous-token', 'next-token', 'self', '[CLS]/[SEP] sink'];

function expectedDefault(result, token) {
  const heads = [];
  for (let layer = 0; layer < result.layers; ++layer) {
    for (let head = 0; head < result.heads; ++head) {
      const row = attentionRow(result, layer, head, token);
      let argmax = 0;
      for (let j = 1; j < row.length; ++j) if (row[j] > row[argmax]) argmax = j;
      const label = result.head_profiles[layer * result.heads + head].label;
      const otherWord = Math.abs(argmax - token) > 1 && result.roles[argmax] === ROLE.ordinary && result.tokens[argmax].word !== result.tokens[token].word;
      heads.push({ layer, head, ratio: row[argmax] * result.n, content: !EXCLUDED_LABELS.includes(label), otherWord });
    }
  }
  const tiers = [heads.filter((x) => x.content && x.otherWord), heads.filter((x) => x.content), heads];
  const best = (list) => list.reduce((a, b) => (b.ratio > a.ratio ? b : a));
  return { chosen: best(tiers.find((list) => list.length)), sharpest: best(heads) };
}

for (const [name, file] of [['fixture model', () => join(fixtures, 'mini.attn')], ['shipped default model', () => join(root, 'model_data', 'explainer-mini.compact.attn')]]) {
  test(`the default head is the one the stated rule names (${name})`, async (t) => {
    const engine = await engineFor(t, file());
    if (!engine) return;
    assert.ok(SELECTION_RULE.includes('previous-token, next-token, self or [CLS]/[SEP] sink'), 'the rule as stated names the labels this test excludes');
    let tokens = 0;
    let notSharpest = 0;
    for (const sentence of RULE_SENTENCES) {
      const result = engine.analyze(sentence);
      for (let token = 0; token < result.n; ++token) {
        if (result.roles[token] !== ROLE.ordinary) continue;
        const { chosen, sharpest } = expectedDefault(result, token);
        const page = resolveSelection(result, { token, layer: -1, head: -1 }, '');
        assert.deepEqual([page.layer, page.head], [chosen.layer, chosen.head], `\u201c${sentence}\u201d token ${token} (${result.tokens[token].text})`);
        tokens += 1;
        if (chosen.layer !== sharpest.layer || chosen.head !== sharpest.head) notSharpest += 1;
      }
    }
    assert.ok(tokens > 30, `only ${tokens} tokens checked`);
    t.diagnostic(`${tokens} tokens: the rule's head is not the sharpest head for ${notSharpest} of them`);
  });
}
