// Hostile model files against the wasm engine: files that pass every structural check but
// declare more values than a 32-bit build can hold (written by the native suite's
// CraftedFileTest into build/native/crafted/). The engine must refuse them with the core's
// status as an EngineError of kind 'model', and the page must keep working afterwards.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine, describeWasmFailure, EngineError } from '../../web/engine/engine.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const crafted = join(root, 'build', 'native', 'crafted');
const wasmDir = join(root, 'build', 'wasm');
const shipped = join(root, 'model_data', 'explainer-mini.compact.attn');
const engineUrl = pathToFileURL(`${wasmDir}/`).href;

const CASES = [
  ['wraps-32-bit.attn', 'declares 4.3 billion values'],
  ['gigabytes.attn', 'declares 872.5 million values'],
];

test('crafted model files are refused with the core\u2019s status, and a good model loads after them', async (t) => {
  const paths = CASES.map(([file]) => join(crafted, file));
  if (!requireInputs(t, [...paths, join(wasmDir, 'attention_engine.wasm')],
    'run the native suite (ctest --preset native) and scripts/build.sh wasm')) return;
  for (const [file, expected] of CASES) {
    await assert.rejects(
      createEngine({ engineUrl, modelUrl: pathToFileURL(join(crafted, file)).href }),
      (error) => {
        assert.ok(error instanceof EngineError, `${file}: ${error}`);
        assert.equal(error.kind, 'model', `${file}: ${error.message}`);
        assert.match(error.message, new RegExp(expected));
        assert.doesNotMatch(error.message, /\.\./);
        return true;
      },
    );
  }
  const engine = await createEngine({ engineUrl, modelUrl: pathToFileURL(shipped).href });
  const result = engine.analyze('The engine still works after refusing two files.');
  assert.ok(result.n > 5);
  const memory = engine.memoryInfo();
  assert.ok(memory.heap_bytes < 512 * 1024 * 1024, `heap ${memory.heap_bytes}`);
});

test('a trap reads as a sentence: no doubled full stop, advice that fits the moment', () => {
  const abort = new Error('Aborted(). Build with -s ASSERTIONS=1 for more info.');
  const whileLoading = describeWasmFailure(abort, { loading: 'https://example.org/model.attn' });
  assert.equal(whileLoading.kind, 'memory');
  assert.doesNotMatch(whileLoading.message, /\.\.|\.\)/);
  assert.match(whileLoading.message, /model file https:\/\/example\.org\/model\.attn/);
  assert.doesNotMatch(whileLoading.message, /Reload the page/);
  const later = describeWasmFailure(new Error('RuntimeError: unreachable'));
  assert.equal(later.kind, 'engine');
  assert.match(later.message, /Reload the page/);
  assert.doesNotMatch(later.message, /\.\./);
});
