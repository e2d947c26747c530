// The embeddable widgets in Debian's Chromium (driven by npm playwright-core): the demo host on
// a second origin loading the bundle, the wasm engine and the model cross-origin with one
// request each; attributes changed after load; a host with aggressive global CSS; the iframe
// form; hostile attributes, URL parameters and hashes; the article's permalinks and history;
// the embed snippets; SVG and PNG downloads. Needs the assembled site:
//   node scripts/site/build_site.mjs   (writes web/models/, web/dist/ and, with the CLI, web/examples/)
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figureLive, launchChromium, ROW_SUM_TOLERANCE, serve, startHost } from './harness.mjs';


const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const artifacts = join(root, 'test-artifacts');
const LOAD_TIMEOUT_MS = 60000;
const BUNDLE = 'dist/attention-widgets.js';
const DEMO_SENTENCE = 'The keys to the cabinet are on the table.';

// Markup that must stay text wherever a reader or a host can put it.
const HOSTILE = [
  '<img src=x onerror="window.__injected=1">',
  '\' onmouseover=\'window.__injected=3\' x=\'',
  '"><script>window.__injected=2</script><b>bold</b> & more',
];

let site;      // the widgets' site, web/, with CORS (as scripts/serve.sh)
let host;      // a second origin serving only host pages (the demo, pasted snippets), without CORS
let hostRoot;
let siteUrl;
let hostUrl;
let browser;

before(async () => {
  for (const file of [BUNDLE, 'models/manifest.json', 'engine/attention_engine.wasm']) {
    assert.ok(existsSync(join(web, file)), `web/${file} is missing: run node scripts/site/build_site.mjs first.`);
  }
  mkdirSync(artifacts, { recursive: true });
  site = await serve(web);
  host = await startHost(web);
  hostRoot = host.dir;
  // Two origins: 127.0.0.1 and localhost differ by host as well as by port.
  siteUrl = `http://127.0.0.1:${site.server.address().port}/`;
  hostUrl = host.url;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  site?.close();
  host?.close();
});

// A fresh context per test (its own Cache API, so the model is downloaded afresh), recording
// every request, page error and dialog.
async function openPage(url, { viewport = { width: 1200, height: 900 } } = {}) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  let dialogs = 0;
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  page.on('dialog', (dialog) => { dialogs += 1; dialog.dismiss(); });
  await page.goto(url);
  return { page, context, errors, requests, dialogs: () => dialogs };
}

const demoUrl = () => `${hostUrl}embed-demo.html?from=${encodeURIComponent(siteUrl)}`;
const live = (page, selector) => figureLive(page, selector, LOAD_TIMEOUT_MS);

// The shared engine's row, through the bundle's own exports (the same module instance, so the
// same engine the widgets use).
async function engineRow(page, { sentence, layer, head, token }) {
  return page.evaluate(async ({ bundle, layout, args }) => {
    const { getEngine } = await import(bundle);
    const { attentionRow } = await import(layout);
    const result = await (await getEngine()).analyze(args.sentence);
    return { values: Array.from(attentionRow(result, args.layer, args.head, args.token), String), tokens: result.tokens.map((t) => t.text) };
  }, { bundle: siteUrl + BUNDLE, layout: `${siteUrl}engine/result.js`, args: { sentence, layer, head, token } });
}

// What a row chart inside `selector` shows.
async function shownRow(page, selector) {
  return page.locator(`${selector} table.bars`).first().evaluate((table) => ({
    sentence: table.dataset.sentence,
    layer: Number(table.dataset.layer),
    head: Number(table.dataset.head),
    token: Number(table.dataset.token),
    values: [...table.querySelectorAll('tbody tr')].map((tr) => tr.dataset.value),
  }));
}

async function checkRow(page, selector, expected) {
  const shown = await shownRow(page, selector);
  for (const [key, value] of Object.entries(expected)) assert.equal(shown[key], value, `${selector}: ${key}`);
  const sum = shown.values.reduce((a, v) => a + Number(v), 0);
  assert.ok(Math.abs(sum - 1) <= ROW_SUM_TOLERANCE, `${selector}: row sums to ${sum}`);
  assert.deepEqual(shown.values, (await engineRow(page, shown)).values);
  return shown;
}

// Elements of the kinds markup would inject, in the document and every shadow root.
async function countInjected(page) {
  return page.evaluate(() => {
    const counts = { img: 0, script: 0, iframe: 0, b: 0, handlers: 0 };
    const walk = (node) => {
      for (const el of node.querySelectorAll('*')) {
        const tag = el.tagName.toLowerCase();
        // The widgets have <b> elements of their own; only the injected one says "bold".
        if (tag in counts && (tag !== 'b' || el.textContent === 'bold')) counts[tag] += 1;
        if ([...el.attributes].some((a) => /^on/i.test(a.name))) counts.handlers += 1;
        if (el.shadowRoot) walk(el.shadowRoot);
      }
    };
    walk(document);
    return counts;
  });
}

// Downloads a figure as SVG and as PNG through its buttons and checks both: an SVG of sensible
// size naming the sentence, the model and the selection; a PNG of twice that size with a
// picture in it (many colours, the bars' blue among them). Returns the SVG's text.
async function checkDownloads(page, selector, name, { sentence, model, selection }) {
  const [svgDownload] = await Promise.all([page.waitForEvent('download'), page.locator(`${selector} button[data-action="svg"]`).click()]);
  const svgText = readFileSync(await svgDownload.path(), 'utf8');
  assert.match(svgDownload.suggestedFilename(), /\.svg$/);
  assert.match(svgText, /^<\?xml[^>]*>\s*<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  const width = Number(/<svg[^>]* width="(\d+)"/.exec(svgText)?.[1]);
  const height = Number(/<svg[^>]* height="(\d+)"/.exec(svgText)?.[1]);
  assert.ok(width > 100 && height > 100, `${name}: SVG of ${width} x ${height}`);
  const escapeXml = (t) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (sentence !== undefined) assert.ok(svgText.includes(`Sentence: \u201c${escapeXml(sentence)}\u201d`), `${name}: no sentence in the SVG`);
  if (model !== undefined) assert.ok(svgText.includes(`Model: ${model}`), `${name}: no model name in the SVG`);
  if (selection !== undefined) assert.ok(svgText.includes(selection), `${name}: no \u201c${selection}\u201d in the SVG`);
  assert.ok((svgText.match(/class="bar"/g) ?? []).length >= 5, `${name}: too few bars`);

  const [pngDownload] = await Promise.all([page.waitForEvent('download'), page.locator(`${selector} button[data-action="png"]`).click()]);
  const png = readFileSync(await pngDownload.path());
  await pngDownload.saveAs(join(artifacts, `export-${name}.png`));
  assert.match(pngDownload.suggestedFilename(), /\.png$/);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${name}: not a PNG`);
  assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [2 * width, 2 * height], `${name}: PNG size`);
  const colours = await page.evaluate(async (bytes) => {
    const bitmap = await createImageBitmap(new Blob([new Uint8Array(bytes)], { type: 'image/png' }));
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const data = ctx.getImageData(0, 0, bitmap.width, bitmap.height).data;
    const seen = new Set();
    let blue = 0;
    for (let i = 0; i < data.length; i += 4) {
      seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      if (data[i] === 0x2b && data[i + 1] === 0x5c && data[i + 2] === 0xad) blue += 1;
    }
    return { distinct: seen.size, blue };
  }, [...png]);
  assert.ok(colours.distinct > 20 && colours.blue > 100, `${name}: PNG looks empty (${JSON.stringify(colours)})`);
  return svgText;
}

const isWasm = (url) => url.endsWith('.wasm');
const isModel = (url) => url.endsWith('.attn');

describe('embedding', { timeout: 180000 }, () => {
  test('the demo host on a second origin renders its widgets cross-origin with one wasm and one model request', async () => {
    const { page, context, errors, requests } = await openPage(demoUrl());
    for (const id of ['#row', '#heads', '#compare']) await live(page, id);
    assert.notEqual(new URL(hostUrl).origin, new URL(siteUrl).origin);
    const wasm = requests.filter(isWasm);
    const models = requests.filter(isModel);
    assert.equal(wasm.length, 1, `wasm requests: ${wasm}`);
    assert.equal(models.length, 1, `model requests: ${models}`);
    for (const file of ['models/manifest.json', 'engine/attention_engine.js', BUNDLE]) {
      assert.equal(requests.filter((u) => u === siteUrl + file).length, 1, `requests for ${file}`);
    }
    for (const url of [...wasm, ...models]) assert.equal(new URL(url).origin, new URL(siteUrl).origin, `${url} came from the host`);

    const { tokens } = await engineRow(page, { sentence: DEMO_SENTENCE, layer: 0, head: 0, token: 0 });
    await checkRow(page, '#row', { sentence: DEMO_SENTENCE, layer: 1, head: 2, token: tokens.indexOf('are') });
    // One panel per head of the loaded model (its shape from the figure's own result).
    assert.equal(await page.locator('#heads button.multiple').count(), await page.locator('#heads').evaluate((el) => el.result.layers * el.result.heads));
    // hide-special: the comparison's rows leave out [CLS] and [SEP].
    const compareRows = await page.locator('#compare section.panel').first().locator('tbody tr:visible').count();
    assert.equal(compareRows, tokens.length - 2);
    assert.equal(await page.locator('#lab .sum').textContent(), '1.000000');
    assert.equal(await page.evaluate(() => window.__injected), undefined);

    // Neither side styles the other: the host's .status and table.bars rules stay outside.
    const styles = await page.evaluate(() => {
      const inner = document.getElementById('row').shadowRoot;
      return {
        hostStatus: getComputedStyle(document.querySelector('p.status')).display,
        innerStatusBackground: getComputedStyle(inner.querySelector('.status')).backgroundColor,
        innerTableBorder: getComputedStyle(inner.querySelector('table.bars')).borderTopWidth,
      };
    });
    assert.equal(styles.hostStatus, 'block', 'the widgets\u2019 .status rule reached the host page');
    assert.notEqual(styles.innerStatusBackground, 'rgb(253, 230, 138)', 'the host\u2019s .status rule reached a widget');
    assert.equal(styles.innerTableBorder, '0px', 'the host\u2019s table.bars rule reached a widget');

    // More widgets later on the page share the same engine: no new download.
    await page.evaluate(() => {
      const extra = document.createElement('attention-row');
      extra.id = 'extra';
      document.querySelector('article').append(extra);
    });
    await live(page, '#extra');
    assert.equal(requests.filter(isWasm).length, 1);
    assert.equal(requests.filter(isModel).length, 1);
    // With no attributes at all it shows a default sentence and word.
    assert.ok((await shownRow(page, '#extra')).values.length > 2);
    await page.screenshot({ path: join(artifacts, 'embed-demo.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('attributes changed after load update the figure; a reader\u2019s choice stays in its widget', async () => {
    const { page, context, errors, requests } = await openPage(demoUrl());
    for (const id of ['#row', '#heads', '#compare']) await live(page, id);
    const set = (id, name, value) => page.evaluate(([i, n, v]) => (v === null ? document.getElementById(i).removeAttribute(n) : document.getElementById(i).setAttribute(n, v)), [id, name, value]);
    const before = await shownRow(page, '#row');
    await set('row', 'layer', '4');
    await set('row', 'head', '1');
    const moved = await checkRow(page, '#row', { layer: 3, head: 0, token: before.token });
    assert.notDeepEqual(moved.values, before.values);

    const sentence = 'Cats sleep in the warm sun.';
    await set('row', 'sentence', sentence);
    await set('row', 'word', 'sun');
    const { tokens } = await engineRow(page, { sentence, layer: 0, head: 0, token: 0 });
    await checkRow(page, '#row', { sentence, token: tokens.indexOf('sun'), layer: 3, head: 0 });
    assert.deepEqual(await page.locator('#row button.chip').allTextContents(), tokens);
    await set('row', 'hide-special', '');
    assert.equal(await page.locator('#row table.bars tbody tr:visible').count(), tokens.length - 2);

    // A click in the widget changes what it shows, not the author's attribute (issue 19).
    await page.locator('#row button.chip').nth(2).click();
    await page.waitForFunction(() => document.getElementById('row').selection?.token === 2);
    await checkRow(page, '#row', { token: 2 });
    assert.equal(await page.locator('#row').getAttribute('word'), 'sun');
    assert.equal(await page.locator('#row').evaluate((el) => el.selection.token), 2);

    // The other widgets: the heads figure's word, the comparison's heads, the lab's scores.
    await set('heads', 'word', 'keys');
    const keysIndex = (await engineRow(page, { sentence: DEMO_SENTENCE, layer: 0, head: 0, token: 0 })).tokens.indexOf('keys');
    await page.waitForFunction((k) => document.getElementById('heads').shadowRoot.querySelector('.multiples')?.getAttribute('aria-label')?.includes('keys'), keysIndex);
    await set('compare', 'heads', '1.2 3.4');
    const panels = await page.locator('#compare section.panel[data-kind="head"]').evaluateAll((els) => els.map((e) => [Number(e.dataset.layer), Number(e.dataset.head)]));
    assert.deepEqual(panels, [[0, 1], [2, 3]]);
    await set('lab', 'scores', '0 0 0 0 0');
    const weights = await page.locator('#lab output').evaluateAll((outs) => outs.map((o) => Number(o.dataset.value)));
    weights.forEach((w) => assert.ok(Math.abs(w - 0.2) < 1e-12));
    assert.equal(requests.filter(isModel).length, 1);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('aggressive global CSS in the host does not break the widgets, which size to their container', async () => {
    const { page, context, errors } = await openPage(demoUrl());
    for (const id of ['#row', '#heads', '#compare']) await live(page, id);
    // The host's rules may move its own columns; compare each widget in a container as wide.
    const measure = () => page.evaluate(() => ['row', 'heads', 'compare', 'lab'].map((id) => {
      const el = document.getElementById(id);
      const inner = el.shadowRoot;
      const label = inner.querySelector('table.bars th, .multiple .title, .lab label');
      const s = getComputedStyle(label);
      const bars = [...inner.querySelectorAll('table.bars .bar, .lab .bar')].map((b) => b.getBoundingClientRect().width);
      return {
        id,
        display: getComputedStyle(el).display,
        font: [s.fontSize, s.lineHeight, s.textTransform, s.letterSpacing, s.fontStyle, s.textAlign, s.whiteSpace].join(' '),
        color: s.color,
        bars: bars.length,
        barWidths: bars.filter((w) => w > 0).length,
        overflow: inner.querySelector('.body').scrollWidth - inner.querySelector('.body').clientWidth,
        width: el.getBoundingClientRect().width,
        parentWidth: el.parentElement.getBoundingClientRect().width,
        bodyHeight: inner.querySelector('.body').getBoundingClientRect().height,
      };
    }));
    const calm = await measure();
    await page.addStyleTag({ content: `
      * { font: italic 900 27px/3.3 "Comic Sans MS", cursive !important; color: #e0e !important;
          text-transform: uppercase !important; letter-spacing: 0.4em !important; text-align: center !important;
          white-space: nowrap !important; display: inline !important; box-sizing: content-box !important;
          visibility: visible; cursor: wait !important; word-spacing: 2em !important; }
      html, body, main, article, aside { display: block !important; }
      html { font: 17px/1.6 serif !important; }
      .columns { display: grid !important; }
      div, span, table, tr, td, th, button, svg, canvas, input, output, label, section { display: none !important; border: 5px solid red !important; }
    ` });
    const loud = await measure();
    // The host's own text grows enormous under these rules; the widgets are what to look at.
    for (const id of ['row', 'compare', 'lab']) await page.locator(`#${id}`).screenshot({ path: join(artifacts, `embed-hostile-css-${id}.png`) });
    for (const [k, after] of loud.entries()) {
      const before = calm[k];
      assert.equal(after.display, 'block', `${after.id}: display`);
      assert.equal(after.font, before.font, `${after.id}: type changed`);
      assert.equal(after.color, before.color, `${after.id}: colour changed`);
      assert.equal(after.barWidths, before.barWidths, `${after.id}: bars vanished`);
      assert.ok(after.bars > 0 || after.id === 'heads');
      assert.ok(after.overflow <= 1, `${after.id}: content overflows by ${after.overflow} px`);
      assert.ok(after.width <= after.parentWidth + 0.5, `${after.id}: ${after.width} px in a ${after.parentWidth} px container`);
      assert.ok(Math.abs(after.bodyHeight - before.bodyHeight) <= 0.05 * before.bodyHeight, `${after.id}: height ${before.bodyHeight} -> ${after.bodyHeight}`);
    }
    // Sized to the container: a narrow one makes the widget narrow, with nothing sticking out.
    await page.evaluate(() => { document.getElementById('row').style.setProperty('width', '300px'); });
    const narrow = await page.evaluate(() => {
      const el = document.getElementById('row');
      const body = el.shadowRoot.querySelector('.body');
      return { width: el.getBoundingClientRect().width, overflow: body.scrollWidth - body.clientWidth };
    });
    assert.equal(Math.round(narrow.width), 300);
    assert.ok(narrow.overflow <= 1, `a 300 px widget overflows by ${narrow.overflow} px`);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('hostile attributes, iframe parameters and snippets inject nothing', async () => {
    const { page, context, errors, dialogs } = await openPage(demoUrl());
    await live(page, '#row');
    const baseline = await countInjected(page);
    for (const text of HOSTILE) {
      await page.evaluate((t) => {
        const row = document.getElementById('row');
        row.setAttribute('sentence', t);
        row.setAttribute('word', t);
        row.setAttribute('layer', t);
        row.setAttribute('head', '"><img src=x onerror=window.__injected=9>');
      }, text);
      // The analysis runs in the engine's worker: the figure shows the sentence once it is back.
      await page.waitForFunction((t) => document.getElementById('row').shadowRoot.querySelector('table.bars')?.dataset.sentence === t, text, { timeout: LOAD_TIMEOUT_MS }).catch(() => {});
      const shown = await shownRow(page, '#row');
      assert.equal(shown.sentence, text);
      const { tokens } = await engineRow(page, { sentence: text, layer: 0, head: 0, token: 0 });
      assert.deepEqual(await page.locator('#row button.chip').allTextContents(), tokens);
      assert.deepEqual(await countInjected(page), baseline, `elements appeared for ${text}`);
    }
    // Addresses that are scripts are fetched as data, which fails: the figure says so.
    await page.evaluate(() => {
      const bad = document.createElement('attention-row');
      bad.id = 'bad';
      bad.setAttribute('model-src', 'javascript:window.__injected=10');
      bad.setAttribute('engine-src', 'javascript:window.__injected=11//');
      document.querySelector('article').append(bad);
    });
    await page.locator('#bad').scrollIntoViewIfNeeded();
    await page.locator('#bad .status[data-mode="error"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    assert.match(await page.locator('#bad .status').textContent(), /javascript:window\.__injected=1[01]/);

    // The embed snippet of that state is escaped, and an HTML parser reads back the same text.
    await page.locator('#row button[data-action="embed"]').click();
    const snippet = await page.locator('#row textarea.snippet').first().inputValue();
    assert.ok(!snippet.includes(HOSTILE.at(-1)), 'the sentence went into the snippet unescaped');
    const parsed = await page.evaluate((html) => {
      const doc = new DOMParser().parseFromString(html, 'text/html');
      const el = doc.querySelector('attention-row');
      return { sentence: el?.getAttribute('sentence'), elements: doc.querySelectorAll('body *, head *').length };
    }, snippet);
    assert.equal(parsed.sentence, HOSTILE.at(-1));
    assert.equal(parsed.elements, 2, 'the snippet holds more than a script and an element');
    assert.match(snippet, new RegExp(`src="${siteUrl.replace(/[.]/g, '\\.')}dist/attention-widgets\\.js"`));

    // The iframe form: parameters are data, and an unknown widget is named, not rendered.
    const frame = await context.newPage();
    frame.on('pageerror', (error) => errors.push(error.message));
    frame.on('dialog', (d) => { errors.push(`dialog ${d.message()}`); d.dismiss(); });
    await frame.goto(`${siteUrl}embed.html?widget=${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
    assert.match(await frame.locator('.frame-error').textContent(), /no figure called .<img src=x onerror=alert\(1\)>/);
    assert.equal(await frame.locator('img').count(), 0);
    const params = new URLSearchParams({ widget: 'row', sentence: HOSTILE[0], word: 'x', layer: '2', head: '1', 'model-src': 'http://evil.example/m.attn', onload: 'alert(1)' });
    await frame.goto(`${siteUrl}embed.html?${params}`);
    await live(frame, 'attention-row');
    const frameRow = await frame.locator('attention-row table.bars').evaluate((t) => ({ sentence: t.dataset.sentence, layer: t.dataset.layer, head: t.dataset.head }));
    assert.deepEqual(frameRow, { sentence: HOSTILE[0], layer: '1', head: '0' });
    assert.equal(await frame.locator('attention-row').getAttribute('model-src'), null, 'a model from another site was accepted');
    assert.equal(await frame.locator('attention-row').getAttribute('onload'), null);
    assert.deepEqual(await countInjected(frame), { img: 0, script: 1, iframe: 0, b: 0, handlers: 0 });
    await frame.screenshot({ path: join(artifacts, 'embed-frame.png') });

    await page.waitForTimeout(100);
    assert.equal(await page.evaluate(() => window.__injected), undefined);
    assert.equal(await frame.evaluate(() => window.__injected), undefined);
    assert.equal(dialogs(), 0);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('each figure downloads as SVG and PNG with the sentence, model, layer and head in it', async () => {
    const { page, context, errors } = await openPage(demoUrl());
    for (const id of ['#row', '#heads', '#compare']) await live(page, id);
    const model = await page.evaluate(async (bundle) => (await (await import(bundle)).getEngine()).info.name, siteUrl + BUNDLE);
    const rowSvg = await checkDownloads(page, '#row', 'row', { sentence: DEMO_SENTENCE, model, selection: 'Layer 2, head 3' });
    // The row's bars carry the very weights the figure shows, in order.
    assert.deepEqual([...rowSvg.matchAll(/class="bar" data-value="([^"]+)"/g)].map((m) => m[1]), (await shownRow(page, '#row')).values);
    await checkDownloads(page, '#heads', 'heads', { sentence: DEMO_SENTENCE, model, selection: 'L1 H1' });
    await checkDownloads(page, '#compare', 'compare', { sentence: DEMO_SENTENCE, model, selection: 'Rollout' });
    const labSvg = await checkDownloads(page, '#lab', 'lab', {});
    assert.equal((labSvg.match(/class="bar"/g) ?? []).length, 5);
    assert.match(labSvg, /sum to 1\.000000/);
    assert.deepEqual(errors, []);
    await context.close();
  });

  // XMLSerializer writes text as it is: without export.js's replacement, one control character
  // in the sentence made the SVG unreadable to every XML parser and the PNG fail (security
  // review F6).
  test('a sentence holding every character XML forbids exports as a well-formed SVG and as a PNG', async () => {
    const forbidden = Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)).join('') + '\uFFFE\uFFFF\uD800';
    const sentence = `The cat${forbidden} sat on the \uDC00mat.`;
    const { page, context, errors } = await openPage(`${siteUrl}embed.html?widget=row&word=cat`);
    await live(page, 'attention-row');
    await page.locator('attention-row').evaluate((el, text) => el.setAttribute('sentence', text), sentence);
    await page.waitForFunction((text) => document.querySelector('attention-row').selection?.sentence === text, sentence, { timeout: LOAD_TIMEOUT_MS });
    const exported = await page.locator('attention-row').evaluate(async (el) => {
      const svg = el.toSVG();
      const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
      const png = await el.toPNG();
      return { parseError: doc.querySelector('parsererror')?.textContent ?? null, header: doc.querySelector('text.header')?.textContent, png: png.type, pngBytes: png.size };
    });
    assert.equal(exported.parseError, null);
    // The header wraps at white space (tab to carriage return among the controls); U+0000 to U+0008,
    // then U+000E to U+001F, U+FFFE, U+FFFF and the two lone surrogates are each one U+FFFD.
    assert.equal(exported.header, `Sentence: \u201cThe cat${'\uFFFD'.repeat(9)} ${'\uFFFD'.repeat(21)} sat on the \uFFFDmat.\u201d`);
    assert.equal(exported.png, 'image/png');
    assert.ok(exported.pngBytes > 1000);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the precision figure embedded on another origin loads its two files once, when asked, and follows its plan attribute', async () => {
    const { page, context, errors, requests } = await openPage(demoUrl());
    await live(page, '#precision');
    const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
    const p = manifest.precision;
    assert.deepEqual(requests.filter(isModel).map((u) => u.split('/').pop()), [(manifest.models[p.shipped].core ?? manifest.models[p.shipped]).file], 'the f32 or naive file loaded before the reader asked (the shipped model loads as its split core)');
    await page.locator('#precision [data-action="load-precision"]').click();
    await page.locator('#precision .verdict[data-plan="naive"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const verdict = () => page.locator('#precision .verdict').evaluate((v) => ({ plan: v.dataset.plan, max: Number(v.dataset.sentenceMax), text: v.textContent }));
    const naive = await verdict();
    assert.ok(naive.max > p.bar, `naive: ${naive.max}`);
    assert.match(naive.text, /times the 0\.001 bar/);
    // The selection came from the attributes: "are" in layer 2, head 3.
    assert.match(await page.locator('#precision table.diff caption').textContent(), /^\u201care\u201d .* layer 2, head 3/);
    await page.locator('#precision button[data-action="embed"]').click();
    assert.match(await page.locator('#precision textarea.snippet').first().inputValue(), /<attention-precision [^>]*plan="naive"/);
    await page.evaluate(() => document.getElementById('precision').setAttribute('plan', 'shipped'));
    await page.locator('#precision .verdict[data-plan="shipped"]').waitFor();
    const shipped = await verdict();
    assert.ok(shipped.max <= p.bar, `compact: ${shipped.max}`);
    const models = requests.filter(isModel).map((u) => u.split('/').pop()).sort();
    // The compact model is served split (its core file and row shards): its core counts here.
    assert.deepEqual(models, [p.reference, p.shipped, p.naive].map((k) => manifest.models[k].core?.file ?? manifest.models[k].file).sort(), 'each file once');
    assert.equal(requests.filter((u) => u === siteUrl + 'models/manifest.json').length, 1);
    await checkDownloads(page, '#precision', 'precision', { sentence: DEMO_SENTENCE, selection: 'Compact weights' });
    assert.deepEqual(errors, []);
    await context.close();
  });
});

// The article's figure 1 as it shows now.
async function articleRow(page) {
  return shownRow(page, '#instrument');
}

async function waitForArticleRow(page, expected) {
  await page.waitForFunction((e) => {
    const t = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
    return t && Object.entries(e).every(([k, v]) => (k === 'sentence' ? t.dataset.sentence === v : Number(t.dataset[k]) === v));
  }, expected);
}

const historyLength = (page) => page.evaluate(() => history.length);

describe('article permalinks and embed controls', { timeout: 180000 }, () => {
  test('a permalink opens on exactly its state, the back button walks the choices, typing adds one entry', async () => {
    const sentence = 'Bright stars shine over the quiet harbour tonight.';
    const hash = `#s=${encodeURIComponent(sentence)}&t=3&l=2&h=1&special=0&v=heads`;
    const { page, context, errors } = await openPage(`${siteUrl}${hash}`, { viewport: { width: 1200, height: 800 } });
    // No click on "open": the link itself asks for the live figures.
    await live(page, '#instrument');
    await waitForArticleRow(page, { sentence, token: 3, layer: 2, head: 1 });
    const opened = await articleRow(page);
    assert.deepEqual(opened.values, (await engineRowArticle(page, opened)).values);
    assert.equal(await page.locator('#instrument button.chip.special:visible').count(), 0, '[CLS] and [SEP] shown although special=0');
    assert.equal(await page.locator('attention-heads button.multiple[aria-pressed="true"]').getAttribute('data-layer'), '2');
    // v=heads: the figure the link names is in view (scrolled to once the figures have laid out,
    // which a busy machine showed after the row was drawn: waited for, then asserted).
    await page.waitForFunction(() => {
      const top = document.querySelector('attention-heads').getBoundingClientRect().top;
      return top >= -2 && top < innerHeight;
    }, null, { timeout: 30000 }).catch(() => {});
    const headsTop = await page.locator('attention-heads').evaluate((el) => el.getBoundingClientRect().top);
    assert.ok(headsTop >= -2 && headsTop < 800, `the heads figure is at ${headsTop} px`);

    const start = await historyLength(page);
    await page.locator('#instrument button.chip').nth(5).click();
    await waitForArticleRow(page, { token: 5, layer: 2, head: 1 });
    await page.click('#instrument button.cell[data-layer="0"][data-head="3"]');
    await waitForArticleRow(page, { token: 5, layer: 0, head: 3 });
    assert.equal(await historyLength(page), start + 2);
    const link = page.url();

    await page.goBack();
    await waitForArticleRow(page, { sentence, token: 5, layer: 2, head: 1 });
    await page.goBack();
    await waitForArticleRow(page, { sentence, token: 3, layer: 2, head: 1 });
    await page.goForward();
    await waitForArticleRow(page, { sentence, token: 5, layer: 2, head: 1 });
    await page.goForward();
    await waitForArticleRow(page, { sentence, token: 5, layer: 0, head: 3 });

    // Typing: pauses commit the sentence, but one typed sentence is one history entry.
    const input = page.locator('#instrument input#sentence');
    await input.fill('');
    await input.pressSequentially('Rivers run', { delay: 30 });
    await page.waitForTimeout(500);
    await input.pressSequentially(' to the sea.', { delay: 30 });
    await page.waitForTimeout(500);
    await input.press('Enter');
    await waitForArticleRow(page, { sentence: 'Rivers run to the sea.' });
    assert.equal(await historyLength(page), start + 3, 'typing flooded the history');
    await page.goBack();
    await waitForArticleRow(page, { sentence, token: 5, layer: 0, head: 3 });

    // The link round-trips: a fresh browser opening it shows the same row, value for value.
    const shown = await articleRow(page);
    const second = await openPage(link);
    await live(second.page, '#instrument');
    await waitForArticleRow(second.page, { sentence, token: 5, layer: 0, head: 3 });
    assert.deepEqual(await articleRow(second.page), shown);
    assert.deepEqual(second.errors, []);
    await second.context.close();
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('hostile hashes inject nothing', async () => {
    const hashes = [
      `#s=${encodeURIComponent(HOSTILE[0])}&t=${encodeURIComponent('<b>bold</b>')}&l=1e3&h=-1&v=${encodeURIComponent('<svg onload=window.__injected=5>')}`,
      `#s=${encodeURIComponent(HOSTILE[2])}&special=${encodeURIComponent('"><img src=x onerror=window.__injected=6>')}`,
      '#s=%3Cscript%3Ewindow.__injected%3D7%3C%2Fscript%3E&v=heads%22%3E%3Cimg%20src%3Dx%20onerror%3Dwindow.__injected%3D8%3E&constructor=1&__proto__=x',
    ];
    for (const hash of hashes) {
      const { page, context, errors, dialogs } = await openPage(`${siteUrl}${hash}`);
      await live(page, '#instrument');
      const sentence = (await articleRow(page)).sentence;
      assert.ok(sentence.includes('<'), `the hash's sentence was not used: ${sentence}`);
      // The article's own two module scripts (start-engine.js and article.js), nothing else.
      assert.deepEqual(await countInjected(page), { img: 0, script: 2, iframe: 0, b: 0, handlers: 0 }, hash);
      // The same hostile text arriving later, through the address bar.
      await page.evaluate(() => { location.hash = `#s=${encodeURIComponent('<iframe src="javascript:window.__injected=9"></iframe>')}&v=<b>bold</b>`; });
      await waitForArticleRow(page, { sentence: '<iframe src="javascript:window.__injected=9"></iframe>' });
      assert.deepEqual(await countInjected(page), { img: 0, script: 2, iframe: 0, b: 0, handlers: 0 });
      await page.waitForTimeout(100);
      assert.equal(await page.evaluate(() => window.__injected), undefined);
      assert.equal(dialogs(), 0);
      assert.deepEqual(errors, []);
      await context.close();
    }
  });

  test('each figure\u2019s embed control shows the snippet of its state, which works pasted into a page on another origin', async () => {
    const sentence = 'She said "yes" & <left>.';
    const { page, context, errors } = await openPage(`${siteUrl}#s=${encodeURIComponent(sentence)}&t=2&l=3&h=0`);
    await live(page, '#instrument');
    await waitForArticleRow(page, { sentence, token: 2, layer: 3, head: 0 });
    const snippets = {};
    for (const tag of ['attention-instrument', 'attention-mechanism', 'softmax-lab', 'attention-compare', 'attention-heads']) {
      await page.locator(`${tag} button[data-action="embed"]`).click();
      snippets[tag] = await page.locator(`${tag} textarea.snippet`).first().inputValue();
      assert.match(snippets[tag], new RegExp(`^<script type="module" src="[^"]+/dist/attention-widgets\\.js"></script>\\n<${tag}[ >]`));
      if (tag !== 'softmax-lab') {
        assert.ok(snippets[tag].includes('sentence="She said &quot;yes&quot; &amp; &lt;left&gt;."'), `${tag}: ${snippets[tag]}`);
      }
      const frame = await page.locator(`${tag} textarea.snippet`).nth(1).inputValue();
      assert.match(frame, /^<script type="module" src="[^"]+\/dist\/attention-frames\.js"><\/script>\n<iframe src="[^"]+\/embed\.html\?widget=/);
    }
    assert.match(snippets['attention-instrument'], /word="2" layer="4" head="1"|word="[^"]+" layer="4" head="1"/);

    // Pasted into a fresh page on the other origin, the instrument's snippet shows the same row.
    const shown = await articleRow(page);
    const fresh = await context.newPage();
    fresh.on('pageerror', (error) => errors.push(error.message));
    writeFileSync(join(hostRoot, 'fresh.html'), `<!doctype html><meta charset="utf-8"><title>fresh</title>\n${snippets['attention-instrument']}\n`);
    await fresh.goto(`${hostUrl}fresh.html`);
    await live(fresh, 'attention-instrument');
    const pasted = await shownRow(fresh, 'attention-instrument');
    assert.deepEqual(pasted, shown);
    await fresh.screenshot({ path: join(artifacts, 'embed-pasted-snippet.png') });
    await page.locator('attention-instrument').screenshot({ path: join(artifacts, 'article-figure1-embed-open.png') });
    // The article's own figures export too, with the reader's sentence written as text.
    const model = await page.locator('[data-fact="modelName"]').first().textContent();
    await checkDownloads(page, 'attention-instrument', 'article-instrument', { sentence, model, selection: 'Layer 4, head 1' });
    await checkDownloads(page, 'attention-mechanism', 'article-mechanism', { sentence, model, selection: 'Layer 4, head 1' });
    assert.deepEqual(errors, []);
    await context.close();
  });
});

// The article's engine (unbundled modules) for the same row.
async function engineRowArticle(page, { sentence, layer, head, token }) {
  return page.evaluate(async (args) => {
    const engine = await import('/engine/engine.js');
    const { attentionRow } = await import('/engine/result.js');
    const result = await (await engine.getEngine()).analyze(args.sentence);
    return { values: Array.from(attentionRow(result, args.layer, args.head, args.token), String) };
  }, { sentence, layer, head, token });
}
