// Figures on their own start when they come near the viewport (web/runtime/standalone.js, NEAR),
// not all at once when the page loads (security review 4: a page of 200 figures went live in
// 111 s using 2.9 GB): on a host page of 60 figures, only those within reach of the screen ask
// the engine for an analysis, and one far down goes live once the reader scrolls to it.
// Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve, startHost } from './harness.mjs';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const TIMEOUT = 90000;
const COUNT = 60;

let site;
let host;
let browser;
before(async () => {
  site = await serve(web);
  host = await startHost(web);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  site?.close();
  host?.close();
});

test(`of ${COUNT} figures on a page, only those near the screen analyse their sentence; a far one starts when scrolled to`, async (t) => {
  const widgets = `http://127.0.0.1:${site.server.address().port}/`;
  const figures = Array.from({ length: COUNT }, (_, k) => `<p>Paragraph ${k}.</p>\n<attention-row id="f${k}" sentence="Sentence number ${k} of the page." word="number"></attention-row>`).join('\n');
  writeFileSync(join(host.dir, 'many.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>many</title><script type="module" src="${widgets}dist/attention-widgets.js"></script></head><body>${figures}</body></html>`);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${host.url}many.html`);
  await page.locator('#f0 .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  await page.waitForTimeout(1500);
  // The shared engine's analyses (its client memoises one per sentence) and the figures drawn.
  const counted = () => page.evaluate(async (url) => {
    const { getEngine } = await import(url);
    const engine = await getEngine();
    return { analyses: engine._memo.size, live: [...document.querySelectorAll('attention-row')].filter((el) => el.view?.mode === 'live').length };
  }, `${widgets}dist/attention-widgets.js`);
  const first = await counted();
  t.diagnostic(`after load: ${first.analyses} analyses, ${first.live} figures live, of ${COUNT}`);
  assert.ok(first.live >= 1 && first.analyses >= 1);
  assert.ok(first.analyses <= 12, `${first.analyses} analyses before any scroll: the far figures started too`);
  await page.locator(`#f${COUNT - 1}`).scrollIntoViewIfNeeded();
  await page.locator(`#f${COUNT - 1} .status[data-mode="live"]`).waitFor({ timeout: TIMEOUT });
  const last = await counted();
  t.diagnostic(`after scrolling to the last: ${last.analyses} analyses, ${last.live} figures live`);
  assert.ok(last.analyses < COUNT, 'the figures skipped over were not all analysed');
  await context.close();
});
