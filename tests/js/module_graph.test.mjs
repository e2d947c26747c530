// Every page lists its whole static module graph as modulepreload links (written by
// scripts/site/module_graph.mjs), so the browser fetches every module at once instead of one
// level of imports per round trip; a page whose list is not its graph fails here. The import
// scanner is checked on the statement forms the web code uses, and the graph against a small
// tree of modules written for the test.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';

import { isShared, PAGE_BUNDLES, staleBundles } from '../../scripts/site/build_pages.mjs';
import { BEGIN, END, moduleGraph, pageEntries, pages, preloadBlock, staticImports, WEB, withPreloads } from '../../scripts/site/module_graph.mjs';

test('the scanner finds static imports and re-exports, not dynamic imports or bare names', () => {
  const source = [
    "import { a, b } from './a.js';",
    "import './side-effect.js';",
    'import * as c from "../c.js";',
    "export { d } from './d.js';",
    "import {\n  e,\n  f,\n} from './multi.js';",
    "const g = await import('./dynamic.js');",
    "import fs from 'node:fs';",
    "// import { x } from './comment-in-the-middle-of-a-line.js' is not at a line's start",
  ].join('\n');
  assert.deepEqual(staticImports(source), ['./a.js', './side-effect.js', '../c.js', './d.js', './multi.js']);
});

const scratch = mkdtempSync(join(tmpdir(), 'attention-graph-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('the graph of an entry is every module it reaches, each once, dependencies first', () => {
  mkdirSync(join(scratch, 'lib'));
  writeFileSync(join(scratch, 'main.js'), "import './lib/a.js';\nimport { b } from './lib/b.js';\n");
  writeFileSync(join(scratch, 'lib', 'a.js'), "import { b } from './b.js';\nexport const a = b;\n");
  writeFileSync(join(scratch, 'lib', 'b.js'), "import '../main.js';\nexport const b = 1;\n");
  assert.deepEqual(moduleGraph('main.js', scratch), ['lib/b.js', 'lib/a.js']);
  const html = '<head>\n<script type="module" src="main.js"></script>\n</head>';
  const written = withPreloads(html, scratch);
  assert.equal(written, `<head>\n${BEGIN}\n<link rel="modulepreload" href="lib/b.js">\n<link rel="modulepreload" href="lib/a.js">\n${END}\n<script type="module" src="main.js"></script>\n</head>`);
  assert.equal(withPreloads(written, scratch), written, 'writing twice changes nothing');
});

test('every page preloads exactly its module graph', () => {
  const checked = pages();
  assert.ok(checked.includes('index.html') && checked.includes('heads.html'), `pages found: ${checked.join(', ')}`);
  for (const page of checked) {
    const html = readFileSync(join(WEB, page), 'utf8');
    if (!html.includes(BEGIN)) {
      assert.equal(preloadBlock(html), `${BEGIN}\n${END}`, `${page} has modules to preload and no list: run node scripts/site/module_graph.mjs`);
      continue;
    }
    assert.equal(html.slice(html.indexOf(BEGIN), html.indexOf(END) + END.length), preloadBlock(html),
      `${page}: its modulepreload list is not its module graph; run node scripts/site/module_graph.mjs`);
  }
});

test('the article and every post start the engine first: start-engine.js is an async module script of their own, after the manifest\u2019s preload and before every other module, the first import of their entry, and needs only the engine', () => {
  for (const page of ['index.html', 'heads.html', 'confident.html', 'contribution.html', 'vocabulary.html', 'lenses.html']) {
    const html = readFileSync(join(WEB, page), 'utf8');
    const [early, entry, ...others] = pageEntries(html);
    assert.equal(early, 'start-engine.js', `${page}: its first module script is ${early}`);
    assert.ok(entry && others.length === 0, `${page} has ${pageEntries(html).length} module scripts`);
    const script = html.indexOf('<script type="module" async src="start-engine.js"></script>');
    const manifest = html.indexOf('<link rel="preload" href="models/manifest.json" as="fetch" crossorigin>');
    assert.ok(manifest >= 0 && manifest < script && script < html.indexOf(BEGIN), `${page}: the manifest's preload, then start-engine.js, then the modulepreload list`);
    // The entry is the page's bundle (scripts/site/build_pages.mjs), built from its source.
    const source = PAGE_BUNDLES[entry];
    assert.ok(source, `${page}: its entry ${entry} is not one of the pages' bundles`);
    const first = staticImports(readFileSync(join(WEB, source), 'utf8'))[0];
    assert.equal(join(dirname(source), first), 'start-engine.js', `${source} imports ${first} first`);
  }
  const graph = moduleGraph('start-engine.js');
  assert.ok(graph.includes('engine/engine.js') && graph.every((m) => m.startsWith('engine/')), `start-engine.js needs more than the engine: ${graph.join(', ')}`);
});

test('a page that starts the engine asks for the default model\u2019s first file in its head, before its modules; the widgets\u2019 frame does not', async () => {
  const { modelPreload } = await import('../../scripts/site/module_graph.mjs');
  const manifest = JSON.parse(readFileSync(join(WEB, 'models', 'manifest.json'), 'utf8'));
  const entry = manifest.models[manifest.default];
  const line = `<link rel="preload" href="models/${entry.core?.file ?? entry.file}" as="fetch" crossorigin>`;
  assert.equal(modelPreload(), line);
  for (const page of ['index.html', 'heads.html', 'confident.html', 'contribution.html', 'vocabulary.html', 'lenses.html']) {
    const html = readFileSync(join(WEB, page), 'utf8');
    const at = html.indexOf(line);
    assert.ok(at > html.indexOf(BEGIN) && at < html.indexOf('<link rel="modulepreload"'), `${page}: the model's preload opens the preload block`);
  }
  assert.ok(!readFileSync(join(WEB, 'embed.html'), 'utf8').includes(line), 'embed.html preloads the model');
});

test('a page\u2019s bundle holds its own code and imports only the engine\u2019s modules and start-engine.js, start-engine.js first, by their addresses beside app/', () => {
  // Built by scripts/site/build_site.mjs, which scripts/test.sh runs before these tests.
  for (const [out, source] of Object.entries(PAGE_BUNDLES)) {
    const file = join(WEB, out);
    const code = readFileSync(file, 'utf8');
    // esbuild writes `import{a as b}from"../engine/engine.js";` at the top level.
    const imports = [...code.matchAll(/(?:^|[;}])\s*(?:import|export)\s*(?:[^'"`;]*?from\s*)?"(\.{1,2}\/[^"]+)"/gm)].map((m) => m[1]);
    const targets = imports.map((spec) => join(dirname(out), spec));
    assert.equal(targets[0], 'start-engine.js', `${out}: its first import is ${targets[0]}`);
    for (const target of targets) assert.ok(isShared(target), `${out} imports ${target}, which it should hold`);
    const reached = new Set(moduleGraph(out));
    for (const target of targets) assert.ok(reached.has(target), `${out} imports ${target}, which ${source} does not reach`);
  }
});

test('a site whose bundles are missing or older than a module they may hold is stale; the engine\u2019s modules do not count', () => {
  const site = join(scratch, 'site');
  for (const dir of ['app', 'widgets', 'engine']) mkdirSync(join(site, dir), { recursive: true });
  const at = (path, seconds) => {
    writeFileSync(join(site, path), '');
    utimesSync(join(site, path), seconds, seconds);
  };
  at('widgets/base.js', 1000);
  assert.match(staleBundles(site), /is missing/);
  for (const out of Object.keys(PAGE_BUNDLES)) at(out, 2000);
  assert.equal(staleBundles(site), null);
  at('engine/client.js', 3000);
  at('start-engine.js', 3000);
  assert.equal(staleBundles(site), null, 'a shared module is not in any bundle');
  at('widgets/base.js', 3000);
  assert.match(staleBundles(site), /^widgets\/base\.js changed after/);
});

// The web code's layers, bottom up: the engine (engine/), what pages and figures start from
// (content.js), the embeddable widget kit (widgets/), the page runtime (runtime/: state, the URL
// hash, the engine session and the one view loop), and the hosts that adapt it (the article, the
// posts, the embedding bundle and pages). A module imports only from its own layer or below, so
// the widget kit, which other sites embed, never depends on the pages.
const LAYERS = [
  ['engine', (path) => path.startsWith('engine/')],
  ['content', (path) => path === 'content.js'],
  ['widgets', (path) => path.startsWith('widgets/')],
  ['runtime', (path) => path.startsWith('runtime/')],
];
const layerOf = (path) => {
  const found = LAYERS.findIndex(([, test]) => test(path));
  return found < 0 ? LAYERS.length : found;
};
const layerName = (index) => LAYERS[index]?.[0] ?? 'hosts';

test('the widget kit imports only the engine, the content module and itself; the runtime nothing above it; no layer imports a higher one', () => {
  const modules = [];
  const walk = (folder) => {
    for (const entry of readdirSync(join(WEB, folder), { withFileTypes: true })) {
      const path = folder ? `${folder}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!['app', 'dist', 'models', 'sets', 'examples', 'css'].includes(path)) walk(path);
      } else if (path.endsWith('.js') && !path.startsWith('engine/attention_engine')) {
        modules.push(path);
      }
    }
  };
  walk('');
  assert.ok(modules.includes('widgets/base.js') && modules.includes('runtime/session.js'), `modules found: ${modules.length}`);
  const upward = [];
  for (const path of modules) {
    for (const spec of staticImports(readFileSync(join(WEB, path), 'utf8'))) {
      const target = join(dirname(path), spec);
      if (layerOf(target) > layerOf(path)) upward.push(`${path} (${layerName(layerOf(path))}) imports ${target} (${layerName(layerOf(target))})`);
    }
  }
  assert.deepEqual(upward, [], `imports that run up the layers:\n${upward.join('\n')}`);
  // The check itself sees an upward import.
  assert.ok(layerOf('widgets/base.js') < layerOf('runtime/session.js') && layerOf('runtime/session.js') < layerOf('article.js'));
});
