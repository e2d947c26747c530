// An engine that recovers, in Debian's Chromium: a real trap of the wasm instance (Engine.trap
// executes `unreachable`, bindings.cc; only the test build has it, so the site is served with the
// engine of scripts/build.sh wasm-test) fails the request that met it as an engine error, ends the
// worker, and the article's next request starts a fresh engine from the Cache API (no new
// download of the wasm or the model); meanwhile no figure goes blank or falls back to the
// precomputed example, and afterwards the figures answer the reader's sentence. A trap while
// the reader waits for a sentence shows the reason in the figures beside the last sentence. Needs the assembled site:
//   node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { openInstrument, ROW_SUM_TOLERANCE, startSite, typeSentence } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 90000;

let site;

// Traps the page's engine for real (the test build's trap()): true when the request failed as an
// engine error and the engine says it failed.
const trapPageEngine = (page) => page.evaluate(async () => {
  const engine = await (await import('/engine/engine.js')).getEngine();
  try {
    await engine.trap();
    return false;
  } catch (error) {
    return error.kind === 'engine' && engine.failed;
  }
});

before(async () => {
  site = await startSite(web, { testEngine: true });
});

after(() => site?.close());

describe('recovery from a trap of the engine', { timeout: 300000 }, () => {
  test('a real trap ends the worker; the next sentence runs on a fresh engine from the cache, and no figure goes blank', async () => {
    const { page, context, errors } = await site.open('');
    const network = [];
    context.on('request', (request) => network.push(request.url()));
    await openInstrument(page);
    const first = 'The first sentence stays on screen.';
    await typeSentence(page, first);

    // Every sentence Figure 1 shows from now on, as it changes.
    await page.evaluate(() => {
      globalThis.__shown = [];
      const root = document.getElementById('instrument').shadowRoot;
      new MutationObserver(() => globalThis.__shown.push(root.querySelector('table.bars')?.dataset.sentence ?? null))
        .observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-sentence'] });
    });
    const before = network.length;
    const trapped = await page.evaluate(async () => {
      const engine = await (await import('/engine/engine.js')).getEngine();
      try {
        await engine.trap();
        return { threw: false };
      } catch (error) {
        return { threw: true, kind: error.kind, message: error.message, failed: engine.failed };
      }
    });
    assert.equal(trapped.threw, true, 'the trap did not fail its request');
    assert.equal(trapped.kind, 'engine');
    assert.match(trapped.message, /unreachable|RuntimeError/i, `the message does not name the trap: ${trapped.message}`);
    assert.equal(trapped.failed, true, 'the trapped engine still claims to work');

    const second = 'A fresh engine answers the next sentence.';
    await typeSentence(page, second);

    await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const shown = await page.evaluate(() => globalThis.__shown);
    // In between, Figure 1 showed only the reader's sentences: never nothing, never the example.
    const strangers = shown.filter((text) => text !== first && text !== second);
    assert.deepEqual(strangers, [], `Figure 1 showed something else while the engine restarted: ${JSON.stringify(strangers)}`);
    const after = network.slice(before);
    const downloads = after.filter((url) => url.endsWith('.wasm') || url.endsWith('.attn'));
    assert.deepEqual(downloads, [], `the restart downloaded again instead of reading the cache: ${downloads}`);
    assert.equal(after.filter((url) => url.endsWith('/engine/worker.js')).length, 1, 'no new worker was started');
    // The row on screen after the restart is a whole softmax row (hidden tokens included).
    const total = await page.evaluate(async () => {
      const engine = await (await import('/engine/engine.js')).getEngine();
      const { attentionRow } = await import('/engine/result.js');
      const bars = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
      const result = await engine.analyze(bars.dataset.sentence);
      return attentionRow(result, 0, 0, 1).reduce((a, b) => a + b, 0);
    });
    assert.ok(Math.abs(total - 1) <= ROW_SUM_TOLERANCE, `a row of the fresh engine sums to ${total}`);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a trap during a reader\u2019s request keeps the last sentence on screen with the reason, then recovers', async () => {
    const { page, context, errors } = await site.open('');
    await openInstrument(page);
    const first = 'Keep this sentence while the engine restarts.';
    await typeSentence(page, first);

    // The worker's next analysis traps: this worker's analyze requests become trap requests, so
    // the reader's own request is the one that meets it (a new worker after it is not patched).
    await page.evaluate(async () => {
      const engine = await (await import('/engine/engine.js')).getEngine();
      const host = engine._host;
      const original = host.call.bind(host);
      host.call = (id, op, args) => original(id, op === 'analyze' ? 'trap' : op, args);
      // Whether the figure ever said why it shows the older sentence.
      const root = document.getElementById('instrument').shadowRoot;
      globalThis.__said = null;
      new MutationObserver(() => {
        const match = root.textContent.match(/The engine stopped[^.]*\./);
        if (match && !globalThis.__said) globalThis.__said = { text: match[0], sentence: root.querySelector('table.bars')?.dataset.sentence };
      }).observe(root, { subtree: true, childList: true, characterData: true });
    });
    await typeSentence(page, 'This request meets the trap.', { wait: false });
    // The figure keeps the last sentence and says why nothing newer is drawn, or has already
    // recovered with the new sentence on a fresh engine.
    await page.waitForFunction(() => {
      const root = document.getElementById('instrument').shadowRoot;
      const text = root.textContent;
      return /engine stopped/i.test(text) || root.querySelector('table.bars')?.dataset.sentence === 'This request meets the trap.';
    }, null, { timeout: LOAD_TIMEOUT_MS });
    const said = await page.evaluate(() => globalThis.__said);
    assert.ok(said, 'the figure never said that the engine stopped');
    assert.equal(said.sentence, first, 'while it said so, Figure 1 did not show the last sentence');
    const again = 'After the trap the figures answer again.';
    await typeSentence(page, again);

    const engineState = await page.evaluate(async () => {
      const engine = await (await import('/engine/engine.js')).getEngine();
      return { failed: engine.failed, thread: engine.thread };
    });
    assert.deepEqual(engineState, { failed: false, thread: 'worker' });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a post\u2019s own sentence recovers from a trap too: the post\u2019s ViewLoop starts a fresh engine and draws the next sentence', async () => {
    const { page, context, errors } = await site.open('heads.html');
    await page.locator('#yours[data-ready="true"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const trapped = await trapPageEngine(page);
    assert.equal(trapped, true, 'the trap did not end the engine');
    const next = 'A fresh engine answers the post.';
    await page.fill('#yours input#sentence', next);
    await page.press('#yours input#sentence', 'Enter');
    await page.waitForFunction((text) => document.getElementById('yours').dataset.sentence === text, next, { timeout: LOAD_TIMEOUT_MS });
    assert.equal(await page.locator('#status').getAttribute('data-state'), 'live');
    const fresh = await page.evaluate(async () => (await (await import('/engine/engine.js')).getEngine()).failed);
    assert.equal(fresh, false);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a figure on its own (the iframe form) recovers from a trap too, keeping its last sentence meanwhile', async () => {
    const { page, context, errors } = await site.open('embed.html?widget=row&sentence=The+cat+sat+on+the+mat.&word=cat');
    await page.locator('attention-row .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const trapped = await trapPageEngine(page);
    assert.equal(trapped, true, 'the trap did not end the engine');
    const next = 'A new engine draws this sentence.';
    await page.evaluate((text) => document.querySelector('attention-row').setAttribute('sentence', text), next);
    await page.waitForFunction((text) => document.querySelector('attention-row').shadowRoot.querySelector('table.bars')?.dataset.sentence === text
      && document.querySelector('attention-row').shadowRoot.querySelector('.status').dataset.mode === 'live', next, { timeout: LOAD_TIMEOUT_MS });
    const fresh = await page.evaluate(async () => (await (await import('/engine/engine.js')).getEngine()).failed);
    assert.equal(fresh, false);
    assert.deepEqual(errors, []);
    await context.close();
  });
});
