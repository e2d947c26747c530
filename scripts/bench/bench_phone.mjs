// The phone budget in one run (issue 60): the article's first visit on bench_page.mjs's phone
// (time to live, the longest main-thread task until then), the main thread after typing a
// 30-word sentence and after taps (every task within 100 ms?), each as the median and range of
// interleaved runs against a second assembled site (the previous landed tree's), and the full
// analysis against ONNX Runtime Web's forward pass with both wasm builds (plain SIMD128, which
// Firefox and Safari run, and relaxed SIMD, which Chromium runs). It runs bench_load.mjs,
// bench_interaction.mjs and bench_ort.mjs one after another (never two at once: 2 cores) and
// prints their figures side by side at the end; each one's own output goes to the console as it
// runs.
// A benchmark, not a test: the host's other load moves every time; the interleaving makes the two
// sites share it.
// The site to compare with: a copy of web/ as an earlier build left it, e.g. from a checkout of the
// landed tree (git worktree add ../landed main; there scripts/run.sh's build steps, or copy the
// built web/ before changing anything).
// Usage: node scripts/bench/bench_phone.mjs [--against DIR] [--runs 5] [--words 30] [--no-ort]
//          [--lengths 8,16,32,64,128,256,512]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { median } from './bench_page.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const against = option('--against', null);
const runs = option('--runs', '5');
const words = option('--words', '30');
const lengths = option('--lengths', '8,16,32,64,128,256,512');
const BUDGET_MS = 100;
const scratch = mkdtempSync(join(tmpdir(), 'bench-phone-'));

function run(script, extra) {
  console.log(`\n# node scripts/bench/${script} ${extra.join(' ')}`);
  const done = spawnSync(process.execPath, [join(root, 'scripts', 'bench', script), ...extra], { stdio: 'inherit', cwd: root });
  if (done.status !== 0) throw new Error(`${script} failed (exit ${done.status})`);
}
const compare = against ? ['--against', against] : [];

try {
  run('bench_load.mjs', ['--phone', '--runs', runs, '--layouts', 'split', '--json', join(scratch, 'load.json'), ...compare]);
  run('bench_interaction.mjs', ['--phone', '--runs', runs, '--words', words, '--json', join(scratch, 'interaction.json'), ...compare]);
  const builds = args.includes('--no-ort') ? [] : [['plain', []], ['relaxed', ['--relaxed']]];
  for (const [name, flag] of builds) run('bench_ort.mjs', ['--label', `phone-${name}`, '--lengths', lengths, '--reps', '5', ...flag]);

  const spread = (values, scale = 1, digits = 0) => `${(median(values) / scale).toFixed(digits)} (${(Math.min(...values) / scale).toFixed(digits)}\u2013${(Math.max(...values) / scale).toFixed(digits)})`;
  const sites = against ? ['this tree', 'against'] : [''];
  const siteName = (site) => (site === 'against' ? against : site || 'this tree');
  console.log(`\n## The phone budget: ${runs} interleaved runs a site, median (range)`);
  const load = JSON.parse(readFileSync(join(scratch, 'load.json'), 'utf8'));
  console.log('| site | time to live (s; budget 4) | longest task until live (ms) |');
  console.log('|---|---|---|');
  for (const site of sites) {
    const mine = load.filter((r) => r.site === site);
    console.log(`| ${siteName(site)} | ${spread(mine.map((r) => r.liveMs), 1000, 2)} | ${spread(mine.map((r) => r.longestTaskMs))} |`);
  }
  const interaction = JSON.parse(readFileSync(join(scratch, 'interaction.json'), 'utf8'));
  const phases = Object.keys(interaction[0].interaction.phases);
  console.log(`\nlongest main-thread task after input (ms; budget ${BUDGET_MS}), a ${words}-word sentence; runs with every task within budget`);
  console.log(`| site | ${phases.join(' | ')} |`);
  console.log(`|---|${phases.map(() => '---').join('|')}|`);
  for (const site of (against ? ['this', 'against'] : [null])) {
    const mine = interaction.filter((r) => r.site === site);
    const cells = phases.map((phase) => {
      const longest = mine.map((r) => r.interaction.phases[phase].longestMs ?? 0);
      return `${spread(longest)}; ${longest.filter((v) => v <= BUDGET_MS).length} of ${longest.length}`;
    });
    console.log(`| ${site === 'against' ? against : 'this tree'} | ${cells.join(' | ')} |`);
  }
  if (builds.length) {
    console.log('\nthe full analysis over ONNX Runtime Web\u2019s forward pass (budget 0.8), medians of 5 interleaved repeats:');
    const reports = builds.map(([name]) => [name, JSON.parse(readFileSync(join(root, 'build', 'bench', `phone-${name}.json`), 'utf8'))]);
    const ns = reports[0][1].rows.map((r) => r.n);
    console.log(`| build | ${ns.map((n) => `n = ${n}`).join(' | ')} |`);
    console.log(`|---|${ns.map(() => '---').join('|')}|`);
    for (const [name, report] of reports) console.log(`| ${name} | ${report.rows.map((r) => (r.analyze / r.ort).toFixed(2)).join(' | ')} |`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
