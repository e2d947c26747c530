// The page on the split model (a core file and word-embedding shards, scripts/site/build_site.mjs):
// a cold load fetches the core and the opening sentence's shards and no other model bytes;
// typing a sentence with new words fetches exactly the shards it lacks, once; a second visit
// (same browser profile, so the same Cache API) fetches no model bytes at all.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startSite } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const cli = join(root, 'build', 'native', 'attention-cli');
const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
const entry = manifest.models[manifest.default];
const LOAD_TIMEOUT_MS = 60000;
const SENTENCE = 'Quokkas and wombats quarrel beside eucalyptus groves at twilight.';

let site;
let baseUrl;
let browser;

before(async () => {
  assert.ok(entry.core && entry.shards, 'the default model is not split: run node scripts/site/build_site.mjs');
  assert.ok(existsSync(cli), `${cli} is missing: run scripts/build.sh native`);
  site = await startSite(web);
  ({ baseUrl, browser } = site);
});
after(() => site?.close());

// The shards a text needs, from the native tokenizer: floor(id / R) for its ids.
function shardsOf(text) {
  const ids = execFileSync(cli, ['tokenize', '--vocab', join(root, 'model_data', 'vocab.txt'), '--lines'], { input: `${text}\n` }).toString().trim().split(/\s+/);
  return [...new Set(ids.map((id) => Math.floor(Number(id) / entry.shards.rows_per_shard)))].sort((a, b) => a - b);
}

// Model files requested over the network (the worker's requests included), by name.
function record(context) {
  const seen = [];
  seen.requests = [];
  context.on('request', (r) => {
    const name = r.url().split('/').pop();
    if (/\.(attn|bin)$/.test(name)) {
      seen.push(name);
      seen.requests.push(r);
    }
  });
  return seen;
}

// The names of those of requests whose answer brought bytes from the network: not the site's
// service worker's, not the browser's cache after a revalidation (the head's preload of the core
// on a later visit: scripts/site/module_graph.mjs).
async function fromNetwork(requests) {
  const names = [];
  for (const r of requests) {
    const response = await r.response();
    if (response?.fromServiceWorker()) continue;
    if ((await r.sizes().catch(() => ({ responseBodySize: 1 }))).responseBodySize > 0) names.push(r.url().split('/').pop());
  }
  return names;
}

async function openLive(page) {
  await page.goto(baseUrl);
  await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
}

test('cold load, new words, second visit: only the bytes each needs', async () => {
  const context = await browser.newContext();
  const seen = record(context);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await openLive(page);
  const shardName = (k) => `${String(k).padStart(5, '0')}.bin`;
  assert.deepEqual(seen.filter((n) => n.endsWith('.attn')), [entry.core.file], 'only the core file of the model');
  assert.deepEqual(seen.filter((n) => n.endsWith('.bin')).sort(), entry.shards.preload.map(shardName).sort(), 'exactly the opening sentence\u2019s shards');

  const before = new Set(seen);
  const input = page.locator('#instrument input#sentence');
  await input.fill(SENTENCE);
  await input.press('Enter');
  await page.waitForFunction((text) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === text, SENTENCE, { timeout: LOAD_TIMEOUT_MS });
  const fetched = seen.filter((n) => !before.has(n));
  const expected = shardsOf(SENTENCE).filter((k) => !entry.shards.preload.includes(k)).map(shardName);
  assert.deepEqual(fetched.sort(), expected.sort(), 'the new sentence fetches exactly the shards it lacks');
  assert.equal(new Set(seen).size, seen.length, 'no file is fetched twice');
  await page.close();

  const again = await context.newPage();
  const count = seen.length;
  await openLive(again);
  await again.locator('#instrument input#sentence').fill(SENTENCE);
  await again.locator('#instrument input#sentence').press('Enter');
  await again.waitForFunction((text) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === text, SENTENCE, { timeout: LOAD_TIMEOUT_MS });
  assert.deepEqual(await fromNetwork(seen.requests.slice(count)), [], 'a second visit fetches no model bytes');
  assert.deepEqual(errors, []);
  console.log(`# split model: a cold load fetched the core (${(entry.core.bytes / 1e6).toFixed(2)} MB) and ${entry.shards.preload.length} shards; "${SENTENCE}" fetched ${fetched.length} more shards`);
  await context.close();
});

test('a missing or corrupt shard says which file failed, keeps the figure, and a retry loads', async () => {
  const context = await browser.newContext();
  const sentence = 'Narwhals and axolotls ponder quantum chromodynamics.';
  const needed = shardsOf(sentence).filter((k) => !entry.shards.preload.includes(k));
  assert.ok(needed.length >= 2, 'the sentence needs shards the opening one does not');
  const [missing, corrupt] = needed.map((k) => `${String(k).padStart(5, '0')}.bin`);
  let broken = true;
  await context.route('**/*.rows/*.bin', async (route) => {
    const name = route.request().url().split('/').pop();
    if (broken && name === missing) return route.fulfill({ status: 404, body: 'not here' });
    if (broken && name === corrupt) {
      const response = await route.fetch();
      const body = Buffer.from(await response.body());
      body[body.length - 1] ^= 0x10;
      return route.fulfill({ response, body });
    }
    return route.continue();
  });
  const page = await context.newPage();
  await openLive(page);
  const shown = () => page.evaluate(() => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence);
  const before = await shown();
  const input = page.locator('#instrument input#sentence');
  await input.fill(sentence);
  await input.press('Enter');
  const message = page.locator('#instrument').locator('text=/Could not download .*|could not be used/');
  await message.first().waitFor({ timeout: LOAD_TIMEOUT_MS });
  const text = await message.first().textContent();
  assert.ok(text.includes(missing) || text.includes(corrupt), `the message names the shard: ${text}`);
  assert.equal(await shown(), before, 'the previous figure stays');
  broken = false;
  await input.press('Enter');
  await page.waitForFunction((t) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === t, sentence, { timeout: LOAD_TIMEOUT_MS });
  await context.close();
});
