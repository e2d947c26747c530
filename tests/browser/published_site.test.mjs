// The whole site as `publish.mjs --site` writes it and a static host serves it: the article and
// every post go live from the published folder alone, and load only their minified bundles
// (web/app/, scripts/site/build_pages.mjs), start-engine.js and the engine's modules, never a
// source module of the widgets, the article or the posts, each script sent as brotli. Prints how
// many scripts each page fetches and the page's script bytes on the wire. Needs the assembled site
// (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium, openInstrument, serve, waitReady } from './harness.mjs';
import { loadedByPages, PAGE_BUNDLES } from '../../scripts/site/build_pages.mjs';
import { pageEntries } from '../../scripts/site/module_graph.mjs';
import { publish } from '../../scripts/site/publish.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 90000;

// Each page and what says it is live: the article's instrument, a post's figure computed by the
// engine in the page.
const PAGES = Object.freeze({
  'index.html': (page) => openInstrument(page, LOAD_TIMEOUT_MS),
  'heads.html': (page) => waitReady(page, '#yours', LOAD_TIMEOUT_MS),
  'confident.html': (page) => waitReady(page, '#yours', LOAD_TIMEOUT_MS),
  'contribution.html': (page) => waitReady(page, '#yours', LOAD_TIMEOUT_MS),
  'vocabulary.html': (page) => waitReady(page, '#groups', LOAD_TIMEOUT_MS),
  'lenses.html': (page) => waitReady(page, '#yours', LOAD_TIMEOUT_MS),
});

let out;
let server;
let browser;
let published;

before(async () => {
  out = mkdtempSync(join(tmpdir(), 'attention-site-'));
  published = publish({ out, site: true, quiet: true });
  server = await serve(out);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('the site as publish --site writes it', { timeout: 600000 }, () => {
  test('the folder holds every page, its bundle and what it loads, and none of the bundles\u2019 sources', () => {
    const paths = new Set(published.files.map((f) => f.path));
    const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
    for (const { path } of manifest.site.files) assert.ok(paths.has(path) && existsSync(join(out, path)), `${path} (the site list) is not published`);
    for (const page of Object.keys(PAGES)) {
      const entry = pageEntries(readFileSync(join(out, page), 'utf8')).find((src) => PAGE_BUNDLES[src]);
      assert.ok(entry && paths.has(entry), `${page}: its bundle is not published`);
    }
    assert.ok(paths.has('sw.js'), 'the service worker is not published');
    for (const source of Object.values(PAGE_BUNDLES).concat(['runtime/session.js', 'widgets/base.js', 'posts/common.js'])) {
      assert.ok(!paths.has(source) && !existsSync(join(out, source)), `${source}, a bundle's source, is published`);
    }
    const served = JSON.parse(readFileSync(join(out, 'models', 'manifest.json'), 'utf8'));
    assert.equal(served.site.version, manifest.site.version, 'the published manifest lost the site\u2019s version (the service worker needs it)');
  });

  for (const [path, live] of Object.entries(PAGES)) {
    test(`${path} goes live from the published folder, loading only bundles and the engine\u2019s modules, compressed`, async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (error) => errors.push(error.message));
      const scripts = [];
      page.on('response', (response) => {
        const url = new URL(response.url());
        if (!url.pathname.endsWith('.js')) return;
        scripts.push({ path: url.pathname.slice(1), status: response.status(), encoding: response.headers()['content-encoding'] ?? 'none' });
      });
      await page.goto(`http://127.0.0.1:${server.server.address().port}/${path}`);
      await live(page);
      // The page's own script requests (the worker's are in its own timeline), as brotli.
      // A module preloaded and then imported has two entries: one counted.
      const pageScripts = await page.evaluate(() => Object.values(Object.fromEntries(performance.getEntriesByType('resource')
        .filter((r) => new URL(r.name).pathname.endsWith('.js')).map((r) => [r.name, r.encodedBodySize]))));
      assert.ok(scripts.length > 0, `${path} fetched no script`);
      for (const s of scripts) {
        assert.equal(s.status, 200, `${s.path}: status ${s.status}`);
        assert.ok(loadedByPages(s.path), `${path} fetched ${s.path}, a module its bundle should hold`);
        assert.equal(s.encoding, 'br', `${s.path} was sent with content-encoding ${s.encoding}`);
      }
      const bundle = pageEntries(readFileSync(join(out, path), 'utf8')).find((src) => PAGE_BUNDLES[src]);
      assert.ok(scripts.some((s) => s.path === bundle), `${path} did not fetch its bundle ${bundle}`);
      const wire = pageScripts.reduce((a, b) => a + b, 0);
      console.log(`# ${path}: ${new Set(scripts.map((s) => s.path)).size} scripts fetched (page and worker); the page's ${pageScripts.length}: ${(wire / 1e3).toFixed(1)} kB on the wire`);
      assert.deepEqual(errors, []);
      await context.close();
    });
  }
});
