// The README's snippets for authors, taken from the README itself and run as written (with
// YOUR-SITE replaced by the test's widgets' site) on a host page of another origin under the
// policy the README builds: the site's own policy (its "Content-Security-Policy" block) with the
// host's additions for the widgets' site W (the next block) and, for frames, frame-src W. The
// element form and the iframe form with the frames helper must each draw their figure with no
// policy violation and no page error (security review 4: the iframe snippet's style="border:0"
// was refused by the README's own policy, and its height was not the row's).
// Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { FIGURES } from '../../web/widgets/registry.js';
import { launchChromium, openStrict, serve, startHost } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const TIMEOUT = 90000;

// The README's fenced blocks, in order.
const blocks = [...readme.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]);
const blockWith = (text) => {
  const found = blocks.filter((b) => b.includes(text));
  assert.equal(found.length, 1, `the README has ${found.length} blocks with ${text}`);
  return found[0];
};

let site;
let host;
let browser;
let widgets;
before(async () => {
  site = await serve(web);
  widgets = `http://127.0.0.1:${site.server.address().port}`;
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  site?.close();
  host?.close();
});

// The host's policy as the README builds it: the site's own, with the host's line for W merged
// in (each directive of the host's line replaces the site's), plus extra directives.
function readmePolicy(extra = '') {
  const own = /Content-Security-Policy: (.+)/.exec(blockWith('Content-Security-Policy: default-src'))[1].trim();
  const forW = blockWith("worker-src 'self' blob: W").trim().replace(/\bW\b/g, widgets);
  const directives = new Map(own.split(';').map((d) => d.trim()).filter(Boolean).map((d) => [d.split(/\s+/)[0], d]));
  for (const d of `${forW}; ${extra}`.split(';').map((x) => x.trim()).filter(Boolean)) directives.set(d.split(/\s+/)[0], d);
  return [...directives.values()].join('; ');
}

const asWritten = (snippet) => snippet.replaceAll('https://YOUR-SITE/', `${widgets}/`);

test('the README\u2019s element snippet draws its figure on another origin under the README\u2019s policy', async () => {
  host = await startHost(web, { headers: { 'Content-Security-Policy': readmePolicy() } });
  const snippet = asWritten(blockWith('dist/attention-widgets.js"></script>\n<attention-row'));
  writeFileSync(join(host.dir, 'element.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>element</title></head><body>\n${snippet}</body></html>`);
  const { page, context, check } = await openStrict(browser, `${host.url}element.html`);
  await page.locator('attention-row .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  await check();
  await context.close();
  host.close();
  host = null;
});

test('the README\u2019s iframe snippet and its frames helper draw the figure under the README\u2019s policy with frame-src', async () => {
  host = await startHost(web, { headers: { 'Content-Security-Policy': readmePolicy(`frame-src ${widgets}`) } });
  const frame = asWritten(blockWith('embed.html?widget=row'));
  const helper = asWritten(blockWith('dist/attention-frames.js'));
  assert.match(frame, new RegExp(`height="${FIGURES.row.frameHeight}"`), 'the snippet\u2019s height is the row\u2019s frameHeight');
  writeFileSync(join(host.dir, 'frame.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>frame</title>\n${helper}</head><body>\n${frame}</body></html>`);
  const { page, context, check } = await openStrict(browser, `${host.url}frame.html`);
  const inner = page.frameLocator('iframe');
  await inner.locator('attention-row .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  await check();
  await context.close();
});
