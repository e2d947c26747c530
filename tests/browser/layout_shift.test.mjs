// The article does not jump while it loads: the cumulative layout shift (CLS) of a load at a
// desktop width (1280 px) and at a phone width (390 px), from the example's first figures to
// the live instrument, stays under 0.1 (the "good" threshold of Core Web Vitals). Shifts are
// collected by a PerformanceObserver of type layout-shift registered before the page's own
// scripts (buffered, so nothing before it is missed); shifts within 500 ms of the reader's
// input (here: the click on "Open the instrument") are left out, as CLS leaves them out. The
// figure printed is CLS as Chrome defines it (the largest session window: shifts less than 1 s
// apart, at most 5 s in all), with the plain total beside it; each shift's largest moved element
// is printed too, so that a failure says what moved. Needs the assembled site
// (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startSite } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 60000;
const SETTLE_MS = 1500;
const GOOD_CLS = 0.1;

let site;

before(async () => {
  site = await startSite(web);
});

after(() => site?.close());

// Registered before any of the page's scripts run: every shift, with a name for what moved.
function recordShifts() {
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
function sessionCls(shifts) {
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

async function measure(width, height) {
  const context = await site.browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.addInitScript(recordShifts);
  await page.goto(site.baseUrl);
  await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
  await page.waitForTimeout(SETTLE_MS);
  const shifts = (await page.evaluate(() => window.__shifts)).filter((s) => !s.input);
  await context.close();
  const cls = sessionCls(shifts);
  const total = shifts.reduce((a, s) => a + s.value, 0);
  console.log(`layout shift at ${width} px: CLS ${cls.toFixed(4)} (total ${total.toFixed(4)} over ${shifts.length} shifts)`);
  for (const s of shifts.filter((x) => x.value >= 0.001)) {
    console.log(`  ${Math.round(s.time)} ms: ${s.value.toFixed(4)} \u2014 ${s.sources.join('; ')}`);
  }
  assert.deepEqual(errors, []);
  return cls;
}

describe('layout shift while the article loads', { timeout: 240000 }, () => {
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    test(`CLS under ${GOOD_CLS} at ${width} px`, async () => {
      const cls = await measure(width, height);
      assert.ok(cls < GOOD_CLS, `CLS at ${width} px is ${cls.toFixed(4)}, not under ${GOOD_CLS}`);
    });
  }
});
