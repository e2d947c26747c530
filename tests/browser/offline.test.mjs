// Reading offline after a first visit (web/sw.js, registered by web/offline.js): once the
// article went live, its service worker holds every file the manifest's `site.files` lists; with
// the network off a second visit goes live, a sentence whose rows an earlier visit fetched is
// analysed, one whose rows were never fetched says that it needs the network, and a post opens;
// a new site version replaces the stored one and the page says so. Contexts here allow service
// workers (the harness blocks them elsewhere). Needs the assembled site:
//   node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

import { launchChromium, linkedSite, openInstrument, serve, typeSentence, waitForSentence, waitReady } from './harness.mjs';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const LOAD_TIMEOUT_MS = 90000;

// A copy of the site whose manifest the test may rewrite (harness linkedSite).
let dir;
let server;
let browser;
let baseUrl;
before(async () => {
  dir = linkedSite(web, { 'models/manifest.json': readFileSync(join(web, 'models', 'manifest.json')) });
  server = await serve(dir);
  browser = await launchChromium();
  baseUrl = `http://127.0.0.1:${server.server.address().port}/`;
});
after(async () => {
  await browser?.close();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const manifest = () => JSON.parse(readFileSync(join(dir, 'models', 'manifest.json'), 'utf8'));

// The site's stored caches once the service worker of `version` is active and controls the
// page: {name: number of entries}.
async function stored(page, version) {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    const found = await page.evaluate(async (v) => {
      const registration = await navigator.serviceWorker.getRegistration();
      if (registration?.active?.state !== 'activated' || !navigator.serviceWorker.controller) return null;
      if (!new URL(registration.active.scriptURL).search.includes(`v=${v}`)) return null;
      const names = (await caches.keys()).filter((n) => n.startsWith('attention-site-'));
      if (!names.includes(`attention-site-${v}`)) return null;
      const out = {};
      for (const name of names) out[name] = (await (await caches.open(name)).keys()).length;
      return out;
    }, version).catch(() => null);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no service worker of version ${version} took over within ${LOAD_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

// One GET with the given Accept-Encoding: {status, headers, body} (the body as sent).
function get(url, encoding) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

describe('offline after the first visit', { timeout: 600000 }, () => {
  test('every text file and the wasm go out compressed where the browser accepts it; a copy older than its file never does', async () => {
    for (const path of ['engine/attention_engine.wasm', 'engine/attention_engine.js', 'dist/attention-widgets.js', 'index.html', 'css/article.css', 'widgets/dom.js', 'engine/worker.js']) {
      const file = readFileSync(join(web, path));
      const br = await get(`${baseUrl}${path}`, 'br, gzip');
      assert.equal(br.headers['content-encoding'], 'br', `${path} is not sent as brotli`);
      assert.ok(brotliDecompressSync(br.body).equals(file), `${path}: the brotli copy is not the file`);
      const gz = await get(`${baseUrl}${path}`, 'gzip');
      assert.equal(gz.headers['content-encoding'], 'gzip', `${path} is not sent as gzip`);
      assert.ok(gunzipSync(gz.body).equals(file), `${path}: the gzip copy is not the file`);
      const plain = await get(`${baseUrl}${path}`, 'identity');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.ok(plain.body.equals(file));
      console.log(`# ${path}: ${file.length} bytes, ${br.body.length} as brotli, ${gz.body.length} as gzip`);
    }
    // The site's address itself is answered with index.html, compressed like the page.
    const home = await get(baseUrl, 'br, gzip');
    assert.equal(home.headers['content-encoding'], 'br', 'the site\u2019s address is not sent as brotli');
    assert.ok(brotliDecompressSync(home.body).equals(readFileSync(join(web, 'index.html'))), 'the site\u2019s address is not index.html');
    // A copy older than its file (here the manifest, rewritten for this copy of the site, as a
    // source edited after the build would be) is never sent in its place.
    const rewritten = await get(`${baseUrl}models/manifest.json`, 'br, gzip');
    assert.equal(rewritten.headers['content-encoding'], undefined, 'a stale compressed copy of the manifest was sent');
    assert.ok(rewritten.body.equals(readFileSync(join(dir, 'models', 'manifest.json'))));
    // Nor at a folder's address, which is answered with its index.html.
    const folder = linkedSite(web, { 'posts/index.html': '<!doctype html><title>new</title>', 'posts/index.html.br': 'stale', 'posts/index.html.gz': 'stale' });
    for (const copy of ['br', 'gz']) utimesSync(join(folder, `posts/index.html.${copy}`), 0, 0);  // older than the page
    const folderServer = await serve(folder);
    try {
      const page = await get(`http://127.0.0.1:${folderServer.server.address().port}/posts/`, 'br, gzip');
      assert.equal(page.headers['content-encoding'], undefined, 'a stale compressed copy of a folder\u2019s index.html was sent at the folder\u2019s address');
      assert.equal(page.body.toString(), '<!doctype html><title>new</title>');
    } finally {
      folderServer.close();
      rmSync(folder, { recursive: true, force: true });
    }
    // The cache policy: files named by their checksum kept for a year, the rest revalidated.
    const { sets } = manifest();
    assert.match((await get(`${baseUrl}sets/${sets.sha256}.json`, 'identity')).headers['cache-control'], /immutable/);
    assert.equal((await get(`${baseUrl}index.html`, 'identity')).headers['cache-control'], 'no-cache');
  });


  test('the article and a post open offline; a sentence needs the network only for rows never fetched', async () => {
    const context = await browser.newContext({ serviceWorkers: 'allow', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(baseUrl);
    await openInstrument(page, LOAD_TIMEOUT_MS);
    const { site } = manifest();
    assert.ok(site?.version && site.files.length > 20, 'the manifest lists no site files');
    assert.ok(site.files.some((f) => f.path === 'index.html') && site.files.some((f) => f.path === 'heads.html'));
    assert.ok(!site.files.some((f) => /\.(attn|bin|wasm)$/.test(f.path)), 'the model files are the engine\u2019s to keep');
    const caches = await stored(page, site.version);
    // Every listed file, and the manifest.
    assert.ok(caches[`attention-site-${site.version}`] >= site.files.length + 1, `the store holds ${JSON.stringify(caches)} for ${site.files.length} files`);
    // A sentence of the opening sentence's words: its rows came with the first view.
    const known = 'The animal did not cross the street.';
    await typeSentence(page, known);
    // A later visit, online: the head's preload of the model's core is answered by the service
    // worker from the engine's kept copy, and no model file or wasm comes from the network.
    const fromNetwork = [];
    const listen = async (request) => {
      if (!/\.(attn|bin|wasm)$/.test(new URL(request.url()).pathname)) return;
      const response = await request.response().catch(() => null);
      if (!response?.fromServiceWorker()) fromNetwork.push(request.url().split('/').pop());
    };
    page.on('requestfinished', listen);
    await page.reload();
    await openInstrument(page, LOAD_TIMEOUT_MS);
    page.off('requestfinished', listen);
    assert.deepEqual(fromNetwork, [], 'a later visit downloaded model files');

    await context.setOffline(true);
    await page.reload();
    await openInstrument(page, LOAD_TIMEOUT_MS);
    await page.locator('p.site-note').filter({ hasText: 'You are offline' }).waitFor();
    await typeSentence(page, 'The street was too tired.');
    // Rows no visit fetched: the reader is told that they need the network, and the figures keep
    // the last sentence.
    await typeSentence(page, 'Zebras graze quietly near the riverbank.', { wait: false });
    await page.waitForFunction(() => /Could not download|network/i.test(document.getElementById('instrument').shadowRoot.textContent), null, { timeout: LOAD_TIMEOUT_MS });
    await waitForSentence(page, 'The street was too tired.');
    // A post, opened offline, goes live with its set statistics.
    await page.goto(`${baseUrl}heads.html`);
    await waitReady(page, '#yours', LOAD_TIMEOUT_MS);
    assert.equal(await page.locator('#status').getAttribute('data-state'), 'live');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the article, served as scripts/serve.sh serves it, comes back from the back/forward cache', async () => {
    const bfBrowser = await launchChromium([], { bfcache: true });
    try {
      const context = await bfBrowser.newContext({ serviceWorkers: 'allow', viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.addInitScript(() => addEventListener('pageshow', (event) => { window.__restored = event.persisted; }));
      const answer = await page.goto(baseUrl);
      assert.doesNotMatch(answer.headers()['cache-control'] ?? '', /no-store/, 'the page is served with no-store');
      await openInstrument(page, LOAD_TIMEOUT_MS);
      // Once the site's worker has taken over (its claiming a page held in the cache would evict
      // it: the reader's first visit only).
      await stored(page, manifest().site.version);
      await page.evaluate(() => { window.__before = 'kept'; });
      await page.goto(`${baseUrl}heads.html`);
      // A page restored from the cache fires no load event: wait for the commit, then its pageshow.
      await page.goBack({ waitUntil: 'commit' });
      await page.waitForFunction(() => window.__restored !== undefined, null, { timeout: LOAD_TIMEOUT_MS });
      const back = await page.evaluate(() => ({
        restored: window.__restored, kept: window.__before,
        reasons: JSON.stringify(performance.getEntriesByType('navigation')[0]?.notRestoredReasons ?? null),
      }));
      assert.ok(back.restored === true && back.kept === 'kept', `the article was not restored from the back/forward cache: ${back.reasons}`);
      // Live again at once: the figures and the engine are the ones the reader left.
      assert.equal(await page.locator('#instrument .status').getAttribute('data-mode'), 'live');
      await context.close();
    } finally {
      await bfBrowser.close();
    }
  });

  test('a new site version replaces the stored one, and the page says so', async () => {
    const context = await browser.newContext({ serviceWorkers: 'allow', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(baseUrl);
    await openInstrument(page, LOAD_TIMEOUT_MS);
    const first = manifest();
    await stored(page, first.site.version);
    const next = { ...first, site: { ...first.site, version: `${first.site.version}b` } };
    writeFileSync(join(dir, 'models', 'manifest.json'), JSON.stringify(next));
    try {
      await page.reload();
      await openInstrument(page, LOAD_TIMEOUT_MS);
      const caches = await stored(page, next.site.version);
      assert.deepEqual(Object.keys(caches), [`attention-site-${next.site.version}`], 'the old version was kept');
      await page.locator('p.site-note').filter({ hasText: 'new version' }).waitFor({ timeout: LOAD_TIMEOUT_MS });
    } finally {
      writeFileSync(join(dir, 'models', 'manifest.json'), JSON.stringify(first));
    }
    await context.close();
  });
});
