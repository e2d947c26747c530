// Figures on their own start when they come near the viewport (web/runtime/standalone.js, NEAR),
// not all at once when the page loads (security review 4: a page of 200 figures went live in
// 111 s using 2.9 GB): on a host page of 60 figures, only those within reach of the screen ask
// the engine for an analysis, and one far down goes live once the reader scrolls to it. Those the
// reader has scrolled far past let go of their analysis and drawing, keeping their height (so
// nothing moves), and are drawn again as they were when the reader comes back.
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
  // Down the page a screen at a time, as a reader reads it, then the figures' state.
  const before = await page.evaluate(() => document.getElementById('f0').getBoundingClientRect().height);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForTimeout(500);
  while (await page.evaluate(() => window.scrollY + window.innerHeight < document.body.scrollHeight - 2)) {
    await page.evaluate(() => window.scrollBy(0, 800));
    await page.waitForTimeout(40);
  }
  await page.waitForTimeout(1000);
  const held = await page.evaluate(() => {
    const all = [...document.querySelectorAll('attention-row')];
    return { drawn: all.filter((el) => el.view?.result).length, released: all.filter((el) => el.view?.released).length, first: { released: Boolean(all[0].view?.released), height: all[0].getBoundingClientRect().height } };
  });
  t.diagnostic(`read to the bottom: ${held.drawn} figures hold an analysis, ${held.released} let go of theirs`);
  assert.equal(held.first.released, true, 'the first figure, far above, let go of its analysis');
  assert.equal(held.first.height, before, 'and kept its height');
  assert.ok(held.drawn <= 16, `${held.drawn} figures still hold an analysis at the bottom of the page`);
  // Back to the first: drawn again, the same sentence and height.
  await page.locator('#f0').scrollIntoViewIfNeeded();
  await page.locator('#f0 .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  const back = await page.evaluate(() => ({ sentence: document.getElementById('f0').selection?.sentence, height: document.getElementById('f0').getBoundingClientRect().height }));
  assert.deepEqual(back, { sentence: 'Sentence number 0 of the page.', height: before });
  await context.close();
});
