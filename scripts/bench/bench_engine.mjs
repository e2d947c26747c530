// Speed of one analysis (tokenize, forward pass, row statistics, rollout, head profiles) for
// 8 to 128 tokens: the native core (attention-cli bench), the wasm engine in Node and the wasm
// engine in headless Chromium, side by side in one run, with the wasm/native ratio; then the
// time from page load to engine ready in Chromium, split into fetch, compile and model parse.
// The machine is shared and noisy: every figure is a median over repeats, measured in one run.
// Usage: node scripts/bench/bench_engine.mjs [MODEL.attn]   (default: the site's default model)
// Needs: scripts/build.sh native wasm && node scripts/site/build_site.mjs
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { launchChromium, serve } from '../../tests/browser/harness.mjs';
import { createEngine } from '../../web/engine/engine.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LENGTHS = [8, 16, 32, 64, 128];
const siteManifest = join(root, 'web', 'models', 'manifest.json');
if (!existsSync(siteManifest)) {
  console.error('bench_engine: web/models/manifest.json is missing; run scripts/build.sh native wasm && node scripts/site/build_site.mjs');
  process.exit(1);
}
const site = JSON.parse(readFileSync(siteManifest, 'utf8'));
const modelPath = process.argv[2] ? resolve(process.argv[2]) : join(root, 'web', 'models', site.models[site.default].file);

// Texts of exactly n positions: [CLS], n - 2 one-piece words, [SEP]. Distinct texts of the
// same length defeat the engine's per-sentence memo.
const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'red', 'big', 'old', 'man', 'saw'];
function text(n, variant) {
  const words = [];
  for (let i = 0; i < n - 2; ++i) words.push(WORDS[(i * 7 + variant * 13 + ((i * variant) % 5)) % WORDS.length]);
  return words.join(' ');
}
const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
const repeatsFor = (n) => (n <= 32 ? 30 : n <= 64 ? 15 : 8);

function nativeFigures() {
  const out = execFileSync(join(root, 'build', 'native', 'attention-cli'), ['bench', '--model', modelPath]).toString();
  const figures = {};
  for (const line of out.split('\n')) {
    const cells = line.trim().split(/\s+/).map(Number);
    if (cells.length >= 4 && LENGTHS.includes(cells[0])) figures[cells[0]] = cells[3];  // forward + analysis ms
  }
  return figures;
}

async function nodeFigures() {
  const dir = mkdtempSync(join(tmpdir(), 'attn-bench-'));
  const wasmDir = join(root, 'web', 'engine');
  const manifest = {
    default: 'm',
    models: { m: { file: pathToFileURL(modelPath).href, bytes: 0, sha256: '' } },
    engine: { glue: pathToFileURL(join(wasmDir, 'attention_engine.js')).href, wasm: pathToFileURL(join(wasmDir, 'attention_engine.wasm')).href, bytes: 0, sha256: '' },
  };
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  const engine = await createEngine({ manifestUrl: pathToFileURL(join(dir, 'manifest.json')).href });
  const figures = {};
  for (const n of LENGTHS) {
    const times = [];
    for (let r = 0; r < repeatsFor(n) + 2; ++r) {
      const t0 = performance.now();
      const result = engine.analyze(text(n, r));
      const t1 = performance.now();
      if (result.n !== n) throw new Error(`bench text gave ${result.n} tokens, wanted ${n}`);
      if (r >= 2) times.push(t1 - t0);  // the first two warm the buffers
    }
    figures[n] = median(times);
  }
  return figures;
}

async function chromiumFigures() {
  const server = await serve(join(root, 'web'));
  const port = server.server.address().port;
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/engine/engine.js`);
    const modelUrl = process.argv[2] ? null : `/models/${site.models[site.default].file}`;
    if (!modelUrl) console.log('# Chromium runs the site default model; pass no argument to compare the same model everywhere.');
    return await page.evaluate(async ({ lengths, repeats, words, textSource }) => {
      const text = new Function('WORDS', `return ${textSource}`)(words);
      const median = (v) => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)];
      const start = performance.now();  // milliseconds since this document's navigation start
      const { createEngine } = await import('/engine/engine.js');
      const engine = await createEngine({ manifestUrl: '/models/manifest.json' });
      const ready = performance.now();
      const figures = {};
      for (const n of lengths) {
        const times = [];
        for (let r = 0; r < repeats[n] + 2; ++r) {
          const t0 = performance.now();
          engine.analyze(text(n, r));
          if (r >= 2) times.push(performance.now() - t0);
        }
        figures[n] = median(times);
      }
      return { figures, load: { ...engine.timings, sinceNavigationMs: ready, moduleImportMs: ready - start - engine.timings.totalMs } };
    }, { lengths: LENGTHS, repeats: Object.fromEntries(LENGTHS.map((n) => [n, repeatsFor(n)])), words: WORDS, textSource: text.toString() });
  } finally {
    await browser.close();
    server.close();
  }
}

const native = nativeFigures();
const node = await nodeFigures();
let chromium = null;
try {
  chromium = await chromiumFigures();
} catch (error) {
  console.log(`# Chromium run failed: ${error.message}`);
}
console.log(`model: ${modelPath}`);
console.log('tokens | native ms | wasm Node ms | wasm Chromium ms | Node/native | Chromium/native');
console.log('-------|-----------|--------------|------------------|-------------|----------------');
for (const n of LENGTHS) {
  const c = chromium?.figures[n];
  console.log(`${String(n).padStart(6)} | ${native[n].toFixed(3).padStart(9)} | ${node[n].toFixed(3).padStart(12)} | ${(c === undefined ? 'n/a' : c.toFixed(3)).padStart(16)} | ${(node[n] / native[n]).toFixed(1).padStart(11)} | ${(c === undefined ? 'n/a' : (c / native[n]).toFixed(1)).padStart(15)}`);
}
if (chromium) {
  const l = chromium.load;
  console.log(`\nChromium, page load to engine ready: ${l.sinceNavigationMs.toFixed(0)} ms after navigation start; ` +
    `fetch ${l.fetchMs.toFixed(0)} ms (${l.wasmBytes} wasm + ${l.modelBytes} model bytes, localhost), compile ${l.compileMs.toFixed(0)} ms, model parse ${l.parseMs.toFixed(0)} ms`);
}
