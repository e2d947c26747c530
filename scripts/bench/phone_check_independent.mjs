#!/usr/bin/env node
// Independent phone-budget measurement of a static site's index.html in headless Chromium.
// Uses only playwright-core and Node built-ins: no code of the project (its own server, its own
// waits), so that its figures check bench_phone.mjs's (issue 60) rather than repeat them.
//
//   node scripts/bench/phone_check_independent.mjs [--web DIR] [--runs N] [--json FILE]
//
// Per run (fresh context, cold cache): 390x844 @3x, mobile + touch, 40 ms latency, 20 Mbit/s
// both ways, CPU throttled 4x. Figures: time to live (navigation start -> #open visible), the
// longest long task before live, the longest long task while typing a 30-word sentence, and
// the longest long task around three chip taps.

import { chromium } from 'playwright-core';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileSync } from 'node:fs';

// ---------- options ----------
const argv = process.argv.slice(2);
const opt = { web: new URL('../../web', import.meta.url).pathname, runs: 5, json: null };
for (let i = 0; i < argv.length; ++i) {
  const a = argv[i];
  const val = () => { if (i + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++i]; };
  if (a === '--web') opt.web = path.resolve(val());
  else if (a === '--runs') opt.runs = Math.max(1, parseInt(val(), 10) || 1);
  else if (a === '--json') opt.json = path.resolve(val());
  else if (a === '--help' || a === '-h') { console.log('usage: node check.mjs [--web DIR] [--runs N] [--json FILE]'); process.exit(0); }
  else throw new Error(`unknown option ${a}`);
}

// ---------- static server ----------
const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm',
  '.attn': 'application/octet-stream', '.bin': 'application/octet-stream', '.sha256': 'application/octet-stream',
  // not in the brief, harmless extras
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.txt': 'text/plain',
  '.webmanifest': 'application/manifest+json',
};
function startServer(root) {
  const rootAbs = path.resolve(root);
  const server = http.createServer((req, res) => {
    try {
      let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      if (p.endsWith('/')) p += 'index.html';
      const file = path.resolve(rootAbs, '.' + p);
      if (file !== rootAbs && !file.startsWith(rootAbs + path.sep)) { res.writeHead(404); res.end(); return; }
      let st;
      try { st = fs.statSync(file); } catch { st = null; }
      if (!st || !st.isFile()) { res.writeHead(404, { 'Cache-Control': 'no-cache' }); res.end('not found'); return; }
      const headers = {
        'Content-Type': TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
        'Cache-Control': 'no-cache',
        'Vary': 'Accept-Encoding',
      };
      let send = file;
      let size = st.size;
      const acceptsBr = /\bbr\b/.test(String(req.headers['accept-encoding'] ?? ''));
      if (acceptsBr) {
        try {
          const br = fs.statSync(file + '.br');
          if (br.isFile() && br.mtimeMs >= st.mtimeMs) { send = file + '.br'; size = br.size; headers['Content-Encoding'] = 'br'; }
        } catch { /* no .br */ }
      }
      headers['Content-Length'] = String(size);
      res.writeHead(200, headers);
      if (req.method === 'HEAD') { res.end(); return; }
      fs.createReadStream(send).pipe(res);
    } catch (e) {
      res.writeHead(500); res.end(String(e));
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// ---------- page-side instrumentation (init script) ----------
const INIT = `(() => {
  window.__lt = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__lt.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) { window.__ltError = String(e); }
  window.__liveAt = undefined;
  const poll = () => {
    const el = document.getElementById('open');
    if (el && !el.hidden) {
      const r = el.getBoundingClientRect();
      const cs = getComputedStyle(el);
      if (r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none') {
        window.__liveAt = performance.now();
        return;
      }
    }
    requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
})();`;

const SENTENCE = 'When the old lighthouse keeper finally climbed the narrow spiral stairs on that cold and windy evening he noticed that the great lamp which had guided countless fishing boats safely past';

function sentenceParts(text, n) {
  const words = text.split(' ');
  const parts = [];
  let at = 0;
  for (let k = 0; k < n; ++k) {
    const take = Math.ceil((words.length - at) / (n - k));
    const chunk = words.slice(at, at + take).join(' ');
    at += take;
    parts.push(at < words.length ? chunk + ' ' : chunk);
  }
  return parts;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------- one run ----------
async function oneRun(browser, url, runIndex) {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true,
  });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 40, downloadThroughput: 20e6 / 8, uploadThroughput: 20e6 / 8 });
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
  await page.addInitScript(INIT);

  // Evaluate a plain expression in the page's main world over CDP: no Playwright script injected.
  const ev = async (expression) => {
    const r = await cdp.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: false });
    if (r.exceptionDetails) throw new Error(`page evaluate failed: ${r.exceptionDetails.text} ${r.exceptionDetails.exception?.description ?? ''}`);
    return r.result.value;
  };
  const waitFor = async (expression, timeoutMs, what, every = 50) => {
    const t0 = Date.now();
    for (;;) {
      let v;
      try { v = await ev(expression); } catch { v = undefined; }  // e.g. context not ready yet
      if (v) return v;
      if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
      await sleep(every);
    }
  };
  const now = () => ev('performance.now()');
  const longtasks = () => ev('window.__lt.slice()');
  const longestIn = (tasks, windows) => {
    let m = 0;
    for (const t of tasks) {
      const end = t.start + t.duration;
      if (windows.some(([a, b]) => t.start < b && end > a)) m = Math.max(m, t.duration);
    }
    return m;
  };
  const TABLE = `(document.getElementById('instrument')?.shadowRoot?.querySelector('table.bars') ?? null)`;

  const result = { run: runIndex + 1 };
  try {
    await page.goto(url, { waitUntil: 'commit', timeout: 120000 });
    const liveAt = await waitFor('window.__liveAt', 240000, '#open to become visible', 100);
    result.timeToLiveMs = liveAt;
    const ltError = await ev('window.__ltError ?? null');
    if (ltError) throw new Error(`longtask observer failed: ${ltError}`);
    result.longestBeforeLiveMs = longestIn(await longtasks(), [[0, liveAt]]);

    // Open the instrument with a tap at #open's centre.
    const openBox = await ev(`(() => { const r = document.getElementById('open').getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2, top: r.top, bottom: r.bottom }; })()`);
    if (openBox.top < 0 || openBox.bottom > 844) {
      await ev(`document.getElementById('open').scrollIntoView({ block: 'center' })`);
      await sleep(200);
      Object.assign(openBox, await ev(`(() => { const r = document.getElementById('open').getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`));
    }
    await page.touchscreen.tap(openBox.x, openBox.y);
    await waitFor(`!!document.getElementById('instrument')?.shadowRoot?.querySelector('.status[data-mode="live"]')`, 120000, 'the instrument to be live', 100);
    await sleep(1500);

    // Warm-up of Playwright's own scripts (locator query, evaluate) before anything measured.
    const input = page.locator('#instrument input#sentence');
    await input.fill('');
    await page.locator('#instrument button.chip').count();
    await page.evaluate(() => performance.now());
    await input.focus();
    await sleep(500);

    // Typing.
    const T0 = await now();
    for (const part of sentenceParts(SENTENCE, 4)) {
      await page.keyboard.type(part, { delay: 8 });
      await sleep(600);
    }
    const want = JSON.stringify(SENTENCE);
    await waitFor(`(${TABLE})?.dataset.sentence?.trim() === ${want}`, 60000, 'the table to show the typed sentence');
    await sleep(500);
    const T1 = await now();
    result.afterTypingMs = longestIn(await longtasks(), [[T0, T1]]);
    result.typingWindowMs = T1 - T0;

    // Chip taps: the 5th, 15th and 25th chip.
    const windows = [];
    result.chips = [];
    for (const nth of [4, 14, 24]) {
      const chip = page.locator('#instrument button.chip').nth(nth);
      await chip.scrollIntoViewIfNeeded();
      await sleep(300);
      const box = await chip.boundingBox();
      const attr = await chip.getAttribute('data-token');
      const text = (await chip.textContent())?.trim();
      if (!box) throw new Error(`chip ${nth} has no box`);
      const expected = attr !== null ? Number(attr) : nth;
      const Ta = await now();
      await page.touchscreen.tap(box.x + box.width / 2, box.y + box.height / 2);
      const got = await waitFor(`(() => { const t = ${TABLE}; return t && t.dataset.token === ${JSON.stringify(String(expected))} ? t.dataset.token : null; })()`,
        30000, `the table to show token ${expected}`);
      await sleep(400);
      const Tb = await now();
      windows.push([Ta, Tb]);
      result.chips.push({ nth, dataToken: attr, text, tableToken: Number(got), indexMatches: Number(got) === nth });
    }
    const tasks = await longtasks();
    result.afterClicksMs = longestIn(tasks, windows);
    result.longTasks = tasks;
    result.windows = { live: liveAt, typing: [T0, T1], clicks: windows };
    result.withinBudget = Math.max(result.afterTypingMs, result.afterClicksMs) <= 100;
  } catch (e) {
    result.error = String(e?.stack ?? e);
  } finally {
    await context.close().catch(() => {});
  }
  return result;
}

// ---------- main ----------
const fmtS = (ms) => (ms / 1000).toFixed(2);
const fmtMs = (ms) => ms.toFixed(0);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

const server = await startServer(opt.web);
const url = `http://127.0.0.1:${server.address().port}/index.html`;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'],
});
console.log(`site ${opt.web} at ${url}; ${opt.runs} run(s); Chromium ${browser.version()}`);
const runs = [];
try {
  for (let i = 0; i < opt.runs; ++i) {
    const r = await oneRun(browser, url, i);
    runs.push(r);
    if (r.error) { console.log(`run ${r.run}: FAILED ${r.error}`); continue; }
    console.log(`run ${r.run}: live ${fmtS(r.timeToLiveMs)} s, longest task before live ${fmtMs(r.longestBeforeLiveMs)} ms, after typing ${fmtMs(r.afterTypingMs)} ms, after clicks ${fmtMs(r.afterClicksMs)} ms${r.withinBudget ? '' : '  (over 100 ms)'}`
      + `  [chips ${r.chips.map((c) => `#${c.nth} "${c.text}" data-token=${c.dataToken} table=${c.tableToken}`).join(', ')}]`);
  }
} finally {
  await browser.close().catch(() => {});
  server.close();
}

const ok = runs.filter((r) => !r.error);
const summary = {};
if (ok.length) {
  const fig = [
    ['timeToLiveMs', 'time to live', (v) => `${fmtS(v)} s`],
    ['longestBeforeLiveMs', 'longest task before live', (v) => `${fmtMs(v)} ms`],
    ['afterTypingMs', 'longest task after typing', (v) => `${fmtMs(v)} ms`],
    ['afterClicksMs', 'longest task after clicks', (v) => `${fmtMs(v)} ms`],
  ];
  console.log(`\nover ${ok.length} run(s)${ok.length < runs.length ? ` (${runs.length - ok.length} failed)` : ''}:`);
  for (const [key, name, f] of fig) {
    const xs = ok.map((r) => r[key]);
    summary[key] = { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
    console.log(`  ${name}: median ${f(summary[key].median)}, range ${f(summary[key].min)} to ${f(summary[key].max)}`);
  }
  const kept = ok.filter((r) => r.withinBudget).length;
  summary.withinBudgetRuns = kept;
  console.log(`  runs with every task after typing and clicks within 100 ms: ${kept} of ${ok.length}`);
}
if (opt.json) {
  writeFileSync(opt.json, JSON.stringify({ web: opt.web, sentence: SENTENCE, conditions: {
    viewport: '390x844', deviceScaleFactor: 3, isMobile: true, hasTouch: true, latencyMs: 40, throughputBitsPerS: 20e6, cpuThrottle: 4,
  }, runs, summary }, null, 2));
  console.log(`wrote ${opt.json}`);
}
process.exit(ok.length === runs.length ? 0 : 1);
