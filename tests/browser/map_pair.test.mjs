// The article's model map (<attention-map>) and its two-sentence figure (<attention-pair>) in
// Debian's Chromium: the map has a head per head of the loaded model, lights the head Figure 1
// shows and follows a head chosen in the instrument, and every one of its parts links to an id of
// the page (following one keeps the reader's sentence); the pair figure shows the word's row in
// both sentences, each the engine's own row and summing to 1, and a difference equal to row A
// minus row B token by token (the largest gap printed), for the Winograd preset and for a pair
// of different lengths; a head chosen in the pair figure is every figure's. Needs the assembled
// site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { PAIR_PRESETS } from '../../web/content.js';
import { figuresDrawn, modelShape, openInstrument, ROW_SUM_TOLERANCE, shownSentence, startSite, typeSentence } from './harness.mjs';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const LOAD_TIMEOUT_MS = 90000;
// The figure subtracts the two rows in float64 from the engine's float32 weights, as this test
// does from the same numbers: anything over this is a misaligned or wrong row, not rounding.
const DIFFERENCE_TOLERANCE = 1e-9;

let site;
before(async () => {
  site = await startSite(web);
});
after(() => site?.close());

// The head Figure 1 shows, and the head the map lights (layer and head from 0).
const instrumentHead = (page) => page.locator('#instrument table.bars').evaluate((t) => [Number(t.dataset.layer), Number(t.dataset.head)]);
const litHeads = (page) => page.locator('attention-map').evaluate((el) => [...el.shadowRoot.querySelectorAll('a.head[aria-current]')]
  .map((a) => [Number(a.dataset.layer), Number(a.dataset.head)]));

async function mapFollows(page, expected) {
  await page.waitForFunction(([l, h]) => {
    const lit = [...document.querySelector('attention-map').shadowRoot.querySelectorAll('a.head[aria-current]')];
    return lit.length === 1 && Number(lit[0].dataset.layer) === l && Number(lit[0].dataset.head) === h;
  }, expected, { timeout: 30000 });
  assert.deepEqual(await litHeads(page), [expected]);
}

// What the pair figure draws: each panel's rows (full-precision values) and where they come from.
async function pairShown(page) {
  return page.locator('attention-pair').evaluate((el) => {
    const panel = (kind) => {
      const table = el.shadowRoot.querySelector(`section[data-kind="${kind}"] table.bars`);
      return {
        ...table.dataset,
        labels: [...table.querySelectorAll('tbody tr')].map((tr) => tr.querySelector('th').textContent),
        values: [...table.querySelectorAll('tbody tr')].map((tr) => tr.dataset.value),
      };
    };
    return { first: panel('first'), second: panel('second'), difference: panel('difference'), facts: el.shadowRoot.querySelector('.pair-facts').textContent };
  });
}

// The engine's own rows for both sentences, from the page's shared engine.
async function engineRows(page, { first, second }) {
  return page.evaluate(async ([a, b]) => {
    const { getEngine } = await import('/engine/engine.js');
    const { attentionRow } = await import('/engine/result.js');
    const engine = await getEngine();
    const row = async (s) => {
      const result = await engine.analyze(s.sentence);
      return { tokens: result.tokens.map((t) => t.text), values: Array.from(attentionRow(result, Number(s.layer), Number(s.head), Number(s.token)), String) };
    };
    return [await row(a), await row(b)];
  }, [first, second]);
}

// Checks the pair figure against the engine: both rows are the engine's and sum to 1, and the
// difference is row A minus row B over the tokens as this test aligns them (shared beginning and
// end by place, the tokens between in order, a token without a partner against 0). Returns the
// largest gap between the figure's difference and A - B.
async function checkPair(t, page, what) {
  const shown = await pairShown(page);
  const [a, b] = await engineRows(page, shown);
  assert.deepEqual(shown.first.values, a.values, `${what}: the first row is the engine's`);
  assert.deepEqual(shown.second.values, b.values, `${what}: the second row is the engine's`);
  assert.deepEqual([shown.first.layer, shown.first.head], [shown.second.layer, shown.second.head], `${what}: one head for both`);
  for (const [name, row] of [['first', a.values], ['second', b.values]]) {
    const sum = row.reduce((s, v) => s + Number(v), 0);
    assert.ok(Math.abs(sum - 1) <= ROW_SUM_TOLERANCE, `${what}: the ${name} row sums to ${sum}`);
  }
  let start = 0;
  while (start < a.tokens.length && start < b.tokens.length && a.tokens[start] === b.tokens[start]) ++start;
  let end = 0;
  while (end < a.tokens.length - start && end < b.tokens.length - start && a.tokens.at(-1 - end) === b.tokens.at(-1 - end)) ++end;
  const pairs = [];
  for (let i = 0; i < start; ++i) pairs.push([i, i]);
  const ma = a.tokens.length - start - end;
  const mb = b.tokens.length - start - end;
  for (let k = 0; k < Math.max(ma, mb); ++k) pairs.push([k < ma ? start + k : -1, k < mb ? start + k : -1]);
  for (let k = end; k > 0; --k) pairs.push([a.tokens.length - k, b.tokens.length - k]);
  assert.equal(shown.difference.values.length, pairs.length, `${what}: one difference per aligned token`);
  assert.equal(Number(shown.second.token), pairs.find(([i]) => i === Number(shown.first.token))[1], `${what}: the word's partner`);
  let largest = 0;
  pairs.forEach(([i, j], k) => {
    const expected = (i >= 0 ? Number(a.values[i]) : 0) - (j >= 0 ? Number(b.values[j]) : 0);
    largest = Math.max(largest, Math.abs(Number(shown.difference.values[k]) - expected));
  });
  t.diagnostic(`${what}: largest |difference - (row A - row B)| = ${largest.toExponential(2)} over ${pairs.length} tokens (tolerance ${DIFFERENCE_TOLERANCE})`);
  assert.ok(largest <= DIFFERENCE_TOLERANCE, `${what}: the difference is ${largest} away from row A - row B`);
  const sum = shown.difference.values.reduce((s, v) => s + Number(v), 0);
  assert.ok(Math.abs(sum) <= 2 * ROW_SUM_TOLERANCE, `${what}: the differences sum to ${sum}, not 0`);
  return { shown, pairs };
}

describe('the model map and the two-sentence figure', { timeout: 300000 }, () => {
  test('the map is the loaded model\u2019s shape, lights the head Figure 1 shows, follows the instrument, and links every part to the page', async () => {
    const { page, context, errors } = await site.open('');
    await page.locator('#instrument .status[data-mode="example"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await page.locator('attention-map a.head').first().waitFor({ timeout: LOAD_TIMEOUT_MS });
    const shape = await modelShape(page);
    assert.equal(await page.locator('attention-map a.head').count(), shape.layers * shape.heads);
    assert.equal(await page.locator('attention-map li.layer').count(), shape.layers);
    await mapFollows(page, await instrumentHead(page));
    // Every part links to an element of the page.
    const links = await page.locator('attention-map').evaluate((el) => [...el.shadowRoot.querySelectorAll('a')].map((a) => ({ part: a.dataset.part, href: a.getAttribute('href') })));
    assert.deepEqual(new Set(links.map((l) => l.part)), new Set(['embeddings', 'attention', 'head', 'residual', 'layerNorm', 'feedForward', 'output']));
    const missing = await page.evaluate((hrefs) => hrefs.filter((href) => !/^#[\w-]+$/.test(href) || !document.getElementById(href.slice(1))), [...new Set(links.map((l) => l.href))]);
    assert.deepEqual(missing, [], 'map links without their place on the page');

    await openInstrument(page);
    await figuresDrawn(page);
    // The engine's model info gives the feed-forward width and the vocabulary.
    assert.match(await page.locator('attention-map li.ffn .sub').first().textContent(), /^\d+ \u2192 [\d,]+ \u2192 \d+$/);
    assert.match(await page.locator('attention-map a[data-part="output"] .sub').textContent(), /each of [\d,]+ entries/);
    const first = await instrumentHead(page);
    await mapFollows(page, first);
    // A head chosen in the instrument: the map lights it.
    const target = [(first[0] + 1) % shape.layers, (first[1] + 1) % shape.heads];
    await page.click(`#instrument button.cell[data-layer="${target[0]}"][data-head="${target[1]}"]`);
    await page.waitForFunction(([l, h]) => {
      const t = document.querySelector('#instrument').shadowRoot.querySelector('table.bars');
      return Number(t.dataset.layer) === l && Number(t.dataset.head) === h;
    }, target);
    await mapFollows(page, target);
    // The map's head link chooses its head for Figure 1, and its other links keep the sentence.
    const sentence = 'Dogs chase the ball, and the ball rolls away.';
    await typeSentence(page, sentence);
    await page.locator('attention-map a.head[data-layer="0"][data-head="0"]').click();
    await page.waitForFunction(() => {
      const t = document.querySelector('#instrument').shadowRoot.querySelector('table.bars');
      return t.dataset.layer === '0' && t.dataset.head === '0';
    });
    await mapFollows(page, [0, 0]);
    await page.waitForFunction(() => /[#&]l=0&h=0(&|$)/.test(location.hash), null, { timeout: 10000 });
    const address = await page.evaluate(() => location.hash);
    await page.locator('attention-map a[data-part="feedForward"]').first().click();
    // The page scrolls there and the focus goes there; the address keeps the reader's view.
    await page.waitForFunction(() => { const r = document.getElementById('feed-forward').getBoundingClientRect(); return r.top > -2 && r.top < innerHeight / 2; }, null, { timeout: 10000 });
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'feed-forward');
    assert.equal(await page.evaluate(() => location.hash), address, 'following a map link kept the view in the address');
    assert.equal(await shownSentence(page), sentence, 'following a map link kept the reader\u2019s sentence');
    assert.deepEqual(await instrumentHead(page), [0, 0]);
    // One tab stop; the arrow keys move from part to part.
    await page.locator('attention-map a.head[aria-current]').focus();
    await page.keyboard.press('ArrowRight');
    const focused = await page.locator('attention-map').evaluate((el) => ({ part: el.shadowRoot.activeElement?.dataset.part, stops: [...el.shadowRoot.querySelectorAll('a')].filter((a) => a.tabIndex === 0).length }));
    assert.deepEqual(focused, { part: 'head', stops: 1 });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the Winograd pair: both rows are the engine\u2019s and sum to 1, and the difference is row A minus row B; a pair of different lengths too', async (t) => {
    const { page, context, errors } = await site.open('');
    const pair = page.locator('attention-pair');
    await pair.evaluate((el) => el.scrollIntoView());
    await page.locator('attention-pair .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await page.locator('attention-pair section[data-kind="difference"] tbody tr').first().waitFor({ state: 'attached', timeout: LOAD_TIMEOUT_MS });
    const { shown } = await checkPair(t, page, 'the preset pair');
    const [big, small] = PAIR_PRESETS[0];
    assert.equal(shown.first.sentence, big);
    assert.equal(shown.second.sentence, small);
    assert.ok(shown.difference.labels.includes('big / small'), `the changed word is named by both its forms: ${shown.difference.labels.join(' ')}`);
    // The word is "it" in both, and the head is Figure 1's.
    const tokens = await page.locator('attention-pair button.chip[aria-pressed="true"]').allTextContents();
    assert.deepEqual(tokens, ['it']);
    assert.deepEqual([Number(shown.first.layer), Number(shown.first.head)], await instrumentHead(page));
    assert.match(shown.facts, /Largest difference: [+\u2212]/);

    // Another pair, of different lengths: a token without a partner is compared with 0.
    await pair.locator('input#first').fill('The cat sat on the mat.');
    await pair.locator('input#second').fill('The black cat sat on the mat.');
    await pair.locator('button[type="submit"]').click();
    await page.waitForFunction(() => document.querySelector('attention-pair').shadowRoot.querySelector('section[data-kind="second"] table.bars')?.dataset.sentence === 'The black cat sat on the mat.');
    const other = await checkPair(t, page, 'a pair of different lengths');
    assert.ok(other.pairs.some(([i]) => i < 0), 'the longer sentence has a token without a partner');
    // A word of its own: a chip of the first sentence.
    await pair.locator('button.chip', { hasText: /^mat$/ }).click();
    await page.waitForFunction(() => document.querySelector('attention-pair').shadowRoot.querySelector('section[data-kind="first"] table.bars').dataset.token === '6');
    await checkPair(t, page, 'the word "mat"');
    // A head chosen in the pair figure is every figure's.
    await openInstrument(page);
    await pair.locator('select').selectOption('0,1');
    await page.waitForFunction(() => {
      const t = document.querySelector('#instrument').shadowRoot.querySelector('table.bars');
      return t.dataset.layer === '0' && t.dataset.head === '1';
    });
    await page.waitForFunction(() => document.querySelector('attention-pair').shadowRoot.querySelector('section[data-kind="first"] table.bars').dataset.head === '1');
    await checkPair(t, page, 'layer 1, head 2');
    await mapFollows(page, [0, 1]);
    assert.deepEqual(errors, []);
    await context.close();
  });
});
