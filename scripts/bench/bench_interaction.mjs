// The article as a reader uses it, in headless Chromium: how long the main thread is blocked.
// Opens the live instrument, types a 136-token sentence (with pauses, so that the page analyses
// it on the way), clicks 5 words, switches 5 heads (taps on the phone; each timed from the tap until
// the page settles, the scroll that brings its target into view left out) and presses 5 arrow
// keys, and reports the longest main-thread task and the total long-task time (PerformanceObserver
// 'longtask', tasks over 50 ms) for each phase; the height of Figure 1 and of the page with that
// sentence; and the loading path: when the engine's glue, its wasm and the model were requested
// and finished, and the time from the model's last byte to the engine being ready and to live
// figures.
// A benchmark, not a test: the host's other load moves the figures. Needs the assembled site
// (node scripts/site/build_site.mjs).
// Usage: node scripts/bench/bench_interaction.mjs [--json FILE] [--runs N] [--web DIR] [--against DIR] [--phone] [--trace DIR] [--words N]
//   --words: type only the sentence's first N words (a 30-word sentence: the phone budget's)
//   --phone: the phone of bench_page.mjs (390 px touch screen, CPU 4x slower; the loading run at its
//   20 Mbit/s, 40 ms network, cache off)
//   --web: serve another copy of web/ (a checkout of an older version, to compare)
//   --against: a second site measured in the same run, its runs interleaved with this one's (in
//   alternating order, so a host that slows down weighs on both): each phase's median longest
//   task and total, side by side, and how many runs kept every task of the phase within 100 ms
//   --trace: a performance trace and CPU profile of each interaction phase (trace.mjs): the long
//   tasks with what ran inside them and the JS functions with the most self time, printed, and the
//   raw files written to DIR for DevTools. Tracing slows the page: read its times as shares.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve } from '../../tests/browser/harness.mjs';
import { benchPage, networkConditions, OBSERVE_LONG_TASKS, PHONE } from './bench_page.mjs';
import { printTrace, startTrace, stopTrace } from './trace.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const jsonOut = option('--json', null);
const runs = Number(option('--runs', '1'));
const webDir = option('--web', join(root, 'web'));
const againstDir = option('--against', null);
// The phone budget of issue 29: no main-thread task over this after typing and clicks.
const BUDGET_MS = 100;
const phone = args.includes('--phone');
const traceDir = option('--trace', null);
if (traceDir) mkdirSync(traceDir, { recursive: true });

// 120 words, 136 tokens with the default model's vocabulary ([CLS] and [SEP] included).
export const LONG_SENTENCE = 'When the old lighthouse keeper finally climbed the narrow spiral stairs on that cold and windy evening, he noticed that the great lamp, which had guided countless fishing boats safely past the jagged rocks for more than a hundred years, was flickering strangely, as if some invisible hand were slowly turning it down; worried that the ships still out at sea would lose their way in the thickening fog, he quickly fetched his tools, replaced the worn brass fittings one by one, cleaned the heavy glass lenses until they shone again, and then sat beside the window for the rest of the night, watching the beam sweep across the dark water while the storm gathered strength over the distant hills.';
// The sentence typed: LONG_SENTENCE, or its first --words words.
const WORDS = Number(option('--words', '0'));
const TYPED = WORDS > 0 ? LONG_SENTENCE.split(' ').slice(0, WORDS).join(' ') : LONG_SENTENCE;
const TYPING_PAUSES = 4;       // the sentence is typed in this many runs, with a pause after each
const PAUSE_MS = 600;          // longer than the instrument's 300 ms typing delay
const KEY_DELAY_MS = 8;
const SETTLE_MS = 250;

// When the instrument first shows live figures, to a frame (the same way for any version of the
// page: it only reads the status line the figures have always had).
const LIVE_WATCH = () => {
  const watch = () => {
    const mode = document.getElementById('instrument')?.shadowRoot?.querySelector('.status')?.dataset.mode;
    if (mode === 'live') window.__liveAt = performance.now();
    else requestAnimationFrame(watch);
  };
  requestAnimationFrame(watch);
};

const instrumentTable = (page, test, arg = null) => page.waitForFunction(test, arg, { polling: 'raf', timeout: 120000 });

// Two animation frames and a pause: whatever a selection scheduled has run.
async function settle(page) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.waitForTimeout(SETTLE_MS);
}

const now = (page) => page.evaluate(() => performance.now());

async function measureLoading(browser, baseUrl) {
  const network = phone ? networkConditions(PHONE.mbit, PHONE.latencyMs) : null;
  const { context, page } = await benchPage(browser, { phone, network, disableCache: phone });
  const requests = [];
  const finished = new Map();
  page.on('request', (r) => requests.push(r));
  page.on('requestfinished', (r) => finished.set(r, true));
  await page.addInitScript(OBSERVE_LONG_TASKS);
  await page.addInitScript(LIVE_WATCH);
  // A permalink opens the live figures as soon as the model is ready, without a click.
  await page.goto(`${baseUrl}#s=${encodeURIComponent('The animal did not cross the street because it was too tired.')}&t=7`);
  await page.locator('#open').waitFor({ state: 'visible', timeout: 120000 });
  await instrumentTable(page, () => document.getElementById('instrument')?.shadowRoot?.querySelector('.status')?.dataset.mode === 'live');
  await settle(page);
  const liveAt = await page.evaluate(() => window.__liveAt);
  const marks = await page.evaluate(() => ({
    timeOrigin: performance.timeOrigin,
    marks: Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime])),
    longtasks: window.__longtasks,
  }));
  const toPage = (epochMs) => epochMs - marks.timeOrigin;
  const timing = (match) => {
    const r = requests.find((x) => match(x.url()));
    if (!r) return null;
    const t = r.timing();
    return { url: r.url(), start: toPage(t.startTime), end: t.responseEnd >= 0 ? toPage(t.startTime + t.responseEnd) : null };
  };
  const glue = timing((u) => u.endsWith('/attention_engine.js'));
  const wasm = timing((u) => u.endsWith('.wasm'));
  const model = timing((u) => u.endsWith('.attn'));
  const ready = marks.marks['attention:engine-ready'];
  const modelEnd = model?.end ?? null;
  await context.close();
  return {
    requests: { glue, wasm, model },
    engineReadyMs: ready,
    liveMs: liveAt,
    modelLastByteToReadyMs: modelEnd === null ? null : ready - modelEnd,
    modelLastByteToLiveMs: modelEnd === null ? null : liveAt - modelEnd,
    loadLongtasks: summarise(marks.longtasks, [{ from: 0, to: liveAt }]),
  };
}

// The tasks that started inside any of the windows ({from, to}, the page's milliseconds).
function summarise(tasks, windows) {
  const inside = tasks.filter((t) => windows.some(({ from, to }) => t.start >= from && t.start < to));
  return {
    count: inside.length,
    longestMs: inside.reduce((a, t) => Math.max(a, t.duration), 0),
    totalMs: inside.reduce((a, t) => a + t.duration, 0),
  };
}

const tableState = (page) => page.evaluate(() => {
  const t = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
  return t ? { sentence: t.dataset.sentence, token: Number(t.dataset.token), layer: Number(t.dataset.layer), head: Number(t.dataset.head) } : null;
});

const heights = (page) => page.evaluate(() => ({
  figure1: Math.round(document.getElementById('instrument').getBoundingClientRect().height),
  page: document.documentElement.scrollHeight,
}));

async function measureInteraction(browser, baseUrl) {
  const { context, page } = await benchPage(browser, { phone });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript(OBSERVE_LONG_TASKS);
  await page.addInitScript(LIVE_WATCH);
  await page.goto(baseUrl);
  await page.locator('#open').waitFor({ state: 'visible', timeout: 120000 });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor();
  // Playwright evaluates its own script in the page the first time a waitForFunction runs there
  // (some 85 ms on the phone, in a trace): done here, so that no phase counts it as the page's.
  await instrumentTable(page, () => true);
  await settle(page);
  const before = await heights(page);
  const phases = {};
  const traces = {};
  const phase = async (name, body) => {
    const tracing = traceDir ? await startTrace(browser, context, page) : null;
    const from = await now(page);
    const windows = [];
    await body((start, end) => windows.push({ from: start, to: end }));
    await settle(page);
    // A phase whose body names windows (one per tap) counts the tasks inside them; else all of it.
    phases[name] = windows.length ? windows : [{ from, to: await now(page) }];
    if (tracing) traces[name] = await stopTrace(tracing, traceDir, name);
  };

  // The box is emptied and focused before the phase, and the keys go in as the browser's own
  // input events (keyboard.type): locator.pressSequentially runs Playwright's script in the page
  // first, a task of up to 800 ms on the throttled phone that is not the page's.
  const input = page.locator('#instrument input#sentence');
  await input.fill('');
  await input.focus();
  await settle(page);
  await phase('type', async () => {
    const words = TYPED.split(' ');
    const per = Math.ceil(words.length / TYPING_PAUSES);
    for (let k = 0; k < TYPING_PAUSES; ++k) {
      const part = words.slice(k * per, (k + 1) * per).join(' ');
      await page.keyboard.type((k ? ' ' : '') + part, { delay: KEY_DELAY_MS });
      await page.waitForTimeout(PAUSE_MS);
    }
    await instrumentTable(page, (text) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === text, TYPED);
  });
  const sentenceShown = (await tableState(page))?.sentence === TYPED;
  const n = await page.locator('#instrument button.chip').count();
  const after = await heights(page);

  // A tap where a reader's finger lands (a click on the desktop), as the browser's own input
  // events, timed from the tap until the page has settled: locator.click first runs Playwright's
  // actionability checks in the page (elementsFromPoint and a query, with the layout and hit test
  // they force), tasks that are not the page's. The target is scrolled into view and measured
  // before its window opens, as a reader scrolls and then taps.
  const tap = async (locator, shown, arg, windowed) => {
    await locator.scrollIntoViewIfNeeded();
    await settle(page);
    const box = await locator.boundingBox();
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    const from = await now(page);
    if (phone) await page.touchscreen.tap(x, y);
    else await page.mouse.click(x, y);
    await instrumentTable(page, shown, arg);
    await settle(page);
    windowed(from, await now(page));
  };
  await phase('click', async (windowed) => {
    // Five words spread over the sentence (tokens 10, 40, 70, 100 and 130 of the long one).
    for (const i of [10, 40, 70, 100, 130].map((k) => Math.min(Math.round((k * (n - 2)) / 134), n - 2))) {
      await tap(page.locator('#instrument button.chip').nth(i), (k) => Number(document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.token) === k, i, windowed);
    }
  });
  await phase('head', async (windowed) => {
    for (const [layer, head] of [[0, 1], [1, 2], [2, 3], [3, 0], [1, 1]]) {
      await tap(page.locator(`#instrument button.cell[data-layer="${layer}"][data-head="${head}"]`), ([l, h]) => {
        const t = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
        return Number(t?.dataset.layer) === l && Number(t?.dataset.head) === h;
      }, [layer, head], windowed);
    }
  });
  await phase('arrow', async () => {
    await page.locator('#instrument button.chip[aria-pressed="true"]').focus();
    // Leftwards: the last tap was near the sentence's end, and a short sentence has no five tokens after it.
    for (let k = 0; k < 5; ++k) {
      const { token } = await tableState(page);
      await page.keyboard.press('ArrowLeft');
      await instrumentTable(page, (t) => Number(document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.token) === t, token - 1);
      await settle(page);
    }
  });
  const tasks = await page.evaluate(() => window.__longtasks);
  const out = { tokens: n, sentenceShown, heights: { defaultSentence: before, longSentence: after }, phases: {}, traces, errors };
  for (const [name, windows] of Object.entries(phases)) out.phases[name] = summarise(tasks, windows);
  const all = summarise(tasks, Object.values(phases).flat());
  out.all = all;
  await context.close();
  return out;
}

const sites = [{ label: againstDir ? 'this' : null, dir: webDir }, ...(againstDir ? [{ label: 'against', dir: againstDir }] : [])];
const browser = await launchChromium();
const results = [];
try {
  for (const site of sites) {
    site.server = await serve(site.dir);
    site.baseUrl = `http://127.0.0.1:${site.server.server.address().port}/`;
  }
  for (let r = 0; r < runs; ++r) {
    for (const site of r % 2 ? [...sites].reverse() : sites) {
      results.push({ site: site.label, loading: await measureLoading(browser, site.baseUrl), interaction: await measureInteraction(browser, site.baseUrl) });
    }
  }
} finally {
  await browser.close();
  for (const site of sites) site.server?.close();
}

const ms = (v) => (v === null || v === undefined ? 'n/a' : `${Math.round(v)} ms`);
console.log(phone ? `a phone: ${PHONE.viewport.width} px touch screen, CPU ${PHONE.cpuSlowdown}x slower; loading at ${PHONE.mbit} Mbit/s, ${PHONE.latencyMs} ms, cache off` : 'a desktop: 1280 px, no throttling');
for (const [k, { loading: l, interaction: i }] of results.entries()) {
  const { site } = results[k];
  console.log(`run ${k + 1}${site ? ` (${site})` : ''}: ${i.tokens} tokens${i.sentenceShown ? '' : ' (THE FINAL SENTENCE WAS NOT SHOWN)'}`);
  console.log('phase  | long tasks | longest | total');
  for (const [name, s] of [...Object.entries(i.phases), ['all', i.all]]) {
    console.log(`${name.padEnd(6)} | ${String(s.count).padStart(10)} | ${ms(s.longestMs).padStart(7)} | ${ms(s.totalMs).padStart(7)}`);
  }
  console.log(`heights: Figure 1 ${i.heights.defaultSentence.figure1} px -> ${i.heights.longSentence.figure1} px with the long sentence; page ${i.heights.defaultSentence.page} px -> ${i.heights.longSentence.page} px`);
  const rq = l.requests;
  const span = (x) => (x ? `${ms(x.start)} to ${ms(x.end)}` : 'not seen');
  console.log(`loading (since navigation): glue ${span(rq.glue)}, wasm ${span(rq.wasm)}, model ${span(rq.model)}; engine ready ${ms(l.engineReadyMs)}, live figures ${ms(l.liveMs)}`);
  console.log(`model's last byte to engine ready ${ms(l.modelLastByteToReadyMs)}, to live figures ${ms(l.modelLastByteToLiveMs)}; long tasks while loading: ${l.loadLongtasks.count}, longest ${ms(l.loadLongtasks.longestMs)}, total ${ms(l.loadLongtasks.totalMs)}`);
  if (i.errors.length) console.log(`page errors: ${i.errors.join('; ')}`);
  for (const [name, summary] of Object.entries(i.traces)) printTrace(name, summary);
}
// Medians over the runs, each site beside the other.
if (results.length > 1) {
  const median = (values) => {
    const v = [...values].sort((a, b) => a - b);
    return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  };
  console.log(`\nmedians over ${runs} run${runs > 1 ? 's' : ''} a site${againstDir ? ` (this: ${webDir}; against: ${againstDir})` : ''}: longest task / total long-task time; runs with every task within ${BUDGET_MS} ms`);
  const names = [...Object.keys(results[0].interaction.phases), 'all'];
  console.log(`phase  | ${sites.map((x) => (x.label ?? 'site').padEnd(30)).join(' | ')}`);
  for (const name of names) {
    const cells = sites.map((site) => {
      const mine = results.filter((x) => x.site === site.label).map((x) => (name === 'all' ? x.interaction.all : x.interaction.phases[name]));
      const within = mine.filter((x) => x.longestMs <= BUDGET_MS).length;
      return `${ms(median(mine.map((x) => x.longestMs)))} / ${ms(median(mine.map((x) => x.totalMs)))}; ${within} of ${mine.length}`.padEnd(30);
    });
    console.log(`${name.padEnd(6)} | ${cells.join(' | ')}`);
  }
  const live = sites.map((site) => `${site.label ?? 'site'} ${ms(median(results.filter((x) => x.site === site.label).map((x) => x.loading.liveMs)))}`);
  console.log(`live figures since navigation (median): ${live.join(', ')}`);
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(results, null, 2) + '\n');
