// The engine on the split layout (a core file and word-embedding shards, written by
// scripts/site/build_site.mjs into web/models/) against the same engine on the single compact
// file: identical results on held-out sentences, only the needed shards fetched, and a missing or
// corrupt shard refused with its message while the engine keeps working.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine, EngineError } from '../../web/engine/engine.js';
import { rolloutRow } from '../../web/engine/result.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const models = join(root, 'web', 'models');
const NAME = 'explainer-mini.compact';
const sentences = readFileSync(join(root, 'tests', 'fixtures', 'precision_sentences_validation.txt'), 'utf8')
  .split('\n').filter(Boolean).slice(0, 60);

let tmp;
let manifest;
function writeManifest(folder) {
  const real = JSON.parse(readFileSync(join(models, 'manifest.json'), 'utf8'));
  const entry = real.models[NAME];
  const url = (file) => pathToFileURL(join(folder, file)).href;
  const local = {
    default: NAME,
    models: { [NAME]: { ...entry, file: url(entry.file), core: { ...entry.core, file: url(entry.core.file) }, shards: { ...entry.shards, folder: `${url(entry.shards.folder)}/`, all: { ...entry.shards.all, file: url(entry.shards.all.file) }, digests: { ...entry.shards.digests, file: url(entry.shards.digests.file) } } } },
    engine: { ...real.engine, glue: pathToFileURL(join(root, 'web', 'engine', 'attention_engine.js')).href, wasm: pathToFileURL(join(root, 'web', 'engine', 'attention_engine.wasm')).href },
  };
  const path = join(tmp, `manifest-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(local));
  return { url: pathToFileURL(path).href, entry: real.models[NAME] };
}

before(() => {
  tmp = mkdtempSync(join(tmpdir(), 'attn-split-'));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

test('the split model gives the single file\u2019s results and fetches only the rows it needs', async (t) => {
  if (!requireInputs(t, [join(models, 'manifest.json'), join(models, `${NAME}.core.attn`)], 'run node scripts/site/build_site.mjs')) return;
  manifest = writeManifest(models);
  assert.ok(manifest.entry.shards.preload.length > 0, 'the opening sentence\u2019s shards are named');
  const split = await createEngine({ manifestUrl: manifest.url });
  const single = await createEngine({ manifestUrl: manifest.url, single: true });
  assert.equal(split.info.rows_per_shard, manifest.entry.shards.rows_per_shard);
  assert.equal(single.info.rows_per_shard, 0);
  const preloaded = split.shardStats.requests;
  assert.equal(preloaded, manifest.entry.shards.preload.length);
  let mismatches = 0;
  for (const sentence of sentences) {
    await split.ensureRows(sentence);
    const a = split.analyze(sentence);
    const b = single.analyze(sentence);
    assert.deepEqual(a.tokens, b.tokens);
    if (Buffer.compare(Buffer.from(a.attention.buffer), Buffer.from(b.attention.buffer)) !== 0) ++mismatches;
    for (let i = 0; i < a.n; ++i) assert.deepEqual(Array.from(rolloutRow(a, i)), Array.from(rolloutRow(b, i)));
  }
  assert.equal(mismatches, 0, `${mismatches} sentences differ`);
  const { requests, bytes } = split.shardStats;
  console.log(`# split layout: ${sentences.length} sentences, ${requests} shard requests (${preloaded} with the core), ${bytes} bytes; core ${manifest.entry.core.bytes} bytes, single file ${manifest.entry.bytes}`);
  assert.ok(requests < manifest.entry.shards.count / 2, 'only the needed shards are fetched');
  // Nothing is fetched twice.
  const before = split.shardStats.requests;
  for (const sentence of sentences.slice(0, 10)) await split.ensureRows(sentence);
  assert.equal(split.shardStats.requests, before);
  // Predictions need every row: the rest of the table is fetched (more than half of it is
  // missing, so as the one all-rows file), then they equal the single file's.
  assert.ok(manifest.entry.shards.all.bytes === manifest.entry.shards.bytes, 'the all-rows file is the shards back to back');
  const progress = [];
  await split.ensureRows(sentences[0], { all: true, onProgress: (p) => progress.push(p) });
  assert.equal(split.shardStats.requests, before + 1, 'one request for the rest of the table');
  assert.equal(split.shardSummary.loaded, manifest.entry.shards.count);
  assert.ok(progress.length > 0 && progress.every((p) => p.phase === 'rows') && progress.at(-1).percent === 100);
  assert.deepEqual(split.predict(sentences[0], 2, 5), single.predict(sentences[0], 2, 5));
  assert.deepEqual(split.predict(sentences[1], 3, 5, { masked: true }), single.predict(sentences[1], 3, 5, { masked: true }));
});

test('a damaged all-rows file is refused with its message, and the engine keeps working', async (t) => {
  if (!requireInputs(t, [join(models, `${NAME}.core.attn`)], 'run node scripts/site/build_site.mjs')) return;
  const folder = join(tmp, 'site-all');
  cpSync(models, folder, { recursive: true, filter: (src) => !src.endsWith('.naive.attn') && !/explainer-mini\.attn$/.test(src) });
  const local = writeManifest(folder);
  const allPath = join(folder, local.entry.shards.all.file);
  const good = readFileSync(allPath);
  const bad = Buffer.from(good);
  bad[bad.length >> 1] ^= 0x01;
  writeFileSync(allPath, bad);
  const engine = await createEngine({ manifestUrl: local.url });
  await assert.rejects(engine.ensureRows('The cat sat.', { all: true }),
    (error) => error instanceof EngineError && error.kind === 'model' && /word-embedding rows .* SHA-256 does not match/.test(error.message));
  await engine.ensureRows('The cat sat.');
  assert.ok(engine.analyze('The cat sat.').n > 3, 'the engine still fetches and analyses sentences');
  writeFileSync(allPath, good);
  await engine.ensureRows('The cat sat.', { all: true });
  assert.equal(engine.shardSummary.loaded, local.entry.shards.count);
});

test('a missing or corrupt shard is refused with its message; the engine keeps working and a retry loads', async (t) => {
  if (!requireInputs(t, [join(models, `${NAME}.core.attn`)], 'run node scripts/site/build_site.mjs')) return;
  const folder = join(tmp, 'site');
  cpSync(models, folder, { recursive: true, filter: (src) => !src.endsWith('.naive.attn') && !/explainer-mini\.attn$/.test(src) });
  const local = writeManifest(folder);
  const engine = await createEngine({ manifestUrl: local.url });
  const text = 'Zebras graze quietly near the riverbank.';
  const needed = engine.missingShards(text);
  assert.ok(needed.length > 0);
  const shardPath = join(folder, local.entry.shards.folder, `${String(needed[0]).padStart(5, '0')}.bin`);
  const good = readFileSync(shardPath);
  const bad = Buffer.from(good);
  bad[bad.length - 1] ^= 0x20;
  writeFileSync(shardPath, bad);
  await assert.rejects(engine.ensureRows(text), (error) => error instanceof EngineError && error.kind === 'model' && /SHA-256 does not match the manifest\u2019s list of shard checksums/.test(error.message));
  await engine.ensureRows('The cat sat.');
  assert.ok(engine.analyze('The cat sat.').n > 3, 'the engine still fetches and analyses other sentences');
  rmSync(shardPath);
  await assert.rejects(engine.ensureRows(text), (error) => error instanceof EngineError && /Could not (read|download)/.test(error.message));
  writeFileSync(shardPath, good);
  await engine.ensureRows(text);
  assert.ok(engine.analyze(text).n > 5);
});
