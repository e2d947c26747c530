// Embedding as an author does it (issue 19), in Debian's Chromium: only the folder that
// scripts/site/publish.mjs writes, served on one origin, and host pages on a second origin with
// a hostile blog stylesheet and a dark toggle on html.dark. The host's theme reaches the
// widgets (element and iframe); every attribute mistake shows a note and a console warning;
// a reader's choice leaves as an attention-change event without rewriting the attributes;
// the README's table of custom properties is the one in web/widgets/style.js. Needs the
// assembled site: node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figureLive, launchChromium, ROW_SUM_TOLERANCE, serve, startHost } from './harness.mjs';
import { publish } from '../../scripts/site/publish.mjs';
import { THEME_PROPERTIES } from '../../web/widgets/style.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const artifacts = join(root, 'test-artifacts');
const LOAD_TIMEOUT_MS = 60000;
const SENTENCE = 'The keys to the cabinet are on the table.';
const LIGHT_BG = 'rgb(255, 255, 255)';
const DARK_BG = 'rgb(22, 22, 27)';

// A blog template of another origin: its own reset, serif body, line-height 2 everywhere,
// buttons unset, and a dark theme on html.dark that also sets color-scheme (the README's line).
const BLOG_CSS = `
  * { margin: 0; padding: 0; line-height: 2 !important; }
  body { font: 19px/2 Georgia, serif; background: #fff; color: #111; }
  button { all: unset; }
  html.dark { color-scheme: dark; }
  html.dark body { background: #111; color: #eee; }
`;

let pubDir;
let hostDir;
let site;
let host;
let siteUrl;
let hostUrl;
let browser;
let published;

function hostPage(name, body, script = '') {
  writeFileSync(join(hostDir, name), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${name}</title>
<style>${BLOG_CSS}</style>
<script type="module" src="${siteUrl}dist/attention-widgets.js"></script>
<script type="module">${script}</script></head><body><main>${body}</main></body></html>`);
  return `${hostUrl}${name}`;
}

before(async () => {
  for (const file of ['dist/attention-widgets.js', 'models/manifest.json', 'engine/attention_engine.wasm']) {
    assert.ok(existsSync(join(web, file)), `web/${file} is missing: run node scripts/site/build_site.mjs first.`);
  }
  mkdirSync(artifacts, { recursive: true });
  pubDir = mkdtempSync(join(tmpdir(), 'attention-published-'));
  published = publish({ out: join(pubDir, 'site'), quiet: true });
  site = await serve(join(pubDir, 'site'));
  host = await startHost(web);
  hostDir = host.dir;
  siteUrl = `http://127.0.0.1:${site.server.address().port}/`;
  hostUrl = host.url;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  site?.close();
  host?.close();
  if (pubDir) rmSync(pubDir, { recursive: true, force: true });
});

async function openPage(url, { colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, colorScheme });
  const page = await context.newPage();
  const errors = [];
  const warnings = [];
  const requests = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'warning') warnings.push(message.text()); });
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(url);
  return { page, context, errors, warnings, requests };
}

const live = (page, selector) => figureLive(page, selector, LOAD_TIMEOUT_MS);
const background = (page, selector) => page.locator(selector).evaluate((el) => getComputedStyle(el).backgroundColor);
// A figure scrolled past lets go of its drawing until it is near again (web/runtime/standalone.js,
// FAR): what it shows is read with it on screen, as a reader sees it.
async function shown(page, selector) {
  await live(page, selector);
  return page.locator(`${selector} table.bars`).first().evaluate((t) => ({
    layer: Number(t.dataset.layer), head: Number(t.dataset.head), token: Number(t.dataset.token), sentence: t.dataset.sentence,
    values: [...t.querySelectorAll('tbody tr')].map((tr) => Number(tr.dataset.value)),
  }));
}
async function tokensOf(page, sentence) {
  return page.evaluate(async ([bundle, text]) => {
    const { getEngine } = await import(bundle);
    return (await (await getEngine()).analyze(text)).tokens.map((t) => t.text);
  }, [`${siteUrl}dist/attention-widgets.js`, sentence]);
}

describe('embedding as an author', () => {
  test('the published folder holds exactly what a host uploads, and alone serves the embeds', async () => {
    const paths = published.files.map((f) => f.path);
    for (const path of ['dist/attention-widgets.js', 'engine/attention_engine.js', 'engine/attention_engine.wasm', 'engine/worker.js',
      'engine/errors.js', 'engine/files.js', 'engine/local.js', 'engine/protocol.js', 'engine/result.js', 'models/manifest.json', 'embed.html', 'embed-frame.js', 'css/embed.css']) {
      assert.ok(paths.includes(path), `${path} is not published`);
    }
    const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
    const entry = manifest.models[manifest.default];
    assert.ok(paths.includes(`models/${entry.core.file}`));
    assert.equal(readdirSync(join(pubDir, 'site', 'models', entry.shards.folder)).length, entry.shards.count);
    assert.ok(!paths.some((p) => /explainer-mini\.attn$|naive/.test(p)), 'the f32 or naive file was published without --precision');
    assert.ok(!paths.some((p) => /index\.html|article\.js|examples\//.test(p)), 'article files were published');

    const url = hostPage('published.html', `
      <attention-row id="row" sentence="${SENTENCE}" word="are" layer="2" head="3"></attention-row>
      <attention-heads id="heads" sentence="${SENTENCE}" word="keys"></attention-heads>
      <iframe id="frame" src="${siteUrl}embed.html?widget=row&sentence=The+cat+sat.&word=cat&layer=2&head=3&theme=dark" width="100%" height="640" style="border:0"></iframe>`);
    const { page, context, errors, requests } = await openPage(url);
    await live(page, '#row');
    await live(page, '#heads');
    const frame = page.frameLocator('#frame');
    await frame.locator('attention-row .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const row = await shown(page, '#row');
    assert.deepEqual([row.layer, row.head], [1, 2]);
    assert.ok(Math.abs(row.values.reduce((a, b) => a + b, 0) - 1) <= ROW_SUM_TOLERANCE);
    assert.equal(await background(page.frameLocator('#frame'), 'attention-row'), DARK_BG, 'theme=dark in the frame URL');
    const elsewhere = requests.filter((r) => !r.startsWith(siteUrl) && !r.startsWith(hostUrl) && !r.startsWith('data:') && !r.startsWith('blob:'));
    assert.deepEqual(elsewhere, []);
    assert.ok(requests.some((r) => r.includes('.rows/')), 'no shard was fetched');
    assert.deepEqual(errors, []);
    await context.close();

    // The repository's cross-origin demo (startHost copied it) against the published folder
    // alone, with its dark toggle.
    const demo = await openPage(`${hostUrl}embed-demo.html?from=${encodeURIComponent(siteUrl)}`);
    for (const id of ['#row', '#heads', '#compare']) await live(demo.page, id);
    await demo.page.locator('#lab').waitFor();
    await demo.page.click('#dark');
    await demo.page.waitForFunction(() => ['row', 'heads', 'compare', 'precision', 'lab'].every((id) => getComputedStyle(document.getElementById(id)).backgroundColor === 'rgb(22, 22, 27)'));
    await demo.page.locator('#row button.chip').nth(3).click();
    await demo.page.waitForFunction(() => /^You are reading/.test(document.getElementById('reading').textContent));
    await demo.page.screenshot({ path: join(artifacts, 'embed-demo-dark.png'), fullPage: true });
    assert.deepEqual(demo.errors, []);
    await demo.context.close();
  });

  test('the host\u2019s dark toggle (color-scheme), the theme attribute and the iframe message reach the widgets', async () => {
    const url = hostPage('theme.html', `
      <attention-row id="auto" sentence="${SENTENCE}" word="are"></attention-row>
      <attention-row id="light" theme="light" sentence="${SENTENCE}" word="are"></attention-row>
      <softmax-lab id="lab"></softmax-lab>
      <iframe id="frame" src="${siteUrl}embed.html?widget=softmax" width="100%" height="400" style="border:0"></iframe>`);
    const { page, context, errors } = await openPage(url);
    await live(page, '#auto');
    await page.frameLocator('#frame').locator('softmax-lab').waitFor();
    assert.equal(await background(page, '#auto'), LIGHT_BG);
    await page.screenshot({ path: join(artifacts, 'embed-author-light.png'), fullPage: true });
    await page.evaluate(() => document.documentElement.classList.add('dark'));
    await page.waitForFunction(() => getComputedStyle(document.getElementById('auto')).backgroundColor === 'rgb(22, 22, 27)');
    assert.equal(await background(page, '#lab'), DARK_BG, 'a figure without a model follows the host too');
    assert.equal(await background(page, '#light'), LIGHT_BG, 'theme="light" wins over the host');
    await page.evaluate(() => document.getElementById('light').setAttribute('theme', 'dark'));
    await page.waitForFunction(() => getComputedStyle(document.getElementById('light')).backgroundColor === 'rgb(22, 22, 27)');
    // The frame: the host tells it.
    await page.evaluate(() => document.getElementById('frame').contentWindow.postMessage({ type: 'attention-theme', theme: 'dark' }, '*'));
    await page.frameLocator('#frame').locator('softmax-lab').evaluate((el) => new Promise((resolve) => {
      const check = () => (getComputedStyle(el).backgroundColor === 'rgb(22, 22, 27)' ? resolve() : setTimeout(check, 50));
      check();
    }));
    // A host's own value still wins over the theme's.
    await page.evaluate(() => document.getElementById('auto').style.setProperty('--attn-bg', 'rgb(1, 2, 3)'));
    assert.equal(await background(page, '#auto'), 'rgb(1, 2, 3)');
    await page.evaluate(() => document.getElementById('auto').style.removeProperty('--attn-bg'));
    await page.screenshot({ path: join(artifacts, 'embed-author-dark.png'), fullPage: true });
    await page.evaluate(() => document.documentElement.classList.remove('dark'));
    await page.waitForFunction(() => getComputedStyle(document.getElementById('auto')).backgroundColor === 'rgb(255, 255, 255)');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('with no host color-scheme, auto follows the page: light on a light blog whatever the reader\u2019s setting, dark on a dark one', async () => {
    // The blog declares no color-scheme for its light theme, so its page is light even for a
    // reader whose system is dark: a dark figure there would be a dark box on a white page.
    const url = hostPage('os.html', `<softmax-lab id="lab"></softmax-lab><div id="night" style="background:#101014"><softmax-lab id="inside"></softmax-lab></div>`);
    const { page, context } = await openPage(url.replace('os.html', 'os.html?x'), { colorScheme: 'dark' });
    await page.locator('#lab').waitFor();
    assert.equal(await background(page, '#lab'), LIGHT_BG, 'a dark figure on the light blog');
    assert.equal(await background(page, '#inside'), DARK_BG, 'a light figure on a dark panel that declares no color-scheme');
    // A page that declares both schemes follows the reader.
    await page.evaluate(() => { document.documentElement.style.colorScheme = 'light dark'; });
    await page.waitForFunction(() => getComputedStyle(document.getElementById('lab')).backgroundColor === 'rgb(22, 22, 27)');
    // The iframe form without a theme in its URL follows the reader's setting (its page declares both).
    const frame = await context.newPage();
    await frame.goto(`${siteUrl}embed.html?widget=softmax`);
    await frame.locator('softmax-lab').waitFor();
    assert.equal(await background(frame, 'softmax-lab'), DARK_BG, 'the iframe form ignored the reader\u2019s dark setting');
    await context.close();
  });

  test('every attribute mistake shows a note in the figure and a console warning', async () => {
    const TYPED = 'The parser tokenized everything twice.';
    const url = hostPage('mistakes.html', `
      <attention-row id="layer9" sentence="${SENTENCE}" word="are" layer="9" head="3"></attention-row>
      <attention-row id="alone" sentence="${SENTENCE}" word="are" layer="3"></attention-row>
      <attention-row id="nothing" sentence="${SENTENCE}" word="nonexistent" layer="2" head="3"></attention-row>
      <attention-row id="typed" sentence="${TYPED}" word="Tokenized" layer="2" head="3"></attention-row>
      <attention-row id="far" sentence="${SENTENCE}" word="40" layer="2" head="3"></attention-row>
      <attention-row id="empty" sentence="" layer="2" head="3"></attention-row>
      <attention-row id="fine" sentence="${SENTENCE}" word="are" layer="2" head="3"></attention-row>`);
    const { page, context, errors, warnings } = await openPage(url);
    for (const id of ['layer9', 'alone', 'nothing', 'typed', 'far', 'empty', 'fine']) await live(page, `#${id}`);
    const note = (id) => page.locator(`#${id} .notes`).innerText();
    const tokens = await tokensOf(page, SENTENCE);
    const typedTokens = await tokensOf(page, TYPED);

    assert.match(await note('layer9'), /layer=.9. was not used: the model has layers 1 to 4; showing layer \d, head 3 instead/);
    assert.equal((await shown(page, '#layer9')).head, 2);
    assert.match(await note('alone'), /layer=.3. without head: showing head \d of layer 3/);
    assert.equal((await shown(page, '#alone')).layer, 2);
    assert.match(await note('nothing'), /word=.nonexistent. was not used: it matches no word or token of the sentence; showing .the. \(token 1\) instead/);
    // "tokenized" is not one WordPiece piece here; the word as typed still selects its first piece.
    assert.ok(!typedTokens.includes('tokenized'), `the test needs a word of several pieces: ${typedTokens}`);
    const typed = await shown(page, '#typed');
    const firstPiece = typedTokens.findIndex((t, i) => {
      let word = t;
      for (let j = i + 1; typedTokens[j]?.startsWith('##'); ++j) word += typedTokens[j].slice(2);
      return !t.startsWith('##') && word === 'tokenized';
    });
    assert.ok(firstPiece > 0);
    assert.equal(typed.token, firstPiece);
    assert.equal(await page.locator('#typed .notes').isHidden(), true, 'a word typed as written needs no note');
    assert.match(await note('far'), /word=.40. was not used: the sentence has tokens 0 to 11 \(0 is \[CLS\]\)/);
    assert.equal(tokens.length, 12);
    assert.match(await note('empty'), /sentence=.. is empty; showing the default sentence/);
    assert.ok((await shown(page, '#empty')).values.length > 4, 'an empty sentence showed a 2-token row');
    assert.equal(await page.locator('#fine .notes').isHidden(), true);
    for (const [id, attr] of [['layer9', 'layer="9"'], ['alone', 'layer="3"'], ['nothing', 'word="nonexistent"'], ['far', 'word="40"'], ['empty', 'sentence=""']]) {
      const said = warnings.find((w) => w.startsWith(`<attention-row>#${id}:`));
      assert.ok(said, `no console warning for #${id}: ${warnings.join(' | ')}`);
      assert.ok(said.replace(/[\u201c\u201d]/g, '"').includes(attr), `${said} does not name ${attr}`);
    }
    // A note is visible text, not covering the figure: the chart is still there below it.
    await live(page, '#layer9');
    const [noteBox, chartBox] = [await page.locator('#layer9 .notes').boundingBox(), await page.locator('#layer9 table.bars').boundingBox()];
    assert.ok(noteBox.height > 0 && noteBox.y + noteBox.height <= chartBox.y);
    // Fixing the attribute clears the note.
    await page.evaluate(() => document.getElementById('layer9').setAttribute('layer', '4'));
    await page.locator('#layer9 .notes').waitFor({ state: 'hidden' });
    await page.screenshot({ path: join(artifacts, 'embed-author-mistakes.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a reader\u2019s choice reaches the host as attention-change, and the attributes stay as written', async () => {
    const url = hostPage('events.html', `
      <attention-row id="row" sentence="${SENTENCE}" word="are" layer="2" head="3"></attention-row>
      <p id="prose"></p>`, `
      window.__events = [];
      document.addEventListener('attention-change', (e) => {
        window.__events.push({ id: e.target.id, composed: e.composed, bubbles: e.bubbles, ...e.detail });
        document.getElementById('prose').textContent = 'Reading ' + e.detail.word + ' in layer ' + e.detail.layer + ', head ' + e.detail.head;
      });`);
    const { page, context, errors } = await openPage(url);
    await live(page, '#row');
    const tokens = await tokensOf(page, SENTENCE);
    assert.deepEqual(await page.evaluate(() => window.__events), [], 'an event before the reader did anything');
    const initial = await page.locator('#row').evaluate((el) => el.selection);
    assert.deepEqual(initial, { sentence: SENTENCE, word: 'are', token: tokens.indexOf('are'), layer: 2, head: 3, showSpecial: true });
    assert.equal(await page.locator('#row').evaluate((el) => el.result.n), tokens.length);

    await page.locator('#row button.chip').nth(2).click();
    await page.waitForFunction(() => window.__events.length === 1);
    const [event] = await page.evaluate(() => window.__events);
    assert.deepEqual(event, { id: 'row', composed: true, bubbles: true, sentence: SENTENCE, word: tokens[2], token: 2, layer: 2, head: 3, showSpecial: true });
    assert.equal((await shown(page, '#row')).token, 2);
    assert.equal(await page.locator('#prose').textContent(), `Reading ${tokens[2]} in layer 2, head 3`);
    // The head menu: the event says the new head; the attributes are still the author's.
    const menu = page.locator('#row select').first();
    await menu.selectOption({ index: 15 });
    await page.waitForFunction(() => window.__events.length === 2);
    const second = (await page.evaluate(() => window.__events))[1];
    assert.deepEqual([second.token, second.layer, second.head], [2, 4, 4]);
    assert.deepEqual(await page.locator('#row').evaluate((el) => ['word', 'layer', 'head'].map((n) => el.getAttribute(n))), ['are', '2', '3']);
    // The author's script changing an attribute wins over the reader's choice of it.
    await page.evaluate(() => document.getElementById('row').setAttribute('word', 'keys'));
    await page.waitForFunction((k) => document.getElementById('row').selection?.token === k, tokens.indexOf('keys'));
    assert.deepEqual([(await shown(page, '#row')).layer, (await shown(page, '#row')).head], [3, 3], 'the reader\u2019s head stays until layer or head change');
    assert.equal((await page.evaluate(() => window.__events)).length, 2, 'an attribute change is the host\u2019s own, not announced');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('head labels are visible text wherever a head is named or drawn (issue 15)', async () => {
    const url = hostPage('labels.html', `
      <attention-instrument id="instrument" sentence="${SENTENCE}" word="are" layer="2" head="3"></attention-instrument>
      <attention-heads id="heads" sentence="${SENTENCE}" word="are"></attention-heads>
      <attention-compare id="compare" sentence="${SENTENCE}" word="are"></attention-compare>`);
    const { page, context, errors } = await openPage(url);
    for (const id of ['#instrument', '#heads', '#compare']) await live(page, id);
    let headsPerLayer = 0;
    const labels = await page.evaluate(async ([bundle, layout, text]) => {
      const { getEngine } = await import(bundle);
      const { headLabel } = await import(layout);
      const result = await (await getEngine()).analyze(text);
      const out = [];
      for (let l = 0; l < result.layers; ++l) for (let h = 0; h < result.heads; ++h) out.push(headLabel(result, l, h));
      return { out, count: result.head_profiles.length, heads: result.heads };
    }, [`${siteUrl}dist/attention-widgets.js`, `${siteUrl}engine/result.js`, SENTENCE]).then(({ out, count, heads }) => {
      assert.equal(out.length, count, 'a label for every head profile');
      headsPerLayer = heads;
      return out;
    });
    assert.ok(labels.every(Boolean), `a head has no label: ${labels}`);
    const SHORT = { 'previous-token': 'prev', 'next-token': 'next', self: 'self', '[CLS]/[SEP] sink': 'sink', punctuation: 'punct', broad: 'broad', mixed: 'mixed' };
    // Visible: laid out with a size, and in innerText (which skips what is not rendered).
    const visibleTexts = (selector) => page.locator(selector).evaluateAll((els) => els.map((el) => {
      const box = el.getBoundingClientRect();
      return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility === 'visible' ? el.innerText.trim() : '';
    }));
    assert.deepEqual(await visibleTexts('#instrument button.cell .tag'), labels.map((l) => SHORT[l]), 'Figure 1 picker');
    assert.match(await page.locator('#instrument table.bars caption, #instrument .chart-caption').first().innerText(), new RegExp(`layer 2, head 3 \u00b7 ${labels[6].replace(/[[\]/]/g, '\\$&')}`));
    assert.deepEqual(await visibleTexts('#heads .multiple .title .label'), labels.map((l) => SHORT[l]), 'Figure 5 panels');
    const titles = await visibleTexts('#compare section.panel[data-kind="head"] h3');
    const panels = await page.locator('#compare section.panel[data-kind="head"]').evaluateAll((els) => els.map((e) => [Number(e.dataset.layer), Number(e.dataset.head)]));
    assert.deepEqual(titles, panels.map(([l, h]) => `layer ${l + 1}, head ${h + 1} \u00b7 ${labels[l * headsPerLayer + h]}`), 'Figure 4 headings');
    const menu = await page.locator('#compare section.panel select').first().evaluate((s) => s.options[0].text);
    assert.match(menu, /^Sharpest content head \(L\d H\d\)$/);
    // The exported picture names the head with its label too.
    const svgText = await page.locator('#heads').evaluate((el) => el.toSVG());
    assert.ok(svgText.includes(`\u00b7 ${labels[0].replace(/&/g, '&amp;')}`) || svgText.includes(SHORT[labels[0]]), 'the SVG has no head label');
    await page.screenshot({ path: join(artifacts, 'embed-author-labels.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the host\u2019s helper sizes every frame to its figure, on screen and below the fold, in 20 loads; it passes the host\u2019s theme on; other messages are ignored', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    assert.ok(readme.includes('<script type="module" src="https://YOUR-SITE/dist/attention-frames.js"></script>'), 'the README does not give the helper\u2019s line');
    const frameUrl = (widget) => `${siteUrl}embed.html?widget=${widget}&sentence=The+cat+sat.&word=cat`;
    const url = hostPage('height.html', `
      <script type="module" src="${siteUrl}dist/attention-frames.js"></script>
      <iframe id="frame" src="${frameUrl('row')}&layer=2&head=3" width="100%" height="100" style="border:0"></iframe>
      <div style="height: 2400px">A long post.</div>
      <iframe id="below" src="${frameUrl('heads')}" width="100%" height="100" style="border:0"></iframe>`,
    `globalThis.__heights = { frame: [], below: [] };
addEventListener('message', (event) => {
  const frame = [...document.querySelectorAll('iframe')].find((f) => f.contentWindow === event.source);
  if (event.data?.type === 'attention-height') globalThis.__heights[frame.id].push(event.data.height); else (globalThis.__other ??= []).push(event.data);
});`);
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const mismatches = [];
    const RUNS = 20;
    for (let run = 0; run < RUNS; ++run) {
      await page.goto(url);
      for (const id of ['frame', 'below']) {
        const frame = page.frameLocator(`#${id}`);
        await frame.locator('.status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
        // The helper made the iframe as tall as the frame's last report, and that report is the
        // frame's content height, after the live figure has drawn.
        await page.waitForFunction((k) => {
          const h = globalThis.__heights[k].at(-1);
          return h > 200 && Math.abs(document.getElementById(k).getBoundingClientRect().height - h) <= 1;
        }, id, { timeout: LOAD_TIMEOUT_MS });
        await page.waitForTimeout(100);
        const content = await page.frame({ url: id === 'frame' ? /widget=row/ : /widget=heads/ }).evaluate(() => Math.ceil(document.documentElement.getBoundingClientRect().height));
        const shown = await page.locator(`#${id}`).evaluate((f) => f.getBoundingClientRect().height);
        if (Math.abs(content - shown) > 1) mismatches.push(`run ${run + 1}, ${id}: ${shown} px for ${content} px of content`);
      }
      // No report of the loading line's height, which would collapse the iframe's own height
      // only for the frame to grow again once the figure draws.
      const heights = await page.evaluate(() => globalThis.__heights);
      for (const [id, list] of Object.entries(heights)) assert.ok(Math.min(...list) > 200, `run ${run + 1}: ${id} reported ${list.join(', ')} px`);
    }
    assert.deepEqual(mismatches, [], `frames not sized to their content in ${mismatches.length} of ${2 * RUNS}`);
    assert.equal(await page.evaluate(() => globalThis.__other ?? []).then((x) => x.length), 0, 'a frame posted something other than its height');
    // The host's dark toggle reaches both frames through the helper, with no code of the host's.
    const frame = page.frameLocator('#frame');
    await frame.locator('attention-row[theme="light"]').waitFor({ timeout: 5000 });
    await page.frameLocator('#below').locator('attention-heads[theme="light"]').waitFor({ timeout: 5000 });
    await page.evaluate(() => document.documentElement.classList.add('dark'));
    await frame.locator('attention-row[theme="dark"]').waitFor({ timeout: 5000 });
    await page.frameLocator('#below').locator('attention-heads[theme="dark"]').waitFor({ timeout: 5000 });
    await page.evaluate(() => document.documentElement.classList.remove('dark'));
    await frame.locator('attention-row[theme="light"]').waitFor({ timeout: 5000 });
    // A hostile parent: markup, wrong types, huge payloads and a theme that is not one of three.
    const before = await frame.locator('attention-row').getAttribute('theme');
    await page.evaluate(() => {
      const target = document.getElementById('frame').contentWindow;
      for (const message of ['<img src=x onerror=alert(1)>', null, 42, { type: 'attention-theme', theme: '<b>dark</b>' },
        { type: 'attention-theme', theme: { toString: () => 'dark' } }, { type: 'attention-height', height: 1 },
        { type: 'attention-theme' }, { type: 'constructor' }, { __proto__: { type: 'attention-theme', theme: 'dark' } },
        new Array(100000).fill('x')]) {
        try { target.postMessage(message, '*'); } catch { /* uncloneable: the browser refuses it */ }
      }
    });
    await page.waitForTimeout(500);
    assert.equal(await frame.locator('attention-row').getAttribute('theme'), before, 'a hostile message changed the theme');
    assert.equal(await frame.locator('img').count(), 0);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the README lists every --attn- custom property there is, from style.js', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Embedding a figure in another site'), readme.indexOf('## The command-line tool'));
    const listed = [...section.matchAll(/^\| `(--attn-[a-z-]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual(listed, THEME_PROPERTIES.map((p) => p.name), 'README table and THEME_PROPERTIES differ');
    for (const p of THEME_PROPERTIES.filter((x) => x.light)) {
      assert.ok(section.includes(`| \`${p.name}\` | ${p.light} | ${p.dark} |`), `README row of ${p.name} has other values`);
    }
    // Every --attn- name any widget reads is one of them.
    const used = new Set();
    for (const file of readdirSync(join(web, 'widgets')).filter((f) => f.endsWith('.js'))) {
      for (const m of readFileSync(join(web, 'widgets', file), 'utf8').matchAll(/var\((--attn-[a-z-]+)/g)) used.add(m[1]);
    }
    const known = new Set(THEME_PROPERTIES.map((p) => p.name));
    assert.deepEqual([...used].filter((n) => !known.has(n)), [], 'a widget reads a custom property THEME_PROPERTIES does not define');
  });
});
