// The site under a strict Content-Security-Policy, in Debian's Chromium: with STRICT_CSP (harness.mjs)
// (no 'unsafe-eval', no inline script, nothing from another origin) the article goes live with
// its engine in a worker and answers a typed sentence, each series post and the iframe form
// draw, and the embed demo on a second origin runs with the lines the README tells such a host
// to add. Any policy violation (reported to the page or to its console) or page error fails.
// Needs the assembled site: node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figureLive, hostCsp, launchChromium, openStrict as openPage, serve, startHost, STRICT_CSP, waitReady } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 90000;

let site;
let siteUrl;
let host;
let hostUrl;
let browser;

before(async () => {
  assert.ok(existsSync(join(web, 'models', 'manifest.json')), 'web/models/manifest.json is missing: run node scripts/site/build_site.mjs first.');
  site = await serve(web, { headers: { 'Content-Security-Policy': STRICT_CSP } });
  siteUrl = `http://127.0.0.1:${site.server.address().port}/`;
  host = await startHost(web, { headers: { 'Content-Security-Policy': hostCsp(new URL(siteUrl).origin) } });
  hostUrl = host.url;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  site?.close();
  host?.close();
});

const openStrict = (url, options) => openPage(browser, url, options);

const ready = (page, selector, timeout = LOAD_TIMEOUT_MS) => waitReady(page, selector, timeout);

// Under style-src 'self' a figure whose styles were inline <style> elements would go live
// unstyled: bars of zero width, the status line without its layout. Its longest bar must be
// drawn, and the status line's message laid out as a grid.
async function assertStyled(page, selector) {
  const seen = await page.locator(selector).evaluate((el) => ({
    bar: Math.max(0, ...[...el.shadowRoot.querySelectorAll('.bar')].map((b) => b.getBoundingClientRect().width)),
    status: getComputedStyle(el.shadowRoot.querySelector('.status .message')).display,
  }));
  assert.ok(seen.bar > 20, `${selector}: the longest bar is ${seen.bar} px wide: the figure is unstyled`);
  assert.equal(seen.status, 'grid', `${selector}: the status line is not laid out (display ${seen.status})`);
}

describe('a strict Content-Security-Policy', { timeout: 400000 }, () => {
  test('the article goes live with its worker and answers a typed sentence', async () => {
    const { page, context, check } = await openStrict(siteUrl);
    await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
    await page.click('#open');
    await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const thread = await page.evaluate(async () => (await (await import('/engine/engine.js')).getEngine()).thread);
    assert.equal(thread, 'worker', 'under the policy the engine fell back to the main thread');
    const sentence = 'A strict policy still lets the figures speak.';
    await page.locator('#instrument input#sentence').fill(sentence);
    await page.locator('#instrument input#sentence').press('Enter');
    await page.waitForFunction((text) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === text, sentence, { timeout: LOAD_TIMEOUT_MS });
    await check();
    await context.close();
  });

  for (const [path, selectors] of [['heads.html', ['#set-table', '#yours']], ['confident.html', ['#winners', '#yours']],
    ['vocabulary.html', ['#groups']], ['contribution.html', ['#yours', '#survival', 'attention-prediction', 'attention-contribution']],
    ['lenses.html', ['#faithfulness', '#shares', '#yours']]]) {
    test(`${path} draws`, async () => {
      const { page, context, check } = await openStrict(siteUrl + path);
      for (const selector of selectors) {
        // The contribution post's figures predict when the reader asks (the first prediction
        // fetches the vocabulary table): press their buttons, under the same policy.
        if (selector.startsWith('attention-')) await page.locator(`${selector} div.body > button.primary`).first().click({ timeout: LOAD_TIMEOUT_MS });
        await ready(page, selector);
      }
      await check();
      await context.close();
    });
  }

  test('the iframe form draws its figure', async () => {
    const { page, context, check } = await openStrict(`${siteUrl}embed.html?widget=row&sentence=The+cat+sat.&word=cat&layer=2&head=3`);
    await page.locator('attention-row .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await assertStyled(page, 'attention-row');
    await check();
    await context.close();
  });

  test('a policy without \'wasm-unsafe-eval\' gets a figure that says so and whose page author can fix it', async () => {
    const strict = await serve(web, { headers: { 'Content-Security-Policy': STRICT_CSP.replace(" 'wasm-unsafe-eval'", '') } });
    try {
      const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${strict.server.address().port}/embed.html?widget=row&sentence=The+cat+sat.`);
      await page.locator('attention-row .status[data-mode="error"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
      const said = await page.locator('attention-row .status').innerText();
      assert.match(said, /Content-Security-Policy does not allow WebAssembly/, said);
      assert.match(said, /'wasm-unsafe-eval'/, said);
      assert.doesNotMatch(said, /scripts\/build\.sh/, 'advice for the site\u2019s builder shown to a reader');
      await context.close();
    } finally {
      strict.close();
    }
  });

  test('a host whose policy leaves the widgets\u2019 site out of connect-src gets a figure that names the directive and the origin', async () => {
    const widgets = new URL(siteUrl).origin;
    const policy = hostCsp(widgets).replace(`connect-src 'self' ${widgets}`, "connect-src 'self'");
    const lacking = await startHost(web, { headers: { 'Content-Security-Policy': policy } });
    try {
      const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
      const page = await context.newPage();
      await page.goto(`${lacking.url}embed-demo.html?from=${encodeURIComponent(siteUrl)}`);
      await page.locator('#row .status[data-mode="error"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
      const said = await page.locator('#row .status').innerText();
      assert.match(said, /Content-Security-Policy does not allow it \(connect-src\)/, said);
      assert.ok(said.includes(`connect-src 'self' ${widgets}`), said);
      await context.close();
    } finally {
      lacking.close();
    }
  });

  test('the embed demo on a second origin, with the README\u2019s lines for the widgets\u2019 origin', async () => {
    const { page, context, check } = await openStrict(`${hostUrl}embed-demo.html?from=${encodeURIComponent(siteUrl)}`);
    // Read down to each, as a reader scrolls: embedded figures start when they come near the screen.
    for (const id of ['#row', '#heads', '#compare']) await figureLive(page, id, LOAD_TIMEOUT_MS);
    const thread = await page.evaluate(async (bundle) => (await (await import(bundle)).getEngine()).thread, `${siteUrl}dist/attention-widgets.js`);
    assert.equal(thread, 'worker');
    await assertStyled(page, '#row');
    await check();
    await context.close();
  });
});
