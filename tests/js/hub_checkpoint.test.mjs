// Models from the Hugging Face hub, in Node against the mock hub (tests/hub/mock_hub.mjs) that
// serves checkpoints made by the project's own tools (tests/hub/make_checkpoints.py): each good
// repository loads through the engine's checkpoint path (web/engine/hub.js, checkpoint.js,
// tensor_files.js) and its attention equals the native CLI's on the .attn file that
// scripts/model/convert_model.py made from the same folder (an independent reader: Python's
// torch and safetensors readers, the C++ model-file loader and forward pass), within 1e-6; each
// hostile or broken one is refused with a message that names what was wrong, and no payload ran
// (the canary the hostile pickles would call receives no request).
// Needs build/wasm and build/native (scripts/build.sh native wasm).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { checkConfig, checkpointTable, modelFileFromCheckpoint, tokenizerWord, vocabularyBytes } from '../../web/engine/checkpoint.js';
import { createEngine } from '../../web/engine/engine.js';
import { startMockHub } from '../hub/mock_hub.mjs';
import { requireInputs } from './inputs.mjs';

const root = new URL('../..', import.meta.url).pathname;
const FIXTURES = join(root, 'build', 'hub-fixtures');
const CLI = join(root, 'build', 'native', 'attention-cli');
const engineUrl = pathToFileURL(join(root, 'build', 'wasm') + '/').href;
const PARITY = 1e-6;  // |page - CLI| on every attention weight
const TEXTS = ['The animal did not cross the street because it was too tired.', 'The Keys to the CABINET are on the table, said Zoë.'];

let hub;
let manifest;

before(async (t) => {
  requireInputs(t, [join(root, 'build', 'wasm', 'attention_engine.wasm'), CLI], 'scripts/build.sh native wasm');
  const made = spawnSync('/usr/bin/python3', ['tests/hub/make_checkpoints.py', FIXTURES], { cwd: root, encoding: 'utf8', timeout: 180_000 });
  assert.equal(made.status, 0, `make_checkpoints.py failed:\n${made.stdout}\n${made.stderr}`);
  hub = await startMockHub({ dir: FIXTURES });
  manifest = hub.manifest;
});

after(async () => {
  await hub?.close();
});

const cliAttention = (attn, text) => JSON.parse(execFileSync(CLI, ['analyze', '--model', attn, '--json', text], { encoding: 'utf8', maxBuffer: 1 << 28 }));

test('every good repository on the mock hub loads, in safetensors and in PyTorch zip format, with the CLI\u2019s attention on convert_model\u2019s .attn (bar 1e-6)', async (t) => {
  const good = manifest.repos.filter((r) => r.expect.load);
  assert.ok(good.length >= 8, `only ${good.length} good repositories`);
  const formats = new Set();
  for (const repo of good) {
    const engine = await createEngine({ engineUrl, simd: 'plain', checkpoint: { hub: hub.url, id: repo.id, revision: 'main' } });
    formats.add(repo.expect.weights);
    assert.equal(engine.info.name, repo.id, 'the model is named by its repository');
    assert.equal(engine.info.checkpoint.commit, repo.sha, 'the revision resolved to the listing\u2019s commit');
    assert.equal(engine.info.checkpoint.weights, repo.expect.weights, `${repo.id}: the weights file read`);
    assert.equal(engine.info.layers, repo.expect.layers);
    let largest = 0;
    for (const text of TEXTS) {
      const page = engine.analyze(text);
      const cli = cliAttention(join(FIXTURES, repo.expect.attn), text);
      assert.deepEqual(Array.from(page.tokens, (tk) => tk.id ?? tk), cli.tokens.map((tk) => tk.id ?? tk), `${repo.id}: the same tokens`);
      const flat = cli.attention.flat(Infinity);
      assert.equal(page.attention.length, flat.length);
      for (let i = 0; i < flat.length; ++i) largest = Math.max(largest, Math.abs(page.attention[i] - flat[i]));
    }
    t.diagnostic(`${repo.id} (${repo.expect.weights}, ${repo.expect.dtype}): largest |page - CLI| attention ${largest.toExponential(2)} (bar ${PARITY})`);
    assert.ok(largest <= PARITY, `${repo.id}: attention differs from the CLI's by ${largest}`);
    engine.close();
  }
  assert.ok(formats.has('model.safetensors') && formats.has('pytorch_model.bin'), 'both weight formats are exercised');
  const both = hub.requests.filter((r) => r.path.includes('test-org/bert-both/resolve'));
  assert.ok(both.some((r) => r.path.endsWith('/model.safetensors')) && !both.some((r) => r.path.endsWith('/pytorch_model.bin')), 'a repository with both files gives its safetensors');
});

test('a checkpoint without the masked-LM head loads and says it has none; a cased one keeps its case', async () => {
  const nohead = await createEngine({ engineUrl, simd: 'plain', checkpoint: { hub: hub.url, id: 'test-org/bert-nohead' } });
  assert.equal(nohead.info.has_masked_lm_head, false);
  nohead.close();
  const cased = await createEngine({ engineUrl, simd: 'plain', checkpoint: { hub: hub.url, id: 'test-org/bert-cased' } });
  const tokens = cased.tokenize('The cabinet').tokens.map((tk) => tk.text);
  assert.ok(!tokens.includes('the'), `a cased model does not lower-case: ${tokens.join(' ')}`);
  cased.close();
});

test('hostile and broken repositories are refused with a message naming what was wrong, and no payload runs', async (t) => {
  const refused = manifest.repos.filter((r) => !r.expect.load);
  assert.ok(refused.length >= 12);
  for (const repo of refused) {
    const started = hub.requests.length;
    let error = null;
    try {
      const engine = await createEngine({ engineUrl, simd: 'plain', checkpoint: { hub: hub.url, id: repo.id } });
      engine.close();
    } catch (e) {
      error = e;
    }
    assert.ok(error, `${repo.id} was loaded, not refused`);
    const message = error.message.toLowerCase();
    const wanted = [repo.expect.message, ...(repo.expect.messageAny ?? [])].filter(Boolean).map((m) => m.toLowerCase());
    t.diagnostic(`${repo.id}: ${error.message.slice(0, 220)}`);
    assert.ok(wanted.some((m) => message.includes(m)), `${repo.id}: the refusal "${error.message}" names none of ${wanted.join(', ')}`);
    if (repo.expect.stage === 'config') {
      const weights = hub.requests.slice(started).filter((r) => /\.(safetensors|bin)$/.test(r.path.split('?')[0]));
      assert.equal(weights.length, 0, `${repo.id}: refused by its config, yet its weights were requested`);
    }
  }
  assert.equal(hub.canaryHits(), 0, 'a hostile pickle\u2019s payload reached the canary');
});

test('a missing repository and a missing revision are refused with the hub\u2019s reason', async () => {
  await assert.rejects(createEngine({ engineUrl, simd: 'plain', checkpoint: { hub: hub.url, id: 'test-org/no-such-model' } }), /401|does not exist|private/);
  await assert.rejects(createEngine({ engineUrl, simd: 'plain', checkpoint: { hub: hub.url, id: 'test-org/bert-mini-st', revision: 'no-such-branch' } }), /404|revision/);
});

test('a download cancelled midway ends with a cancellation, not a model', async () => {
  hub.setDelay(40);
  const controller = new AbortController();
  const loading = createEngine({
    engineUrl, simd: 'plain', signal: controller.signal, checkpoint: { hub: hub.url, id: 'test-org/bert-small-st' },
    onProgress: (p) => { if (p.phase === 'model' && p.loaded > 256 * 1024) controller.abort(); },
  });
  await assert.rejects(loading, (error) => error.kind === 'cancelled');
  hub.setDelay(0);
});

// The model file the page writes from a checkpoint is convert_model's, byte for byte, in every
// part but the name and provenance: the config, the tokenizer's settings, the vocabulary, the
// tensor table (names, dtypes, shapes, offsets) and every tensor's bytes.
test('the page\u2019s model file from each good checkpoint is convert_model\u2019s .attn in every section but the name and provenance', async () => {
  const createModule = (await import(pathToFileURL(join(root, 'build', 'wasm', 'attention_engine.js')).href)).default;
  const module = await createModule({ print: () => {}, printErr: () => {}, wasmBinary: readFileSync(join(root, 'build', 'wasm', 'attention_engine.wasm')) });
  const sections = (bytes) => {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const part = (k) => {
      const at = Number(view.getBigUint64(56 + 16 * k, true));
      return bytes.subarray(at, at + Number(view.getBigUint64(64 + 16 * k, true)));
    };
    return { config: bytes.subarray(16, 56), tokenizer: bytes.subarray(152, 156), vocabulary: part(2), table: part(3), data: part(4) };
  };
  for (const repo of manifest.repos.filter((r) => r.expect.load)) {
    const dir = join(FIXTURES, repo.dir);
    const files = Object.fromEntries(readdirSync(dir).map((name) => [name, new Uint8Array(readFileSync(join(dir, name)))]));
    const { bytes } = await modelFileFromCheckpoint(files, { expectedTensors: (c, p, m) => module.expectedTensors(c, p, m), name: repo.id, source: 'test' });
    const page = sections(bytes);
    const converted = sections(new Uint8Array(readFileSync(join(FIXTURES, repo.expect.attn))));
    for (const key of Object.keys(page)) assert.ok(Buffer.from(page[key]).equals(Buffer.from(converted[key])), `${repo.id}: the ${key} section differs from convert_model's`);
  }
});

// The table's rules as Python's dict.get reads them: a key given as null is a value (refused),
// not the default; the vocabulary is kept byte for byte but for CRLF and a final newline.
test('config and tokenizer keys given as null are refused as convert_model refuses them; the vocabulary keeps its bytes', async () => {
  const table = await checkpointTable();
  const base = { vocab_size: 8, hidden_size: 4, num_hidden_layers: 1, num_attention_heads: 1, intermediate_size: 8, max_position_embeddings: 8 };
  assert.equal(checkConfig(base, table.config).type_vocab_size, 2, 'an absent key takes the default');
  for (const key of ['model_type', 'hidden_act', 'position_embedding_type', 'type_vocab_size', 'layer_norm_eps']) {
    assert.throws(() => checkConfig({ ...base, [key]: null }, table.config), (error) => error.kind === 'model' && error.message.includes(key), key);
  }
  assert.throws(() => tokenizerWord({ mask_token: null }, table.tokenizer), /mask_token is null/);
  assert.equal(tokenizerWord({ do_lower_case: false }, table.tokenizer), 1);
  const bom = new Uint8Array([0xEF, 0xBB, 0xBF, 0x61, 0x0D, 0x0A, 0x62, 0xFF]);
  assert.deepEqual(Array.from(vocabularyBytes(bom)), [0xEF, 0xBB, 0xBF, 0x61, 0x0A, 0x62, 0xFF, 0x0A]);
});
