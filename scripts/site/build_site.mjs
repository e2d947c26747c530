// Assembles what the page serves next to web/: copies the wasm engine from build/wasm into
// web/engine/ and the model files from model_data/ into web/models/, writes
// web/models/manifest.json naming each with its size and sha256 (the JS engine's cache keys),
// bundles the embeddable widgets into web/dist/ (scripts/site/build_embed.mjs) and each page's
// own code into web/app/ (scripts/site/build_pages.mjs).
// Usage: node scripts/site/build_site.mjs [--default NAME] [--model FILE.attn ...]
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { buildEmbed } from './build_embed.mjs';
import { buildPages, loadedByPages } from './build_pages.mjs';
import { COMPRESSIBLE, writeCompressed } from './compress.mjs';
import { copyWithBanner, ENGINE_BANNER } from './licence_banners.mjs';
import { makeExamples } from './make_examples.mjs';
import { makeSets } from './make_sets.mjs';
import { PRESETS } from '../../web/content.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
let defaultName = null;
const extraModels = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--default') defaultName = args[++i];
  else if (args[i] === '--model') extraModels.push(resolve(args[++i]));
  else {
    console.error(`build_site: unknown argument ${args[i]}`);
    process.exit(2);
  }
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const engineDir = join(root, 'web', 'engine');
const modelsDir = join(root, 'web', 'models');
mkdirSync(modelsDir, { recursive: true });

const built = join(root, 'build', 'wasm');
for (const file of ['attention_engine.js', 'attention_engine.wasm', 'attention_engine.relaxed.wasm']) {
  if (!existsSync(join(built, file))) {
    console.error(`build_site: ${join(built, file)} is missing; run scripts/build.sh wasm first.`);
    process.exit(1);
  }
  // The glue an embedding site copies carries the licence banner; the wasm is copied as built.
  if (file.endsWith('.js')) copyWithBanner(join(built, file), join(engineDir, file), ENGINE_BANNER);
  else copyFileSync(join(built, file), join(engineDir, file));
}
const wasm = readFileSync(join(engineDir, 'attention_engine.wasm'));
const relaxedWasm = readFileSync(join(engineDir, 'attention_engine.relaxed.wasm'));

const modelFiles = [
  ...readdirSync(join(root, 'model_data')).filter((f) => f.endsWith('.attn')).map((f) => join(root, 'model_data', f)),
  ...extraModels,
];
const models = {};
for (const path of modelFiles) {
  const name = basename(path, '.attn');
  const bytes = readFileSync(path);
  copyFileSync(path, join(modelsDir, `${name}.attn`));
  models[name] = { file: `${name}.attn`, bytes: bytes.length, sha256: sha256(bytes) };
}
// The page's model comes as a family: NAME.attn, the f32 reference, and NAME.compact.attn, the
// compact file the page loads (scripts/run.sh --model NAME makes it with the precision study).
// The family is the shipped default's unless --default names another (NAME or NAME.compact).
// The precision figure compares the compact file with the f32 reference and with the naive plan
// (int8, one scale per tensor everywhere). The naive file is derived, not committed: written
// here from the reference by the converter (numpy; about a second), again whenever the
// reference is newer.
const FAMILY = (defaultName ?? 'explainer-mini').replace(/\.compact$/, '');
const REFERENCE = FAMILY;
const COMPACT = `${FAMILY}.compact`;
const NAIVE = `${FAMILY}.naive`;
const NAIVE_PLAN = '*=int8:tensor';
if (models[REFERENCE] && models[COMPACT]) {
  const source = join(root, 'model_data', `${REFERENCE}.attn`);
  const naivePath = join(modelsDir, `${NAIVE}.attn`);
  if (!existsSync(naivePath) || statSync(naivePath).mtimeMs < statSync(source).mtimeMs) {
    execFileSync(process.env.PY ?? '/usr/bin/python3', ['-m', 'scripts.model.convert_model', 'requantize', source, naivePath, '--precision', NAIVE_PLAN], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const bytes = readFileSync(naivePath);
  models[NAIVE] = { file: `${NAIVE}.attn`, bytes: bytes.length, sha256: sha256(bytes) };
}
// The page runs the compact model in the split layout (model_data/README.md, "Split layout for
// the page"): a core file without the word-embedding rows, and shards of ROWS_PER_SHARD rows
// fetched as a sentence needs them. The shards of the sentence the article opens on are named in
// the manifest, so the engine fetches them with the core (the other presets' come on a click).
const ROWS_PER_SHARD = 32;
const cli = join(root, 'build', 'native', 'attention-cli');
if (models[COMPACT]) {
  execFileSync(process.env.PY ?? '/usr/bin/python3', ['-m', 'scripts.model.split_model', 'split', join(modelsDir, `${COMPACT}.attn`), modelsDir, '--rows-per-shard', String(ROWS_PER_SHARD)], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  const core = readFileSync(join(modelsDir, `${COMPACT}.core.attn`));
  const folder = `${COMPACT}.rows`;
  const shardFiles = readdirSync(join(modelsDir, folder)).filter((f) => f.endsWith('.bin')).sort();
  const shardBytes = shardFiles.reduce((sum, f) => sum + statSync(join(modelsDir, folder, f)).size, 0);
  let preload = [];
  if (existsSync(cli)) {
    // With the model's own vocabulary and tokenizer settings (its header).
    const lines = execFileSync(cli, ['tokenize', '--model', join(modelsDir, `${COMPACT}.attn`), '--lines'], { input: `${PRESETS[0]}\n` }).toString();
    preload = [...new Set(lines.trim().split('\n').flatMap((line) => line.trim().split(/\s+/).map((id) => Math.floor(Number(id) / ROWS_PER_SHARD))))].sort((a, b) => a - b);
  }
  models[COMPACT].core = { file: `${COMPACT}.core.attn`, bytes: core.length, sha256: sha256(core) };
  // The all-rows file (every shard back to back, split_model.py writes it): one download, with
  // its checksum, for a reader whose page needs the whole table (the masked-LM head).
  const allRows = readFileSync(join(modelsDir, `${folder}.bin`));
  const all = { file: `${folder}.bin`, bytes: allRows.length, sha256: sha256(allRows) };
  // Every shard's SHA-256, 32 bytes each in shard order, in one file the manifest vouches for:
  // the engine checks each shard against it before the core reads it or the Cache API keeps it
  // (a shard's own CRC-32 can be recomputed by whoever alters it).
  const digestsName = `${folder}.sha256`;
  writeFileSync(join(modelsDir, digestsName), Buffer.concat(shardFiles.map((f) => createHash('sha256').update(readFileSync(join(modelsDir, folder, f))).digest())));
  const digestBytes = readFileSync(join(modelsDir, digestsName));
  const digests = { file: digestsName, bytes: digestBytes.length, sha256: sha256(digestBytes) };
  models[COMPACT].shards = { folder: `${folder}/`, rows_per_shard: ROWS_PER_SHARD, count: shardFiles.length, bytes: shardBytes, preload, all, digests };
}
const names = Object.keys(models);
if (!names.length) {
  console.error('build_site: no model file (*.attn) in model_data/ and none given with --model.');
  process.exit(1);
}
// The page loads the compact weights by default (model_data/README.md: the precision plan);
// the f32 reference is served too, for a reader or a figure that asks for it.
const preferred = [COMPACT, REFERENCE].find((name) => models[name]);
const chosen = defaultName ?? preferred ?? names[0];
if (!models[chosen]) {
  console.error(`build_site: --default ${chosen} is not one of ${names.join(', ')}.`);
  process.exit(2);
}
const manifest = {
  default: chosen,
  models,
  // relaxed: the same engine with relaxed SIMD, for the browsers that run it (web/engine/local.js).
  engine: {
    glue: '../engine/attention_engine.js', wasm: '../engine/attention_engine.wasm', bytes: wasm.length, sha256: sha256(wasm),
    relaxed: { wasm: '../engine/attention_engine.relaxed.wasm', bytes: relaxedWasm.length, sha256: sha256(relaxedWasm) },
  },
};
// The fidelity bar (docs/ARCHITECTURE.md): compact attention within 1e-3 of f32.
if (models[NAIVE]) manifest.precision = { reference: REFERENCE, shipped: COMPACT, naive: NAIVE, bar: 1e-3 };
// The series' set statistics, computed with the f32 reference where there is one (the compact
// file's masked-LM output is not held to a bar; its attention is), else with the default.
if (existsSync(cli)) {
  const setKey = models[REFERENCE] ? REFERENCE : chosen;
  const pageKey = chosen !== setKey ? chosen : null;
  manifest.sets = makeSets({
    modelPath: join(modelsDir, models[setKey].file), modelKey: setKey, cli, outDir: join(root, 'web', 'sets'),
    pagePath: pageKey ? join(modelsDir, models[pageKey].file) : null, pageKey,
  });
} else {
  console.warn(`build_site: ${cli} is missing, so the posts have no set statistics (run scripts/build.sh native).`);
}
writeFileSync(join(modelsDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
await buildEmbed();
await buildPages();
console.log(`build_site: engine ${wasm.length} bytes; models ${names.map((n) => `${n} (${models[n].bytes} bytes)`).join(', ')}; default ${chosen}`);

// The article draws these before the engine has loaded; they need the native CLI.
if (existsSync(cli)) {
  await makeExamples({ manifestPath: join(modelsDir, 'manifest.json'), outDir: join(root, 'web', 'examples'), cli });
} else {
  console.warn(`build_site: ${cli} is missing, so the article has no precomputed example (run scripts/build.sh native).`);
}

// What the site's service worker (web/sw.js) stores for reading offline: the pages and every
// file they load (scripts, styles, the precomputed examples, the posts' set statistics), each
// with its SHA-256, and the version, a SHA-256 over that list and the manifest's model and
// engine checksums, so that any change to the site is a new version. Left out: the models, the
// shards and the wasm (the engine keeps those in the Cache API itself), the embedding bundle
// and the iframe form (for other sites), every module no page loads (build_pages.mjs,
// loadedByPages: the pages' bundles' sources and the widgets' sources), the words of the set
// statistics (SHA.words.json, a download only on request, and SHA.words.*.json, which no page
// loads) and source maps.
const web = join(root, 'web');
const OFFLINE_SKIP = /^(models|dist)\/|^embed(-demo)?[.-]|^sw\.js$|\.words(\.\w+)*\.json$|\.map$|\.wasm$|(^|\/)\./;
const OFFLINE_KINDS = /\.(html|css|js|json|txt|tsv)$/;
function siteFiles(dir = web) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    const rel = path.slice(web.length + 1);
    if (OFFLINE_SKIP.test(rel) || (rel.endsWith('.js') && !loadedByPages(rel))) return [];
    if (entry.isDirectory()) return siteFiles(path);
    return entry.isFile() && OFFLINE_KINDS.test(rel) ? [{ path: rel, bytes: statSync(path).size, sha256: sha256(readFileSync(path)) }] : [];
  }).sort((a, b) => (a.path < b.path ? -1 : 1));
}
const files = siteFiles();
const version = sha256(JSON.stringify({ files, engine: [manifest.engine.sha256, manifest.engine.relaxed.sha256], models: Object.fromEntries(names.map((n) => [n, models[n].sha256])) })).slice(0, 16);
manifest.site = { version, files };
writeFileSync(join(modelsDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
console.log(`build_site: ${files.length} files (${(files.reduce((a, f) => a + f.bytes, 0) / 1e6).toFixed(2)} MB) for reading offline, version ${version}`);

// Brotli and gzip copies (scripts/serve.sh sends them to a browser that accepts them) of every
// text file and the wasm under web/ (compress.mjs's COMPRESSIBLE kinds): the pages, styles and
// modules, the engine, the bundles, the manifest, the examples and the set statistics. A source
// edited after this build has a stale copy, which the server never sends (serve.mjs): it sends
// the file itself, uncompressed, until the next build.
function compressible(dir = web) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.name.startsWith('.')) return [];
    if (entry.isDirectory()) return compressible(path);
    return entry.isFile() && COMPRESSIBLE.test(entry.name) ? [path] : [];
  });
}
const compressed = compressible();
let raw = 0;
let brotli = 0;
for (const path of compressed) {
  const sizes = writeCompressed(path);
  raw += sizes.bytes;
  brotli += sizes.br;
}
console.log(`build_site: brotli and gzip copies of ${compressed.length} files (${(raw / 1e6).toFixed(2)} MB, ${(brotli / 1e6).toFixed(2)} MB as brotli)`);
