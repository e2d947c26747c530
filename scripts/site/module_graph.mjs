// The pages' module graphs and the <link rel="modulepreload"> lines that flatten them.
//
// A page's entry module imports widgets, which import the engine's facade, which imports its
// modules: fetched as the browser discovers them, that is four round trips before the page's
// script runs (on a phone at 40 ms latency the engine's worker started 2.5 s after navigation).
// Every page therefore lists its whole static graph as modulepreload links, which the browser
// fetches at once while it parses the head. The lists are written into the pages' HTML (between
// the two marker comments) by this script, and tests/js/module_graph.test.mjs fails when a page's
// list is not its graph (an import added without running this).
//
// A page's entry script may be a bundle (web/app/, scripts/site/build_pages.mjs): its graph is
// then the modules the bundle leaves outside itself (the engine's and start-engine.js), found by
// walking its source entry.
//
// A page that starts the engine (start-engine.js among its entries) also asks for the default
// model's first file in its head (modelPreload): the largest file of the first visit, on the
// critical path, requested while the head is parsed instead of once the page's scripts have run
// (bench_load --phone: about half a second later on a phone, more on a busy one).
//
// Usage: node scripts/site/module_graph.mjs [--check]   (writes web/*.html; --check only reports)
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { isShared, PAGE_BUNDLES } from './build_pages.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const WEB = join(root, 'web');

export const BEGIN = '<!-- modulepreload: written by scripts/site/module_graph.mjs -->';
export const END = '<!-- /modulepreload -->';

// The relative specifiers a module imports statically (`import ... from '...'`, `import '...'`,
// `export ... from '...'`); dynamic import() is not part of the graph a page must fetch first.
// The web code's modules keep their imports at the top level, one statement each.
export function staticImports(source) {
  const found = [];
  const re = /^\s*(?:import|export)\s+(?:[^'"`;]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm;
  for (let m; (m = re.exec(source));) found.push(m[1]);
  return found;
}

// Every module the entry (a path under web/) needs before it runs, entry excluded, as paths
// relative to web/ in the order a depth-first walk meets them. For a page's bundle, the modules
// it imports at run time: those of its source's graph that it leaves outside itself.
export function moduleGraph(entry, web = WEB) {
  if (web === WEB && PAGE_BUNDLES[entry]) return moduleGraph(PAGE_BUNDLES[entry], web).filter(isShared);
  const seen = new Set();
  const order = [];
  const visit = (file) => {
    for (const spec of staticImports(readFileSync(file, 'utf8'))) {
      const target = resolve(dirname(file), spec);
      if (seen.has(target)) continue;
      seen.add(target);
      visit(target);
      order.push(relative(web, target));
    }
  };
  const start = join(web, entry);
  seen.add(start);
  visit(start);
  return order;
}

// The page's module entries: the src of its <script type="module"> tags (async or not).
export function pageEntries(html) {
  return [...html.matchAll(/<script type="module"(?: async)? src="([^"]+)"><\/script>/g)].map((m) => m[1]);
}

// The preload of the default model's first file (the manifest's default entry: its core where
// it is split, else the file), which the page's engine takes up (startDownload in
// web/engine/files.js consumes the preload: one request), or null without a built manifest. A
// reader whose address names another model (a hub checkpoint in the hash, ?model=) pays for
// this file too: the page cannot know before its scripts run.
export function modelPreload(web = WEB) {
  const file = join(web, 'models', 'manifest.json');
  if (!existsSync(file)) return null;
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  const entry = manifest.models?.[manifest.default];
  const first = entry?.core?.file ?? entry?.file;
  return first ? `<link rel="preload" href="models/${first}" as="fetch" crossorigin>` : null;
}

// The preload block a page should have: the default model's first file where the page starts
// the engine, then every module of its entries' graphs, once each.
export function preloadBlock(html, web = WEB) {
  const entries = pageEntries(html);
  const modules = [...new Set(entries.flatMap((e) => moduleGraph(e, web)))].filter((m) => !entries.includes(m));
  const model = entries.includes('start-engine.js') ? modelPreload(web) : null;
  return [BEGIN, ...(model ? [model] : []), ...modules.map((m) => `<link rel="modulepreload" href="${m}">`), END].join('\n');
}

// The page with its preload block replaced (or inserted before its first module script).
export function withPreloads(html, web = WEB) {
  const block = preloadBlock(html, web);
  const start = html.indexOf(BEGIN);
  if (start < 0 && block === [BEGIN, END].join('\n')) return html;  // nothing to preload
  if (start >= 0) return html.slice(0, start) + block + html.slice(html.indexOf(END, start) + END.length);
  const at = html.indexOf('<script type="module"');
  return at < 0 ? html : `${html.slice(0, at)}${block}\n${html.slice(at)}`;
}

// The site's pages that load modules.
export const pages = (web = WEB) => readdirSync(web).filter((f) => f.endsWith('.html'))
  .filter((f) => pageEntries(readFileSync(join(web, f), 'utf8')).length);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const page of pages()) {
    const file = join(WEB, page);
    const html = readFileSync(file, 'utf8');
    const next = withPreloads(html);
    if (next === html) continue;
    stale += 1;
    if (check) console.log(`${page}: its modulepreload list is not its module graph`);
    else writeFileSync(file, next);
  }
  if (check && stale) process.exit(1);
}
