// The vocabulary post's survival list (web/posts/survival.js: every entry typed back by the
// rule written there) computed with the wasm engine's tokenizer, checked against the native
// CLI tokenizer (attention-cli tokenize --lines) on every text typed for all 30,522 entries:
// the same ids for every text, so the same survivors, failures and causes. Needs build/wasm
// (scripts/build.sh wasm), build/native/attention-cli and the shipped model file.
// Both tokenizers always type back all 30,522 entries (one request each). What costs the time is
// the cause of each failure, which the CLI gives one process per text: scripts/test.sh --quick
// (ATTN_QUICK=1) compares the causes of every 25th failure and the first of each cause, the full
// run (scripts/test.sh, which CI runs) of every failure.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine } from '../../web/engine/engine.js';
import { CAUSES, failureCause, typeBack } from '../../web/posts/survival.js';
import { tokenizerOf } from '../../web/posts/tokenizer.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'build', 'native', 'attention-cli');
const wasmDir = join(root, 'build', 'wasm');
const model = join(root, 'model_data', 'explainer-mini.compact.attn');
const vocabPath = join(root, 'model_data', 'vocab.txt');
const QUICK = process.env.ATTN_QUICK === '1';
const SAMPLE_EVERY = 25;

// The CLI's ids for many texts, one line each ([CLS] ... [SEP]).
function cliIds(texts) {
  for (const text of texts) assert.ok(!/[\n\r]/.test(text), `a typed text holds a line break: ${JSON.stringify(text)}`);
  const out = execFileSync(cli, ['tokenize', '--vocab', vocabPath, '--lines'], { input: `${texts.join('\n')}\n`, maxBuffer: 1 << 28 }).toString();
  const lines = out.split('\n');
  assert.ok(lines.length >= texts.length, `the CLI printed ${lines.length} lines for ${texts.length} texts`);
  return texts.map((_, k) => lines[k].trim().split(' ').map(Number));
}

function cliTokens(text) {
  return JSON.parse(execFileSync(cli, ['tokenize', '--vocab', vocabPath, '--json', '-'], { input: text }).toString()).tokens;
}

test('every vocabulary entry typed back: the wasm tokenizer and the CLI agree on all 30,522', { timeout: 600000 }, async (t) => {
  if (!requireInputs(t, [join(wasmDir, 'attention_engine.wasm'), cli, model], 'run scripts/build.sh wasm and scripts/build.sh native')) return;
  const engine = await createEngine({ engineUrl: pathToFileURL(`${wasmDir}/`).href, modelUrl: pathToFileURL(model).href });
  const tokenizer = await tokenizerOf(engine);
  const vocab = await tokenizer.vocabulary();
  const file = readFileSync(vocabPath, 'utf8').split('\n').slice(0, -1);
  assert.equal(vocab.length, 30522);
  assert.deepEqual(vocab, file, 'the model file\u2019s vocabulary is not model_data/vocab.txt');

  const wasm = await typeBack(vocab, tokenizer.idsOf);
  const native = await typeBack(vocab, cliIds);
  // Every text either tokenizer was given, by both: the same ids.
  assert.deepEqual(wasm.texts, native.texts);
  const wasmIds = await tokenizer.idsOf(wasm.texts);
  const nativeIds = cliIds(wasm.texts);
  let differ = 0;
  for (let k = 0; k < wasm.texts.length; ++k) if (wasmIds[k].join(' ') !== nativeIds[k].join(' ')) ++differ;
  assert.equal(differ, 0, `${differ} of ${wasm.texts.length} typed texts tokenized differently`);
  assert.deepEqual(wasm.failures.map((f) => f.id), native.failures.map((f) => f.id));
  assert.equal(wasm.survivors + wasm.failures.length, 30522);

  // The causes, from each tokenizer's own tokens (ids, offsets, word indices).
  const unk = vocab.indexOf('[UNK]');
  const causes = {};
  let compared = 0;
  for (const [k, f] of wasm.failures.entries()) {
    const fromWasm = failureCause(f, (await tokenizer.tokenize(f.text)).tokens, unk);
    assert.ok(fromWasm in CAUSES);
    causes[fromWasm] = (causes[fromWasm] ?? 0) + 1;
    if (QUICK && k % SAMPLE_EVERY !== 0 && causes[fromWasm] > 1) continue;
    const fromCli = failureCause(f, cliTokens(f.text), unk);
    assert.equal(fromWasm, fromCli, `${f.entry}: ${fromWasm} in wasm, ${fromCli} natively`);
    ++compared;
  }
  t.diagnostic(`${wasm.survivors} of 30522 survive, ${wasm.failures.length} do not; pieces failing after "a": ${wasm.firstPassPieceFailures}, back after "${wasm.prefix}": ${wasm.rescued}; causes ${JSON.stringify(causes)}; causes compared with the CLI's for ${compared} of ${wasm.failures.length} failures${QUICK ? ' (ATTN_QUICK: a sample)' : ''}`);
  // Every [unusedN] entry is split at its brackets; every special entry typed alone comes back.
  assert.equal(causes.unused, vocab.filter((v) => /^\[unused\d+\]$/.test(v)).length);
  for (const special of ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']) assert.ok(!wasm.failures.some((f) => f.entry === special), `${special} did not survive`);
});
