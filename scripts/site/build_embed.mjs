// Bundles the embeddable widgets (web/embed-bundle.js and everything it imports) into one
// ES module, web/dist/attention-widgets.js, with esbuild. The bundle finds the engine and the
// models from its own URL, so it must stay one folder below web/ (next to engine/ and models/).
// Usage: node scripts/site/build_embed.mjs   (scripts/site/build_site.mjs runs it)
import { build } from 'esbuild';
import { statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { WIDGETS_BANNER } from './licence_banners.mjs';
import { hostReserveCss } from '../../web/widgets/registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BUNDLE_PATH = join(root, 'web', 'dist', 'attention-widgets.js');

// outfile: where to write the bundle (tests/js/licence.test.mjs builds one in a temporary folder);
// the helper goes beside it.
export async function buildEmbed({ outfile = BUNDLE_PATH, helperOutfile = join(dirname(outfile), 'attention-frames.js') } = {}) {
  await bundle(join(root, 'web', 'embed-bundle.js'), outfile, { plugins: [lazyCheckpoint] });
  await bundle(join(root, 'web', 'widgets', 'frame-host.js'), helperOutfile);
  writeFileSync(join(dirname(outfile), RESERVES_FILE), reservesCss());
}

// The lines a host's stylesheet takes for the time before the bundle has run (README, "No jump
// when figures go live"), beside the bundle: an author copies them, or links the file.
export const RESERVES_FILE = 'attention-reserves.css';
export const reservesCss = () => `/* The attention widgets' reserves: the height each figure takes once live, by the width of its
   column (web/widgets/registry.js, measured by scripts/site/measure_reserves.mjs), for a host
   page's stylesheet. Each figure's parent becomes a container for its width. */
${hostReserveCss()}`;

// The reader of Hugging Face checkpoints (web/engine/hub.js, checkpoint.js and what only they
// import) is loaded only when a figure is given one (model-src="hf:..."), and then by the engine's worker,
// which imports web/engine/ as it is: the bundle leaves it outside itself, imported by its
// address beside dist/, instead of carrying its 40 kB for every figure.
const lazyCheckpoint = {
  name: 'lazy-checkpoint',
  setup(build) {
    build.onResolve({ filter: /^\.\/(checkpoint|hub)\.js$/ }, (args) => (args.kind === 'dynamic-import' ? { path: `../engine/${args.path.slice(2)}`, external: true } : undefined));
  },
};

// One ES module from entry and everything it imports, minified, with a linked source map and
// the licence banner; `plugins` (esbuild's) decide what stays outside it (build_pages.mjs).
export async function bundle(entry, outfile, { plugins = [], banner = WIDGETS_BANNER } = {}) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    sourcemap: 'linked',
    // engine.js reads file: URLs with node:fs only under Node; browsers never take that path.
    external: ['node:*'],
    // Licence comments of bundled code (none today: the bundle holds only web/) go to the end.
    legalComments: 'eof',
    logLevel: 'warning',
    banner: { js: banner },
    plugins,
  });
  console.log(`bundle: ${relative(root, outfile)} (${statSync(outfile).size} bytes)`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildEmbed();
