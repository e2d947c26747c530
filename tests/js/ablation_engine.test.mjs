// Head ablation through the wasm engine against the native CLI: analyzeAblated's attention (with
// every head's attention reported, removed ones included) equals
// `attention-cli analyze --json --ablate L.H ... --model model_data/explainer-mini.compact.attn`
// within 5e-6, for single heads, a whole layer and all heads, on a few sentences; removed_heads
// marks exactly the heads asked for. The CLI has no predict command, so predict({masked, removed})
// is checked for consistency with the engine itself: removed '' is the unablated prediction, a
// masked position equals [MASK] written into the text, and removing a head changes the
// distribution. Single model file: no shard fetching in Node.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine } from '../../web/engine/engine.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const wasmDir = join(root, 'build', 'wasm');
const cli = join(root, 'build', 'native', 'attention-cli');
const model = join(root, 'model_data', 'explainer-mini.compact.attn');
const TOLERANCE = 5e-6;

const SENTENCES = [
  'The animal did not cross the street because it was too tired.',
  'She poured the milk into the cup until it was full.',
  'The committee will announce its decision next Thursday.',
];
// The removals asked for, from the model's shape (L layers of H heads, counted from 1): one head
// early, the first and the last, every head of one layer, two in different layers, and all.
function ablations(layers, heads) {
  const name = (l, h) => `${l}.${h}`;
  const layer = (l) => Array.from({ length: heads }, (_, h) => name(l, h + 1)).join(',');
  const mid = Math.min(layers, 3);
  return [name(Math.min(2, layers), Math.min(3, heads)), name(1, 1), name(layers, heads), layer(mid),
    `${name(1, Math.min(2, heads))},${name(layers, 1)}`,
    everyHead(layers, heads)];
}

function everyHead(layers, heads) {
  return Array.from({ length: layers * heads }, (_, k) => `${Math.floor(k / heads) + 1}.${(k % heads) + 1}`).join(',');
}

// Every head of the engine's model, as a removal list.
const allHeadsOf = (engine) => {
  const { layers, heads } = engine.analyze(SENTENCES[0]);
  return everyHead(layers, heads);
};

const cliAnalyze = (text, ablate) => JSON.parse(execFileSync(cli, ['analyze', '--model', model, '--json', '--ablate', ablate, text], { maxBuffer: 1 << 26 }).toString());

async function loadEngine(t) {
  if (!requireInputs(t, [cli, model, join(wasmDir, 'attention_engine.wasm')], 'run scripts/build.sh native and scripts/build.sh wasm')) return null;
  return createEngine({ engineUrl: pathToFileURL(`${wasmDir}/`).href, modelUrl: pathToFileURL(model).href });
}

test('analyzeAblated attention equals the CLI\u2019s --ablate within 5e-6', async (t) => {
  const engine = await loadEngine(t);
  if (!engine) return;
  let worst = 0;
  const shape = engine.analyze(SENTENCES[0]);
  for (const text of SENTENCES) {
    for (const removed of ablations(shape.layers, shape.heads)) {
      const mine = engine.analyzeAblated(text, { removed });
      const ref = cliAnalyze(text, removed);
      assert.equal(mine.n, ref.tokens.length, text);
      assert.deepEqual(mine.tokens.map((x) => x.id), ref.tokens.map((x) => x.id));
      const { n, layers, heads } = mine;
      for (let l = 0; l < layers; ++l) {
        for (let hd = 0; hd < heads; ++hd) {
          for (let i = 0; i < n; ++i) {
            for (let j = 0; j < n; ++j) {
              const d = Math.abs(mine.attention[((l * heads + hd) * n + i) * n + j] - ref.attention[l][hd][i][j]);
              worst = Math.max(worst, d);
              if (d > TOLERANCE) assert.fail(`${text} --ablate ${removed}: L${l + 1} H${hd + 1} [${i}][${j}] differs by ${d}`);
            }
          }
        }
      }
      const asked = new Set(removed.split(',').map((x) => x.split('.').map(Number)).map(([l, hd]) => (l - 1) * heads + hd - 1));
      assert.deepEqual(Array.from(mine.removed_heads), Array.from({ length: layers * heads }, (_, k) => (asked.has(k) ? 1 : 0)), `removed_heads for ${removed}`);
      // The CLI names the same heads ({layer, head}, counted from 0).
      assert.deepEqual(ref.removed_heads.map((x) => x.layer * heads + x.head).sort((a, b) => a - b), [...asked].sort((a, b) => a - b));
    }
  }
  t.diagnostic(`largest attention difference engine vs CLI: ${worst.toExponential(2)}`);
  // Ablation changes later layers: removing a layer-1 head moves layer 2's attention.
  const plain = shape;
  const { n, heads } = plain;
  const firstLayer = Array.from({ length: heads }, (_, h) => `1.${h + 1}`).join(',');
  const ablated = engine.analyzeAblated(SENTENCES[0], { removed: firstLayer });
  const layer2 = (r) => r.attention.subarray(heads * n * n, 2 * heads * n * n);
  assert.ok(layer2(plain).some((v, k) => Math.abs(v - layer2(ablated)[k]) > 1e-3), 'removing layer 1 left layer 2 unchanged');
  // Layer 1 itself (computed before any removal takes effect) is unchanged.
  assert.ok(plain.attention.subarray(0, heads * n * n).every((v, k) => Math.abs(v - ablated.attention[k]) <= TOLERANCE));
});

test('predict({masked, removed}) is consistent with the engine\u2019s own predictions', async (t) => {
  const engine = await loadEngine(t);
  if (!engine) return;
  const close = (a, b, what) => {
    assert.deepEqual(a.map((x) => x.id), b.map((x) => x.id), what);
    a.forEach((x, k) => assert.ok(Math.abs(x.probability - b[k].probability) <= 1e-9, `${what}: ${x.text} ${x.probability} vs ${b[k].probability}`));
  };
  const ALL = allHeadsOf(engine);
  for (const text of SENTENCES) {
    const r = engine.analyze(text);
    for (const i of [1, 3, r.n - 3]) {
      // removed '' is the unablated prediction.
      close(engine.predict(text, i, 10, { removed: '' }), engine.predict(text, i, 10), `${text} @${i} removed ''`);
      // A masked position equals [MASK] written into the text (a single-piece token).
      const masked = text.slice(0, r.tokens[i].start) + '[MASK]' + text.slice(r.tokens[i].end);
      if (engine.analyze(masked).n === r.n) {
        close(engine.predict(text, i, 10, { masked: true }), engine.predict(masked, i, 10), `${text} @${i} masked`);
        close(engine.predict(text, i, 10, { masked: true, removed: '2.3' }), engine.predict(masked, i, 10, { removed: '2.3' }), `${text} @${i} masked, 2.3 removed`);
      }
      const full = engine.predict(text, i, 10, { masked: true });
      const sum = full.reduce((s, x) => s + x.probability, 0);
      assert.ok(sum <= 1 + 1e-9 && full.every((x, k) => k === 0 || x.probability <= full[k - 1].probability), 'best first, at most 1 in all');
      // Removing every head changes the distribution.
      const none = engine.predict(text, i, 10, { masked: true, removed: ALL });
      assert.ok(none.some((x, k) => Math.abs(x.probability - full[k].probability) > 1e-6 || x.id !== full[k].id), 'removing all heads changed nothing');
    }
  }
  // The whole distribution sums to 1.
  const all = engine.predict(SENTENCES[0], 2, engine.info.vocab_size, { masked: true, removed: '2.3' });
  assert.ok(Math.abs(all.reduce((s, x) => s + x.probability, 0) - 1) < 1e-6);
  assert.throws(() => engine.predict(SENTENCES[0], 2, 10, { masked: true, removed: '9.9' }), /L\.H/);
});

test('probability(): an entry\u2019s exact probability, rank and the top entry, as the whole distribution gives them', async (t) => {
  const engine = await loadEngine(t);
  if (!engine) return;
  const text = SENTENCES[0];
  const vocab = engine.info.vocab_size;
  for (const removed of ['', '2.3', allHeadsOf(engine)]) {
    const all = engine.predict(text, 2, vocab, { masked: true, removed });
    for (const k of [0, 1, 17, 500, vocab - 1]) {
      const entry = all[k];
      const got = engine.probability(text, 2, entry.id, { masked: true, removed });
      assert.ok(Math.abs(got.probability - entry.probability) <= 1e-12, `removed '${removed}', entry ${k}: ${got.probability} vs ${entry.probability}`);
      // Rank from 1: entries with a strictly larger probability, plus one (ties share the better rank).
      assert.equal(got.rank, 1 + all.filter((x) => x.probability > entry.probability).length, `removed '${removed}', rank of entry ${k}`);
      assert.equal(got.top1, all[0].id);
      assert.equal(got.top1_text, all[0].text);
    }
  }
  assert.throws(() => engine.probability(text, 2, vocab, { masked: true }), /not in the vocabulary/);
  assert.throws(() => engine.probability(text, 0, 1000, { masked: true }), /cannot mask position 0/);
});

test('value norms: one per layer, head and token, and the value-weighted row is a_ij * norm', async (t) => {
  const engine = await loadEngine(t);
  if (!engine) return;
  const r = engine.analyzeAblated(SENTENCES[2], { valueNorms: true });
  assert.equal(r.value_norms.length, r.layers * r.heads * r.n);
  assert.ok(Array.from(r.value_norms).every((v) => Number.isFinite(v) && v >= 0));
  const plain = engine.analyze(SENTENCES[2]);
  assert.ok(plain.attention.every((v, k) => Math.abs(v - r.attention[k]) <= 1e-7), 'removing no head changed the attention');
});
