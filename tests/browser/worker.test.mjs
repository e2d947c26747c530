// The engine off the main thread, in Debian's Chromium (npm playwright-core): the page's engine
// runs in one module worker started from its URL, the embedding demo's (on a second origin) in one
// started from a Blob of the demo's origin; a long analysis leaves the page responsive; typing faster than the
// analyses finish ends with every figure showing the final text and never draws a stale result;
// a trapped worker is ended and the next request starts a new one; and a long sentence keeps
// Figure 1 and the page bounded in height. Needs the assembled site:
//   node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figureLive, figuresDrawn, headsColumns, launchChromium, ROW_SUM_TOLERANCE, serve, startHost } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 60000;

// 120 words, 136 tokens with the default model (scripts/bench/bench_interaction.mjs types it).
const LONG_SENTENCE = 'When the old lighthouse keeper finally climbed the narrow spiral stairs on that cold and windy evening, he noticed that the great lamp, which had guided countless fishing boats safely past the jagged rocks for more than a hundred years, was flickering strangely, as if some invisible hand were slowly turning it down; worried that the ships still out at sea would lose their way in the thickening fog, he quickly fetched his tools, replaced the worn brass fittings one by one, cleaned the heavy glass lenses until they shone again, and then sat beside the window for the rest of the night, watching the beam sweep across the dark water while the storm gathered strength over the distant hills.';

let server;
let baseUrl;
let host;
let hostUrl;
let browser;

before(async () => {
  for (const file of ['models/manifest.json', 'engine/attention_engine.wasm', 'engine/worker.js', 'dist/attention-widgets.js']) {
    assert.ok(existsSync(join(web, file)), `web/${file} is missing: run node scripts/site/build_site.mjs first.`);
  }
  server = await serve(web);
  baseUrl = `http://127.0.0.1:${server.server.address().port}/`;
  host = await startHost(web);
  hostUrl = host.url;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
  host?.close();
});

async function openPage(url, { viewport = { width: 1280, height: 900 } } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(url);
  return { page, context, errors, requests };
}

async function openInstrument(page) {
  await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor();
}

const shownSentence = (page) => page.evaluate(() => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence);

function waitForSentence(page, sentence, timeout = LOAD_TIMEOUT_MS) {
  return page.waitForFunction((text) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.sentence === text, sentence, { timeout });
}

// Every figure of the article against the engine's own analysis of `sentence`.
async function checkEveryFigure(page, sentence) {
  await figuresDrawn(page);
  const tokens = await page.evaluate(async (text) => {
    const engine = await import('/engine/engine.js');
    return (await (await engine.getEngine()).analyze(text)).tokens.map((t) => t.text);
  }, sentence);
  const n = tokens.length;
  assert.equal(await shownSentence(page), sentence);
  assert.deepEqual(await page.locator('#instrument button.chip').allTextContents(), tokens);
  const values = await page.$$eval('#instrument table.bars tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.value)));
  assert.equal(values.length, n);
  assert.ok(Math.abs(values.reduce((a, b) => a + b, 0) - 1) <= ROW_SUM_TOLERANCE);
  assert.equal(await page.locator('attention-mechanism table.mechanism tbody tr').count(), n);
  assert.deepEqual(await page.locator('attention-mechanism table.mechanism tbody th').allTextContents(), tokens);
  for (const panel of await page.locator('attention-compare section.panel table.bars').all()) {
    assert.equal(await panel.locator('tbody tr').count(), n);
  }
  assert.equal(await headsColumns(page, n), n);
  assert.equal(await page.locator('[data-fact="n"]').first().textContent(), String(n));
}

describe('the engine in a worker', { timeout: 300000 }, () => {
  test('the article\u2019s engine runs in a module worker; a long analysis leaves the page responsive', async () => {
    const { page, context, errors, requests } = await openPage(baseUrl);
    await openInstrument(page);
    const thread = await page.evaluate(async () => (await (await import('/engine/engine.js')).getEngine()).thread);
    assert.equal(thread, 'worker');
    assert.deepEqual(requests.filter((u) => u.startsWith('blob:')), [], 'a same-origin page needs no Blob for its worker');
    assert.equal(requests.filter((u) => u.endsWith('/engine/worker.js')).length, 1, 'one worker started');
    // 512 tokens take hundreds of milliseconds in the engine; meanwhile the page's timers run on.
    const probe = await page.evaluate(async () => {
      const engine = await (await import('/engine/engine.js')).getEngine();
      const text = Array.from({ length: 700 }, (_, i) => ['the', 'keys', 'to', 'a', 'cabinet', 'are', 'on', 'tables'][i % 8]).join(' ');
      let longest = 0;
      let last = performance.now();
      const timer = setInterval(() => {
        const t = performance.now();
        longest = Math.max(longest, t - last);
        last = t;
      }, 5);
      const t0 = performance.now();
      const result = await engine.analyze(text);
      const ms = performance.now() - t0;
      clearInterval(timer);
      return { n: result.n, ms, longest, transferred: result.attention.buffer.byteLength === result.attention.byteLength };
    });
    assert.equal(probe.n, 512);
    assert.ok(probe.transferred, 'the result does not own its buffer');
    console.log(`# a 512-token analysis took ${probe.ms.toFixed(0)} ms in the worker; the page's longest gap between 5 ms timers meanwhile: ${probe.longest.toFixed(0)} ms (shared host)`);
    assert.ok(probe.longest < probe.ms, `the page was blocked for the whole analysis (${probe.longest} of ${probe.ms} ms)`);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('typing faster than analyses finish: the final figures show the final text, and no stale result is drawn', async () => {
    const { page, context, errors } = await openPage(baseUrl);
    await openInstrument(page);
    // Every sentence the instrument draws, in order.
    await page.evaluate(() => {
      window.__drawn = [];
      const root = document.getElementById('instrument').shadowRoot;
      const record = () => {
        const s = root.querySelector('table.bars')?.dataset.sentence;
        if (s !== undefined && s !== window.__drawn.at(-1)) window.__drawn.push(s);
      };
      new MutationObserver(record).observe(root, { subtree: true, attributes: true, attributeFilter: ['data-sentence'] });
      record();
    });
    const input = page.locator('#instrument input#sentence');
    await input.fill('');
    // A typist faster than the engine: a word every 5 ms, each committed (Enter) at once, while
    // one analysis of a 136-token sentence takes tens of milliseconds. The commits pile up behind
    // the running analysis and supersede each other.
    const committed = await page.evaluate(async (start) => {
      const root = document.getElementById('instrument').shadowRoot;
      const box = root.getElementById('sentence');
      const out = [];
      box.focus();
      for (const word of [start, 'And', 'then', 'the', 'storm', 'broke', 'over', 'the', 'harbour', 'at', 'dawn.']) {
        box.value = box.value ? `${box.value} ${word}` : word;
        box.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, data: word, inputType: 'insertText' }));
        box.form.requestSubmit();
        out.push(box.value);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return out;
    }, LONG_SENTENCE);
    const finalText = await input.inputValue();
    await input.press('Enter');
    await waitForSentence(page, finalText);
    await page.waitForTimeout(300);
    await checkEveryFigure(page, finalText);
    const drawn = await page.evaluate(() => window.__drawn);
    // Drawn sentences only ever move forward through what was typed, and end on the final one.
    const order = drawn.slice(1).map((s) => committed.indexOf(s));
    assert.ok(order.every((k) => k >= 0), `drew a sentence that was never committed: ${JSON.stringify(drawn)}`);
    for (let k = 1; k < order.length; ++k) assert.ok(order[k] > order[k - 1], `a stale result was drawn after a newer one: ${order}`);
    assert.equal(drawn.at(-1), finalText);
    console.log(`# committed ${committed.length} sentences; drew ${drawn.length - 1} of the ${committed.length} committed sentences (indices ${order})`);
    assert.ok(order.length < committed.length, 'every committed sentence was drawn: nothing was superseded');
    assert.equal(await input.inputValue(), finalText, 'the sentence box lost what was typed');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a 136-token sentence keeps Figure 1 and the page bounded, and every token is still there', async () => {
    const { page, context, errors } = await openPage(baseUrl);
    await openInstrument(page);
    const heights = () => page.evaluate(() => ({
      figure: document.getElementById('instrument').getBoundingClientRect().height,
      page: document.documentElement.scrollHeight,
    }));
    const short = await heights();
    const input = page.locator('#instrument input#sentence');
    await input.fill(LONG_SENTENCE);
    await input.press('Enter');
    await waitForSentence(page, LONG_SENTENCE);
    await page.waitForTimeout(300);
    const long = await heights();
    console.log(`# heights with the default and the 136-token sentence: Figure 1 ${Math.round(short.figure)} -> ${Math.round(long.figure)} px, page ${short.page} -> ${long.page} px`);
    // The bound was 1,400 px before the lens switch, the mixing bar and the grade panel, which add
    // about 200 px whatever the sentence's length; what a long sentence adds is bounded apart.
    assert.ok(long.figure < 1600, `Figure 1 is ${long.figure} px tall with 136 tokens`);
    assert.ok(long.figure - short.figure < 400, `Figure 1 grew by ${long.figure - short.figure} px with 136 tokens`);
    assert.ok(long.page - short.page < 1500, `the page grew by ${long.page - short.page} px`);
    await checkEveryFigure(page, LONG_SENTENCE);
    // The last token can be chosen, and its row is scrolled into view inside the chart.
    const chips = page.locator('#instrument button.chip');
    const last = (await chips.count()) - 2;
    await chips.nth(last).click();
    await page.waitForFunction((k) => Number(document.getElementById('instrument').shadowRoot.querySelector('table.bars').dataset.token) === k, last);
    await page.waitForTimeout(200);
    const inView = await page.evaluate((k) => {
      const root = document.getElementById('instrument').shadowRoot;
      const scroller = root.querySelector('.rows-scroll');
      const row = root.querySelectorAll('table.bars tbody tr')[k];
      const s = scroller.getBoundingClientRect();
      const r = row.getBoundingClientRect();
      return { bounded: scroller.scrollHeight > scroller.clientHeight, visible: r.top >= s.top - 1 && r.bottom <= s.bottom + 1 };
    }, last);
    assert.ok(inView.bounded, 'the row chart is not a bounded scroll area');
    assert.ok(inView.visible, 'the selected token\u2019s row was not scrolled into view');
    assert.deepEqual(errors, []);
    await context.close();
  });

  // ggml's test-backend-ops in small: every operation of the one table (web/engine/protocol.js)
  // through the page's client and its worker, and run by the table on an engine made in the page
  // itself, gives the same answer. (A real trap and the restart are recovery.test.mjs's; the client's
  // part of a trap is engine.test.mjs's.)
  test('every operation of the table gives the same answer through the worker and in the page', async () => {
    const { page, context, errors } = await openPage(baseUrl);
    await openInstrument(page);
    const outcome = await page.evaluate(async () => {
      const engine = await import('/engine/engine.js');
      const viaWorker = await engine.getEngine();
      const inPage = await engine.createEngine();
      const text = 'The keys to the cabinet are on the table.';
      // One call per operation, with its declared parameters; `trap` must be refused by both.
      const calls = {
        analyze: [text],
        analyzeAblated: [text, { removed: '1.1,2.3', valueNorms: true }],
        predict: [text, 3, 4, { masked: true }],
        probability: [text, 3, 2003, { masked: true, removed: '4.4' }],
        lenses: [text, { row: 3, flowRow: 3 }],
        faithfulness: [text, 3],
        shardStats: [],
        memory: [],
        tokenize: [text, 6],
        tokenizeMany: [[text, 'a second text'], 0],
        vocabulary: [],
        trap: [],
      };
      const plain = (value) => JSON.parse(JSON.stringify(value, (key, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v)));
      const out = { ops: Object.keys(engine.OPERATIONS), differ: [], refused: [] };
      for (const op of out.ops) {
        const name = engine.OPERATIONS[op].method ?? op;
        const answers = [];
        // The client's method for the operation (made from the table), and the table's host
        // side run on the page's own engine with the arguments the table names.
        const sides = [() => viaWorker[name](...calls[op]), () => engine.runEngineOperation(inPage, op, engine.operationArgs(op, calls[op]))];
        for (const side of sides) {
          try {
            answers.push({ ok: plain(await side()) });
          } catch (error) {
            answers.push({ error: error.kind });
          }
        }
        if (op === 'trap') out.refused = answers.map((a) => a.error);
        else if (op === 'memory' || op === 'shardStats') out[op] = answers.map((a) => Object.keys(a.ok ?? {}).length);
        else if (JSON.stringify(answers[0]) !== JSON.stringify(answers[1])) out.differ.push(`${op}: ${JSON.stringify(answers).slice(0, 300)}`);
        else if (answers[0].error) out.differ.push(`${op} failed on both: ${answers[0].error}`);
      }
      inPage.close();
      return { ...out, thread: viaWorker.thread, calls: Object.keys(calls) };
    });
    assert.equal(outcome.thread, 'worker');
    assert.deepEqual([...outcome.ops].sort(), [...outcome.calls].sort(), 'the test calls every operation of the table once');
    assert.deepEqual(outcome.differ, [], 'operations whose answers differ between the worker and the page');
    assert.deepEqual(outcome.refused, ['input', 'input'], 'the release engine must refuse trap on both sides');
    assert.ok(outcome.memory.every((k) => k > 0) && outcome.shardStats.every((k) => k > 0), `memory ${outcome.memory}, shardStats ${outcome.shardStats}`);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the embed demo on a second origin runs the engine in a worker started from a Blob of the demo\u2019s origin', async () => {
    const { page, context, errors, requests } = await openPage(`${hostUrl}embed-demo.html?from=${encodeURIComponent(baseUrl)}`, { viewport: { width: 1200, height: 900 } });
    // Read down to each, as a reader scrolls: embedded figures start when they come near the screen.
    for (const id of ['#row', '#heads', '#compare']) await figureLive(page, id, LOAD_TIMEOUT_MS);
    const thread = await page.evaluate(async (bundle) => (await (await import(bundle)).getEngine()).thread, `${baseUrl}dist/attention-widgets.js`);
    assert.equal(thread, 'worker');
    const blobs = requests.filter((u) => u.startsWith('blob:'));
    assert.equal(blobs.length, 1, `one worker for the page's five figures: ${blobs}`);
    assert.equal(new URL(blobs[0].slice(5)).origin, new URL(hostUrl).origin, 'the worker\u2019s Blob is not of the host page\u2019s origin');
    assert.equal(requests.filter((u) => u === `${baseUrl}engine/worker.js`).length, 1);
    assert.equal(requests.filter((u) => u.endsWith('.wasm')).length, 1);
    assert.equal(requests.filter((u) => u.endsWith('.attn')).length, 1);
    assert.deepEqual(errors, []);
    await context.close();
  });
});
