// Memory of the wasm engine in headless Chromium over many analyses: the wasm heap (the core's
// memoryInfo: bytes malloc holds, and the wasm memory's size, which only grows), the engine's
// analysis memo (bounded in bytes, web/engine/engine.js) and the page's JS memory after a forced
// garbage collection, through the DevTools protocol: the JS heap's objects and, apart, the
// ArrayBuffer backing stores (the results' typed arrays live there; the wasm memory is not
// counted in them). Before and after COUNT analyses of distinct texts of random lengths 2..512
// tokens, with the largest JS total seen on the way.
// Usage: node scripts/bench/bench_memory.mjs [--count N] [--model KEY] [--web DIR]
// Needs: scripts/build.sh wasm && node scripts/site/build_site.mjs
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve } from '../../tests/browser/harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const options = { count: 1000, model: null, web: join(root, 'web') };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; ++i) {
  const key = { '--count': 'count', '--model': 'model', '--web': 'web' }[args[i]];
  if (!key || i + 1 >= args.length) {
    console.error(`bench_memory: unknown or incomplete argument ${args[i]}`);
    process.exit(2);
  }
  options[key] = key === 'count' ? Number(args[++i]) : key === 'web' ? resolve(args[++i]) : args[++i];
}
if (!existsSync(join(options.web, 'models', 'manifest.json'))) {
  console.error(`bench_memory: ${join(options.web, 'models', 'manifest.json')} is missing; run scripts/build.sh wasm && node scripts/site/build_site.mjs`);
  process.exit(1);
}
const BATCH = 100;
const mb = (bytes) => (bytes === undefined ? '-' : (bytes / 1048576).toFixed(1));

const server = await serve(options.web);
const port = server.server.address().port;
const browser = await launchChromium(['--enable-precise-memory-info']);
try {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('HeapProfiler.enable');
  await page.goto(`http://127.0.0.1:${port}/engine/engine.js`);
  const model = await page.evaluate(async (key) => {
    const { createEngine } = await import('/engine/engine.js');
    window.__engine = await createEngine({ manifestUrl: '/models/manifest.json', model: key ?? undefined });
    return window.__engine.info.name;
  }, options.model);

  const measure = async () => {
    await cdp.send('HeapProfiler.collectGarbage');
    const { usedSize, backingStorageSize } = await cdp.send('Runtime.getHeapUsage');
    const engine = await page.evaluate(() => window.__engine.memoryInfo());
    return { js: usedSize, buffers: backingStorageSize, total: usedSize + backingStorageSize, ...engine };
  };

  // Texts of exactly n positions: [CLS], n - 2 one-piece words, [SEP]; every text distinct.
  const analyse = (from, to) => page.evaluate(({ from, to }) => {
    const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'red', 'big', 'old', 'man', 'saw'];
    let seed = 20261201 + from;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    let tokens = 0;
    const t0 = performance.now();
    for (let k = from; k < to; ++k) {
      const n = 2 + Math.floor(random() * 511);
      const words = [];
      while (words.length < n - 2) words.push(WORDS[Math.floor(random() * WORDS.length)]);
      // k trailing spaces: the tokens stay the same, the memo sees a new text.
      const result = window.__engine.analyze(words.join(' ') + ' '.repeat(k));
      tokens += result.n;
    }
    return { tokens, ms: performance.now() - t0 };
  }, { from, to });

  const before = await measure();
  let peak = before.total;
  let tokens = 0;
  let ms = 0;
  for (let from = 0; from < options.count; from += BATCH) {
    const run = await analyse(from, Math.min(options.count, from + BATCH));
    tokens += run.tokens;
    ms += run.ms;
    peak = Math.max(peak, (await measure()).total);
  }
  const after = await measure();

  console.log(`model: ${model}; ${options.count} analyses, ${tokens} tokens in all (mean ${(tokens / options.count).toFixed(0)}), ${(ms / 1000).toFixed(1)} s`);
  console.log('MiB                        | before | after');
  console.log('---------------------------|--------|-------');
  const row = (label, key) => console.log(`${label.padEnd(27)}| ${mb(before[key]).padStart(6)} | ${mb(after[key]).padStart(6)}`);
  row('wasm memory (heap_bytes)', 'heap_bytes');
  row('wasm malloc (allocated)', 'allocated_bytes');
  row('engine memo (memo_bytes)', 'memo_bytes');
  row('JS heap objects', 'js');
  row('JS ArrayBuffers', 'buffers');
  row('JS total', 'total');
  console.log(`largest JS total, every ${BATCH} analyses: ${mb(peak)} MiB; memo entries after: ${after.memo_entries ?? '-'}`);
} finally {
  await browser.close();
  server.close();
}
