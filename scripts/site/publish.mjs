// Writes exactly the files a static host needs to serve the embeddable figures into one folder,
// laid out as web/ is (the bundle finds the engine and the models from its own URL), and prints
// what each reader downloads. Run after node scripts/site/build_site.mjs.
// Usage: node scripts/site/publish.mjs --out DIR [--precision]
//   --precision  also the f32 reference and the naive file, for <attention-precision> (57 MB more)
// The folder holds: dist/attention-widgets.js; engine/ attention_engine.js, attention_engine.wasm,
// worker.js, engine.js, result.js; models/manifest.json (only the models published), the
// default model's core file and its .rows/ shard folder; embed.html and embed-frame.js (the
// iframe form). README.md, "Embedding a figure in another site", says what headers to send.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');

export const BASE_FILES = Object.freeze([
  'dist/attention-widgets.js',
  'engine/attention_engine.js',
  'engine/attention_engine.wasm',
  'engine/worker.js',
  'engine/engine.js',
  'engine/result.js',
]);
export const FRAME_FILES = Object.freeze(['embed.html', 'embed-frame.js']);

const mb = (bytes) => `${(bytes / 1e6).toFixed(bytes < 1e6 ? 3 : 1)} MB`;

// Copies the files into `out` (emptied first) and returns
// {files: [{path, bytes, when}], manifest}; when: 'first' (every reader, first view), 'shards'
// (rows fetched as sentences need them), 'frame' (the iframe form only), 'precision'.
export function publish({ out, precision = false, quiet = false } = {}) {
  if (!out) throw new Error('publish: --out DIR is required');
  out = resolve(out);
  if (out === web || out === root) throw new Error(`publish: refusing to write into ${out}`);
  const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  const chosen = manifest.models[manifest.default];
  if (!chosen) throw new Error(`publish: the manifest's default model ${manifest.default} has no entry`);
  const files = [];
  const add = (path, when) => {
    const from = join(web, path);
    if (!existsSync(from)) throw new Error(`publish: web/${path} is missing; run node scripts/site/build_site.mjs first`);
    files.push({ path, bytes: statSync(from).size, when });
  };
  for (const path of BASE_FILES) add(path, 'first');
  const models = { [manifest.default]: chosen };
  if (chosen.core && chosen.shards) {
    add(`models/${chosen.core.file}`, 'first');
    const folder = `models/${chosen.shards.folder}`;
    const preload = new Set(chosen.shards.preload ?? []);
    for (const name of readdirSync(join(web, folder)).filter((f) => f.endsWith('.bin')).sort()) {
      add(folder + name, preload.has(Number(name.slice(0, -4))) ? 'first' : 'shards');
    }
  } else {
    add(`models/${chosen.file}`, 'first');
  }
  if (precision) {
    const p = manifest.precision;
    if (!p) throw new Error('publish: the manifest names no precision files (build_site.mjs writes them when model_data/ has the f32 reference)');
    for (const key of ['reference', 'naive']) {
      models[p[key]] = manifest.models[p[key]];
      add(`models/${models[p[key]].file}`, 'precision');
    }
    models[p.shipped] ??= manifest.models[p.shipped];
  }
  for (const path of FRAME_FILES) add(path, 'frame');
  const published = { ...manifest, models };
  if (!precision) delete published.precision;

  rmSync(out, { recursive: true, force: true });
  for (const { path } of files) {
    mkdirSync(dirname(join(out, path)), { recursive: true });
    copyFileSync(join(web, path), join(out, path));
  }
  const manifestText = JSON.stringify(published, null, 2) + '\n';
  writeFileSync(join(out, 'models', 'manifest.json'), manifestText);
  files.push({ path: 'models/manifest.json', bytes: Buffer.byteLength(manifestText), when: 'first' });

  if (!quiet) {
    const sum = (when) => files.filter((f) => f.when === when).reduce((a, f) => a + f.bytes, 0);
    const shown = files.filter((f) => !/\.rows\/\d+\.bin$/.test(f.path));
    console.log(`publish: ${files.length} files, ${mb(files.reduce((a, f) => a + f.bytes, 0))}, in ${relative(process.cwd(), out) || '.'}/`);
    for (const f of shown) console.log(`  ${f.path.padEnd(40)} ${mb(f.bytes).padStart(9)}  ${f.when}`);
    const shards = files.filter((f) => f.when !== 'first' && /\.bin$/.test(f.path));
    if (chosen.shards) console.log(`  models/${chosen.shards.folder}*.bin ${String(files.length - shown.length).padStart(4)} shards ${mb(files.filter((f) => /\.bin$/.test(f.path)).reduce((a, f) => a + f.bytes, 0))} (${files.length - shown.length - shards.length} with the first view)`);
    console.log(`A reader's first view: ${mb(sum('first'))} (bundle, engine, manifest, model core and the opening sentence's shards);`);
    console.log(`  each new sentence then fetches the shards of its words (about 15 kB each, ${mb(sum('shards'))} in all).`);
    console.log('Later visits: the wasm, the model core and the shards come from the browser\'s Cache API (keyed by their sha256);');
    console.log('  only the bundle, the engine\'s scripts and the manifest are asked for again (HTTP caching decides).');
    console.log(`The iframe form adds embed.html and embed-frame.js (${mb(sum('frame'))}).`);
    if (precision) console.log(`<attention-precision> downloads ${mb(sum('precision'))} more when the reader presses its button.`);
  }
  return { files, manifest: published };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let out = null;
  let precision = false;
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--out') out = args[++i];
    else if (args[i] === '--precision') precision = true;
    else {
      console.error(`publish: unknown argument ${args[i]}\nUsage: node scripts/site/publish.mjs --out DIR [--precision]`);
      process.exit(2);
    }
  }
  try {
    publish({ out, precision });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
