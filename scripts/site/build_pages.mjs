// Bundles the article's and the posts' own code into one minified ES module per page in web/app/,
// with esbuild: a page then fetches its entry's bundle, start-engine.js and the engine's modules
// (about ten files) instead of its whole module graph (26-33 files, twice the bytes).
//
// The engine's modules (web/engine/) and start-engine.js stay outside the bundles, served as they
// are, for two reasons. The engine's worker loads the same files (worker.js and what it imports),
// so the page's copies are the worker's too. And the page's engine is one module instance,
// engine/engine.js, whoever imports it: the async start-engine.js script, the page's bundle, and
// the browser tests (import('/engine/engine.js') reaches the page's engine and its memo).
// The bundles sit one folder below web/, as the embedding bundle in dist/ does, because the code
// in them finds the site's files from its own URL ('../models/', '../dist/', '../engine/').
// Usage: node scripts/site/build_pages.mjs   (scripts/site/build_site.mjs runs it)
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import { bundle } from './build_embed.mjs';
import { PAGES_BANNER } from './licence_banners.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WEB = join(root, 'web');

// Each page's bundle (the src of its entry script, relative to web/) and the source entry it is
// built from. One home: module_graph.mjs reads the pages' graphs through it.
export const PAGE_BUNDLES = Object.freeze({
  'app/article.js': 'article.js',
  'app/heads.js': 'posts/heads.js',
  'app/confident.js': 'posts/confident.js',
  'app/contribution.js': 'posts/contribution.js',
  'app/vocabulary.js': 'posts/vocabulary.js',
  'app/lenses.js': 'posts/lenses.js',
});

// The modules every bundle leaves outside itself (paths relative to web/).
export const isShared = (path) => path === 'start-engine.js' || path.startsWith('engine/');

// Keeps a shared module outside the bundle, imported by its address relative to the bundle's.
const keepShared = (outDir) => ({
  name: 'keep-shared',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = resolve(args.resolveDir, args.path);
      const path = relative(WEB, target).split(sep).join('/');
      if (!isShared(path)) return undefined;
      return { path: relative(outDir, target).split(sep).join('/'), external: true };
    });
  },
});

// The site's scripts that its pages load: their bundles and the modules the bundles leave
// outside themselves (the rest of web/'s modules are the bundles' sources, and the widgets'
// sources that web/dist/ bundles for other sites).
export const loadedByPages = (path) => Object.hasOwn(PAGE_BUNDLES, path) || isShared(path);

// Builds every page's bundle into web/app/.
export async function buildPages() {
  for (const [out, entry] of Object.entries(PAGE_BUNDLES)) {
    const outfile = join(WEB, out);
    await bundle(join(WEB, entry), outfile, { plugins: [keepShared(dirname(outfile))], banner: PAGES_BANNER });
  }
}

// Why web/'s bundles are not what its sources say, or null when they are: a bundle missing, or a
// module under web/ that a bundle may hold (not the shared ones, not the built folders) changed
// after the oldest bundle was written. The browser tests' harness refuses to start on such a site.
export function staleBundles(web = WEB) {
  const outs = Object.keys(PAGE_BUNDLES).map((out) => join(web, out));
  const missing = outs.find((file) => !existsSync(file));
  if (missing) return `${relative(root, missing)} is missing`;
  const built = Math.min(...outs.map((file) => statSync(file).mtimeMs));
  const newer = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    const rel = relative(web, path).split(sep).join('/');
    if (entry.isDirectory()) return /^(app|dist|engine|models|sets|examples)$/.test(rel) || entry.name.startsWith('.') ? [] : newer(path);
    return rel.endsWith('.js') && !isShared(rel) && statSync(path).mtimeMs > built ? [rel] : [];
  });
  const changed = newer(web);
  return changed.length ? `${changed.slice(0, 3).join(', ')}${changed.length > 3 ? ' and more' : ''} changed after the pages' bundles were built` : null;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildPages();
