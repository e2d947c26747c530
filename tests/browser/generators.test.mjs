// The shipped integrations (integrations/), on real static-site generators from Debian's
// packages: a Hugo site with the shortcode, a Jekyll site with the include and an MkDocs site
// with the override template are built from a post that shows every registered figure, then
// served on a second origin under the strict policy a host adds for the widgets' origin
// (hostCsp, harness.mjs), with the widgets served from the folder publish.mjs writes. Every
// figure must go live (its status line says so; the softmax lab, which needs no model, draws its
// bars) with no policy violation or page error of the widgets'. MkDocs' stock theme has inline
// scripts of its own, which such a policy refuses: those, and only those, are the theme's.
// Needs the assembled site (node scripts/site/build_site.mjs) and hugo, jekyll and mkdocs
// (scripts/setup.sh installs them).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figureLive, hostCsp, launchChromium, openStrict, recordShifts, serve, sessionCls } from './harness.mjs';
import { publish } from '../../scripts/site/publish.mjs';
import { FIGURES } from '../../web/widgets/registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const integrations = join(root, 'integrations');
const LOAD_TIMEOUT_MS = 90000;
const SENTENCE = 'The keys to the cabinet are on the table.';

let scratch;
let widgets;
let widgetsUrl;
let browser;
const servers = [];

before(async () => {
  assert.ok(existsSync(join(web, 'models', 'manifest.json')), 'web/models/manifest.json is missing: run node scripts/site/build_site.mjs first.');
  for (const tool of ['hugo', 'jekyll', 'mkdocs']) {
    assert.doesNotThrow(() => execFileSync('sh', ['-c', `command -v ${tool}`]), `${tool} is missing: run scripts/setup.sh`);
  }
  scratch = mkdtempSync(join(tmpdir(), 'attention-generators-'));
  publish({ out: join(scratch, 'widgets'), quiet: true });
  widgets = await serve(join(scratch, 'widgets'));
  widgetsUrl = `http://127.0.0.1:${widgets.server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  widgets?.close();
  for (const server of servers) server.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// The post's figures, one of each registered kind, with the attributes an author writes.
const POST_FIGURES = Object.keys(FIGURES).map((key) => ({ key, sentence: SENTENCE, word: 'are' }));

// The built site served on localhost (the widgets are on 127.0.0.1: another origin) under the
// host's strict policy.
async function serveBuilt(folder) {
  const server = await serve(folder, { cors: false, headers: { 'Content-Security-Policy': hostCsp(new URL(widgetsUrl).origin) } });
  servers.push(server);
  return `http://localhost:${server.server.address().port}/`;
}

// The blog's stylesheet: its column, 486 px wide (a sidebar theme's; security review 4), and the
// reserves an author copies from the published folder (README, "No jump when figures go live").
const GOOD_CLS = 0.1;
const siteCss = (column) => `${column} { max-width: 486px; }\n${readFileSync(join(scratch, 'widgets', 'dist', 'attention-reserves.css'), 'utf8')}`;

// Every figure of the page goes live, and the policy check passes; the page, 4000 px tall at
// 1280 px so that every figure is in view at once, moves by a CLS under GOOD_CLS while they load.
async function checkPage(url, { ignore, ids = false } = {}) {
  const { page, context, check } = await openStrict(browser, url, { ignore, height: 4000, init: [recordShifts] });
  if (ids) {
    const found = await page.evaluate((keys) => keys.filter((key) => document.getElementById(`fig-${key}`)), POST_FIGURES.map((f) => f.key));
    assert.deepEqual(found, POST_FIGURES.map((f) => f.key), 'every figure carries the id its author gave');
  }
  for (const { key } of POST_FIGURES) {
    const tag = FIGURES[key].tag;
    const figure = page.locator(tag).first();
    await figure.waitFor({ state: 'attached', timeout: LOAD_TIMEOUT_MS });
    if (key === 'softmax') {
      await page.waitForFunction((t) => [...(document.querySelector(t)?.shadowRoot?.querySelectorAll('.bar') ?? [])].some((b) => b.getBoundingClientRect().width > 5), tag, { timeout: LOAD_TIMEOUT_MS });
    } else {
      // Scrolled to, as a reader would: embedded figures start when they come near the screen.
      await figureLive(page, tag, LOAD_TIMEOUT_MS);
    }
  }
  const sentences = await page.evaluate(() => [...document.querySelectorAll('attention-row[sentence], attention-heads[sentence]')].map((el) => el.selection?.sentence));
  assert.deepEqual(sentences, [SENTENCE, SENTENCE], 'the figures analyse the sentence the post gave them');
  await page.waitForTimeout(1500);
  const shifts = (await page.evaluate(() => window.__shifts)).filter((shift) => !shift.input);
  const cls = sessionCls(shifts);
  console.log(`${url}: CLS ${cls.toFixed(4)} with every figure in view in a 486 px column (${shifts.length} shifts)`);
  for (const shift of shifts.filter((x) => x.value >= 0.001)) console.log(`  ${Math.round(shift.time)} ms: ${shift.value.toFixed(4)} \u2014 ${shift.sources.join('; ')}`);
  assert.ok(cls < GOOD_CLS, `${url}: CLS ${cls.toFixed(4)}, not under ${GOOD_CLS}`);
  await check();
  await context.close();
}

describe('static-site generators with the shipped integrations', { timeout: 600000 }, () => {
  test('Hugo: the shortcode writes the script line once and every figure, which goes live under a strict policy; the frame shortcode\u2019s iframe too', async () => {
    const site = join(scratch, 'hugo');
    mkdirSync(join(site, 'content'), { recursive: true });
    cpSync(join(integrations, 'hugo', 'layouts'), join(site, 'layouts'), { recursive: true });
    mkdirSync(join(site, 'layouts', '_default'), { recursive: true });
    const layout = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{{ .Title }}</title><link rel="stylesheet" href="/site.css"></head><body><main>{{ .Content }}</main></body></html>\n';
    mkdirSync(join(site, 'static'), { recursive: true });
    writeFileSync(join(site, 'static', 'site.css'), siteCss('main'));
    writeFileSync(join(site, 'layouts', '_default', 'single.html'), layout);
    writeFileSync(join(site, 'layouts', '_default', 'list.html'), layout);
    // The site's address without its trailing slash: the shortcode adds it.
    writeFileSync(join(site, 'hugo.toml'), `baseURL = "http://localhost/"\ntitle = "A blog"\ndisableKinds = ["taxonomy", "term", "RSS", "sitemap"]\n[params]\nattentionWidgets = "${widgetsUrl.replace(/\/$/, '')}"\n`);
    const shortcodes = POST_FIGURES.map(({ key, sentence, word }) => `{{< attention figure="${key}" sentence="${sentence}" word="${word}" id="fig-${key}" />}}`).join('\n\n');
    writeFileSync(join(site, 'content', 'post.md'), `---\ntitle: "A post"\n---\nSome prose.\n\n${shortcodes}\n`);
    execFileSync('hugo', ['--quiet', '-s', site, '-d', join(site, 'public')], { stdio: 'pipe' });
    // A misspelt parameter stops the build and names it.
    writeFileSync(join(site, 'content', 'bad.md'), '---\ntitle: "Bad"\n---\n{{< attention figure="row" sentense="x" />}}\n');
    assert.throws(() => execFileSync('hugo', ['-s', site, '-d', join(site, 'public-bad')], { stdio: 'pipe' }),
      (error) => /has no parameter "sentense"/.test(`${error.stdout}${error.stderr}`));
    rmSync(join(site, 'content', 'bad.md'));
    // The iframe route: a figure as a frame of embed.html, sized by the host's helper.
    writeFileSync(join(site, 'content', 'framed.md'), `---\ntitle: "Framed"\n---\nSome prose.\n\n{{< attention-frame figure="row" sentence="${SENTENCE}" word="are" layer="2" head="3" id="framed" >}}\n`);
    execFileSync('hugo', ['--quiet', '-s', site, '-d', join(site, 'public')], { stdio: 'pipe' });
    const base = await serveBuilt(join(site, 'public'));
    await checkPage(`${base}post/`, { ids: true });
    const framedServer = await serve(join(site, 'public'), { cors: false, headers: { 'Content-Security-Policy': `${hostCsp(new URL(widgetsUrl).origin)}; frame-src ${new URL(widgetsUrl).origin}` } });
    servers.push(framedServer);
    const { page, context, check } = await openStrict(browser, `http://localhost:${framedServer.server.address().port}/framed/`);
    assert.equal(await page.locator('iframe#framed').getAttribute('height'), String(FIGURES.row.frameHeight));
    await page.frameLocator('iframe#framed').locator('attention-row .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
    await check();
    await context.close();
  });

  test('Jekyll: the include writes the script line once and every figure, which goes live under a strict policy', async () => {
    const site = join(scratch, 'jekyll');
    mkdirSync(join(site, '_layouts'), { recursive: true });
    cpSync(join(integrations, 'jekyll', '_includes'), join(site, '_includes'), { recursive: true });
    writeFileSync(join(site, '_layouts', 'default.html'), '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{{ page.title }}</title><link rel="stylesheet" href="/site.css"></head><body><main>{{ content }}</main></body></html>\n');
    writeFileSync(join(site, 'site.css'), siteCss('main'));
    writeFileSync(join(site, '_config.yml'), `title: A blog\nattention_widgets: ${widgetsUrl.replace(/\/$/, '')}\n`);
    const includes = POST_FIGURES.map(({ key, sentence, word }) => `{% include attention.html figure="${key}" sentence="${sentence}" word="${word}" id="fig-${key}" fallback="Figure ${key}, live once the model loads." %}`).join('\n\n');
    // An unknown figure and a misspelt parameter: said at build time (a comment) and by the
    // element's own note.
    const mistakes = '{% include attention.html figure="haeds" sentense="x" %}';
    writeFileSync(join(site, 'post.md'), `---\nlayout: default\ntitle: A post\n---\nSome prose.\n\n${includes}\n\n${mistakes}\n`);
    execFileSync('jekyll', ['build', '--quiet', '-s', site, '-d', join(site, '_site')], { stdio: 'pipe', timeout: 120000 });
    const html = readFileSync(join(site, '_site', 'post.html'), 'utf8');
    assert.match(html, /<!-- attention\.html: there is no figure "haeds"/);
    assert.match(html, /<attention-row sentense="x"><\/attention-row>/);
    assert.match(html, /id="fig-row"[^>]*>Figure row, live once the model loads\.<\/attention-row>/);
    const base = await serveBuilt(join(site, '_site'));
    await checkPage(`${base}post.html`, { ids: true });
  });

  test('MkDocs: the override puts the module script in every page\u2019s head; raw elements in Markdown go live', async () => {
    const site = join(scratch, 'mkdocs');
    mkdirSync(join(site, 'docs'), { recursive: true });
    cpSync(join(integrations, 'mkdocs', 'overrides'), join(site, 'overrides'), { recursive: true });
    writeFileSync(join(site, 'mkdocs.yml'), `site_name: A blog\ntheme:\n  name: mkdocs\n  custom_dir: overrides\n  highlightjs: false\nextra_css: [site.css]\nextra:\n  attention_widgets: ${widgetsUrl}\n`);
    writeFileSync(join(site, 'docs', 'site.css'), siteCss('[role="main"]'));
    const elements = POST_FIGURES.map(({ key, sentence, word }) => `<${FIGURES[key].tag} sentence="${sentence}" word="${word}"></${FIGURES[key].tag}>`).join('\n\n');
    writeFileSync(join(site, 'docs', 'index.md'), `# A post\n\nSome prose.\n\n${elements}\n`);
    execFileSync('mkdocs', ['build', '-q', '-f', join(site, 'mkdocs.yml'), '-d', join(site, 'out')], { stdio: 'pipe' });
    const base = await serveBuilt(join(site, 'out'));
    // The stock theme's own inline scripts (and what fails without them) are the theme's: the
    // page's own address, never the widgets'.
    const theme = (line) => !line.includes(widgetsUrl) && /inline|base_url|shortcut|hljs|\$ is not defined|jQuery/.test(line);
    await checkPage(base, { ignore: theme });
  });
});
