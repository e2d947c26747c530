// The embed demo's ?from= (web/embed-demo.js) in Debian's Chromium: the demo page is served
// from the article's own origin, so the bundle it loads runs with that origin, and a link naming
// another site must not run that site's script (security review F1). Chromium resolves the
// made-up host widgets.example to 127.0.0.1, so one local server stands for a foreign site; the
// same server under 127.0.0.1 shows that its script does run when the address is accepted.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium, serve, startHost } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const FOREIGN_HOST = 'widgets.example';

let host;        // the demo page (embed-demo.html and .js from web/)
let other;       // a site whose "bundle" only marks that it ran
let otherDir;
let otherPort;
let browser;

before(async () => {
  host = await startHost(web);
  otherDir = mkdtempSync(join(tmpdir(), 'attention-other-'));
  mkdirSync(join(otherDir, 'dist'));
  writeFileSync(join(otherDir, 'dist', 'attention-widgets.js'), 'window.__ran = import.meta.url;\n');
  other = await serve(otherDir);
  otherPort = other.server.address().port;
  browser = await launchChromium([`--host-resolver-rules=MAP ${FOREIGN_HOST} 127.0.0.1`]);
});

after(async () => {
  await browser?.close();
  other?.close();
  host?.close();
  if (otherDir) rmSync(otherDir, { recursive: true, force: true });
});

// The demo with ?from=from, in a fresh context: whether the other site's script ran, the
// refusal shown on the page (or null), and every request made to the other site's port.
async function openDemo(from) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const requests = [];
  page.on('request', (request) => {
    if (new URL(request.url()).port === String(otherPort)) requests.push(request.url());
  });
  await page.goto(`${host.url}embed-demo.html?from=${encodeURIComponent(from)}`);
  await page.waitForLoadState('networkidle');
  const seen = await page.evaluate(() => ({ ran: window.__ran ?? null, refused: document.getElementById('refused')?.textContent ?? null }));
  const visible = seen.refused !== null && await page.locator('#refused').isVisible();
  await context.close();
  return { ...seen, visible, requests };
}

describe('the embed demo\u2019s ?from=', { timeout: 120000 }, () => {
  test('an address on another host is refused, visibly, and nothing is requested from it', async () => {
    const foreign = `http://${FOREIGN_HOST}:${otherPort}/`;
    const shown = await openDemo(foreign);
    assert.equal(shown.ran, null, 'the foreign script ran');
    assert.deepEqual(shown.requests, []);
    assert.ok(shown.visible, 'no visible refusal');
    assert.match(shown.refused, new RegExp(`${foreign.replace(/[.]/g, '\\.')}.*was refused because its host ${FOREIGN_HOST} is not this machine`));
  });

  test('other schemes and non-addresses are refused too', async () => {
    assert.match((await openDemo('javascript:window.__ran=1')).refused, /not an http or https address/);
    assert.match((await openDemo('not an address')).refused, /not an address/);
  });

  test('an address on this machine is accepted, and its script runs', async () => {
    for (const name of ['127.0.0.1', 'localhost']) {
      const shown = await openDemo(`http://${name}:${otherPort}/`);
      assert.equal(shown.ran, `http://${name}:${otherPort}/dist/attention-widgets.js`);
      assert.equal(shown.refused, null);
    }
  });
});
