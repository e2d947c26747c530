// The article page in Debian's Chromium (driven by npm playwright-core): loading with progress,
// the button that opens the instrument, every displayed row against the engine's own numbers,
// switching heads, typing, the softmax lab, hostile text, a phone-sized viewport, a broken
// model URL, and screenshots in test-artifacts/. Needs the assembled site:
//   node scripts/site/build_site.mjs   (writes web/models/ and, with the CLI built, web/examples/)
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { PRESETS } from '../../web/content.js';
import { figuresDrawn, headsColumns, launchChromium, modelShape, ROW_SUM_TOLERANCE, serve, typeSentence } from './harness.mjs';


const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const artifacts = join(root, 'test-artifacts');
const LOAD_TIMEOUT_MS = 60000;

const manifestPath = join(web, 'models', 'manifest.json');

let server;
let baseUrl;
let browser;

before(async () => {
  assert.ok(existsSync(manifestPath), `${manifestPath} is missing: run node scripts/site/build_site.mjs first.`);
  assert.ok(existsSync(join(web, 'engine', 'attention_engine.wasm')), 'web/engine/attention_engine.wasm is missing: run node scripts/site/build_site.mjs first.');
  mkdirSync(artifacts, { recursive: true });
  server = await serve(web);
  baseUrl = `http://127.0.0.1:${server.server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

// A fresh context per test: its own Cache API, so every test downloads the model afresh.
// before(page) runs before the page is opened (to hear its first requests).
async function openPage({ viewport = { width: 1280, height: 900 }, path = '', colorScheme = 'light', throttleBytesPerSecond = 0, before = () => {} } = {}) {
  const context = await browser.newContext({ viewport, colorScheme });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  if (throttleBytesPerSecond) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: throttleBytesPerSecond, uploadThroughput: -1 });
  }
  // Records what the loader says as it changes, so the test sees the progress it went through.
  await page.addInitScript(() => {
    window.__progress = [];
    addEventListener('DOMContentLoaded', () => {
      const bar = document.getElementById('progress');
      const text = document.getElementById('progress-text');
      const open = document.getElementById('open');
      const record = () => window.__progress.push({ percent: Number(bar.dataset.percent ?? bar.value), text: text.textContent, openVisible: !open.hidden });
      new MutationObserver(record).observe(document.getElementById('loader'), { subtree: true, childList: true, attributes: true, characterData: true });
    });
  });
  before(page);
  await page.goto(baseUrl + path);
  return { page, context, errors };
}

async function openInstrument(page) {
  await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor();
}

// The engine's own row for (sentence, layer, head, token), from the page's shared engine.
async function engineRow(page, { sentence, layer, head, token }) {
  return page.evaluate(async (args) => {
    const engine = await import('/engine/engine.js');
    const { attentionRow } = await import('/engine/result.js');
    const result = await (await engine.getEngine()).analyze(args.sentence);
    return Array.from(attentionRow(result, args.layer, args.head, args.token), String);
  }, { sentence, layer, head, token });
}

async function engineTokens(page, sentence) {
  return page.evaluate(async (text) => {
    const engine = await import('/engine/engine.js');
    return (await (await engine.getEngine()).analyze(text)).tokens.map((t) => t.text);
  }, sentence);
}

// What the instrument's row chart shows: its selection and every bar's full-precision value.
async function displayedRow(page) {
  await figuresDrawn(page, 30000, '#instrument');
  return page.locator('#instrument table.bars').evaluate((table) => ({
    sentence: table.dataset.sentence,
    layer: Number(table.dataset.layer),
    head: Number(table.dataset.head),
    token: Number(table.dataset.token),
    values: [...table.querySelectorAll('tbody tr')].map((tr) => tr.dataset.value),
    sumText: table.getRootNode().querySelector('.row-sum').textContent,
  }));
}

async function checkDisplayedAgainstEngine(page, expected) {
  // A click's row is drawn a few tasks after the click (the analysis comes from the worker's memo).
  if (expected.token !== undefined) {
    await page.waitForFunction((t) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.token === String(t), expected.token, { timeout: 30000 });
  }
  const shown = await displayedRow(page);
  assert.equal(shown.sentence, expected.sentence);
  if (expected.token !== undefined) assert.equal(shown.token, expected.token);
  const sum = shown.values.reduce((a, v) => a + Number(v), 0);
  assert.ok(Math.abs(sum - 1) <= ROW_SUM_TOLERANCE, `row of token ${shown.token} (layer ${shown.layer}, head ${shown.head}) sums to ${sum}`);
  assert.equal(shown.sumText, sum.toFixed(6));
  assert.deepEqual(shown.values, await engineRow(page, shown));
  return shown;
}

const presets = () => PRESETS;

// The page's downloads, and the engine's (the wasm, and the model where the worker requested it
// itself, come through its worker, whose requests are not in the page's resource timing; the
// model's request the page made for it is, once).
async function resourceBytes(page) {
  return page.evaluate(async () => {
    const engine = await (await import('/engine/engine.js')).getEngine();
    const page = performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
      .filter((e) => e.name !== engine.info.url)
      .reduce((a, e) => a + (e.transferSize || e.encodedBodySize || 0), 0);
    return page + (engine.thread === 'worker' ? engine.timings.wasmBytes + engine.timings.modelBytes : 0);
  });
}

async function marks(page) {
  return page.evaluate(() => Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, Math.round(m.startTime)])));
}

// Page positions of the section headings: equal before and after the live figures arrive
// means the swap moved nothing.
async function headingTops(page) {
  return page.$$eval('main h2', (hs) => hs.map((h) => Math.round(h.getBoundingClientRect().top + scrollY)));
}

describe('article page', { timeout: 240000 }, () => {
  test('loads with progress to 100%, then the button opens the instrument without moving the page', async () => {
    // Throttled so that the download takes long enough to show progress on the way.
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    const totalBytes = manifest.engine.bytes + manifest.models[manifest.default].bytes;
    const { page, context, errors } = await openPage({ throttleBytesPerSecond: Math.max(4e6, totalBytes / 1.5) });
    await page.locator('#instrument .status[data-mode="example"]').waitFor();
    const exampleRow = await displayedRow(page);
    const before = await headingTops(page);
    await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
    const progress = await page.evaluate(() => window.__progress);
    const percents = progress.filter((p) => !p.openVisible).map((p) => p.percent);
    assert.ok(percents.some((p) => p > 0 && p < 100), `progress went ${JSON.stringify(percents)}; expected values between 0 and 100`);
    assert.ok(progress.some((p) => p.percent === 100 && /\(100%\)/.test(p.text)), 'the loader never said 100%');
    for (let k = 1; k < percents.length; ++k) assert.ok(percents[k] >= percents[k - 1], `progress went backwards: ${percents}`);
    assert.match(await page.locator('#progress-text').textContent(), /100%/);

    await page.click('#open');
    await page.locator('#instrument .status[data-mode="live"]').waitFor();
    assert.equal(await page.evaluate(() => document.getElementById('instrument').shadowRoot.activeElement?.id), 'sentence');
    // The live instrument opens on the example's sentence and selection, with the engine's numbers.
    const liveRow = await checkDisplayedAgainstEngine(page, { sentence: exampleRow.sentence, token: exampleRow.token });
    assert.deepEqual([liveRow.layer, liveRow.head], [exampleRow.layer, exampleRow.head]);
    // The example came from the CLI (9 significant digits); the live row from wasm.
    exampleRow.values.forEach((v, j) => assert.ok(Math.abs(Number(v) - Number(liveRow.values[j])) < 1e-4, `example and live differ at ${j}`));
    await page.evaluate(() => scrollTo(0, 0));
    assert.deepEqual(await headingTops(page), before, 'section headings moved when the live figures replaced the example');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('for three sentences, every token\u2019s row sums to 1 and equals the engine\u2019s', async () => {
    const { page, context, errors } = await openPage();
    await openInstrument(page);
    const sentences = [presets()[2], 'Crème brûlée, naïve café \u2014 déjà vu!', presets()[1]];
    for (const sentence of sentences) {
      await typeSentence(page, sentence);
      const chips = page.locator('#instrument button.chip');
      const texts = await chips.allTextContents();
      assert.deepEqual(texts, await engineTokens(page, sentence));
      for (let i = 0; i < texts.length; ++i) {
        await chips.nth(i).click();
        await checkDisplayedAgainstEngine(page, { sentence, token: i });
      }
    }
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('switching head and layer changes the row; arrow keys move; typing re-renders every figure', async () => {
    const { page, context, errors } = await openPage();
    await openInstrument(page);
    const first = await displayedRow(page);
    const shape = await modelShape(page);
    const target = { layer: (first.layer + 1) % shape.layers, head: (first.head + 2) % shape.heads };
    await page.click(`#instrument button.cell[data-layer="${target.layer}"][data-head="${target.head}"]`);
    const switched = await checkDisplayedAgainstEngine(page, { sentence: first.sentence, token: first.token });
    assert.deepEqual([switched.layer, switched.head], [target.layer, target.head]);
    assert.notDeepEqual(switched.values, first.values, 'another head showed the same row');
    assert.equal(await page.locator(`attention-heads button.multiple[aria-pressed="true"]`).getAttribute('data-layer'), String(target.layer));

    // Arrow keys: right moves to the next token, down to the next layer.
    await page.locator('#instrument button.chip[aria-pressed="true"]').focus();
    await page.keyboard.press('ArrowRight');
    // The key's row is drawn a few tasks later (a busy machine showed the old one): wait for it.
    await checkDisplayedAgainstEngine(page, { sentence: first.sentence, token: first.token + 1 });
    await page.locator('#instrument button.cell[aria-pressed="true"]').focus();
    await page.keyboard.press(target.layer < 3 ? 'ArrowDown' : 'ArrowUp');
    const moved = await checkDisplayedAgainstEngine(page, { sentence: first.sentence, token: first.token + 1 });
    assert.equal(moved.layer, target.layer < 3 ? target.layer + 1 : target.layer - 1);

    // Heads figure: clicking a panel selects that head everywhere.
    await page.click('attention-heads button.multiple[data-layer="0"][data-head="0"]');
    const picked = await displayedRow(page);
    assert.deepEqual([picked.layer, picked.head], [0, 0]);

    const sentence = 'Dogs chase the ball, and the ball rolls away.';
    await typeSentence(page, sentence);
    const tokens = await engineTokens(page, sentence);
    assert.deepEqual(await page.locator('#instrument button.chip').allTextContents(), tokens);
    await checkDisplayedAgainstEngine(page, { sentence });
    const n = tokens.length;
    assert.equal(await page.locator('attention-mechanism table.mechanism tbody tr').count(), n);
    const weights = await page.$$eval('attention-mechanism table.mechanism tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.weight)));
    const shown = await displayedRow(page);
    weights.forEach((w, j) => assert.ok(Math.abs(w - Number(shown.values[j])) < 1e-6, `mechanism weight ${j}: ${w} vs ${shown.values[j]}`));
    assert.equal(await page.locator('attention-heads button.multiple').count(), await page.locator('attention-heads').evaluate((el) => el.result.layers * el.result.heads));
    assert.equal(await headsColumns(page, n), n);
    for (const panel of await page.locator('attention-compare section.panel table.bars').all()) {
      assert.equal(await panel.locator('tbody tr').count(), n);
    }
    assert.equal(await page.locator('[data-fact="n"]').first().textContent(), String(n));
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a figure far off screen keeps a new sentence while the reader types, and draws it after the pause', async () => {
    const { page, context, errors } = await openPage();
    await openInstrument(page);
    await figuresDrawn(page);
    const heads = page.locator('attention-heads').first();
    const far = await heads.evaluate((el) => el.getBoundingClientRect().top > 2.5 * innerHeight);
    assert.ok(far, 'Figure 5 is not far off screen at 1280 x 900: this test needs a figure that is');
    // Every time the figure says it waits: the sentence it shows then.
    await heads.evaluate((el) => {
      window.__waiting = [];
      new MutationObserver(() => {
        if (el.hasAttribute('data-waiting')) window.__waiting.push(el.result?.text ?? null);
      }).observe(el, { attributes: true, attributeFilter: ['data-waiting'] });
    });
    const before = await heads.evaluate((el) => el.result.text);
    const sentence = 'The cat that the dog chased climbed the tall tree.';
    await typeSentence(page, sentence);  // waits for Figure 1 and then for every figure to draw
    const waited = await page.evaluate(() => window.__waiting);
    assert.ok(waited.length >= 1, 'Figure 5, far off screen, took the new sentence at once');
    assert.ok(waited.every((text) => text === before), `while waiting Figure 5 showed ${JSON.stringify(waited)}, not the previous sentence`);
    assert.equal(await heads.evaluate((el) => el.result.text), sentence);
    assert.equal(await heads.getAttribute('data-waiting'), null);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a figure used on its own follows its attributes and keeps its choices to itself', async () => {
    const { page, context, errors } = await openPage();
    await openInstrument(page);
    const articleRow = await displayedRow(page);
    const sentence = 'Dogs bark at the mailman every morning.';
    await page.evaluate((text) => {
      const el = document.createElement('attention-instrument');
      el.id = 'standalone';
      el.setAttribute('sentence', text);
      el.setAttribute('word', 'bark');
      el.setAttribute('layer', '2');
      el.setAttribute('head', '3');
      document.querySelector('main').prepend(el);
    }, sentence);
    const table = page.locator('#standalone table.bars');
    await page.locator('#standalone .status[data-mode="live"]').waitFor();
    const read = () => table.evaluate((t) => ({ sentence: t.dataset.sentence, layer: Number(t.dataset.layer), head: Number(t.dataset.head), token: Number(t.dataset.token), values: [...t.querySelectorAll('tbody tr')].map((tr) => tr.dataset.value) }));
    const tokens = await engineTokens(page, sentence);
    let shown = await read();
    assert.deepEqual([shown.sentence, shown.layer, shown.head, shown.token], [sentence, 1, 2, tokens.indexOf('bark')]);
    assert.deepEqual(shown.values, await engineRow(page, shown));
    await page.evaluate(() => document.getElementById('standalone').setAttribute('head', '1'));
    shown = await read();
    assert.equal(shown.head, 0);
    assert.deepEqual(shown.values, await engineRow(page, shown));
    await page.locator('#standalone button.chip').nth(1).click();
    await page.waitForFunction(() => document.getElementById('standalone').selection?.token === 1);
    assert.equal(await page.locator('#standalone').getAttribute('word'), 'bark', 'the reader\u2019s click rewrote the author\u2019s attribute');
    assert.equal((await read()).token, 1);
    assert.deepEqual(await displayedRow(page), articleRow, 'a choice in the standalone figure changed the article');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the softmax lab sums to 1 for random settings, and "nothing here" is uniform', async () => {
    const { page, context, errors } = await openPage();
    const lab = page.locator('softmax-lab');
    for (let trial = 0; trial < 25; ++trial) {
      const scores = Array.from({ length: 5 }, () => Math.round((Math.random() * 20 - 10) * 10) / 10);
      await lab.evaluate((el, values) => {
        el.shadowRoot.querySelectorAll('input[type=range]').forEach((slider, k) => {
          slider.value = String(values[k]);
          slider.dispatchEvent(new Event('input', { bubbles: true }));
        });
      }, scores);
      const weights = await lab.locator('output').evaluateAll((outs) => outs.map((o) => Number(o.dataset.value)));
      const sum = weights.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) <= ROW_SUM_TOLERANCE, `scores ${scores} gave weights summing to ${sum}`);
      assert.ok(weights.every((w) => w > 0), `a weight was not positive for ${scores}`);
      assert.equal(await lab.locator('.sum').textContent(), '1.000000');
      // The largest score gets the largest weight.
      assert.equal(weights.indexOf(Math.max(...weights)), scores.indexOf(Math.max(...scores)));
    }
    for (const setting of ['equal', 'negative']) {
      await lab.locator(`button[data-setting="${setting}"]`).click();
      const weights = await lab.locator('output').evaluateAll((outs) => outs.map((o) => Number(o.dataset.value)));
      for (const w of weights) assert.ok(Math.abs(w - 0.2) < 1e-12, `${setting}: weight ${w}, expected 1/5`);
    }
    // A drag with the keyboard works too.
    await lab.locator('input[type=range]').first().focus();
    await page.keyboard.press('End');
    assert.equal(await lab.locator('input[type=range]').first().inputValue(), '10');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a sentence containing markup is shown as text: nothing injected, nothing run', async () => {
    const hostile = [
      '<img src=x onerror="window.__injected=1">',
      '<script>window.__injected=2</script> and <b>bold</b>',
      '"><svg onload=window.__injected=3><iframe src="javascript:window.__injected=4">',
    ];
    const { page, context, errors } = await openPage({ path: `#s=${encodeURIComponent(hostile[0])}` });
    let dialogs = 0;
    page.on('dialog', (d) => { dialogs += 1; d.dismiss(); });
    await openInstrument(page);
    const countTags = () => page.evaluate(() => {
      const counts = { img: 0, script: 0, iframe: 0, b: 0, svg: 0, handlers: 0 };
      const walk = (node) => {
        for (const el of node.querySelectorAll('*')) {
          const tag = el.tagName.toLowerCase();
          if (tag in counts) counts[tag] += 1;
          if ([...el.attributes].some((a) => /^on/i.test(a.name))) counts.handlers += 1;
          if (el.shadowRoot) walk(el.shadowRoot);
        }
      };
      walk(document);
      return counts;
    });
    await figuresDrawn(page);
    const baseline = await countTags();
    // The hash's sentence was read as data and drawn as text.
    assert.equal((await displayedRow(page)).sentence, hostile[0]);
    for (const sentence of hostile) {
      await typeSentence(page, sentence);
      const tokens = await engineTokens(page, sentence);
      assert.deepEqual(await page.locator('#instrument button.chip').allTextContents(), tokens);
      assert.equal(await page.locator('#instrument input#sentence').inputValue(), sentence);
      assert.deepEqual(await countTags(), baseline, `elements appeared for ${sentence}`);
    }
    await page.waitForTimeout(200);
    assert.equal(await page.evaluate(() => window.__injected), undefined);
    assert.equal(baseline.img + baseline.iframe + baseline.handlers, 0);
    assert.equal(baseline.script, 2);  // the page's own module scripts (start-engine.js and article.js)
    assert.equal(dialogs, 0);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a 360 x 740 phone has no horizontal scroll; screenshots and load figures', async () => {
    const figures = {};
    for (const { name, viewport, colorScheme } of [
      { name: 'phone', viewport: { width: 360, height: 740 }, colorScheme: 'light' },
      { name: 'desktop', viewport: { width: 1280, height: 900 }, colorScheme: 'light' },
      { name: 'desktop-dark', viewport: { width: 1280, height: 900 }, colorScheme: 'dark' },
    ]) {
      const { page, context, errors } = await openPage({ viewport, colorScheme });
      await page.locator('#instrument .status[data-mode="example"]').waitFor();
      const scrollWidth = () => page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(await scrollWidth() <= viewport.width, `${name}: example page is ${await scrollWidth()} px wide`);
      await page.screenshot({ path: join(artifacts, `page-${name}-example.png`), fullPage: name !== 'desktop-dark' });
      await openInstrument(page);
      const m = await marks(page);
      figures[name] = { firstRenderMs: m['attention:first-render'], instrumentReadyMs: m['attention:engine-ready'], bytesTransferred: await resourceBytes(page) };
      // A long unbroken word must not widen the page either.
      await typeSentence(page, 'Antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis supercalifragilisticexpialidocious!');
      assert.ok(await scrollWidth() <= viewport.width, `${name}: live page with long words is ${await scrollWidth()} px wide`);
      await typeSentence(page, presets()[0]);
      assert.ok(await scrollWidth() <= viewport.width, `${name}: live page is ${await scrollWidth()} px wide`);
      await page.evaluate(() => scrollTo(0, 0));
      await page.screenshot({ path: join(artifacts, `page-${name}.png`), fullPage: true });
      await page.locator('attention-instrument').screenshot({ path: join(artifacts, `figure1-${name}.png`) });
      assert.deepEqual(errors, []);
      await context.close();
    }
    writeFileSync(join(artifacts, 'load-figures.json'), JSON.stringify(figures, null, 2) + '\n');
    for (const [name, f] of Object.entries(figures)) {
      console.log(`# load (${name}): first render ${f.firstRenderMs} ms, instrument ready ${f.instrumentReadyMs} ms, ${(f.bytesTransferred / 1e6).toFixed(2)} MB transferred`);
    }
  });

  test('the precision figure downloads the f32 and naive files only when asked; compact within the bar, naive over it', async () => {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    const p = manifest.precision;
    assert.ok(p, 'the manifest names no precision files (scripts/site/build_site.mjs writes them)');
    const requested = [];
    const { page, context, errors } = await openPage({
      before: (p) => p.on('request', (r) => { if (r.url().endsWith('.attn')) requested.push(r.url().split('/').pop()); }),
    });
    await openInstrument(page);
    const figure = page.locator('attention-precision');
    await figure.scrollIntoViewIfNeeded();
    assert.deepEqual(requested, [(manifest.models[p.shipped].core ?? manifest.models[p.shipped]).file], 'a model file other than the compact one (its split core) loaded before the reader asked');
    await figure.locator('[data-action="load-precision"]').click();
    await figure.locator('.verdict').waitFor({ timeout: LOAD_TIMEOUT_MS });
    assert.deepEqual(requested.slice(1).sort(), [manifest.models[p.reference].file, manifest.models[p.naive].file].sort());
    // What the figure shows: the verdict's numbers and every row of the table.
    const shown = () => figure.evaluate((el) => {
      const root = el.shadowRoot;
      const v = root.querySelector('.verdict').dataset;
      const rows = [...root.querySelectorAll('table.diff tbody tr')].map((tr) => ({ ...tr.dataset }));
      return { plan: v.plan, rowMax: Number(v.rowMax), sentenceMax: Number(v.sentenceMax), bar: Number(v.bar), rows, verdict: root.querySelector('.verdict').textContent };
    });
    const check = (state) => {
      const sum = (key) => state.rows.reduce((a, r) => a + Number(r[key]), 0);
      assert.ok(Math.abs(sum('reference') - 1) <= ROW_SUM_TOLERANCE, `f32 row sums to ${sum('reference')}`);
      assert.ok(Math.abs(sum('other') - 1) <= ROW_SUM_TOLERANCE, `${state.plan} row sums to ${sum('other')}`);
      let rowMax = 0;
      for (const r of state.rows) {
        assert.equal(Number(r.difference), Math.abs(Number(r.reference) - Number(r.other)));
        rowMax = Math.max(rowMax, Number(r.difference));
      }
      assert.equal(state.rowMax, rowMax);
      assert.ok(state.sentenceMax >= state.rowMax);
    };
    const shipped = await shown();
    check(shipped);
    assert.equal(shipped.bar, p.bar);
    assert.equal(shipped.plan, 'shipped');
    assert.ok(shipped.sentenceMax <= p.bar, `the compact file misses the bar on the page's sentence: ${shipped.sentenceMax}`);
    assert.match(shipped.verdict, /within the 0\.001 bar/);
    // The compact row is the instrument's row: the figure runs on the page's own engine.
    const instrument = await displayedRow(page);
    assert.deepEqual(shipped.rows.map((r) => r.other), instrument.values);

    await figure.locator('input[value="naive"]').check();
    await figure.locator('.verdict[data-plan="naive"]').waitFor();
    const naive = await shown();
    check(naive);
    assert.deepEqual(naive.rows.map((r) => r.reference), shipped.rows.map((r) => r.reference));
    assert.ok(naive.sentenceMax > p.bar, `the naive file meets the bar on this sentence (${naive.sentenceMax})`);
    assert.match(naive.verdict, /times the 0\.001 bar/);
    console.log(`# precision figure: compact ${shipped.sentenceMax.toExponential(2)}, naive ${naive.sentenceMax.toExponential(2)} (bar ${p.bar})`);
    await figure.screenshot({ path: join(artifacts, 'precision-naive.png') });
    // "Show that row" moves every figure to the worst row, whose largest difference is the sentence's.
    await figure.locator('button.show-worst').click();
    await page.waitForFunction((max) => Number(document.querySelector('attention-precision').shadowRoot.querySelector('.verdict').dataset.rowMax) === max, naive.sentenceMax);
    const worst = await shown();
    assert.equal(worst.rowMax, naive.sentenceMax);
    assert.match(await page.evaluate(() => location.hash), /[#&]v=precision(&|$)/, 'the selection did not reach the page state');
    assert.equal(await figure.locator('button.show-worst').count(), 0);
    await figure.locator('input[value="shipped"]').check();
    await figure.screenshot({ path: join(artifacts, 'precision-shipped.png') });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the precision figure says which file failed and retries', async () => {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    const reference = manifest.models[manifest.precision.reference].file;
    const { page, context, errors } = await openPage();
    await openInstrument(page);
    const refuse = (route) => route.fulfill({ status: 404, body: 'not here' });
    await page.route(`**/models/${reference}`, refuse);
    const figure = page.locator('attention-precision');
    await figure.locator('[data-action="load-precision"]').click();
    const alert = figure.locator('[role="alert"]');
    await alert.waitFor({ timeout: LOAD_TIMEOUT_MS });
    assert.match(await alert.textContent(), new RegExp(`did not load: .*${reference.replace('.', '\\.')}.*404`));
    assert.equal(await figure.locator('[data-action="load-precision"]').textContent(), 'Retry the comparison');
    // The page's own figures are untouched by the figure's failure.
    assert.equal(await page.locator('#instrument .status').getAttribute('data-mode'), 'live');
    await page.unroute(`**/models/${reference}`, refuse);
    await figure.locator('[data-action="load-precision"]').click();
    await figure.locator('.verdict').waitFor({ timeout: LOAD_TIMEOUT_MS });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a broken model URL shows what failed and a retry, and the prose stays', async () => {
    const { page, context } = await openPage({ path: '?model-src=models/no-such-model.attn' });
    let requests = 0;
    page.on('request', (r) => { if (r.url().includes('no-such-model')) requests += 1; });
    await page.locator('#loader[data-state="error"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    assert.match(await page.locator('#progress-text').textContent(), /no-such-model\.attn.*404/);
    assert.ok(await page.locator('#retry').isVisible());
    for (const tag of ['attention-instrument', 'attention-mechanism', 'attention-compare', 'attention-heads']) {
      const status = page.locator(`${tag} .status[data-mode="error"]`);
      assert.match(await status.textContent(), /did not load.*404/);
      assert.ok(await status.locator('button.retry').isVisible(), `${tag} has no retry button`);
    }
    assert.ok((await page.locator('main p').count()) > 10, 'the prose is gone');
    assert.ok((await page.locator('main').innerText()).includes('A row cannot say'));
    await page.screenshot({ path: join(artifacts, 'page-error.png') });
    await page.locator('attention-compare .status button.retry').click();
    await page.waitForFunction(() => document.getElementById('loader').dataset.state === 'error' && document.getElementById('progress-text').textContent.includes('404'));
    assert.ok(requests >= 1, 'retry made no new request for the model');
    await context.close();
  });
});
