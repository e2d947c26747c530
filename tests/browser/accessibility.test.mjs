// The pages and the figures (their shadow roots included) checked by axe-core (@axe-core/playwright)
// against WCAG 2.1 A and AA (and axe's experimental rules) in Debian's Chromium, light and dark,
// at 1280 and 390 px: the article as it opens (the example) and live, every post, and the iframe
// form; at 390 px no text is drawn under 12 px. Any violation of serious or critical impact
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
  // The experimental rules too (the review behind issue 25 ran them): a serious finding of one
  // fails like any other.
  const { violations } = await new AxeBuilder({ page }).withTags([...TAGS, 'experimental']).analyze();
  const describe = (v) => `${v.impact} ${v.id} (${v.help}): ${v.nodes.slice(0, 4).map((n) => n.target.join(' > ')).join('; ')}${v.nodes.length > 4 ? ` and ${v.nodes.length - 4} more` : ''}`;
  for (const v of violations.filter((x) => !FAILING.has(x.impact))) t.diagnostic(`${what}: ${describe(v)}`);
  const failing = violations.filter((x) => FAILING.has(x.impact)).map(describe);
  assert.deepEqual(failing, [], `${what}: axe-core found\n${failing.join('\n')}`);
}

// Text drawn smaller than MIN_PHONE_TEXT_PX on the screen (CSS pixels): HTML text by its
// computed size, SVG text by its size times the drawing's scale (a viewBox shrinks it on a
// phone). Only text that is drawn: visible, wider than a pixel (not the visually hidden kind).
const MIN_PHONE_TEXT_PX = 12;
async function smallText(page) {
  return page.evaluate((least) => {
    const roots = [document, ...[...document.querySelectorAll('*')].filter((e) => e.shadowRoot).map((e) => e.shadowRoot)];
    const found = [];
    const deeper = (root) => [...root.querySelectorAll('*')].flatMap((e) => (e.shadowRoot ? [e, ...deeper(e.shadowRoot)] : [e]));
    const all = new Set(roots.flatMap((r) => deeper(r)));
    for (const el of all) {
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.nodeValue.trim());
      if (!own) continue;
      const box = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      if (box.width <= 1 || box.height <= 1 || style.visibility === 'hidden' || !el.getClientRects().length) continue;
      let size = parseFloat(style.fontSize);
      if (el instanceof SVGElement) size *= Math.abs(el.getScreenCTM()?.d ?? 1);
      if (size < least - 0.05) {
        const host = el.getRootNode().host?.localName;
        found.push(`${host ? `${host} ` : ''}${el.localName}${el.className?.baseVal ?? (typeof el.className === 'string' && el.className ? `.${el.className.split(' ')[0]}` : '')} "${el.textContent.trim().slice(0, 20)}" ${size.toFixed(1)} px`);
      }
    }
    return [...new Set(found)];
  }, MIN_PHONE_TEXT_PX);
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

  for (const [path, ready] of [['heads.html', '#yours'], ['confident.html', '#yours'], ['vocabulary.html', '#groups'], ['contribution.html', '#yours'], ['lenses.html', '#yours']]) {
    test(`${path}`, async (t) => {
      const { page, context } = await site.open(path);
      await waitReady(page, ready, LOAD_TIMEOUT_MS);
      await audit(t, page, path);
      await context.close();
    });
  }

  // A phone's width, where the wide tables scroll sideways in boxes that must take the focus,
  // and the contribution figure's tables once it has measured; in the dark theme (the wide
  // pages above are light). No text there is drawn under MIN_PHONE_TEXT_PX.
  test('the article and the posts at 390 px, dark, the article live and the contribution figure measured', async (t) => {
    const small = [];
    {
      const { page, context } = await site.open('', { width: 390, height: 844 });
      await page.emulateMedia({ colorScheme: 'dark' });
      await openInstrument(page);
      await audit(t, page, 'index.html, live, at 390 px (dark)');
      small.push(...(await smallText(page)).map((x) => `index.html: ${x}`));
      await context.close();
    }
    for (const [path, ready] of [['heads.html', '#yours'], ['confident.html', '#yours'], ['vocabulary.html', '#groups'], ['contribution.html', '#yours'], ['lenses.html', '#yours']]) {
      const { page, context } = await site.open(path, { width: 390, height: 844 });
      await page.emulateMedia({ colorScheme: 'dark' });
      await waitReady(page, ready, LOAD_TIMEOUT_MS);
      if (path === 'contribution.html') {
        await page.locator('attention-contribution div.body > button.primary').click();
        await waitReady(page, 'attention-contribution', LOAD_TIMEOUT_MS);
      }
      await audit(t, page, `${path} at 390 px (dark)`);
      small.push(...(await smallText(page)).map((x) => `${path}: ${x}`));
      await context.close();
    }
    assert.deepEqual(small, [], `text drawn under ${MIN_PHONE_TEXT_PX} px at 390 px:\n${small.join('\n')}`);
  });

  test('the iframe form', async (t) => {
    const { page, context } = await site.open('embed.html?widget=compare&sentence=The+cat+sat+on+the+mat.&word=cat');
    await page.locator('attention-compare .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await audit(t, page, 'embed.html?widget=compare');
    await context.close();
  });
});
