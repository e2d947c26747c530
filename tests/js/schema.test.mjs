// The result schema is defined once, in C++ (wasm/core/analysis.h): the wasm module's schema()
// names its enums in order. web/engine/result.js reads results with its own constants; this test
// holds them equal, so that a change on one side cannot go unnoticed. Needs build/wasm.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { HEAD_LABELS, ROLE, ROLLOUT_RESIDUAL_WEIGHT, ROW_STAT, ROW_STAT_FIELDS } from '../../web/engine/result.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const glue = join(root, 'build', 'wasm', 'attention_engine.js');
const wasm = join(root, 'build', 'wasm', 'attention_engine.wasm');

test('web/engine/result.js names the row statistics, roles and head labels as the core does', async (t) => {
  if (!requireInputs(t, [glue, wasm], 'run scripts/build.sh wasm')) return;
  const createModule = (await import(pathToFileURL(glue).href)).default;
  const module = await createModule({ wasmBinary: readFileSync(wasm), print: () => {}, printErr: () => {} });
  const schema = module.schema();
  assert.deepEqual(Array.from(schema.row_stats), Object.keys(ROW_STAT));
  assert.deepEqual(Object.values(ROW_STAT), Object.keys(ROW_STAT).map((_, k) => k), 'ROW_STAT holds field indices in order');
  assert.equal(module.ROW_STAT_FIELDS, ROW_STAT_FIELDS);
  assert.deepEqual(Array.from(schema.roles), Object.keys(ROLE));
  assert.deepEqual(Object.values(ROLE), Object.keys(ROLE).map((_, k) => k), 'ROLE holds the enum values in order');
  assert.deepEqual(Array.from(schema.head_labels), HEAD_LABELS);
  assert.equal(schema.rollout_residual_weight, ROLLOUT_RESIDUAL_WEIGHT);
});
