// A host page with many figures on their own (the embedding bundle; default 200 <attention-row>
// elements, each with its own sentence), in headless Chromium at 1280 x 900: how long until the
// first figure on screen is live, how many analyses the engine ran and how much memory the page
// and the engine hold once the page has settled, and the same after the reader has scrolled to
// the bottom. Figures start when they come near the viewport (web/runtime/standalone.js, NEAR),
// so the first numbers are those of the screenful, not of the whole page.
// Memory: the page's JS heap and DOM nodes (Chromium's Performance.getMetrics, JSHeapUsedSize and
// Nodes) and the engine's (memoryInfo: the wasm heap in its worker and the client's memo of
// results). Figures the reader has scrolled far past let go of their analysis and drawing
// (standalone.js, FAR): "released".
// A benchmark, not a test: the host's other load moves the times.
// Needs the assembled site (node scripts/site/build_site.mjs).
// Usage: node scripts/bench/bench_figures.mjs [--figures 200]
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve, startHost } from '../../tests/browser/harness.mjs';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const args = process.argv.slice(2);
const count = Number(args.includes('--figures') ? args[args.indexOf('--figures') + 1] : 200);

const site = await serve(web);
const host = await startHost(web);
const browser = await launchChromium();
const widgets = `http://127.0.0.1:${site.server.address().port}/`;
const bundle = `${widgets}dist/attention-widgets.js`;
const figures = Array.from({ length: count }, (_, k) => `<p>Paragraph ${k} of the post.</p>\n<attention-row id="f${k}" sentence="This is sentence number ${k} of a long post." word="number"></attention-row>`).join('\n');
writeFileSync(join(host.dir, 'many.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>many</title><script type="module" src="${bundle}"></script></head><body>${figures}</body></html>`);

const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
const cdp = await context.newCDPSession(page);
await cdp.send('Performance.enable');
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
async function state() {
  const { metrics } = await cdp.send('Performance.getMetrics');
  const heap = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0;
  const nodes = metrics.find((m) => m.name === 'Nodes')?.value ?? 0;
  const engine = await page.evaluate(async (url) => {
    const { getEngine } = await import(url);
    const e = await getEngine();
    const info = await e.memoryInfo();
    return { analyses: e._memo.size, wasm: info.heap_bytes, memo: info.memo_bytes };
  }, bundle);
  const { live, released } = await page.evaluate(() => {
    const all = [...document.querySelectorAll('attention-row')];
    return { live: all.filter((el) => el.view?.mode === 'live').length, released: all.filter((el) => el.view?.released).length };
  });
  return { heap, nodes, live, released, ...engine };
}

const t0 = Date.now();
await page.goto(`${host.url}many.html`);
await page.locator('#f0 .status[data-mode="live"]').waitFor({ timeout: 300000 });
const firstLive = Date.now() - t0;
await page.waitForTimeout(3000);
const settled = await state();
const t1 = Date.now();
// Down the page a screen at a time (it grows as figures are drawn), as a reader scrolls.
while (await page.evaluate(() => window.scrollY + window.innerHeight < document.body.scrollHeight - 2)) {
  await page.evaluate(() => window.scrollBy(0, 600));
  await page.waitForTimeout(50);
}
await page.locator(`#f${count - 1}`).scrollIntoViewIfNeeded();
await page.locator(`#f${count - 1} .status[data-mode="live"]`).waitFor({ timeout: 300000 });
const scrolledMs = Date.now() - t1;
await page.waitForTimeout(2000);
const scrolled = await state();
console.log(`bench_figures: ${count} figures on one host page, 1280 x 900, Chromium headless`);
console.log(`  first figure live: ${(firstLive / 1000).toFixed(2)} s after navigation`);
const line = (s) => `${s.live} figures live, ${s.released} released, ${s.analyses} analyses; page JS heap ${mb(s.heap)}, ${s.nodes} DOM nodes, engine wasm heap ${mb(s.wasm)}, memo ${mb(s.memo)}`;
console.log(`  settled, no scroll: ${line(settled)}`);
console.log(`  scrolled to the bottom (${(scrolledMs / 1000).toFixed(1)} s): ${line(scrolled)}`);
await browser.close();
site.close();
host.close();
