// The engine's downloads against the manifest (web/engine/engine.js fetchVerified), in Debian's
// Chromium, on the article: a wrong answer for the model's core file or for the wasm (a captive
// portal's page, 200 text/html) is caught by its length and SHA-256, never cached, and fetched
// once more from the server, so the page goes live; a wrong entry already in the Cache API is
// dropped the same way; and a file that is wrong both times is named in the error with what was
// wrong. Before, the first bad answer was cached under the manifest's checksum and served to
// every later visit (security review F2). Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { openInstrument, startSite } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 90000;
const PORTAL = '<!doctype html><title>Log in</title><p>Please log in to the hotel Wi-Fi.</p>';

let site;
let manifest;
let core;   // the default model's core file: {file, bytes, sha256}

before(async () => {
  site = await startSite(web);
  manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  core = manifest.models[manifest.default].core;
  assert.ok(core?.sha256, 'the default model has no split core in the manifest');
});

after(() => site?.close());

// A fresh context whose requests for path are answered by answer(n) for the n-th request
// (counting from 1): a portal's page, or null to let the server answer.
async function contextAnswering(path, answer) {
  const context = await site.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const seen = { requests: 0 };
  await context.route(`**/${path}`, (route) => {
    seen.requests += 1;
    return answer(seen.requests) ? route.fulfill({ status: 200, contentType: 'text/html', body: PORTAL }) : route.continue();
  });
  return { context, seen };
}

// The engine's timings' word for where the model file's bytes came from (web/engine/files.js).
const modelFrom = (page) => page.evaluate(async () => (await (await import('/engine/engine.js')).getEngine()).timings.modelFrom);

// The Cache API's entry for a file of the site, once the engine has written it: its key, length
// and SHA-256.
function cachedEntry(page, path) {
  return page.waitForFunction(async (name) => {
    const cache = await caches.open('attention-explainer');
    const key = (await cache.keys()).map((r) => r.url).find((url) => new URL(url).pathname.endsWith(name));
    if (!key) return null;
    const bytes = await (await cache.match(key)).arrayBuffer();
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
    return { key, bytes: bytes.byteLength, sha256: digest };
  }, path, { timeout: LOAD_TIMEOUT_MS, polling: 100 }).then((handle) => handle.jsonValue());
}

describe('downloads checked against the manifest', { timeout: 300000 }, () => {
  for (const [label, path, entry] of [
    ['the model\u2019s core file', () => `models/${core.file}`, () => core],
    // Chromium runs relaxed SIMD, so the page fetches the engine's relaxed-SIMD wasm.
    ['the wasm', () => 'engine/attention_engine.relaxed.wasm', () => manifest.engine.relaxed],
  ]) {
    test(`${label} answered once by a captive portal: fetched again, the page goes live, and only the right bytes are cached`, async () => {
      const { context, seen } = await contextAnswering(path(), (n) => n === 1);
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(site.baseUrl);
      await openInstrument(page, LOAD_TIMEOUT_MS);
      assert.equal(seen.requests, 2, 'the file was not fetched exactly twice');
      const cached = await cachedEntry(page, path().split('/').pop());
      assert.deepEqual({ bytes: cached.bytes, sha256: cached.sha256 }, { bytes: entry().bytes, sha256: entry().sha256 });
      assert.deepEqual(errors, []);
      await context.close();
    });
  }

  test('the page\u2019s head asks for the model\u2019s core before any script runs, once, and its worker reads that answer; a second visit reads the kept copy', async () => {
    const { context, seen } = await contextAnswering(`models/${core.file}`, () => false);
    const page = await context.newPage();
    await page.goto(site.baseUrl);
    await openInstrument(page, LOAD_TIMEOUT_MS);
    assert.equal(await modelFrom(page), 'page');
    assert.equal(seen.requests, 1);
    // Counted once in the page's resources; the progress said the file's bytes.
    const entries = await page.evaluate((name) => performance.getEntriesByType('resource').filter((e) => e.name.endsWith(`/${name}`)).length, core.file);
    assert.equal(entries, 1);
    assert.equal((await cachedEntry(page, core.file)).sha256, core.sha256);
    await page.reload();
    await openInstrument(page, LOAD_TIMEOUT_MS);
    assert.equal(await modelFrom(page), 'cache');
    // The head's preload, and nothing more: this context's routes keep the site's service worker
    // out, which on a reader's later visit answers that preload from the same kept copy
    // (web/sw.js; offline.test.mjs checks that no model file then comes from the network).
    assert.equal(seen.requests, 2, 'the second visit asked for the core more than the head does');
    await context.close();
  });

  test('a browser that cannot hand a stream to a worker: the worker downloads the core, and the head\u2019s preload is dropped', async () => {
    const { context, seen } = await contextAnswering(`models/${core.file}`, () => false);
    await context.addInitScript(() => {
      const clone = globalThis.structuredClone;
      globalThis.structuredClone = (value, options) => {
        if (options?.transfer?.some((t) => t instanceof ReadableStream)) throw new DOMException('ReadableStream could not be cloned.', 'DataCloneError');
        return clone(value, options);
      };
    });
    const page = await context.newPage();
    await page.goto(site.baseUrl);
    await openInstrument(page, LOAD_TIMEOUT_MS);
    assert.equal(await modelFrom(page), 'network');
    // The head's preload (taken up and cancelled by the page) and the worker's download.
    assert.equal(seen.requests, 2);
    await context.close();
  });

  test('a wrong entry already in the Cache API under the checksum\u2019s key is dropped and the file fetched from the server', async () => {
    const { context, seen } = await contextAnswering(`models/${core.file}`, () => false);
    const page = await context.newPage();
    // What a foreign script on the site's origin could write (the review's F1 with F2).
    await page.goto(`${site.baseUrl}engine/result.js`);
    const key = `${site.baseUrl}models/${core.file}?sha256=${core.sha256}`;
    await page.evaluate(async (k) => (await caches.open('attention-explainer')).put(k, new Response('junk', { headers: { 'content-type': 'application/octet-stream' } })), key);
    await page.goto(site.baseUrl);
    await openInstrument(page, LOAD_TIMEOUT_MS);
    // The head's preload (taken up and dropped beside the kept copy), then the download that
    // replaces the wrong copy.
    assert.equal(seen.requests, 2);
    const cached = await page.waitForFunction(async ([name, bytes]) => {
      const entry = await (await caches.open('attention-explainer')).match(name);
      return entry && (await entry.arrayBuffer()).byteLength === bytes;
    }, [key, core.bytes], { timeout: LOAD_TIMEOUT_MS, polling: 100 });
    assert.ok(await cached.jsonValue());
    await context.close();
  });

  test('a file wrong on both tries is named in the error, with what was wrong, and is not cached', async () => {
    const { context, seen } = await contextAnswering(`models/${core.file}`, () => true);
    const page = await context.newPage();
    await page.goto(site.baseUrl);
    await page.locator('#loader[data-state="error"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const message = await page.locator('#progress-text').textContent();
    assert.ok(message.includes(`models/${core.file} could not be used: got an HTML page instead of the file, also when fetched again from the server`), message);
    assert.equal(seen.requests, 2);
    const keys = await page.evaluate(async () => (await (await caches.open('attention-explainer')).keys()).map((r) => r.url));
    assert.deepEqual(keys.filter((url) => url.includes(core.file)), []);
    await context.close();
  });
});
