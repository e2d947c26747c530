// The site with models of other shapes than the default's: random-weight BERTs
// (scripts/reference/make_random_model.py) of 2 layers x 2 heads, hidden 128, and 4 layers x 8
// heads, hidden 512, each served as the default model of a copy of web/ whose manifest names only
// it (with its own precomputed example, and, for the small one, its own set statistics). For each:
// the article goes live with that model; every count its prose quotes equals the loaded model's;
// every one of its L x H heads is reachable from Figure 1's grid and draws a row that sums to 1;
// no head label is cut short at 1280 or 390 px; Figure 5 has a panel per head; the heads post
// profiles every head of the reader's sentence (and, with set statistics, of the set); and every
// figure of the registry goes live in its iframe form with the model's shape. The shapes come
// from the model file here, never from a number written in the test. Needs the assembled site
// (node scripts/site/build_site.mjs) and build/native/attention-cli.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium, linkedSite, openInstrument, ROW_SUM_TOLERANCE, serve } from './harness.mjs';
import { makeExamples } from '../../scripts/site/make_examples.mjs';
import { makeSets } from '../../scripts/site/make_sets.mjs';
import { FIGURES } from '../../web/widgets/registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const cli = join(root, 'build', 'native', 'attention-cli');
const PY = process.env.PY ?? '/usr/bin/python3';
const LOAD_TIMEOUT_MS = 120000;
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

// The shapes, as make_random_model's overrides of its bert-mini preset (vocabulary and 512
// positions as bert-mini's). sets: whether the site gets the posts' set statistics too (the
// contribution pass over the set takes minutes at the larger shape on a 2-core machine).
const SHAPES = [
  { layers: 2, heads: 2, hidden: 128, intermediate: 512, seed: 3, sets: true },
  { layers: 4, heads: 8, hidden: 512, intermediate: 2048, seed: 4, sets: false },
];

// The shape the model file declares (attention-cli info), which the page must show.
function fileShape(path) {
  const { name, config } = JSON.parse(execFileSync(cli, ['info', '--model', path, '--json']).toString());
  return { layers: config.num_hidden_layers, heads: config.num_attention_heads, hidden: config.hidden_size, name };
}

// A copy of web/ serving the model at path as its only one: manifest, example and set statistics
// made for it by the site build's own functions.
async function siteFor(path, { sets }) {
  const work = mkdtempSync(join(tmpdir(), 'attention-shape-'));
  const bytes = readFileSync(path);
  const name = fileShape(path).name.replace(/[^\w.-]/g, '_');
  const entry = { file: `${name}.attn`, bytes: bytes.length, sha256: sha256(bytes) };
  const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  manifest.default = name;
  manifest.models = { [name]: entry };
  delete manifest.precision;  // the default family's precision study is not this model's
  delete manifest.sets;
  const files = { [`models/${entry.file}`]: bytes };
  if (sets) {
    manifest.sets = makeSets({ modelPath: path, modelKey: name, cli, outDir: join(work, 'sets') });
    for (const file of readdirSync(join(work, 'sets'))) files[`sets/${file}`] = readFileSync(join(work, 'sets', file));
  }
  // The example, with the engine of web/ (absolute paths for the build; the site's stay relative).
  writeFileSync(join(work, `${name}.attn`), bytes);
  const buildManifest = { ...manifest, models: { [name]: { ...entry } }, engine: { ...manifest.engine, glue: join(web, 'engine', 'attention_engine.js'), wasm: join(web, 'engine', 'attention_engine.wasm') } };
  writeFileSync(join(work, 'manifest.json'), JSON.stringify(buildManifest));
  await makeExamples({ manifestPath: join(work, 'manifest.json'), outDir: join(work, 'examples'), cli });
  for (const file of readdirSync(join(work, 'examples')).filter((f) => f.endsWith('.json'))) files[`examples/${file}`] = readFileSync(join(work, 'examples', file));
  files['models/manifest.json'] = JSON.stringify(manifest, null, 2);
  const folder = linkedSite(web, files);
  return { folder, work, name };
}

let browser;
const made = [];

before(async () => {
  for (const file of ['models/manifest.json', 'engine/attention_engine.wasm', 'dist/attention-widgets.js']) {
    assert.ok(existsSync(join(web, file)), `web/${file} is missing: run node scripts/site/build_site.mjs first.`);
  }
  assert.ok(existsSync(cli), `${cli} is missing: run scripts/build.sh native first.`);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const m of made) {
    m.server?.close();
    rmSync(m.folder, { recursive: true, force: true });
    rmSync(m.work, { recursive: true, force: true });
  }
});

async function open(baseUrl, path, errors) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (error) => errors.push(`${path}: ${error.message}`));
  await page.goto(baseUrl + path);
  return { page, context };
}

for (const spec of SHAPES) {
  describe(`a random model of ${spec.layers} layers x ${spec.heads} heads, hidden ${spec.hidden}`, () => {
    let shape;
    let baseUrl;
    const errors = [];

    before(async () => {
      const work = mkdtempSync(join(tmpdir(), 'attention-model-'));
      const path = join(work, 'model.attn');
      execFileSync(PY, ['-m', 'scripts.reference.make_random_model', '--preset', 'mini', '--quiet', '--seed', String(spec.seed),
        '--layers', String(spec.layers), '--heads', String(spec.heads), '--hidden', String(spec.hidden), '--intermediate', String(spec.intermediate),
        '--attn', path], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
      shape = fileShape(path);
      assert.deepEqual([shape.layers, shape.heads, shape.hidden], [spec.layers, spec.heads, spec.hidden], 'the random model has the shape asked for');
      const site = await siteFor(path, spec);
      rmSync(work, { recursive: true, force: true });
      const server = await serve(site.folder);
      made.push({ ...site, server });
      baseUrl = `http://127.0.0.1:${server.server.address().port}/`;
    });

    test('the article goes live with it: its counts in the prose, every head reachable, a panel per head in Figure 5', async () => {
      const { page, context } = await open(baseUrl, '', errors);
      try {
        await openInstrument(page, LOAD_TIMEOUT_MS);
        const loaded = await page.locator('#instrument').evaluate((el) => ({ layers: el.result.layers, heads: el.result.heads, hidden: el.result.hidden }));
        assert.deepEqual(loaded, { layers: shape.layers, heads: shape.heads, hidden: shape.hidden }, 'the instrument runs the model file served');
        const facts = await page.evaluate(() => [...document.querySelectorAll('[data-fact]')].map((el) => [el.dataset.fact, el.textContent]));
        const expected = { layers: shape.layers, heads: shape.heads, hidden: shape.hidden, headDim: shape.hidden / shape.heads, totalHeads: shape.layers * shape.heads };
        for (const [key, value] of Object.entries(expected)) {
          const shown = facts.filter(([k]) => k === key).map(([, text]) => text);
          assert.ok(shown.length > 0, `the prose quotes ${key}`);
          for (const text of shown) assert.match(text, new RegExp(`\\b${value}\\b`), `the prose's ${key} is the model's ${value} (it says "${text}")`);
        }
        assert.equal(facts.find(([k]) => k === 'modelName')?.[1], shape.name, 'the page names the model it runs');
        // Every head from Figure 1's grid: the bars show it, and its row sums to 1.
        for (let layer = 0; layer < shape.layers; ++layer) {
          for (let head = 0; head < shape.heads; ++head) {
            await page.locator(`#instrument button.cell[data-layer="${layer}"][data-head="${head}"]`).click();
            await page.waitForFunction(([l, h]) => {
              const t = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
              return Number(t?.dataset.layer) === l && Number(t?.dataset.head) === h;
            }, [layer, head], { timeout: LOAD_TIMEOUT_MS });
            const sum = await page.locator('#instrument').evaluate(async (el, [l, h]) => {
              const { attentionRow } = await import(new URL('engine/result.js', location.href));
              return attentionRow(el.result, l, h, el.view.token).reduce((a, w) => a + w, 0);
            }, [layer, head]);
            assert.ok(Math.abs(sum - 1) <= ROW_SUM_TOLERANCE, `L${layer + 1} H${head + 1}: the row sums to ${sum}`);
          }
        }
        // At a desktop's and a phone's width each square's label is shown whole or not at all
        // (a square too narrow for it hides it), never cut to an ellipsis.
        for (const width of [1280, 390]) {
          await page.setViewportSize({ width, height: 900 });
          const cut = await page.locator('#instrument').evaluate((el) => [...el.shadowRoot.querySelectorAll('button.cell .tag')]
            .filter((t) => getComputedStyle(t).display !== 'none' && t.scrollWidth > t.clientWidth).map((t) => t.textContent));
          assert.deepEqual(cut, [], `at ${width} px no head label is cut short`);
        }
        await page.setViewportSize({ width: 1280, height: 900 });
        // The model map: a layer per layer and a head per head, the last one chosen lit.
        const map = await page.locator('attention-map').evaluate((el) => ({
          layers: el.shadowRoot.querySelectorAll('li.layer').length,
          heads: el.shadowRoot.querySelectorAll('a.head').length,
          lit: [...el.shadowRoot.querySelectorAll('a.head[aria-current]')].map((a) => `${a.dataset.layer}.${a.dataset.head}`),
        }));
        assert.deepEqual(map, { layers: shape.layers, heads: shape.layers * shape.heads, lit: [`${shape.layers - 1}.${shape.heads - 1}`] }, 'the model map is the model\u2019s shape');
        // Figure 5 draws one panel per head (it is drawn when the reader scrolls near it).
        await page.locator('attention-heads[data-figure="heads"]').scrollIntoViewIfNeeded();
        await page.waitForFunction((count) => document.querySelector('attention-heads[data-figure="heads"]')?.shadowRoot.querySelectorAll('button.multiple').length === count, shape.layers * shape.heads, { timeout: LOAD_TIMEOUT_MS });
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });

    test(`the heads post profiles every head${spec.sets ? ', over the set and over the reader\u2019s sentence' : ' of the reader\u2019s sentence, and says the site has no set statistics'}`, async () => {
      const { page, context } = await open(baseUrl, 'heads.html', errors);
      try {
        await page.locator('#yours[data-ready="true"]').waitFor({ state: 'attached', timeout: LOAD_TIMEOUT_MS });
        const rows = (scope) => page.locator(`table.data[data-scope="${scope}"] tbody tr`).count();
        assert.equal(await rows('yours'), shape.layers * shape.heads, 'a row per head for the reader\u2019s sentence');
        if (spec.sets) {
          await page.locator('#set-table[data-ready="true"]').waitFor({ state: 'attached', timeout: LOAD_TIMEOUT_MS });
          assert.equal(await rows('set'), shape.layers * shape.heads, 'a row per head over the set');
        } else {
          assert.match(await page.locator('#set-table').textContent(), /built without the set statistics/);
        }
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });

    test('every figure of the registry goes live in its iframe form with the model\u2019s shape', async () => {
      for (const [key, figure] of Object.entries(FIGURES)) {
        const { page, context } = await open(baseUrl, `embed.html?widget=${key}`, errors);
        try {
          const element = page.locator(figure.tag);
          await element.waitFor({ state: 'attached', timeout: LOAD_TIMEOUT_MS });
          const needsModel = await element.evaluate((el) => el.constructor.needsModel);
          if (!needsModel) continue;
          await page.waitForFunction((tag) => document.querySelector(tag)?.shadowRoot?.querySelector('.status')?.dataset.mode === 'live', figure.tag, { timeout: LOAD_TIMEOUT_MS });
          const loaded = await element.evaluate((el) => ({ layers: el.result.layers, heads: el.result.heads }));
          assert.deepEqual(loaded, { layers: shape.layers, heads: shape.heads }, `${key}: the figure runs the served model`);
        } finally {
          await context.close();
        }
      }
      assert.deepEqual(errors, []);
    });
  });
}
