// Writes exactly the files a static host needs to serve the embeddable figures into one folder,
// laid out as web/ is (the bundle finds the engine and the models from its own URL), and prints
// what each reader downloads. Run after node scripts/site/build_site.mjs.
// Usage: node scripts/site/publish.mjs --out DIR [--precision] [--site]
//   --precision  also the f32 reference and the naive file, for <attention-precision> (57 MB more)
//   --site       also the article and the series' posts: the pages and every file they load (the
//                manifest's site list: the pages' minified bundles in app/, the engine's modules,
//                styles, the precomputed examples, the set statistics), the set statistics' words
//                and the lenses post's per-target file (downloads on request) and the service worker that keeps them for reading offline
// The folder holds: dist/attention-widgets.js and dist/attention-reserves.css; engine/ attention_engine.js, attention_engine.wasm,
// attention_engine.relaxed.wasm (for browsers with relaxed SIMD)
// and the worker's modules (worker.js, errors.js, files.js, local.js, protocol.js, result.js: the
// bundle holds the page's side); models/manifest.json (only the models published), the
// default model's core file and its .rows/ shard folder; embed.html, embed-frame.js and
// css/embed.css (the iframe form); the bundle's source map; LICENSE and NOTICE (the widgets are
// Apache-2.0, the default model's weights GPL-2.0-or-later; NOTICE says which is which and is to
// travel with copies). README.md, "Embedding a figure in another site", says what headers to send.
// The folder must be new, empty, or one publish wrote before (it holds PUBLISHED.txt, the list
// of what it wrote): only files on that list are replaced, and nothing else in the folder is
// touched, so pointing --out at a blog's static/attention/ cannot delete the blog's own files.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { RESERVES_FILE } from './build_embed.mjs';
import { COMPRESSIBLE, writeCompressed } from './compress.mjs';
import { HOST_HEADERS } from './http_policy.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');

// The engine with relaxed SIMD: a browser that runs it downloads this instead of
// attention_engine.wasm (web/engine/local.js).
export const RELAXED_WASM = 'engine/attention_engine.relaxed.wasm';
export const BASE_FILES = Object.freeze([
  'dist/attention-widgets.js',
  'engine/attention_engine.js',
  'engine/attention_engine.wasm',
  // The worker's modules (web/engine/worker.js and what it imports); the page's side is in the
  // bundle.
  'engine/worker.js',
  'engine/errors.js',
  'engine/files.js',
  'engine/local.js',
  'engine/protocol.js',
  'engine/result.js',
]);
// The iframe form, and the host's helper that sizes its frames and passes the host's theme on.
export const FRAME_FILES = Object.freeze(['embed.html', 'embed-frame.js', 'css/embed.css', 'dist/attention-frames.js']);
// Beside the code: the bundles' source maps (each bundle names its own) and the terms.
export const EXTRA_FILES = Object.freeze(['dist/attention-widgets.js.map', 'dist/attention-frames.js.map']);
export const TERMS_FILES = Object.freeze(['LICENSE', 'NOTICE']);
// The list of what publish wrote, in the folder it wrote.
export const MARKER = 'PUBLISHED.txt';
// The site's service worker (published with --site).
export const SERVICE_WORKER = 'sw.js';

// The files a previous publish wrote into `out` (from its marker), [] for a new or empty folder;
// throws for a folder that holds anything else.
function previousFiles(out) {
  if (!existsSync(out)) return [];
  if (!statSync(out).isDirectory()) throw new Error(`publish: ${out} is a file, not a folder`);
  const entries = readdirSync(out);
  if (entries.length === 0) return [];
  if (!entries.includes(MARKER)) {
    throw new Error(`publish: ${out} is not empty and was not written by publish (it has no ${MARKER}); nothing was changed. `
      + 'Choose a new or empty folder (e.g. static/attention/ inside your site), so that no file of yours is replaced.');
  }
  return readFileSync(join(out, MARKER), 'utf8').split('\n').filter((line) => line && !line.startsWith('#'));
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(bytes < 1e6 ? 3 : 1)} MB`;

// Copies the files into `out` (new, empty, or written by publish before) and returns
// {files: [{path, bytes, when}], manifest}; when: 'first' (every reader, first view), 'relaxed'
// (the relaxed-SIMD wasm, which a browser that runs it fetches instead of the plain one),
// 'shards' (rows fetched as sentences need them), 'all-rows' (every row in one file, for the
// figures that predict), 'frame' (the iframe form only), 'precision', 'site' (the article and
// the posts), 'host' (the reserves' lines for a host's own stylesheet, which it copies or links;
// README, "No jump when figures go live").
export function publish({ out, precision = false, site = false, quiet = false } = {}) {
  if (!out) throw new Error('publish: --out DIR is required');
  out = resolve(out);
  if (out === web || out === root) throw new Error(`publish: refusing to write into ${out}`);
  const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  const chosen = manifest.models[manifest.default];
  if (!chosen) throw new Error(`publish: the manifest's default model ${manifest.default} has no entry`);
  const files = [];
  const add = (path, when) => {
    if (files.some((f) => f.path === path)) return;
    const from = join(web, path);
    if (!existsSync(from)) throw new Error(`publish: web/${path} is missing; run node scripts/site/build_site.mjs first`);
    files.push({ path, bytes: statSync(from).size, when });
  };
  for (const path of BASE_FILES) add(path, 'first');
  add(RELAXED_WASM, 'relaxed');
  const models = { [manifest.default]: chosen };
  if (chosen.core && chosen.shards) {
    add(`models/${chosen.core.file}`, 'first');
    const folder = `models/${chosen.shards.folder}`;
    const preload = new Set(chosen.shards.preload ?? []);
    for (const name of readdirSync(join(web, folder)).filter((f) => f.endsWith('.bin')).sort()) {
      add(folder + name, preload.has(Number(name.slice(0, -4))) ? 'first' : 'shards');
    }
    if (chosen.shards.all) add(`models/${chosen.shards.all.file}`, 'all-rows');
    // The shards' checksums: the engine reads them with the first shard it fetches.
    if (chosen.shards.digests) add(`models/${chosen.shards.digests.file}`, 'first');
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
  add(`dist/${RESERVES_FILE}`, 'host');
  if (site) {
    if (!manifest.site) throw new Error('publish: the manifest has no site list; run node scripts/site/build_site.mjs first');
    for (const { path } of manifest.site.files) add(path, 'site');
    add(SERVICE_WORKER, 'site');
    for (const key of ['words', 'lens_words']) {
      if (manifest.sets?.[key]) add(new URL(manifest.sets[key], 'http://x/models/').pathname.slice(1), 'site');
    }
  }
  for (const path of EXTRA_FILES) add(path, 'debug');
  for (const path of TERMS_FILES) files.push({ path, bytes: statSync(join(root, path)).size, when: 'terms', from: join(root, path) });
  const published = { ...manifest, models };
  if (!precision) delete published.precision;
  // The site's own offline list (web/sw.js) names pages that are published only with --site.
  if (!site) delete published.site;

  // Only what publish wrote before goes, and only inside `out` (a marker's line cannot name a
  // path outside it).
  for (const path of previousFiles(out)) {
    const target = resolve(out, path);
    if (relative(out, target).startsWith('..') || target === out) continue;
    rmSync(target, { force: true });
  }
  for (const folder of ['models'].concat(chosen.shards ? [`models/${chosen.shards.folder}`] : [])) {
    const dir = join(out, folder);
    if (existsSync(dir) && readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
  }
  for (const { path, from } of files) {
    mkdirSync(dirname(join(out, path)), { recursive: true });
    copyFileSync(from ?? join(web, path), join(out, path));
  }
  const manifestText = JSON.stringify(published, null, 2) + '\n';
  writeFileSync(join(out, 'models', 'manifest.json'), manifestText);
  files.push({ path: 'models/manifest.json', bytes: Buffer.byteLength(manifestText), when: 'first' });
  // Brotli and gzip copies of every text file and the wasm, for a server that sends them
  // (http-server --brotli --gzip does, as scripts/serve.sh); the bytes a reader's browser
  // receives are the brotli copy's.
  for (const f of files.slice()) {
    if (!COMPRESSIBLE.test(f.path) || f.when === 'debug' || f.when === 'terms') continue;
    const sizes = writeCompressed(join(out, f.path));
    f.wire = sizes.br;
    for (const suffix of ['br', 'gz']) {
      if (sizes[suffix] < sizes.bytes) files.push({ path: `${f.path}.${suffix}`, bytes: sizes[suffix], when: 'compressed' });
    }
  }
  writeFileSync(join(out, MARKER), `# Written by scripts/site/publish.mjs; the next publish into this folder replaces exactly these files.\n${files.map((f) => f.path).join('\n')}\n${MARKER}\n`);

  if (!quiet) {
    const sum = (when) => files.filter((f) => f.when === when).reduce((a, f) => a + f.bytes, 0);
    const shown = files.filter((f) => !/\.rows\/\d+\.bin$/.test(f.path) && f.when !== 'compressed');
    console.log(`publish: ${files.length} files, ${mb(files.reduce((a, f) => a + f.bytes, 0))}, in ${relative(process.cwd(), out) || '.'}/`);
    for (const f of shown) console.log(`  ${f.path.padEnd(40)} ${mb(f.bytes).padStart(9)}  ${f.when}`);
    const rows = files.filter((f) => /\.rows\/\d+\.bin$/.test(f.path));
    if (chosen.shards) console.log(`  models/${chosen.shards.folder}*.bin ${String(rows.length).padStart(4)} shards ${mb(rows.reduce((a, f) => a + f.bytes, 0))} (${rows.filter((f) => f.when === 'first').length} with the first view)`);
    console.log(`  and ${files.filter((f) => f.when === 'compressed').length} .br and .gz copies of the text files and the wasm`);
    const wire = files.filter((f) => f.when === 'first').reduce((a, f) => a + (f.wire ?? f.bytes), 0);
    console.log(`A reader's first view: ${mb(sum('first'))} (bundle, engine, manifest, model core and the opening sentence's shards), ${mb(wire)} on the wire where the server sends the brotli copies;`);
    console.log(`  a browser with relaxed SIMD fetches ${RELAXED_WASM} (${mb(sum('relaxed'))}) instead of the plain wasm.`);
    console.log(`  each new sentence then fetches the shards of its words (about 15 kB each, ${mb(sum('shards'))} in all).`);
    if (chosen.shards?.all) console.log(`  A figure that predicts words (the masked-LM head scores every entry) fetches the all-rows file instead, once (${mb(sum('all-rows'))}).`);
    console.log('Later visits: the wasm, the model core and the shards come from the browser\'s Cache API (keyed by their sha256);');
    console.log('  only the bundle, the engine\'s scripts and the manifest are asked for again (HTTP caching decides).');
    console.log(`The iframe form adds embed.html, embed-frame.js and css/embed.css (${mb(sum('frame'))}).`);
    console.log(`Also written: the bundle's source map (${mb(sum('debug'))}, fetched only by developer tools), LICENSE and NOTICE (keep them with the files: NOTICE gives the model's GPL-2.0-or-later terms), ${MARKER}.`);
    if (site) console.log(`The article and the posts (--site): ${mb(sum('site'))} of pages, their bundles, styles, examples and set statistics; open index.html.`);
    if (precision) console.log(`<attention-precision> downloads ${mb(sum('precision'))} more when the reader presses its button.`);
    console.log('What the host should send:');
    for (const line of HOST_HEADERS) console.log(`  ${line}`);
  }
  return { files, manifest: published };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let out = null;
  let precision = false;
  let site = false;
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--out') out = args[++i];
    else if (args[i] === '--precision') precision = true;
    else if (args[i] === '--site') site = true;
    else {
      console.error(`publish: unknown argument ${args[i]}\nUsage: node scripts/site/publish.mjs --out DIR [--precision] [--site]`);
      process.exit(2);
    }
  }
  try {
    publish({ out, precision, site });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
