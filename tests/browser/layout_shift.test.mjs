// The article does not jump while it loads, nor does a host page on another origin that shows
// every figure, as elements or as iframes: the cumulative layout shift (CLS) of a load at a
// desktop width (1280 px) and at a phone width (390 px), until the figures are live, stays
// under 0.1 (the "good" threshold of Core Web Vitals); the series' posts at 412 px (Lighthouse's
// phone) under 0.05. Shifts are collected by a
// PerformanceObserver of type layout-shift registered before the page's own scripts (buffered,
// so nothing before it is missed); shifts within 500 ms of the reader's input (here: the click
// on "Open the instrument") are left out, as CLS leaves them out. The figure printed is CLS as
// Chrome defines it (the largest session window: shifts less than 1 s apart, at most 5 s in
// all), with the plain total beside it; each shift's largest moved element is printed too, so
// that a failure says what moved. Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figureLive, recordShifts, sessionCls, startHost, startSite } from './harness.mjs';
import { FIGURES, hostReserveCss } from '../../web/widgets/registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 60000;
const SETTLE_MS = 1500;
const GOOD_CLS = 0.1;

let site;
let host;

before(async () => {
  site = await startSite(web);
  host = await startHost(web);
});

after(() => {
  site?.close();
  host?.close();
});

// The article: loads, the reader opens the instrument, it goes live.
async function articleLive(page) {
  await page.goto(site.baseUrl);
  await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
}

async function measure(what, width, height, load) {
  const context = await site.browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.addInitScript(recordShifts);
  await load(page);
  await page.waitForTimeout(SETTLE_MS);
  const shifts = (await page.evaluate(() => window.__shifts)).filter((s) => !s.input);
  await context.close();
  const cls = sessionCls(shifts);
  const total = shifts.reduce((a, s) => a + s.value, 0);
  console.log(`layout shift of ${what} at ${width} px: CLS ${cls.toFixed(4)} (total ${total.toFixed(4)} over ${shifts.length} shifts)`);
  for (const s of shifts.filter((x) => x.value >= 0.001)) {
    console.log(`  ${Math.round(s.time)} ms: ${s.value.toFixed(4)} \u2014 ${s.sources.join('; ')}`);
  }
  assert.deepEqual(errors, []);
  return cls;
}

// A host page on another origin with every registered figure, as elements (with the lines the
// README gives authors for the time before the bundle has run: the registry's reserves) or as
// iframes of embed.html (at the registry's frame heights, sized by the host's helper), one after
// another in a column like a blog post's (720 px, or `column` px: a sidebar theme's); loaded
// until every figure is live.
function hostPage(kind, column = 720) {
  const sentence = 'The animal did not cross the street because it was too tired.';
  const figures = Object.entries(FIGURES);
  const body = kind === 'elements'
    ? figures.map(([, f]) => `<p>Some prose before the figure.</p>\n<${f.tag} sentence="${sentence}" word="it"></${f.tag}>`).join('\n')
    : figures.map(([key, f]) => `<p>Some prose before the frame.</p>\n<iframe src="${site.baseUrl}embed.html?widget=${key}&sentence=${encodeURIComponent(sentence)}&word=it" title="${key}" width="100%" height="${f.frameHeight}" style="border:0;display:block"></iframe>`).join('\n');
  const reserve = hostReserveCss();
  const script = kind === 'elements' ? 'attention-widgets.js' : 'attention-frames.js';
  writeFileSync(join(host.dir, `${kind}.html`), `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width"><title>${kind}</title>
<style>body { max-width: ${column}px; margin: 0 auto; padding: 0 12px; font: 18px/1.6 Georgia, serif; }${kind === 'elements' ? reserve : ''}</style>
<script type="module" src="${site.baseUrl}dist/${script}"></script></head><body><h1>A post</h1>${body}</body></html>`);
  return `${host.url}${kind}.html`;
}

async function allLive(page, kind) {
  for (const [key, f] of Object.entries(FIGURES)) {
    if (key === 'softmax') continue;
    // Elements start when they come near the screen: the page is read down to each, as a
    // reader scrolls (a figure that then outgrows its reserve is a shift the reader sees).
    if (kind === 'elements') await figureLive(page, f.tag, LOAD_TIMEOUT_MS);
    else await page.frameLocator(`iframe[title="${key}"]`).locator(`${f.tag} .status[data-mode="live"]`).first().waitFor({ timeout: LOAD_TIMEOUT_MS });
  }
}

describe('layout shift while the article loads', { timeout: 240000 }, () => {
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    test(`CLS under ${GOOD_CLS} at ${width} px`, async () => {
      const cls = await measure('the article', width, height, articleLive);
      assert.ok(cls < GOOD_CLS, `CLS at ${width} px is ${cls.toFixed(4)}, not under ${GOOD_CLS}`);
    });
  }
});

// A post loads, its status line says the model is live and its figures and tables are drawn.
// Its status line goes from one line to three on a phone while the model loads; its box keeps
// the height of the longest (web/posts/posts.css), which this holds to a tighter bar than the
// article's: 0.05 (the posts measured 0.08-0.10 at 412 px when the box grew with its text).
const POST_CLS = 0.05;
describe('layout shift while a post loads', { timeout: 240000 }, () => {
  for (const post of ['heads.html', 'confident.html', 'contribution.html', 'vocabulary.html', 'lenses.html']) {
    test(`${post}: CLS under ${POST_CLS} at 412 px`, async () => {
      const cls = await measure(post, 412, 823, async (page) => {
        await page.goto(site.baseUrl + post);
        await page.locator('#status[data-state="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
      });
      assert.ok(cls < POST_CLS, `CLS of ${post} at 412 px is ${cls.toFixed(4)}, not under ${POST_CLS}`);
    });
  }
});

describe('layout shift of a host page with every figure', { timeout: 480000 }, () => {
  for (const kind of ['elements', 'iframes']) {
    for (const [width, height] of [[1280, 900], [390, 844]]) {
      test(`${kind}: CLS under ${GOOD_CLS} at ${width} px`, async () => {
        const url = hostPage(kind);
        const cls = await measure(`every figure as ${kind}`, width, height, async (page) => {
          await page.goto(url);
          await allLive(page, kind);
        });
        assert.ok(cls < GOOD_CLS, `CLS of every figure as ${kind} at ${width} px is ${cls.toFixed(4)}, not under ${GOOD_CLS}`);
      });
    }
  }
});

// The reserves follow the figure's column, not the viewport: a sidebar theme's 486 px column at a
// 1280 px viewport 4000 px tall, every figure in view at once (security review 4: 0.107 when the
// reserves switched on the viewport's width).
describe('layout shift of a narrow column with every figure in view', { timeout: 240000 }, () => {
  test(`elements in a 486 px column at 1280 x 4000: CLS under ${GOOD_CLS}`, async () => {
    const url = hostPage('elements', 486 + 24);
    const cls = await measure('every figure in a 486 px column', 1280, 4000, async (page) => {
      await page.goto(url);
      await allLive(page, 'elements');
    });
    assert.ok(cls < GOOD_CLS, `CLS of every figure in a 486 px column is ${cls.toFixed(4)}, not under ${GOOD_CLS}`);
  });
});
