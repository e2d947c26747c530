// Measures the heights a figure's live form takes in columns of several widths, for the reserves
// of web/widgets/registry.js (FIGURES[key].reserve): a host page on another origin with every
// figure that needs the model, in a column `width` px wide, at a 1280 px viewport tall enough
// for every figure to be in view (so all start at once), loaded until every figure is live;
// then each element's height. Prints, per figure, the heights at each width and the reserve row
// to paste: the median over the sentences (a reserve taller than the live form moves the page as
// much as one too short; a longer sentence takes more) at each width, kept only where it differs
// from the row before by more than RESERVE_STEP (compressReserve).
// Needs the assembled site (node scripts/site/build_site.mjs).
// Usage: node scripts/site/measure_reserves.mjs [--sentences N]
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { PRESETS } from '../../web/content.js';
import { figureLive, launchChromium, serve, startHost } from '../../tests/browser/harness.mjs';
import { compressReserve, FIGURES } from '../../web/widgets/registry.js';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const count = option('--sentences', 3);
const step = option('--step', 20);
// Column widths from a phone's to a wide blog's; the figures' own layouts switch at container
// widths between them (their @container rules), which a step of 20 px finds to within 20 px.
const WIDTHS = Array.from({ length: Math.floor((980 - 300) / step) + 1 }, (_, k) => 300 + k * step);
// The default model's opening sentence and two others of about a dozen words.
const SENTENCES = [PRESETS[0], 'The keys to the cabinet are on the table.', 'She gave the book to her brother because he asked for it.'].slice(0, count);

const site = await serve(web);
const host = await startHost(web);
const browser = await launchChromium();
const bundle = `http://127.0.0.1:${site.server.address().port}/dist/attention-widgets.js`;
const figures = Object.entries(FIGURES).filter(([, f]) => f.reserve);
const escape = (text) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

const heights = {};  // key -> [[height per sentence] per width]
for (const [s, sentence] of SENTENCES.entries()) {
  for (const [w, width] of WIDTHS.entries()) {
    const body = figures.map(([key, f]) => `<p>Prose.</p><${f.tag} id="${key}" sentence="${escape(sentence)}"></${f.tag}>`).join('\n');
    writeFileSync(join(host.dir, 'reserves.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>reserves</title>
<style>body { margin: 0; } main { width: ${width}px; margin: 0 auto; }</style>
<script type="module" src="${bundle}"></script></head><body><main>${body}</main></body></html>`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 16000 } });
    const page = await context.newPage();
    await page.goto(`${host.url}reserves.html`);
    for (const [key] of figures) await figureLive(page, `#${key}`, 120000);
    await page.waitForTimeout(500);
    const measured = await page.evaluate((keys) => keys.map((key) => document.getElementById(key).getBoundingClientRect().height), figures.map(([key]) => key));
    await context.close();
    for (const [i, [key]] of figures.entries()) {
      heights[key] ??= WIDTHS.map(() => []);
      heights[key][w][s] = Math.round(measured[i]);
    }
    process.stderr.write(`sentence ${s + 1}, column ${width} px: measured\n`);
  }
}

console.log(`measure_reserves: live heights (px) in columns of ${WIDTHS.join(', ')} px at a 1280 px viewport, sentences:`);
for (const sentence of SENTENCES) console.log(`  \u201c${sentence}\u201d`);
for (const [key] of figures) {
  const rows = heights[key];
  console.log(`${key}:`);
  for (const [w, width] of WIDTHS.entries()) console.log(`  ${String(width).padStart(4)} px: ${rows[w].join(' / ')}`);
  const median = rows.map((r) => [...r].sort((a, b) => a - b)[(r.length - 1) >> 1]);
  console.log(`  reserve: ${JSON.stringify(compressReserve(WIDTHS.map((width, w) => [width, median[w]])))}`);
}
await browser.close();
site.close();
host.close();
