// A reader's first visit, in headless Chromium with a cold cache and an emulated network: the
// bytes transferred from navigation until the instrument is live (its engine ready, "Open the
// instrument" shown), the time that takes, and the time from the last byte to live, for the
// default split model (a core file plus the opening sentence's word-embedding shards) beside the
// same compact model as one file (?model-src=, the layout before the split), in interleaved runs.
// Bytes: the page's Resource Timing transfer sizes (headers included; the worker's scripts are
// among them) plus the bytes the engine's worker reports downloading (the wasm, the model file,
// the shards). Chromium applies the page's emulated network to its worker's requests too.
// A benchmark, not a test: the host's other load moves the times (the bytes do not move).
// Needs the assembled site (node scripts/site/build_site.mjs).
// Usage: node scripts/bench/bench_load.mjs [--mbit 20] [--latency-ms 20] [--runs 3] [--json FILE] [--phone]
//                                         [--web DIR] [--against DIR] [--layouts split,single] [--waterfall]
//   --phone: the phone of bench_page.mjs (390 px touch screen, CPU 4x slower, 20 Mbit/s, 40 ms unless
//   --mbit/--latency-ms say otherwise), and the longest main-thread task until live
//   --web: serve another assembled site (another version, or one built for another model: a clone
//   where `scripts/run.sh --model NAME` or build_site.mjs --default NAME.compact ran)
//   --against: a second assembled site (the previous landed tree's), measured in the same run, its
//   runs interleaved with this one's in alternating order (a host that slows down weighs on both):
//   each site's median and range side by side
//   --layouts: the layouts to measure (at bert-base's shape the single file alone is 199 MB)
//   --waterfall: also print the first run's requests of each layout (the page's and its worker's)
//   in the order they were asked for, each with when it was asked for, its first and its last
//   byte (ms after navigation), and the long main-thread tasks until live: what waits for what
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve } from '../../tests/browser/harness.mjs';
import { benchPage, median, networkConditions, OBSERVE_LONG_TASKS, PHONE } from './bench_page.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const web = option('--web', join(root, 'web'));
const against = option('--against', null);
const phone = args.includes('--phone');
const mbit = Number(option('--mbit', String(phone ? PHONE.mbit : 20)));
const latencyMs = Number(option('--latency-ms', String(phone ? PHONE.latencyMs : 20)));
const runs = Number(option('--runs', '3'));
const jsonOut = option('--json', null);
const waterfall = args.includes('--waterfall');
const TIMEOUT_MS = 300000;

const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
const entry = manifest.models[manifest.default];
const ALL_LAYOUTS = {
  split: '',
  single: `?model-src=${encodeURIComponent(`models/${entry.file}`)}`,
};
const LAYOUTS = Object.fromEntries(option('--layouts', 'split,single').split(',').map((name) => {
  if (!(name in ALL_LAYOUTS)) throw new Error(`bench_load: --layouts takes split and single, not ${name}`);
  return [name, ALL_LAYOUTS[name]];
}));

const conditions = networkConditions(mbit, latencyMs);

// Bytes transferred: the page's resources (Resource Timing transferSize) plus what the engine's
// worker downloaded (its timings: the wasm and the model file; its shard counter), since a
// worker's fetches are not the page's resources. The model file's request is the page's own
// where the page asked for it first (its timings' modelFrom 'page'): counted once, as the model.
async function transferred(page) {
  return page.evaluate(async () => {
    const engine = await (await import('/engine/engine.js')).getEngine();
    const entries = performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'));
    const pageBytes = entries.filter((e) => e.name !== engine.info.url).reduce((a, e) => a + (e.transferSize || e.encodedBodySize || 0), 0);
    const lastPageByte = Math.max(...entries.map((e) => e.responseEnd));
    const t = engine.timings;
    const shards = await engine.shardStats();
    const worker = engine.thread === 'worker';
    return {
      page: pageBytes, wasm: worker ? t.wasmBytes : 0, model: worker ? t.modelBytes : 0, shards: shards.bytes, shardRequests: shards.requests,
      // The model's last byte by the page's clock (the worker reports an epoch time).
      lastByteMs: Math.max(lastPageByte, t.modelDoneAt - performance.timeOrigin),
      liveMs: performance.getEntriesByName('attention:engine-ready')[0]?.startTime ?? null,
      longestTaskMs: window.__longtasks.reduce((a, e) => Math.max(a, e.duration), 0),
      longTasks: window.__longtasks.map((e) => [Math.round(e.start), Math.round(e.duration)]),
      // The engine's own phases (web/engine/local.js, createEngine's timings: ms after its start,
      // which modelDoneAt less modelMs places on the page's clock) and the page's marks.
      engineStartMs: t.modelDoneAt - t.modelMs - performance.timeOrigin,
      phases: { compiled: t.compileMs, instantiated: t.instantiatedMs, modelChecked: t.modelMs, parsed: t.modelMs + t.afterModelMs - t.infoMs, loaded: t.totalMs, parseMs: t.parseMs },
      marks: performance.getEntriesByType('mark').filter((m) => m.name.startsWith('attention:')).map((m) => [m.name, Math.round(m.startTime)]),
    };
  });
}

// The requests of a context as they finish: {path, start (ms since 1970), firstByte and lastByte
// (ms after start), bytes}.
function recordRequests(context, baseUrl) {
  const requests = [];
  requests.pending = [];
  context.on('requestfinished', (request) => {
    requests.pending.push(request.sizes().catch(() => ({})).then((sizes) => {
      const timing = request.timing();
      requests.push({ path: request.url().replace(baseUrl, '') || '(the page)', start: timing.startTime, firstByte: timing.responseStart, lastByte: timing.responseEnd, bytes: sizes.responseBodySize ?? 0 });
    }));
  });
  return requests;
}

async function printWaterfall(layout, requests, origin, bytes) {
  await Promise.all(requests.pending);
  console.log(`${layout}, first run: requests by when they were asked for (ms after navigation); live at ${Math.round(bytes.liveMs)} ms`);
  console.log('| asked for | first byte | last byte | kB | file |');
  console.log('|---|---|---|---|---|');
  for (const r of [...requests].sort((a, b) => a.start - b.start)) {
    const at = r.start - origin;
    console.log(`| ${Math.round(at)} | ${Math.round(at + r.firstByte)} | ${Math.round(at + r.lastByte)} | ${(r.bytes / 1e3).toFixed(1)} | ${r.path.slice(0, 80)} |`);
  }
  const at = (ms) => Math.round(bytes.engineStartMs + ms);
  const p = bytes.phases;
  console.log(`the engine (its worker): started ${Math.round(bytes.engineStartMs)}, wasm compiled ${at(p.compiled)}, instantiated ${at(p.instantiated)}, model file read and checked (SHA-256) ${at(p.modelChecked)}, core parsed ${at(p.parsed)} (${Math.round(p.parseMs)} ms), engine loaded ${at(p.loaded)}; the page: ${bytes.marks.map(([name, t]) => `${name.slice(10)} ${t}`).join(', ')}`);
  const tasks = bytes.longTasks.filter(([start]) => start < bytes.liveMs);
  console.log(`long main-thread tasks until live (start + duration, ms): ${tasks.map(([start, duration]) => `${start}+${duration}`).join(', ') || 'none'}`);
}

async function measure(browser, baseUrl, layout, { showRequests = false } = {}) {
  // Chromium applies a page's emulated network to its dedicated workers' requests too.
  const { context, page } = await benchPage(browser, { phone, network: conditions, disableCache: true });
  const requests = showRequests ? recordRequests(context, baseUrl) : null;
  await page.addInitScript(OBSERVE_LONG_TASKS);
  await page.goto(baseUrl + LAYOUTS[layout]);
  await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  const bytes = await transferred(page);
  if (requests) await printWaterfall(layout, requests, await page.evaluate(() => performance.timeOrigin), bytes);
  await context.close();
  const total = bytes.page + bytes.wasm + bytes.model + bytes.shards;
  return { layout, totalBytes: total, ...bytes, lastByteToLiveMs: bytes.liveMs - bytes.lastByteMs };
}

const sites = [{ name: against ? 'this tree' : '', web }, ...(against ? [{ name: 'against', web: against }] : [])];
for (const site of sites) {
  site.server = await serve(site.web);
  site.baseUrl = `http://127.0.0.1:${site.server.server.address().port}/`;
}
const browser = await launchChromium();
const results = [];
try {
  for (let run = 0; run < runs; ++run) {
    // Alternating order: this tree first in even runs, the other first in odd ones.
    const order = run % 2 ? [...sites].reverse() : sites;
    for (const layout of Object.keys(LAYOUTS)) {
      for (const site of order) results.push({ site: site.name, ...(await measure(browser, site.baseUrl, layout, { showRequests: waterfall && run === 0 })) });
    }
  }
} finally {
  await browser.close();
  for (const site of sites) site.server.close();
}
const device = phone ? `a phone (${PHONE.viewport.width} px, CPU ${PHONE.cpuSlowdown}x slower)` : 'a desktop (1280 px)';
console.log(`${manifest.default}: cold first visit on ${device} at ${mbit} Mbit/s, ${latencyMs} ms latency (Chromium network emulation), ${runs} interleaved run(s) each; medians${runs > 2 ? ' (and ranges)' : ''}:`);
console.log(`| ${against ? 'site | ' : ''}layout | MB transferred until live | of which model | shards (requests) | wasm | page | time to live (s) | last byte to live (ms) | longest main-thread task until live (ms) |`);
console.log(`|${against ? '---|' : ''}---|---|---|---|---|---|---|---|---|`);
for (const site of sites) {
  for (const layout of Object.keys(LAYOUTS)) {
    const mine = results.filter((r) => r.layout === layout && r.site === site.name);
    const m = (key) => median(mine.map((r) => r[key]));
    const range = (key, scale, digits) => (runs > 2 ? ` (${(Math.min(...mine.map((r) => r[key])) / scale).toFixed(digits)}\u2013${(Math.max(...mine.map((r) => r[key])) / scale).toFixed(digits)})` : '');
    console.log(`| ${against ? `${site.name === 'against' ? against : site.name} | ` : ''}${layout} | ${(m('totalBytes') / 1e6).toFixed(2)} | ${(m('model') / 1e6).toFixed(2)} | ${(m('shards') / 1e6).toFixed(2)} (${m('shardRequests')}) | ${(m('wasm') / 1e6).toFixed(2)} | ${(m('page') / 1e6).toFixed(2)} | ${(m('liveMs') / 1000).toFixed(2)}${range('liveMs', 1000, 2)} | ${Math.round(m('lastByteToLiveMs'))} | ${Math.round(m('longestTaskMs'))}${range('longestTaskMs', 1, 0)} |`);
  }
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(results, null, 2));
