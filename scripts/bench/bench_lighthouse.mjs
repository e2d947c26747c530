// Lighthouse (12.2.3, the exact version in package.json: 13 needs Node 22) on the article and every
// post, as a phone: Lighthouse's mobile preset (a Moto G Power's screen, simulated 4x CPU
// slowdown and slow 4G by its Lantern model) against the site served as scripts/serve.sh serves it
// (its Cache-Control policy, brotli/gzip copies). Prints the performance score and the metrics
// behind it per page, the median of --runs runs. A benchmark, not a test: the host's other load
// moves the figures, and the simulation's throttling is a model of a phone, not one.
// Needs the assembled site (node scripts/site/build_site.mjs) and Debian's chromium.
// Usage: node scripts/bench/bench_lighthouse.mjs [--runs 3] [--pages index.html,heads.html] [--json FILE] [--web DIR]
//   --web: serve another copy of web/ (an older version's assembled site, to compare)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';

import { CHROMIUM, CHROMIUM_ARGS, serve } from '../../tests/browser/harness.mjs';
import { median } from './bench_page.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const runs = Number(option('--runs', '3'));
const pages = option('--pages', 'index.html,heads.html,confident.html,contribution.html,vocabulary.html,lenses.html').split(',');
const jsonOut = option('--json', null);
const webDir = option('--web', join(root, 'web'));

const METRICS = {
  'first-contentful-paint': 'FCP',
  'largest-contentful-paint': 'LCP',
  'total-blocking-time': 'TBT',
  'cumulative-layout-shift': 'CLS',
  'speed-index': 'SI',
};


const server = await serve(webDir);
const base = `http://127.0.0.1:${server.server.address().port}/`;
const profile = mkdtempSync(join(tmpdir(), 'attention-lighthouse-'));
const chrome = await chromeLauncher.launch({
  chromePath: CHROMIUM, chromeFlags: CHROMIUM_ARGS, userDataDir: profile,
});
const results = [];
try {
  for (let run = 0; run < runs; ++run) {
    for (const page of pages) {
      const { lhr } = await lighthouse(`${base}${page}`, {
        port: chrome.port, onlyCategories: ['performance'], output: 'json', logLevel: 'error',
      });
      if (lhr.runtimeError) throw new Error(`bench_lighthouse: ${page}: ${lhr.runtimeError.code} ${lhr.runtimeError.message}`);
      const row = { page, run, score: Math.round(lhr.categories.performance.score * 100) };
      for (const [id, name] of Object.entries(METRICS)) row[name] = lhr.audits[id].numericValue;
      row.bytes = lhr.audits['total-byte-weight'].numericValue;
      row.longestTaskMs = Math.max(0, ...(lhr.audits['long-tasks']?.details?.items ?? []).map((t) => t.duration));
      results.push(row);
    }
  }
} finally {
  await chrome.kill();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}

console.log(`Lighthouse ${lighthouse.version ?? '12.2.3'} mobile preset (simulated throttling), performance only, median of ${runs} run(s):`);
console.log('| page | score | FCP (s) | LCP (s) | TBT (ms) | CLS | Speed Index (s) | longest task (ms, observed) | bytes (KB) |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const page of pages) {
  const mine = results.filter((r) => r.page === page);
  const m = (key) => median(mine.map((r) => r[key]));
  console.log(`| ${page} | ${m('score')} | ${(m('FCP') / 1000).toFixed(2)} | ${(m('LCP') / 1000).toFixed(2)} | ${Math.round(m('TBT'))} | ${m('CLS').toFixed(3)} | ${(m('SI') / 1000).toFixed(2)} | ${Math.round(m('longestTaskMs'))} | ${Math.round(m('bytes') / 1024)} |`);
}
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(results, null, 2)}\n`);
