// Model keys looked up in the manifest (web/engine/engine.js manifestModel), in Node: a key from
// a link finds only the manifest's own entries, never Object.prototype's members (security
// review F11), and the engine refuses such a key by name before it downloads anything; what the
// engine's start downloads (startBytes, the loaders' total) on the shipped manifest.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createEngine, EngineError, manifestModel, startBytes } from '../../web/engine/engine.js';
import { requireInputs } from './inputs.mjs';

const INHERITED = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
// JSON.parse makes "own" an own entry like any other; the engine files do not exist, so a
// lookup that went past the key check would fail on a download instead.
const manifest = JSON.parse(`{"default": "own", "models": {"own": {"file": "own.attn", "bytes": 4, "sha256": ""}},
  "engine": {"glue": "missing/attention_engine.js", "wasm": "missing/attention_engine.wasm", "bytes": 0, "sha256": ""}}`);

test('manifestModel finds only the manifest\u2019s own entries', () => {
  assert.equal(manifestModel(manifest, 'own').file, 'own.attn');
  for (const key of INHERITED) assert.equal(manifestModel(manifest, key), undefined, key);
  assert.equal(manifestModel(manifest, undefined), undefined);
  assert.equal(manifestModel(null, 'own'), undefined);
  assert.equal(manifestModel({}, 'own'), undefined);
  // A manifest may name a model __proto__ itself (JSON.parse makes it an own entry).
  assert.equal(manifestModel(JSON.parse('{"models": {"__proto__": {"file": "p.attn"}}}'), '__proto__').file, 'p.attn');
});

test('createEngine refuses a key the manifest does not have, naming it', async () => {
  for (const key of INHERITED) {
    await assert.rejects(createEngine({ manifest, manifestUrl: 'file:///nowhere/manifest.json', model: key }), (error) => {
      assert.ok(error instanceof EngineError, `${key}: ${error}`);
      assert.equal(error.kind, 'model');
      assert.equal(error.message, `The manifest file:///nowhere/manifest.json has no model named ${key}.`);
      return true;
    });
  }
});

// The loaders said "4.4 MB of 20.1 MB" (the whole model file) and then "Downloaded 5.3 MB": a
// split model's start fetches the engine and the core only.
test('startBytes is what the engine\u2019s start fetches: the engine and the core of a split model, the file of a single one', (t) => {
  const path = fileURLToPath(new URL('../../web/models/manifest.json', import.meta.url));
  if (!requireInputs(t, [path], 'run node scripts/site/build_site.mjs')) return;
  const shipped = JSON.parse(readFileSync(path, 'utf8'));
  const entry = manifestModel(shipped, shipped.default);
  assert.ok(entry.core && entry.shards, 'the shipped default model is split');
  assert.equal(startBytes(shipped), shipped.engine.bytes + entry.core.bytes);
  assert.ok(startBytes(shipped) < shipped.engine.bytes + entry.bytes / 2, `${startBytes(shipped)} B is not the start's size`);
  assert.equal(startBytes(shipped, { single: true }), shipped.engine.bytes + entry.bytes);
  // Unknown: a model named by its address, or no manifest (the loader then counts what it hears).
  assert.equal(startBytes(shipped, { modelUrl: 'https://example.org/m.attn' }), 0);
  assert.equal(startBytes(null), 0);
});
