// The pages and the figures (their shadow roots included) checked by axe-core (@axe-core/playwright)
// against WCAG 2.1 A and AA in Debian's Chromium, light and dark: the article as it opens (the
// example) and live, every post, and the iframe form. Any violation of serious or critical impact
// fails, named with its elements; the rest are printed. Needs the assembled site:
//   node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { openInstrument, startSite, waitReady } from './harness.mjs';

const require = createRequire(import.meta.url);
const { AxeBuilder } = require('@axe-core/playwright');

const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const LOAD_TIMEOUT_MS = 90000;
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const FAILING = new Set(['serious', 'critical']);

let site;
before(async () => {
  site = await startSite(web);
});
after(() => site?.close());

async function audit(t, page, what) {
  const { violations } = await new AxeBuilder({ page }).withTags(TAGS).analyze();
  const describe = (v) => `${v.impact} ${v.id} (${v.help}): ${v.nodes.slice(0, 4).map((n) => n.target.join(' > ')).join('; ')}${v.nodes.length > 4 ? ` and ${v.nodes.length - 4} more` : ''}`;
  for (const v of violations.filter((x) => !FAILING.has(x.impact))) t.diagnostic(`${what}: ${describe(v)}`);
  const failing = violations.filter((x) => FAILING.has(x.impact)).map(describe);
  assert.deepEqual(failing, [], `${what}: axe-core found\n${failing.join('\n')}`);
}

describe('accessibility (axe-core, WCAG 2.1 AA)', { timeout: 600000 }, () => {
  for (const scheme of ['light', 'dark']) {
    test(`the article, as it opens and live (${scheme})`, async (t) => {
      const { page, context } = await site.open('');
      await page.emulateMedia({ colorScheme: scheme });
      await page.locator('#instrument .status[data-mode="example"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
      await audit(t, page, `index.html, example (${scheme})`);
      // Every figure is named by its number and described by its caption.
      const figures = await page.evaluate(() => [...document.querySelectorAll('figure')].map((f) => ({
        name: document.getElementById(f.getAttribute('aria-labelledby') ?? '')?.textContent ?? '',
        description: document.getElementById(f.getAttribute('aria-describedby') ?? '')?.textContent ?? '',
      })));
      assert.ok(figures.length >= 6);
      figures.forEach((f, k) => {
        assert.equal(f.name, `Figure ${k + 1}.`);
        assert.ok(f.description.startsWith(`Figure ${k + 1}.`) && f.description.length > 40, f.description);
      });
      await openInstrument(page);
      await audit(t, page, `index.html, live (${scheme})`);
      await context.close();
    });
  }

  test('while the model downloads, one live region speaks of it: the page\u2019s progress line, not every figure\u2019s', async () => {
    const { page, context } = await site.open('');
    // The model's core is held back until the check is done, so that the page is still loading.
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await page.route(/\.core\.attn$/, async (route) => {
      await held;
      await route.continue();
    });
    await page.reload();
    await page.locator('#instrument .status[data-mode="example"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await page.waitForFunction(() => /Loading the live model|Starting the download/.test(document.getElementById('progress-text')?.textContent ?? ''));
    const speaking = await page.evaluate(() => {
      const roots = [document, ...[...document.querySelectorAll('*')].filter((e) => e.shadowRoot).map((e) => e.shadowRoot)];
      const live = (el) => (el.getAttribute('aria-live') ?? (el.getAttribute('role') === 'status' ? 'polite' : 'off')) !== 'off';
      return roots.flatMap((r) => [...r.querySelectorAll('[aria-live], [role="status"]')])
        .filter((el) => live(el) && /Loading the live model|Starting the download|Downloaded/.test(el.innerText ?? el.textContent))
        .map((el) => el.id || `${el.getRootNode().host?.localName ?? ''} .${el.className}`);
    });
    release();
    assert.deepEqual(speaking, ['progress-text'], `the live regions that speak of the download: ${speaking.join(', ')}`);
    await context.close();
  });

  for (const [path, ready] of [['heads.html', '#yours'], ['confident.html', '#yours'], ['vocabulary.html', '#groups'], ['contribution.html', '#yours']]) {
    test(`${path}`, async (t) => {
      const { page, context } = await site.open(path);
      await waitReady(page, ready, LOAD_TIMEOUT_MS);
      await audit(t, page, path);
      await context.close();
    });
  }

  // A phone's width, where the wide tables scroll sideways in boxes that must take the focus,
  // and the contribution figure's tables once it has measured.
  test('the posts at 390 px, the contribution figure measured', async (t) => {
    for (const [path, ready] of [['heads.html', '#yours'], ['confident.html', '#yours'], ['contribution.html', '#yours']]) {
      const { page, context } = await site.open(path, { width: 390, height: 844 });
      await waitReady(page, ready, LOAD_TIMEOUT_MS);
      if (path === 'contribution.html') {
        await page.locator('attention-contribution div.body > button.primary').click();
        await waitReady(page, 'attention-contribution', LOAD_TIMEOUT_MS);
      }
      await audit(t, page, `${path} at 390 px`);
      await context.close();
    }
  });

  test('the iframe form', async (t) => {
    const { page, context } = await site.open('embed.html?widget=compare&sentence=The+cat+sat+on+the+mat.&word=cat');
    await page.locator('attention-compare .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await audit(t, page, 'embed.html?widget=compare');
    await context.close();
  });
});
