// The project's engine against ONNX Runtime Web on the same weights, side by side in one
// headless Chromium page, interleaved; and the dense-layer products' GFLOP/s with the SIMD kernels
// and with Eigen, in the same page. A script, not a test: the machine is shared and noisy, and
// every figure is a median of interleaved repeats.
//
// For each n in LENGTHS (texts of exactly n tokens, distinct per repeat so that the engine's memo
// never answers), per repeat and in rotating order:
//   analyze   the engine's analyze(text) (web/engine/engine.js): tokenize, forward pass (its last
//             layer stops at its attention: nothing in the result reads what follows), row
//             statistics, head profiles, and the copies into JS; no rollout matrix
//   rollout row  one row of rollout as a reader's click asks for it (web/engine/result.js,
//             rolloutRow, from the result's attention)
//   core      the core's AnalyzeText alone, with the page's outputs (scripts/bench/kernel_bench.cc,
//             the same core sources built without the JS bindings)
//   forward   the core's whole forward pass alone, every layer to its output, on the same ids
//   ort       ONNX Runtime Web (wasm backend, 1 thread, SIMD) running an ONNX export of the model
//             (scripts/bench/export_onnx.py) on the same ids: all attention probabilities and the
//             last hidden state, copied out to JS
//   lenses    (n <= 128) the engine's lenses(text, {row}) as the row figures ask for them
//             (web/engine/engine.js, wasm/core/lenses.h): its own forward pass with the values
//             kept, then every lens but flow and value zeroing for the middle token's row (the
//             weights times vector sizes for every row); printed as a ratio to analyze
//   all rows  the same for every row (and ALTI's rollout), as the CLI and the set statistics
//             compute them
//   +flow     the same with attention flow's row for the middle token (n max-flow problems): the
//             flow row's cost is the difference
//   +zeroing  the same with value zeroing's row for the middle token in every layer: the
//             difference, per layer
// then a profile of the forward pass by operation (kernel_bench.cc, bench_profile).
//
// Usage: node scripts/bench/bench_ort.mjs [--label NAME] [--engine-dir DIR] [--core-dir DIR]
//          [--model FILE.attn] [--reps N] [--lengths 8,16,...] [--no-ort] [--relaxed]
//   --relaxed: the engine's relaxed-SIMD wasm (attention_engine.relaxed.wasm, f32x4.relaxed_madd
//     in the products; what Chromium runs), and kernel_bench built the same way; else the plain
//     SIMD128 build, which browsers without relaxed SIMD run
//   --engine-dir: a folder with attention_engine.{js,wasm} (default build/wasm), and engine.js +
//     result.js when the page's own (web/engine/) should not be used with it
//   --core-dir: the folder holding core/ that kernel_bench.cc is built against (default wasm/)
// "Before" figures: keep a copy of an older build/wasm and wasm/core (with web/engine/engine.js
// and result.js) in one folder and pass it as both --engine-dir and --core-dir.
// Writes build/bench/<label>.json. Needs: scripts/build.sh wasm, npm ci (onnxruntime-web,
// playwright-core), Debian's em++ and PyTorch (the export is made when missing).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve } from '../../tests/browser/harness.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const label = option('label', 'current');
const engineDir = resolve(option('engine-dir', join(root, 'build', 'wasm')));
const coreDir = resolve(option('core-dir', join(root, 'wasm')));
const modelPath = resolve(option('model', join(root, 'model_data', 'explainer-mini.compact.attn')));
const REPS = Number(option('reps', 20));
const LENGTHS = option('lengths', '8,16,32,64,128,256,512').split(',').map(Number);
const withOrt = !args.includes('--no-ort');
const relaxed = args.includes('--relaxed');
const DENSE_SHAPES = [[16, 256, 256], [16, 256, 1024], [16, 1024, 256], [128, 256, 256], [128, 256, 1024], [128, 1024, 256]];
const benchDir = join(root, 'build', 'bench');
for (const path of [engineDir, coreDir, modelPath]) {
  if (!existsSync(path)) throw new Error(`bench_ort: ${path} is missing (scripts/build.sh wasm builds build/wasm)`);
}
if (![engineDir, coreDir, modelPath, benchDir].every((p) => !relative(root, p).startsWith('..'))) {
  throw new Error('bench_ort: the engine, core and model must lie inside the repository (the page serves it)');
}
mkdirSync(benchDir, { recursive: true });

const newest = (paths) => Math.max(...paths.map((p) => statSync(p).mtimeMs));

// The benchmark module: kernel_bench.cc with the core sources of coreDir, built like the wasm
// preset (-O3 -msimd128), rebuilt when a source is newer than it.
function buildBenchModule() {
  const out = join(benchDir, label, relaxed ? 'kernel_bench_relaxed.mjs' : 'kernel_bench.mjs');
  const core = join(coreDir, 'core');
  const sources = [...readdirSync(core).filter((f) => f.endsWith('.cc')).map((f) => join(core, f)), join(root, 'scripts', 'bench', 'kernel_bench.cc')];
  const headers = readdirSync(core).filter((f) => f.endsWith('.h')).map((f) => join(core, f));
  if (existsSync(out) && statSync(out).mtimeMs > newest([...sources, ...headers])) return out;
  mkdirSync(dirname(out), { recursive: true });
  const exported = ['_malloc', '_free', '_bench_load', '_bench_load_ms', '_bench_has_kernels', '_bench_packed_bytes', '_bench_pack_ms', '_bench_analyze', '_bench_forward', '_bench_dense', '_bench_profile', '_bench_analysis_profile'];
  console.log(`# building ${relative(root, out)} from ${relative(root, core)} (em++ -O3 -msimd128)`);
  execFileSync('em++', ['-std=c++17', '-O3', '-msimd128', ...(relaxed ? ['-mrelaxed-simd'] : []), '-DNDEBUG', `-I${coreDir}`, '-I/usr/include/eigen3', ...sources, '-o', out,
    '-sMODULARIZE=1', '-sEXPORT_ES6=1', '-sEXPORT_NAME=createBench', '-sALLOW_MEMORY_GROWTH=1', '-sFILESYSTEM=0', '-sENVIRONMENT=web',
    '-sINITIAL_MEMORY=67108864', `-sEXPORTED_FUNCTIONS=${exported.join(',')}`, '-sEXPORTED_RUNTIME_METHODS=HEAPU8,HEAPF64,stringToUTF8,lengthBytesUTF8'],
  { stdio: 'inherit', env: { ...process.env, NODE_PATH: `/usr/share/nodejs${process.env.NODE_PATH ? `:${process.env.NODE_PATH}` : ''}` } });
  if (relaxed) {
    // The prototype opcodes clang 14 emits, rewritten (scripts/wasm/relaxed_madd.mjs).
    const wasm = out.replace(/\.mjs$/, '.wasm');
    copyFileSync(wasm, `${wasm}.prototype`);
    execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', join(root, 'scripts', 'wasm', 'relaxed_madd.mjs'), `${wasm}.prototype`, wasm], { stdio: 'inherit' });
  }
  return out;
}

function onnxExport() {
  const out = join(benchDir, `${modelPath.split('/').pop().replace(/\.attn$/, '')}.onnx`);
  if (existsSync(out) && statSync(out).mtimeMs > statSync(modelPath).mtimeMs) return out;
  console.log(`# exporting ${relative(root, out)} with Debian's PyTorch`);
  execFileSync('/usr/bin/python3', ['-m', 'scripts.bench.export_onnx', modelPath, out], { cwd: root, stdio: 'inherit', env: { ...process.env, PYTHONPATH: root } });
  return out;
}

// Runs in the page. Every URL is relative to the served repository root.
async function pageMain({ engineJs, resultJs, engineUrl, modelUrl, benchUrl, onnxUrl, lengths, reps, denseShapes, withOrt, relaxed }) {
  const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'red', 'big', 'old', 'man', 'saw'];
  // [CLS], n - 2 one-piece words, [SEP]; distinct per variant.
  const text = (n, variant) => {
    const words = [];
    for (let i = 0; i < n - 2; ++i) words.push(WORDS[(i * 7 + variant * 13 + ((i * variant) % 5)) % WORDS.length]);
    return words.join(' ');
  };
  const median = (v) => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)];

  const { createEngine } = await import(engineJs);
  const { rolloutRow } = await import(resultJs);
  const engine = await createEngine({ engineUrl: new URL(engineUrl, location.href).href, modelUrl: new URL(modelUrl, location.href).href, simd: relaxed ? 'relaxed' : 'plain' });
  const modelBytes = new Uint8Array(await (await fetch(modelUrl)).arrayBuffer());
  const bench = await (await import(benchUrl)).default({ print: () => {}, printErr: (m) => console.log(m) });
  const at = bench._malloc(modelBytes.length);
  bench.HEAPU8.set(modelBytes, at);
  if (bench._bench_load(at, modelBytes.length) !== 0) throw new Error('kernel_bench could not load the model');
  bench._free(at);
  const textAt = bench._malloc(1 << 16);
  const coreAnalyze = (s) => {
    bench.stringToUTF8(s, textAt, 1 << 16);
    return bench._bench_analyze(textAt);
  };

  let ort = null;
  let session = null;
  if (withOrt) {
    ort = await import('/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs');
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.simd = true;
    ort.env.wasm.proxy = false;
    ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
    session = await ort.InferenceSession.create(onnxUrl, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  }
  const ortRun = async (ids) => {
    const input = new ort.Tensor('int64', BigInt64Array.from(ids, (id) => BigInt(id)), [1, ids.length]);
    const outputs = await session.run({ input_ids: input });
    for (const name of Object.keys(outputs)) outputs[name].getData();  // in JS memory, as the engine's copies
    return outputs;
  };

  const rows = [];
  for (const n of lengths) {
    const times = { analyze: [], rolloutRow: [], core: [], forward: [], ort: [], lenses: [], allRows: [], flow: [], zeroing: [] };
    const lensesToo = n <= 128;
    const middle = Math.floor(n / 2);
    let agreement = null;
    for (let r = 0; r < reps + 2; ++r) {
      const s = text(n, r + 1000 * n);
      const result = engine.analyze(s);
      if (result.n !== n) throw new Error(`bench text gave ${result.n} tokens, wanted ${n}`);
      const ids = result.tokens.map((t) => t.id);
      // The four measurements in rotating order; the analysis above only made the ids.
      const s2 = text(n, r + 1000 * n + 500);
      const steps = [
        ['analyze', () => engine.analyze(s2)],
        // The rollout row a reader's click asks for, made from a copy of the result (the row is
        // kept with the result it was made for): 0 where the result holds the whole matrix.
        ['rolloutRow', () => rolloutRow({ ...result }, middle)],
        ['core', () => coreAnalyze(s)],
        ['forward', () => bench._bench_forward()],
        ...(withOrt ? [['ort', () => ortRun(ids)]] : []),
        ...(lensesToo ? [
          ['lenses', () => engine.lenses(s2, { row: middle })],
          ['allRows', () => engine.lenses(s2)],
          ['flow', () => engine.lenses(s2, { row: middle, flowRow: middle })],
          ['zeroing', () => engine.lenses(s2, { row: middle, zeroingRow: middle })],
        ] : []),
      ];
      for (let k = 0; k < steps.length; ++k) {
        const [name, run] = steps[(k + r) % steps.length];
        if (name === 'forward') coreAnalyze(s);  // the forward pass reruns the last analysis's ids
        const t0 = performance.now();
        const value = await run();
        const t1 = performance.now();
        if (r >= 2) times[name].push(t1 - t0);
        if (name === 'ort' && agreement === null) {
          let largest = 0;
          for (let l = 0; l < result.layers; ++l) {
            const ortAttention = value[`attention_${l}`].data;
            const base = l * result.heads * n * n;
            for (let i = 0; i < result.heads * n * n; ++i) largest = Math.max(largest, Math.abs(ortAttention[i] - result.attention[base + i]));
          }
          agreement = largest;
        }
      }
    }
    const lensMedians = lensesToo ? { lenses: median(times.lenses), lenses_all_rows: median(times.allRows), lenses_flow: median(times.flow), lenses_zeroing: median(times.zeroing) } : { lenses: null, lenses_all_rows: null, lenses_flow: null, lenses_zeroing: null };
    rows.push({ n, layers: engine.info.layers ?? 4, analyze: median(times.analyze), rollout_row: median(times.rolloutRow), core: median(times.core), forward: median(times.forward), ort: withOrt ? median(times.ort) : null, attention_vs_ort: agreement, ...lensMedians });
  }

  const profileAt = bench._malloc(8 * 10);
  const profiles = [];
  for (const n of [16, 128, 512].filter((m) => lengths.includes(m))) {
    coreAnalyze(text(n, 7));
    bench._bench_profile(n <= 16 ? 200 : n <= 128 ? 20 : 4, profileAt);
    const ms = Array.from(bench.HEAPF64.subarray(profileAt / 8, profileAt / 8 + 10));
    bench._bench_analysis_profile(n <= 16 ? 200 : n <= 128 ? 20 : 4, profileAt);
    profiles.push({ n, ms, analysis: Array.from(bench.HEAPF64.subarray(profileAt / 8, profileAt / 8 + 5)) });
  }
  const dense = [];
  for (const [n, K, N] of denseShapes) {
    const flops = 2 * n * K * N;
    const kernel = bench._bench_dense(0, n, K, N, 9);
    const eigen = bench._bench_dense(1, n, K, N, 9);
    dense.push({ n, K, N, kernel_gflops: kernel > 0 ? flops / kernel / 1e6 : null, eigen_gflops: flops / eigen / 1e6 });
  }
  return {
    rows, profiles, dense, userAgent: navigator.userAgent, ortVersion: ort?.env?.versions?.common ?? null,
    hasKernels: bench._bench_has_kernels() === 1, packedBytes: bench._bench_packed_bytes(), packMs: bench._bench_pack_ms(),
    loadMs: bench._bench_load_ms(), engineTimings: engine.timings,
  };
}

const benchModule = buildBenchModule();
const onnx = withOrt ? onnxExport() : null;
const server = await serve(root);
const port = server.server.address().port;
const browser = await launchChromium();
let report;
try {
  const page = await browser.newPage();
  page.on('console', (message) => console.log(`# page: ${message.text()}`));
  page.on('response', (response) => { if (response.status() >= 400) console.log(`# page: ${response.status()} ${response.url()}`); });
  await page.goto(`http://127.0.0.1:${port}/web/engine/result.js`);
  const url = (path) => `/${relative(root, path)}`;
  const engineJs = existsSync(join(engineDir, 'engine.js')) ? url(join(engineDir, 'engine.js')) : '/web/engine/engine.js';
  const resultJs = existsSync(join(engineDir, 'result.js')) ? url(join(engineDir, 'result.js')) : '/web/engine/result.js';
  report = await page.evaluate(pageMain, {
    engineJs, resultJs, engineUrl: `${url(engineDir)}/`, modelUrl: url(modelPath), benchUrl: url(benchModule), onnxUrl: onnx && url(onnx),
    lengths: LENGTHS, reps: REPS, denseShapes: DENSE_SHAPES, withOrt, relaxed,
  });
} finally {
  await browser.close();
  server.close();
}

const fixed = (v, digits = 2) => (v === null || v === undefined ? 'n/a' : v.toFixed(digits));
console.log(`\n${label}: ${relative(root, modelPath)}, ${report.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? 'Chromium'}, ONNX Runtime Web ${report.ortVersion ?? 'n/a'}, kernels ${report.hasKernels ? (relaxed ? 'relaxed SIMD' : 'SIMD128') : 'Eigen'}, medians of ${REPS} interleaved repeats (host shared)`);
console.log('analyze: what the page waits for (no rollout matrix; the last layer stops at its attention); rollout row: one row made on a click (web/engine/result.js);');
console.log('core: AnalyzeText as the page runs it, without the bindings; forward: the whole forward pass, every layer to its output');
console.log('    n | analyze ms | rollout row ms | core ms | forward ms |  ORT ms | analyze/ORT | forward/ORT | max |attn - ORT|');
console.log('------|------------|----------------|---------|------------|---------|-------------|-------------|-----------------');
for (const r of report.rows) {
  console.log(`${String(r.n).padStart(5)} | ${fixed(r.analyze).padStart(10)} | ${fixed(r.rollout_row).padStart(14)} | ${fixed(r.core).padStart(7)} | ${fixed(r.forward).padStart(10)} | ${fixed(r.ort).padStart(7)} | ${(r.ort ? fixed(r.analyze / r.ort) : 'n/a').padStart(11)} | ${(r.ort ? fixed(r.forward / r.ort) : 'n/a').padStart(11)} | ${r.attention_vs_ort === null ? 'n/a' : r.attention_vs_ort.toExponential(2)}`);
}
console.log(`\nlenses (wasm/core/lenses.h) in the same page, medians of the same repeats; flow: one row (n max-flow problems), zeroing: one row in each of ${report.rows[0]?.layers ?? 'the'} layers, both as the difference to lenses alone:`);
console.log('    n | analyze ms | lenses ms (one row) | lenses/analyze | all rows ms | all rows/analyze | flow row ms | zeroing ms (all layers) | zeroing ms per layer');
for (const r of report.rows.filter((x) => x.lenses !== null)) {
  const zeroing = r.lenses_zeroing - r.lenses;
  console.log(`${String(r.n).padStart(5)} | ${fixed(r.analyze).padStart(10)} | ${fixed(r.lenses).padStart(19)} | ${fixed(r.lenses / r.analyze).padStart(14)} | ${fixed(r.lenses_all_rows).padStart(11)} | ${fixed(r.lenses_all_rows / r.analyze).padStart(16)} | ${fixed(r.lenses_flow - r.lenses).padStart(11)} | ${fixed(zeroing).padStart(23)} | ${fixed(zeroing / r.layers)}`);
}
const STAGES = ['QKV', 'attn out', 'intermediate+GELU', 'output', 'scores+context', 'softmax', '2x add+LayerNorm', '(GELU alone)', 'forward', 'AnalyzeText'];
console.log('\nforward pass by operation, ms per forward (all layers; loops inside wasm):');
console.log(`    n | ${STAGES.join(' | ')}`);
for (const p of report.profiles) console.log(`${String(p.n).padStart(5)} | ${p.ms.map((v, i) => fixed(v, 3).padStart(STAGES[i].length)).join(' | ')}`);
const PARTS = ['rollout', 'its products', 'row stats', '(re-read from rows)', 'head profiles'];
console.log('\nanalysis beyond the forward pass, ms per analysis (row stats as AnalyzeText takes them, from the softmax; re-read: a log per weight, for reference):');
console.log(`    n | ${PARTS.join(' | ')}`);
for (const p of report.profiles) console.log(`${String(p.n).padStart(5)} | ${p.analysis.map((v, i) => fixed(v, 3).padStart(PARTS[i].length)).join(' | ')}`);
console.log('\ndense layer y = x W^T + b, GFLOP/s (median of 9 rounds):');
console.log('    n |    K |    N | SIMD kernel | Eigen');
for (const d of report.dense) console.log(`${String(d.n).padStart(5)} | ${String(d.K).padStart(4)} | ${String(d.N).padStart(4)} | ${fixed(d.kernel_gflops, 1).padStart(11)} | ${fixed(d.eigen_gflops, 1)}`);
console.log(`\npacked weights: ${(report.packedBytes / 2 ** 20).toFixed(2)} MiB beyond the model, packed in ${report.packMs.toFixed(1)} ms; model load in kernel_bench ${report.loadMs.toFixed(0)} ms`);
writeFileSync(join(benchDir, `${label}.json`), `${JSON.stringify({ label, model: relative(root, modelPath), reps: REPS, ...report }, null, 1)}\n`);
console.log(`wrote ${relative(root, join(benchDir, `${label}.json`))}`);
