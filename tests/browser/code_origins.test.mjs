// engine-src, manifest-src and model-src load code or claims into the host page (security review
// F3): on a host of another origin, a figure whose attribute names a third origin refuses it,
// says why and how a page allows it, and requests nothing from it; with the host's
// <meta name="attention-widgets-origins"> in its head naming that origin the address is used (in its body, it is not). Chromium maps
// the made-up host code.example to 127.0.0.1, so one local server stands for the third origin.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve, startHost } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const THIRD_HOST = 'code.example';
const LOAD_TIMEOUT_MS = 60000;

let site;
let host;
let third;
let thirdDir;
let browser;

before(async () => {
  site = await serve(web);
  host = await startHost(web);
  thirdDir = mkdtempSync(join(tmpdir(), 'attention-third-'));
  mkdirSync(join(thirdDir, 'engine'));
  writeFileSync(join(thirdDir, 'engine', 'attention_engine.js'), 'self.__ran = true;\nexport default function () { throw new Error("not an engine"); }\n');
  third = await serve(thirdDir);
  browser = await launchChromium([`--host-resolver-rules=MAP ${THIRD_HOST} 127.0.0.1`]);
});

after(async () => {
  await browser?.close();
  third?.close();
  host?.close();
  site?.close();
  if (thirdDir) rmSync(thirdDir, { recursive: true, force: true });
});

// A host page with the bundle from the site and one figure whose engine-src names the third
// origin; `allow` puts that origin in the page's meta (true: in its head; 'body': in its body, which counts for nothing). Returns the figure's status text and the
// requests made to the third origin.
async function open(name, allow) {
  const siteUrl = `http://127.0.0.1:${site.server.address().port}/`;
  const thirdOrigin = `http://${THIRD_HOST}:${third.server.address().port}`;
  const meta = `<meta name="attention-widgets-origins" content="https://other.example ${thirdOrigin}">`;
  writeFileSync(join(host.dir, name), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${name}</title>
${allow === true ? meta : ''}
<script type="module" src="${siteUrl}dist/attention-widgets.js"></script></head>
<body>${allow === 'body' ? meta : ''}<attention-row id="row" sentence="The cat sat." engine-src="${thirdOrigin}/engine/"></attention-row></body></html>`);
  const context = await browser.newContext();
  const page = await context.newPage();
  const requests = [];
  page.on('request', (request) => {
    if (request.url().startsWith(thirdOrigin)) requests.push(request.url());
  });
  await page.goto(`${host.url}${name}`);
  await page.locator('#row .status[data-mode="error"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
  const status = await page.locator('#row .status').textContent();
  await context.close();
  return { status, requests, thirdOrigin, siteUrl };
}

describe('code-loading attributes and their origin', { timeout: 120000 }, () => {
  test('an engine-src on a third origin is refused, visibly, and nothing is requested from it', async () => {
    const { status, requests, thirdOrigin, siteUrl } = await open('refused.html', false);
    assert.deepEqual(requests, []);
    assert.ok(status.includes(`is on ${thirdOrigin}, not on these widgets\u2019 origin (${new URL(siteUrl).origin})`), status);
    assert.ok(status.includes(`<meta name="attention-widgets-origins" content="${thirdOrigin}">`), status);
  });

  test('the same meta in the page\u2019s body (markup an article can write) allows nothing', async () => {
    const { status, requests, thirdOrigin } = await open('body-meta.html', 'body');
    assert.deepEqual(requests, []);
    assert.ok(status.includes(`is on ${thirdOrigin}, not on these widgets`), status);
  });

  test('a misspelt figure element (<attention-rwo>) is named in the console with the figure meant', async () => {
    const siteUrl = `http://127.0.0.1:${site.server.address().port}/`;
    writeFileSync(join(host.dir, 'typo.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>typo</title>
<script type="module" src="${siteUrl}dist/attention-widgets.js"></script></head>
<body><attention-rwo sentence="The cat sat."></attention-rwo></body></html>`);
    const context = await browser.newContext();
    const page = await context.newPage();
    const warnings = [];
    page.on('console', (message) => { if (message.type() === 'warning') warnings.push(message.text()); });
    await page.goto(`${host.url}typo.html`);
    await page.waitForFunction(() => customElements.get('attention-row'), null, { timeout: LOAD_TIMEOUT_MS });
    await page.waitForTimeout(200);
    await context.close();
    assert.ok(warnings.some((w) => /<attention-rwo> is not one of the attention explainer.s figures.*Did you mean <attention-row>\?/.test(w)), warnings.join('\n'));
  });

  test('the same address is used once the page allows its origin', async () => {
    const { status, requests, thirdOrigin } = await open('allowed.html', true);
    assert.ok(requests.some((url) => url.startsWith(`${thirdOrigin}/engine/attention_engine`)), `no request to the allowed origin: ${requests}`);
    assert.doesNotMatch(status, /not on these widgets/);
  });
});
