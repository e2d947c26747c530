// What the browser tests and the benchmark share: how to start Debian's Chromium headless here
// and how to serve a folder on a free localhost port.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { staleBundles } from '../../scripts/site/build_pages.mjs';
import { createSiteServer } from '../../scripts/site/serve.mjs';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Headless flags (docs/ARCHITECTURE.md, the machine facts): without the networking ones
// Chromium keeps trying to go online.
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// The fidelity bar (docs/ARCHITECTURE.md): every row the page shows sums to 1 within 1e-6.
export const ROW_SUM_TOLERANCE = 1e-6;

// Contexts block service workers unless a test asks for them ({ serviceWorkers: 'allow' }: the
// offline test does). The site's worker (web/sw.js) stores every page and script once the engine
// is live: in each of the suite's hundred-odd contexts that would be a second download of the
// site that nothing else checks, and it would serve later loads of a context from its store.
// bfcache: keep Chromium's back/forward cache on (Playwright turns it off by default).
export async function launchChromium(extraArgs = [], { bfcache = false } = {}) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...extraArgs], ...(bfcache ? { ignoreDefaultArgs: ['--disable-back-forward-cache'] } : {}),
  });
  const newContext = browser.newContext.bind(browser);
  browser.newContext = (options = {}) => newContext({ serviceWorkers: 'block', ...options });
  return browser;
}

// Serves folder on 127.0.0.1 at a free port, as scripts/serve.sh does (its Cache-Control policy;
// CORS on unless cors is false; extra response headers, such as a Content-Security-Policy, in
// headers). The server's port is server.server.address().port.
export async function serve(folder, { cors = true, headers = {} } = {}) {
  const server = createSiteServer(folder, { cors, headers });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

// The repository's page of another site that embeds the widgets, and its script.
export const DEMO_FILES = Object.freeze(['embed-demo.html', 'embed-demo.css', 'embed-demo.js']);

// A second origin for the embedding tests: localhost (the site is served as 127.0.0.1) serving a
// temporary folder with the embed demo copied from web/ and whatever a test writes there
// (host.dir), without CORS, with extra response headers if given. host.url is its address;
// host.close() stops it and removes the folder.
export async function startHost(web, { headers = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'attention-host-'));
  for (const file of DEMO_FILES) copyFileSync(join(web, file), join(dir, file));
  const server = await serve(dir, { cors: false, headers });
  return {
    dir,
    server,
    url: `http://localhost:${server.server.address().port}/`,
    close: () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// The assembled site (web/, as scripts/site/build_site.mjs writes it) served on localhost, with
// one Chromium, for a test file: start it in before(), open pages with open(path), close it in
// after().
// testEngine: serve the engine of the test build (build/wasm-test: scripts/build.sh wasm-test,
// with Engine.trap) in place of the shipped one, with the manifest's checksum to match; the rest
// of the site is web/ itself (linked, not copied).
export async function startSite(web, { testEngine = false } = {}) {
  const manifest = join(web, 'models', 'manifest.json');
  if (!existsSync(manifest)) throw new Error(`${manifest} is missing: run node scripts/site/build_site.mjs first.`);
  // The pages load their bundles (web/app/), not the sources a test would otherwise seem to test.
  const stale = staleBundles(web);
  if (stale) throw new Error(`${stale}: run node scripts/site/build_pages.mjs (or build_site.mjs) first.`);
  const folder = testEngine ? siteWithTestEngine(web) : web;
  const server = await serve(folder);
  const browser = await launchChromium();
  const baseUrl = `http://127.0.0.1:${server.server.address().port}/`;
  return {
    server,
    browser,
    baseUrl,
    // A page of the site in a fresh context (its own Cache API), recording page errors.
    open: async (path, { width = 1280, height = 900, serviceWorkers } = {}) => {
      const context = await browser.newContext({ viewport: { width, height }, ...(serviceWorkers ? { serviceWorkers } : {}) });
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(baseUrl + path);
      return { page, context, errors };
    },
    close: async () => {
      await browser.close();
      server.close();
      if (folder !== web) rmSync(folder, { recursive: true, force: true });
    },
  };
}

// A copy of web/ in a temporary folder whose entries are links to web/'s, except the files in
// `files` ({"models/manifest.json": contents, ...}), written there as given (one folder deep),
// so that a test can change them without touching web/. Returns the folder.
export function linkedSite(web, files) {
  const dir = mkdtempSync(join(tmpdir(), 'attention-site-'));
  const replaced = new Map(Object.keys(files).map((path) => [path.split('/')[0], new Set()]));
  for (const path of Object.keys(files)) if (path.includes('/')) replaced.get(path.split('/')[0]).add(path.split('/')[1]);
  for (const name of readdirSync(web)) {
    if (!replaced.has(name)) {
      symlinkSync(join(web, name), join(dir, name));
      continue;
    }
    if (!replaced.get(name).size) continue;  // a file at the top, written below
    mkdirSync(join(dir, name));
    for (const entry of readdirSync(join(web, name))) {
      if (!replaced.get(name).has(entry)) symlinkSync(join(web, name, entry), join(dir, name, entry));
    }
  }
  for (const [path, contents] of Object.entries(files)) writeFileSync(join(dir, path), contents);
  return dir;
}

// web/ with the engine of the test build and a manifest whose checksum matches it.
function siteWithTestEngine(web) {
  const built = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'wasm-test');
  const names = ['attention_engine.js', 'attention_engine.wasm'];
  const missing = names.map((name) => join(built, name)).filter((file) => !existsSync(file));
  if (missing.length) throw new Error(`${missing.join(', ')} missing: run scripts/build.sh wasm-test first.`);
  const wasm = readFileSync(join(built, names[1]));
  const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  // The test build has no relaxed-SIMD wasm: without one named, the page loads this one.
  manifest.engine = { ...manifest.engine, bytes: wasm.length, sha256: createHash('sha256').update(wasm).digest('hex') };
  delete manifest.engine.relaxed;
  return linkedSite(web, {
    ...Object.fromEntries(names.map((name) => [`engine/${name}`, readFileSync(join(built, name))])),
    'models/manifest.json': JSON.stringify(manifest, null, 2),
  });
}

// The article's instrument, as a reader reaches it: wait for "Open the instrument", press it,
// wait for live figures.
export async function openInstrument(page, timeout = 90000) {
  await page.locator('#open').waitFor({ state: 'visible', timeout });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout });
}

// A figure on its own, live: scrolled to first, as a reader would (figures embedded in a host
// page start when they come near the viewport, web/runtime/standalone.js), then waited for.
export async function figureLive(page, selector, timeout = 90000) {
  await page.locator(selector).first().scrollIntoViewIfNeeded({ timeout });
  await page.locator(`${selector} .status[data-mode="live"]`).first().waitFor({ timeout });
}

// Figure 1's sentence on screen (its bars' data-sentence), or null.
// The loaded model's shape from a figure's result: the tests never assume how many layers and
// heads it has.
export const modelShape = (page, selector = '#instrument') => page.locator(selector).evaluate((el) => ({ layers: el.result.layers, heads: el.result.heads }));

export const shownSentence = (page) => page.evaluate(() => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence ?? null);

// How many columns Figure 5 (attention-heads) draws in its first panel for the selected token:
// the subpaths of its two paths (the token's own column and the others). The figure draws only
// on screen, so it is scrolled to first; waits until the count is n (else fails on the timeout).
export async function headsColumns(page, n, timeout = 30000) {
  const heads = page.locator('attention-heads').first();
  await heads.scrollIntoViewIfNeeded();
  const count = () => heads.evaluate((el) => Array.from(el.shadowRoot.querySelector('button.multiple')?.querySelectorAll('path.col') ?? [],
    (path) => path.getAttribute('d').match(/M/g)?.length ?? 0).reduce((a, b) => a + b, 0));
  const until = Date.now() + timeout;
  let k = await count();
  while (k !== n && Date.now() < until) {
    await page.waitForTimeout(100);
    k = await count();
  }
  return k;
}

// Types sentence into the instrument's box and presses Enter; unless wait is false, waits until
// Figure 1 shows it and every figure of the article has drawn it.
export async function typeSentence(page, sentence, { wait = true, timeout = 90000 } = {}) {
  await page.locator('#instrument input#sentence').fill(sentence);
  await page.locator('#instrument input#sentence').press('Enter');
  if (wait) {
    await waitForSentence(page, sentence, timeout);
    await figuresDrawn(page, timeout);
  }
}

// The article's figures far off screen take a new view once the reader pauses or scrolls near
// (web/article.js, offScreenViews), and say data-waiting until then: this waits until none
// does (selector: the figures to wait for).
export function figuresDrawn(page, timeout = 30000, selector = '[data-figure]') {
  return page.waitForFunction((s) => !document.querySelector(`${s}[data-waiting]`), selector, { timeout });
}

export function waitForSentence(page, sentence, timeout = 90000) {
  return page.waitForFunction((text) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === text, sentence, { timeout });
}

// A post's or figure's element that has finished computing (data-ready="true", which the series'
// pages and the prediction and contribution figures set).
export function waitReady(page, selector, timeout = 90000) {
  return page.locator(`${selector}[data-ready="true"]`).first().waitFor({ state: 'attached', timeout });
}

// Text a reader might type that would run script or make elements if a page inserted it as
// HTML: the posts' tests type it and check that nothing of it happens.
export const HOSTILE_TEXT = '<img src=x onerror="window.__injected=1"><script>window.__injected=2</script><b>bold</b> it was';

// The policy the README's "Embedding" section gives: no inline script and no inline style (the
// figures' styles are constructed style sheets, their sizes set through the CSSOM).
export const STRICT_CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; "
  + "img-src 'self' data: blob:; object-src 'none'; base-uri 'none'";
// What a host on another origin adds for the widgets' origin W (README, "Embedding"): W's scripts
// and files, and a worker-src with blob: and W, since the worker starts from a Blob of the host's
// origin and its module imports are checked against worker-src (Chromium reports such a refusal
// to nobody: the worker just fails to start, hence the test that the engine runs in one).
export const hostCsp = (widgets) => `default-src 'self'; script-src 'self' ${widgets} 'wasm-unsafe-eval'; `
  + `connect-src 'self' ${widgets}; worker-src 'self' blob: ${widgets}; style-src 'self'; `
  + "img-src 'self' data: blob:; object-src 'none'; base-uri 'none'";

// A page of `browser` with every violation and error it meets recorded: the page's securitypolicyviolation
// events, console lines that report a refusal (a worker's violations reach the console only),
// page errors.
// ignore(line): true for a violation that is the host's own (a site generator's theme with inline
// scripts), which the check leaves out.
// init: functions run before the page's own scripts (page.addInitScript), e.g. recordShifts.
export async function openStrict(browser, url, { width = 1280, height = 900, ignore = () => false, init = [] } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const problems = [];
  for (const script of init) await page.addInitScript(script);
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      (globalThis.__violations ??= []).push(`${event.violatedDirective} blocked ${event.blockedURI || 'inline'} (${event.sourceFile}:${event.lineNumber})`);
    });
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content.Security.Policy|Refused to/i.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('worker', (worker) => worker.on?.('console', (message) => {
    if (/Content.Security.Policy|Refused to/i.test(message.text())) problems.push(`worker console: ${message.text()}`);
  }));
  const response = await page.goto(url);
  assert.equal(response.headers()['content-security-policy'] !== undefined, true, `${url} was served without the policy`);
  const check = async () => {
    const violations = await page.evaluate(() => globalThis.__violations ?? []);
    assert.deepEqual([...problems, ...violations].filter((line) => !ignore(line)), [], `${url}: policy violations or errors`);
  };
  return { page, context, check };
}

// Layout shifts (tests/browser/layout_shift.test.mjs, generators.test.mjs).
// Registered before any of the page's scripts run: every shift, with a name for what moved.
export function recordShifts() {
  window.__shifts = [];
  const describeNode = (node) => {
    if (!node) return '?';
    const el = node.nodeType === 1 ? node : node.parentElement;
    if (!el) return node.nodeName;
    const host = el.getRootNode()?.host;
    const name = `${el.localName}${el.id ? `#${el.id}` : ''}${typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : ''}`;
    return host ? `${host.localName}${host.id ? `#${host.id}` : ''} > ${name}` : name;
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      window.__shifts.push({
        value: entry.value, time: entry.startTime, input: entry.hadRecentInput,
        sources: entry.sources.map((s) => `${describeNode(s.node)} y ${Math.round(s.previousRect.y)}\u2192${Math.round(s.currentRect.y)}, h ${Math.round(s.previousRect.height)}\u2192${Math.round(s.currentRect.height)}`),
      });
    }
  }).observe({ type: 'layout-shift', buffered: true });
}

// CLS as Chrome reports it: the largest sum of a session window (shifts under 1 s apart, the
// window at most 5 s long).
export function sessionCls(shifts) {
  let best = 0;
  let sum = 0;
  let start = -Infinity;
  let last = -Infinity;
  for (const s of shifts) {
    if (s.time - last > 1000 || s.time - start > 5000) {
      sum = 0;
      start = s.time;
    }
    sum += s.value;
    last = s.time;
    best = Math.max(best, sum);
  }
  return best;
}
