// The lenses post (lenses.html, "Which picture of attention agrees with the model?") in Debian's
// Chromium: it loads without errors; its tables show the set statistics the site build wrote
// (attention-cli lens-set on both sentence sets, re-derived by tests/py/claims_check.py), every
// lens's mean rho with its interval on both sets, the paired differences, the per-layer shares
// and mixing ratios; its prose names the best lens and the model the numbers come from; the table
// for the reader's sentence equals shares recomputed here from the engine's own analysis and
// lenses in the page; typed text is inert and the address keeps the sentence; at 360 px nothing
// scrolls sideways; screenshots at 1280 and 390 px go to test-artifacts/. Needs the assembled
// site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { HOSTILE_TEXT as HOSTILE, startSite, waitReady } from './harness.mjs';
import { PRESETS } from '../../web/content.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const artifacts = join(root, 'test-artifacts');
const LOAD_TIMEOUT_MS = 120000;
const SHARE_TOLERANCE = 1e-6;
const READY = ['#faithfulness', '#shares', '#yours'];

let site;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  site = await startSite(web);
});

after(() => site?.close());

// The set statistics the post shows (the manifest's set file).
function setStatistics() {
  const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  assert.ok(manifest.sets?.file, 'the manifest names no set statistics; run node scripts/site/build_site.mjs');
  return { set: JSON.parse(readFileSync(join(web, 'models', manifest.sets.file), 'utf8')), entry: manifest.sets };
}

// The page's number format (web/widgets/format.js fmt): a minus sign, fixed digits.
const fmt = (v, digits = 3) => {
  const text = Math.abs(v).toFixed(digits);
  return v < 0 && Number(text) !== 0 ? `\u2212${text}` : text;
};

async function open(path, size) {
  const opened = await site.open(path, size);
  for (const selector of READY) await waitReady(opened.page, selector, LOAD_TIMEOUT_MS);
  return opened;
}

describe('the lenses post', { timeout: 600000 }, () => {
  test('its tables and prose are the set statistics of both sets, with intervals and the model named', async () => {
    const { set, entry } = setStatistics();
    const a = set.lenses.summary;
    const b = set.heldout.lenses.summary;
    const { page, context, errors } = await open('lenses.html');
    // Every lens and the baseline, each with its mean rho and interval on both sets.
    const rows = await page.locator('#faithfulness table[data-scope="faithfulness"] tbody tr').evaluateAll((trs) => trs.map((tr) => ({
      lens: tr.dataset.lens, rho: Number(tr.dataset.rho), heldout: Number(tr.dataset.heldout), cells: [...tr.querySelectorAll('td')].map((td) => td.textContent),
    })));
    assert.deepEqual(rows.map((r) => r.lens).sort(), Object.keys(a.faithfulness).sort());
    for (const r of rows) {
      const x = a.faithfulness[r.lens].mean_rho;
      const y = b.faithfulness[r.lens].mean_rho;
      assert.equal(r.rho, x.value);
      assert.equal(r.heldout, y.value);
      assert.equal(r.cells[0], `${fmt(x.value)} [${fmt(x.low)}, ${fmt(x.high)}]`);
      assert.equal(r.cells[1], `${fmt(y.value)} [${fmt(y.low)}, ${fmt(y.high)}]`);
      assert.equal(r.cells[3], `${a.faithfulness[r.lens].undefined}, ${b.faithfulness[r.lens].undefined}`);
    }
    // The lenses (not the baseline) come best first.
    const order = rows.map((r) => r.lens).filter((k) => k !== 'distance');
    assert.equal(order[0], a.best);
    for (let k = 1; k < order.length; ++k) assert.ok(a.faithfulness[order[k - 1]].mean_rho.value >= a.faithfulness[order[k]].mean_rho.value);
    // Each paired difference from the raw weight is the one the core measured.
    const pair = (s, x, y) => {
      const d = s.differences.find((p) => (p.a === x && p.b === y) || (p.a === y && p.b === x));
      return d.a === x ? d.mean : { value: -d.mean.value, low: -d.mean.high, high: -d.mean.low };
    };
    const signed = (v) => `${v >= 0 ? '+' : '\u2212'}${fmt(Math.abs(v))}`;
    const differences = await page.locator('#faithfulness table[data-scope="differences"] tbody tr').evaluateAll((trs) => trs.map((tr) => ({
      lens: tr.dataset.lens, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent),
    })));
    for (const r of differences) {
      if (r.lens === 'attention_last_mean') continue;
      const d = pair(a, r.lens, 'attention_last_mean');
      assert.equal(r.cells[0], `${signed(d.value)} [${signed(d.low)}, ${signed(d.high)}]`, r.lens);
    }
    // The big number is the best lens's mean rho, and the prose names the model.
    assert.equal(await page.locator('.big-number').textContent(), `\u03c1 = ${fmt(a.faithfulness[a.best].mean_rho.value)}`);
    const main = await page.locator('main').textContent();
    assert.match(main, /trained for this project, not the original bert-mini/);
    assert.ok(main.includes(set.model.name), 'the set model is not named');
    assert.match(main, /expected \u03c1 of 0/);
    const conclusion = await page.locator('[data-fact="conclusion"]').textContent();
    assert.ok(conclusion.length > 200 && !conclusion.includes('\u2026'), conclusion);
    assert.match(conclusion, /\[SEP\]/);
    // Both sets' share tables, every cell the core's number.
    for (const [scope, s] of [['set', a], ['heldout', b]]) {
      const cells = await page.locator(`#shares table[data-scope="${scope}"] tbody tr`).evaluateAll((trs) => trs.map((tr) => ({
        category: tr.dataset.category, reading: tr.dataset.reading, values: [...tr.querySelectorAll('td')].map((td) => Number(td.dataset.value)),
      })));
      assert.equal(cells.length, 4 * 3 + 1);
      for (const c of cells) {
        const want = c.category === 'mixing' ? s.mixing_ratio : s.shares[c.reading][c.category];
        assert.deepEqual(c.values, want.map((e) => e.value), `${scope} ${c.category} ${c.reading}`);
      }
    }
    // The download link is the per-target file.
    assert.equal(await page.locator('#targets-link').getAttribute('href'), new URL(entry.lens_words, `${site.baseUrl}models/`).href);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the reader\u2019s sentence: its shares equal those recomputed from the engine\u2019s analysis and lenses; typed text is inert; 360 px', async () => {
    const { page, context, errors } = await open('lenses.html');
    const recompute = (text) => page.evaluate(async (sentence) => {
      const { getEngine } = await import('/engine/engine.js');
      const engine = await getEngine();
      const r = await engine.analyze(sentence);
      const lenses = await engine.lenses(sentence);
      const { n, layers, heads } = r;
      const ordinary = [];
      for (let i = 0; i < n; ++i) if (r.roles[i] === 0) ordinary.push(i);
      const out = {};
      const add = (key, l, v) => { out[key] ??= new Array(layers).fill(0); out[key][l] += v / ordinary.length; };
      for (let l = 0; l < layers; ++l) {
        for (const i of ordinary) {
          add('mixing', l, lenses.mixing_ratio[l * n + i]);
          const attention = new Array(n).fill(0);
          for (let h = 0; h < heads; ++h) for (let j = 0; j < n; ++j) attention[j] += r.attention[((l * heads + h) * n + i) * n + j] / heads;
          const readings = { attention, weighted_layer: Array.from(lenses.weighted_layer.slice((l * n + i) * n, (l * n + i + 1) * n)), alti: Array.from(lenses.alti.slice((l * n + i) * n, (l * n + i + 1) * n)) };
          for (const [name, row] of Object.entries(readings)) {
            const total = row.reduce((x, y) => x + y, 0);
            add(`${name} cls`, l, row[0] / total);
            add(`${name} sep`, l, row[n - 1] / total);
            add(`${name} self`, l, row[i] / total);
            add(`${name} punctuation`, l, row.reduce((x, v, j) => x + (r.roles[j] === 3 ? v : 0), 0) / total);
          }
        }
      }
      return out;
    }, text);
    const shown = () => page.locator('#yours table[data-scope="yours"] tbody tr').evaluateAll((trs) => Object.fromEntries(trs.map((tr) => [
      tr.dataset.category === 'mixing' ? 'mixing' : `${tr.dataset.reading} ${tr.dataset.category}`, [...tr.querySelectorAll('td')].map((td) => Number(td.dataset.value)),
    ])));
    const compare = async (text) => {
      const want = await recompute(text);
      const got = await shown();
      assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
      let worst = 0;
      for (const key of Object.keys(want)) want[key].forEach((v, l) => { worst = Math.max(worst, Math.abs(v - got[key][l])); });
      assert.ok(worst < SHARE_TOLERANCE, `the reader's shares differ from the engine's by ${worst}`);
    };
    assert.equal(await page.locator('#yours').getAttribute('data-sentence'), PRESETS[0]);
    await compare(PRESETS[0]);
    // A typed sentence: drawn, kept in the address, inert.
    await page.fill('#sentence', HOSTILE);
    await page.press('#sentence', 'Enter');
    await page.waitForFunction((s) => document.getElementById('yours').dataset.sentence === s, HOSTILE, { timeout: LOAD_TIMEOUT_MS });
    await compare(HOSTILE);
    const found = await page.evaluate(() => ({
      injected: window.__injected ?? null, img: document.querySelectorAll('main img').length, bold: [...document.querySelectorAll('main b')].filter((b) => b.textContent === 'bold').length,
    }));
    assert.deepEqual(found, { injected: null, img: 0, bold: 0 });
    assert.equal(new URLSearchParams(new URL(page.url()).hash.slice(1)).get('s'), HOSTILE);
    assert.deepEqual(errors, []);
    await context.close();

    const phone = await open(`lenses.html#${new URLSearchParams({ s: PRESETS[1] })}`, { width: 360, height: 740 });
    assert.equal(await phone.page.locator('#yours').getAttribute('data-sentence'), PRESETS[1]);
    const over = await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(over <= 0, `lenses.html scrolls sideways by ${over} px at 360 px`);
    assert.deepEqual(phone.errors, []);
    await phone.context.close();
  });

  test('screenshots at 1280 and 390 px', async () => {
    for (const width of [1280, 390]) {
      const { page, context, errors } = await open('lenses.html', { width });
      await page.waitForTimeout(300);
      await page.screenshot({ path: join(artifacts, `post-lenses-${width}.png`), fullPage: true });
      assert.deepEqual(errors, []);
      await context.close();
    }
  });
});
