// One keyboard model (issue 56): a group of choices is one tab stop and the arrow keys move in
// it, as the captions say. Figure 1's chips move along the tokens with every arrow key (the
// caption says so); Figure 5's panels and the contribution post's two rows of chips are one tab
// stop each, whose arrow keys move and choose; the vocabulary post's entries read out their id
// and typed text from the keyboard and on a tap; the article's "Copy a link to this view"
// copies the address that reopens the view. Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figuresDrawn, openInstrument, startSite, waitReady } from './harness.mjs';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const LOAD_TIMEOUT_MS = 90000;

let site;
before(async () => {
  site = await startSite(web);
});
after(() => site?.close());

// The elements of a group (a CSS selector into the page, through shadow roots) that are in the
// tab order.
const tabStops = (page, selector) => page.locator(selector).evaluateAll((els) => els.filter((el) => el.tabIndex >= 0).map((el) => el.textContent.trim().slice(0, 20)));

describe('one keyboard model', { timeout: 600000 }, () => {
  test('the article: the caption says what the chips\u2019 arrow keys do; Figure 5 is one tab stop whose arrow keys choose heads', async () => {
    const { page, errors, context } = await site.open('');
    try {
      await openInstrument(page, LOAD_TIMEOUT_MS);
      await figuresDrawn(page);
      const caption = await page.locator('#figure-1-caption').textContent();
      assert.match(caption, /on a token, ← → ↑ ↓ move along the tokens/);
      const chip = page.locator('#instrument button.chip[aria-pressed="true"]');
      const token = Number(await chip.getAttribute('data-token'));
      await chip.focus();
      await page.keyboard.press('ArrowDown');
      // The figure redraws in a task of its own: wait (up to 10 s) for the pressed chip to move.
      await page.waitForFunction((t) => document.querySelector('#instrument').shadowRoot.querySelector('button.chip[aria-pressed="true"]')?.dataset.token !== String(t), token, { timeout: 10000 }).catch(() => {});
      assert.equal(await page.locator('#instrument button.chip[aria-pressed="true"]').getAttribute('data-token'), String(token + 1), '\u2193 on a chip goes to the next token');

      assert.deepEqual((await tabStops(page, 'attention-heads button.multiple')).length, 1, 'Figure 5\u2019s panels are one tab stop');
      const panel = page.locator('attention-heads button.multiple[tabindex="0"]');
      assert.equal(await panel.getAttribute('aria-pressed'), 'true', 'the tab stop is the chosen head');
      const [layer, head] = [Number(await panel.getAttribute('data-layer')), Number(await panel.getAttribute('data-head'))];
      const { heads } = await page.locator('attention-heads').evaluate((el) => ({ heads: el.result.heads }));
      await panel.focus();
      const key = head + 1 < heads ? 'ArrowRight' : 'ArrowLeft';
      await page.keyboard.press(key);
      const next = { layer, head: key === 'ArrowRight' ? head + 1 : head - 1 };
      await page.waitForFunction((n) => document.querySelector('#instrument').shadowRoot.querySelector('table.bars')?.dataset.head === String(n.head), next);
      const focused = await page.locator('attention-heads').evaluate((el) => el.shadowRoot.activeElement?.dataset ?? {});
      assert.deepEqual([Number(focused.layer), Number(focused.head)], [next.layer, next.head], 'the focus went to the next head\u2019s panel');
      assert.deepEqual(await tabStops(page, 'attention-heads button.multiple[aria-pressed="true"]'), await tabStops(page, 'attention-heads button.multiple'), 'the new head is the one tab stop');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('contribution.html: each row of chips is one tab stop; the arrow keys choose a word without starting a download', async () => {
    const { page, errors, context } = await site.open('contribution.html');
    try {
      await waitReady(page, '#yours');
      for (const figure of ['attention-prediction', 'attention-contribution']) {
        await page.locator(`${figure} button.chip`).first().waitFor({ timeout: LOAD_TIMEOUT_MS });
        assert.equal((await tabStops(page, `${figure} button.chip`)).length, 1, `${figure}: one chip in the tab order`);
        const stop = page.locator(`${figure} button.chip[tabindex="0"]`);
        const before = Number(await stop.getAttribute('data-token'));
        await stop.focus();
        await page.keyboard.press('ArrowRight');
        await page.waitForFunction(({ f, t }) => document.querySelector(f).shadowRoot.querySelector('button.chip[tabindex="0"]')?.dataset.token === String(t), { f: figure, t: before + 1 });
        assert.equal(await page.locator(`${figure} button.chip[aria-pressed="true"]`).getAttribute('data-token'), String(before + 1), `${figure}: \u2192 chose the next token`);
        assert.equal((await tabStops(page, `${figure} button.chip`)).length, 1, `${figure}: still one tab stop`);
      }
      // Choosing by keys asks for nothing: the vocabulary table is downloaded only on a click.
      const stats = await page.evaluate(async () => (await (await import('/engine/engine.js')).getEngine()).shardStats());
      assert.ok(stats.loaded < stats.count, `the arrow keys downloaded the vocabulary table (${stats.loaded} of ${stats.count})`);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('vocabulary.html: an entry\u2019s id and typed text are read out on a click and from the keyboard, not only to a mouse\u2019s hover', async () => {
    const { page, errors, context } = await site.open('vocabulary.html');
    try {
      await waitReady(page, '#groups');
      const group = page.locator('#groups li').first();
      const entries = group.locator('.entries button.entry');
      assert.equal((await tabStops(page, '#groups li:first-child .entries button.entry')).length, 1, 'a cause\u2019s entries are one tab stop');
      const reading = group.locator('.entry-reading');
      await entries.first().focus();
      const first = await reading.textContent();
      assert.match(first, /^.+: id \d+, typed as \u201c.*\u201d\.$/, first);
      await page.keyboard.press('ArrowRight');
      const second = await entries.nth(1).textContent();
      assert.ok((await reading.textContent()).startsWith(`${second}: id `), `\u2192 read ${await reading.textContent()}`);
      await entries.nth(3).click();
      assert.ok((await reading.textContent()).startsWith(`${await entries.nth(3).textContent()}: id `), 'a click reads its entry');
      assert.equal(await entries.nth(3).getAttribute('tabindex'), '0', 'the entry read is the tab stop');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('the article: \u201cCopy a link to this view\u201d copies the address that reopens it', async () => {
    const context = await site.browser.newContext({ viewport: { width: 1280, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
    const page = await context.newPage();
    try {
      await page.goto(site.baseUrl);
      await openInstrument(page, LOAD_TIMEOUT_MS);
      await page.click('#instrument button.chip[data-token="2"]');
      await page.waitForFunction(() => /[#&]t=2(&|$)/.test(location.hash));
      const button = page.locator('#copy-link');
      assert.ok(await button.isVisible(), 'the button is visible');
      const note = page.locator('#copy-link-note');
      const first = await note.textContent();
      await button.click();
      await page.waitForFunction((t) => document.getElementById('copy-link-note').textContent !== t, first);
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      assert.equal(copied, await page.evaluate(() => location.href));
      assert.match(copied, /#.*s=.*t=2/);
      assert.match(await note.textContent(), /copied/);
      // The note does not outlive the view it spoke of.
      await page.click('#instrument button.chip[data-token="3"]');
      await page.waitForFunction((t) => document.getElementById('copy-link-note').textContent === t, first);
      // The copied address opens that view.
      const other = await context.newPage();
      await other.goto(copied);
      await other.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
      assert.equal(await other.locator('#instrument button.chip[aria-pressed="true"]').getAttribute('data-token'), '2');
    } finally {
      await context.close();
    }
  });
});
