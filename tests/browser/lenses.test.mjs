// The lenses on the page (web/engine/lenses.js, wasm/core/lenses.h): the instrument's lens switch
// redraws its row with the lens's numbers, which equal the native CLI's `lenses` for the same
// sentence; the URL keeps the lens and a link with it opens on it; export writes the lens's
// numbers; the mixing bar and the live faithfulness score match the CLI; and <attention-row> on
// its own takes the lens as an attribute. Needs the site (scripts/site/build_site.mjs) and
// build/native/attention-cli.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startSite } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const cli = join(root, 'build', 'native', 'attention-cli');
const model = join(root, 'model_data', 'explainer-mini.compact.attn');
const LOAD_TIMEOUT_MS = 60000;
// The wasm engine (SIMD128, no FMA) against the native one (Eigen, FMA) on the shipped model:
// the lens numbers are shares computed from float32 passes that sum in different orders.
const LENS_TOLERANCE = 1e-4;
// Spearman's rho from occlusion that differs by float rounding between the two builds.
const RHO_TOLERANCE = 1e-3;
const SENTENCE = 'The dog chased the ball because it was bored.';

let site;
before(async () => {
  site = await startSite(web);
});
after(() => site?.close());

const cliLenses = (args) => JSON.parse(execFileSync(cli, ['lenses', '--model', model, '--json', ...args, SENTENCE], { encoding: 'utf8', maxBuffer: 1 << 28 }));

async function openArticle(hash) {
  const context = await site.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${site.baseUrl}#${hash}`);
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
  return { context, page, errors };
}

// The instrument's drawn row once it shows `lens` for `token`: {layer, head, values (every
// token's, in order), ratio (the mixing bar's)}.
async function drawnRow(page, lens, token) {
  const table = page.locator('#instrument table.bars');
  await page.waitForFunction(([l, t]) => {
    const el = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
    return el?.dataset.lens === l && el.dataset.token === String(t) && !('pending' in el.dataset);
  }, [lens, token], { timeout: LOAD_TIMEOUT_MS });
  return table.evaluate((t) => {
    const root = t.getRootNode();
    const values = Array.from(t.querySelectorAll('tbody tr'), (tr) => Number(tr.dataset.value));
    const mixing = root.querySelector('.mixing');
    return { layer: Number(t.dataset.layer), head: Number(t.dataset.head), values, ratio: mixing.dataset.ratio === undefined ? null : Number(mixing.dataset.ratio) };
  });
}

const largestDifference = (a, b) => a.reduce((m, v, k) => Math.max(m, Math.abs(v - b[k])), 0);

describe('lenses', () => {
  test('the lens switch redraws the row with the CLI\u2019s numbers, the URL keeps the lens, export writes it', async () => {
    const token = 7;  // "it"
    const { context, page, errors } = await openArticle(`s=${encodeURIComponent(SENTENCE)}&t=${token}`);
    const full = cliLenses(['--flow-rows', String(token)]);
    const n = full.ids.length;
    const rows = {
      weighted: (l, h) => { const r = full.weighted[l][h][token]; const s = r.reduce((a, b) => a + b, 0); return r.map((v) => v / s); },
      alti: (l) => full.alti[l][token],
      rollout: () => full.rollout[token],
      flow: () => full.flow_normalized[token],
    };
    for (const lens of Object.keys(rows)) {
      await page.locator(`#instrument button[data-lens="${lens}"]`).click();
      const drawn = await drawnRow(page, lens, token);
      assert.equal(drawn.values.length, n);
      const want = rows[lens](drawn.layer, drawn.head);
      const diff = largestDifference(drawn.values, want);
      console.log(`lens ${lens}: drawn row against the CLI, max |diff| ${diff.toExponential(2)} (tol ${LENS_TOLERANCE})`);
      assert.ok(diff <= LENS_TOLERANCE, `${lens}: ${diff}`);
      assert.ok(Math.abs(drawn.values.reduce((a, b) => a + b, 0) - 1) < 1e-4, `${lens} row does not sum to 1`);
      await page.waitForFunction((l) => new URLSearchParams(location.hash.slice(1)).get('lens') === l, lens);
      // Export writes the numbers drawn, and its title names the lens.
      const exported = await page.locator('#instrument').evaluate((el) => ({ title: el.exportTitle(el.view), values: el.exportPanels(el.view).panels[0].values }));
      assert.ok(largestDifference(exported.values, drawn.values) <= 1e-7);
      assert.match(exported.title, /flow|rollout|ALTI|size/i);
      // The mixing bar: the share of the token's new vector from other tokens in the layer.
      assert.ok(Math.abs(drawn.ratio - full.mixing_ratio[drawn.layer][token]) <= LENS_TOLERANCE, `mixing ratio ${drawn.ratio} vs ${full.mixing_ratio[drawn.layer][token]}`);
    }
    const svg = await page.locator('#instrument').evaluate((el) => el.toSVG());
    assert.match(svg, /flow, every layer compounded/);
    // Back to the weights: the lens leaves the URL (the default is not written).
    await page.locator('#instrument button[data-lens="weight"]').click();
    await drawnRow(page, 'weight', token);
    await page.waitForFunction(() => !new URLSearchParams(location.hash.slice(1)).has('lens'));
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a link with a lens opens on it; the faithfulness score matches the CLI', async () => {
    const token = 4;  // "ball"
    const { context, page, errors } = await openArticle(`s=${encodeURIComponent(SENTENCE)}&t=${token}&lens=alti`);
    await drawnRow(page, 'alti', token);
    const grade = page.locator('#instrument .faithfulness button');
    await grade.click();
    await page.waitForFunction((t) => {
      const table = document.getElementById('instrument').shadowRoot.querySelector('.faithfulness table');
      return table && !table.hidden && table.dataset.token === String(t);
    }, token, { timeout: LOAD_TIMEOUT_MS });
    const shown = await page.locator('#instrument .faithfulness table').evaluate((t) => Object.fromEntries(Array.from(t.querySelectorAll('tbody tr'), (tr) => [tr.dataset.lens, Number(tr.dataset.rho)])));
    const want = cliLenses(['--mask', String(token), '--target', String(token), '--flow-rows', 'none']).faithfulness;
    for (const [lens, rho] of Object.entries(want)) {
      const diff = Math.abs(shown[lens] - rho);
      console.log(`faithfulness ${lens}: page ${shown[lens]}, CLI ${rho}, |diff| ${diff.toExponential(2)} (tol ${RHO_TOLERANCE})`);
      assert.ok(diff <= RHO_TOLERANCE, `${lens}: page ${shown[lens]} vs CLI ${rho}`);
    }
    // Once asked, the score follows the selected word.
    await page.locator('#instrument .chip[data-token="2"]').click();
    await page.waitForFunction(() => document.getElementById('instrument').shadowRoot.querySelector('.faithfulness table')?.dataset.token === '2', null, { timeout: LOAD_TIMEOUT_MS });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('<attention-row> on its own takes lens as an attribute, and a bad value is named', async () => {
    const context = await site.browser.newContext({ viewport: { width: 800, height: 900 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${site.baseUrl}embed.html?widget=row&sentence=${encodeURIComponent(SENTENCE)}&word=it&lens=rollout`);
    const row = page.locator('attention-row');
    await page.waitForFunction(() => document.querySelector('attention-row')?.shadowRoot?.querySelector('table.bars')?.dataset.lens === 'rollout', null, { timeout: LOAD_TIMEOUT_MS });
    const values = await row.evaluate((el) => Array.from(el.shadowRoot.querySelectorAll('table.bars tbody tr'), (tr) => Number(tr.dataset.value)));
    const want = cliLenses([]).rollout[7];
    assert.ok(largestDifference(values, want) <= LENS_TOLERANCE);
    await row.evaluate((el) => el.setAttribute('lens', 'alti'));
    await page.waitForFunction(() => document.querySelector('attention-row').shadowRoot.querySelector('table.bars')?.dataset.lens === 'alti', null, { timeout: LOAD_TIMEOUT_MS });
    await row.evaluate((el) => el.setAttribute('lens', 'sideways'));
    await page.waitForFunction(() => /lens=\u201csideways\u201d was not used/.test(document.querySelector('attention-row').shadowRoot.querySelector('.notes')?.textContent ?? ''), null, { timeout: LOAD_TIMEOUT_MS });
    assert.deepEqual(errors, []);
    await context.close();
  });
});
