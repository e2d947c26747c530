// Every shard of the split model is checked against its SHA-256 in the manifest's list before the
// core reads it or the Cache API keeps it (security review 4, N1: a shard altered in transit with
// its CRC-32 recomputed was cached, and every later visit showed wrong numbers). The alteration
// here is the review's: one row's scale times 1.25, the shard's payload CRC fixed, so the core
// alone would accept it.
//   - altered once on its way: refused, fetched again straight from the server, and the good
//     copy is what the cache keeps;
//   - an altered copy already in the cache: deleted, fetched again, replaced by the good one;
//   - altered on the server: the figures say which file is wrong, and nothing is kept.
// Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium, linkedSite, serve, startSite } from './harness.mjs';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const TIMEOUT = 90000;
const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
const entry = manifest.models[manifest.default];
const shardIndex = entry.shards.preload[0];
const shardPath = `models/${entry.shards.folder}${String(shardIndex).padStart(5, '0')}.bin`;
const good = readFileSync(join(web, shardPath));

// zlib's CRC-32.
function crc32(bytes) {
  let crc = 0xFFFFFFFF;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; ++k) crc = crc & 1 ? 0xEDB88320 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xFFFFFFFF) >>> 0;
}

// The shard with its first row's scale times 1.25 and its payload CRC (ShardFileFormat: header of
// 64 bytes, CRC-32 of the payload at 40) made to match.
function altered() {
  const bytes = Buffer.from(good);
  bytes.writeFloatLE(bytes.readFloatLE(64) * 1.25, 64);
  bytes.writeUInt32LE(crc32(bytes.subarray(64)), 40);
  return bytes;
}

let site;
before(async () => {
  assert.ok(entry.shards.digests, 'the manifest names the shards\u2019 checksums');
  site = await startSite(web);
});
after(async () => {
  await site?.close();
});

const cachedShard = (page, key) => page.evaluate(async (k) => {
  const hit = await (await caches.open('attention-explainer')).match(k);
  return hit ? Array.from(new Uint8Array(await hit.arrayBuffer())) : null;
}, key);

test('a shard altered once on its way is refused, fetched again from the server, and only the good copy is cached', async () => {
  const context = await site.browser.newContext();
  const page = await context.newPage();
  const served = [];
  await context.route(`**/${shardPath}`, async (route) => {
    served.push(route.request().url());
    if (served.length === 1) await route.fulfill({ status: 200, contentType: 'application/octet-stream', body: altered() });
    else await route.continue();
  });
  await page.goto(`${site.baseUrl}index.html`);
  await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  assert.equal(served.length, 2, 'the shard was fetched twice: the altered copy, then the server\u2019s');
  const key = `${new URL(shardPath, site.baseUrl).href}?core=${entry.core.sha256}`;
  await page.waitForFunction(async (k) => Boolean(await (await caches.open('attention-explainer')).match(k)), key, { timeout: TIMEOUT });
  assert.deepEqual(Buffer.from(await cachedShard(page, key)), good, 'the cache keeps the good copy');
  await context.close();
});

test('an altered copy in the cache is deleted, fetched again and replaced by the good one', async () => {
  const context = await site.browser.newContext();
  const page = await context.newPage();
  const key = `${new URL(shardPath, site.baseUrl).href}?core=${entry.core.sha256}`;
  await page.goto(`${site.baseUrl}models/manifest.json`);
  await page.evaluate(async ({ k, bytes }) => {
    await (await caches.open('attention-explainer')).put(k, new Response(new Uint8Array(bytes)));
  }, { k: key, bytes: Array.from(altered()) });
  let fetched = 0;
  await context.route(`**/${shardPath}`, async (route) => {
    fetched += 1;
    await route.continue();
  });
  await page.goto(`${site.baseUrl}index.html`);
  await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  assert.equal(fetched, 1, 'the shard came from the server once');
  assert.deepEqual(Buffer.from(await cachedShard(page, key)), good);
  await context.close();
});

test('a shard altered on the server: the figures say which file is wrong, and nothing of it is cached', async () => {
  // web/ linked, with the shard folder a folder of links but for the altered shard.
  const dir = linkedSite(web, { 'models/manifest.json': readFileSync(join(web, 'models', 'manifest.json')) });
  const folder = join(dir, 'models', entry.shards.folder.replace(/\/$/, ''));
  rmSync(folder, { force: true });
  mkdirSync(folder);
  for (const name of readdirSync(join(web, 'models', entry.shards.folder))) symlinkSync(join(web, 'models', entry.shards.folder, name), join(folder, name));
  rmSync(join(dir, shardPath));
  writeFileSync(join(dir, shardPath), altered());
  const server = await serve(dir);
  const browser = await launchChromium();
  try {
    const base = `http://127.0.0.1:${server.server.address().port}/`;
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}index.html`);
    await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
    await page.click('#open');
    const status = page.locator('#instrument .status[data-mode="error"]');
    await status.waitFor({ timeout: TIMEOUT });
    const text = await status.textContent();
    assert.match(text, new RegExp(`${String(shardIndex).padStart(5, '0')}\\.bin`), text);
    assert.match(text, /SHA-256/);
    assert.equal(await cachedShard(page, `${new URL(shardPath, base).href}?core=${entry.core.sha256}`), null);
    await context.close();
  } finally {
    await browser.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
