// A reader's own BERT from the Hugging Face hub, in headless Chromium against the mock hub
// (tests/hub/mock_hub.mjs: the hub's URL layout, LFS files redirected to a second origin), each
// page given it by ?hub= (accepted for loopback addresses only):
//   - the article's chooser looks a repository up, states its files and size, downloads it with
//     progress and reopens the page on #hf=ID@COMMIT; its attention equals the native CLI's on
//     the .attn that scripts/model/convert_model.py made from the same folder (bar 1e-6), for a
//     PyTorch .bin and for a safetensors checkpoint, in the article and in a post;
//   - the permalink reopens the model from the browser's cache with the hub gone;
//   - a download cancelled midway leaves the page on the model it had;
//   - a hostile checkpoint is refused on the page by name, its payload never runs (the canary
//     it would call gets no request) and nothing of it is cached.
// Needs the assembled site (node scripts/site/build_site.mjs) and build/native.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { writeFileSync } from 'node:fs';

import { startHost, startSite } from './harness.mjs';
import { startMockHub } from '../hub/mock_hub.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const FIXTURES = join(root, 'build', 'hub-fixtures');
const CLI = join(root, 'build', 'native', 'attention-cli');
const PARITY = 1e-6;
const TIMEOUT = 90000;
const TEXT = 'The keys to the cabinet are on the table because it was late.';

let site;
let hub;
before(async () => {
  const made = spawnSync('/usr/bin/python3', ['tests/hub/make_checkpoints.py', FIXTURES], { cwd: root, encoding: 'utf8', timeout: 180_000 });
  assert.equal(made.status, 0, `make_checkpoints.py failed:\n${made.stdout}\n${made.stderr}`);
  hub = await startMockHub({ dir: FIXTURES });
  site = await startSite(web);
});
after(async () => {
  await site?.close();
  await hub?.close();
});

const repo = (id) => hub.manifest.repos.find((r) => r.id === id);

// The largest |page - CLI| over every attention weight of TEXT, the page's engine being the one
// its figures use.
async function parity(page, id) {
  const attention = await page.evaluate(async (text) => {
    const { currentEngine } = await import('/engine/engine.js');
    const engine = await currentEngine();
    return Array.from((await engine.analyze(text)).attention);
  }, TEXT);
  const cli = JSON.parse(execFileSync(CLI, ['analyze', '--model', join(FIXTURES, repo(id).expect.attn), '--json', TEXT], { encoding: 'utf8', maxBuffer: 1 << 28 })).attention.flat(Infinity);
  assert.equal(attention.length, cli.length, 'the same number of weights');
  return attention.reduce((m, v, i) => Math.max(m, Math.abs(v - cli[i])), 0);
}

// The Cache API's keys that mention text.
const cachedKeys = (page, text) => page.evaluate(async (t) => {
  const out = [];
  for (const name of await caches.keys()) for (const request of await (await caches.open(name)).keys()) if (request.url.includes(t)) out.push(request.url);
  return out;
}, text);

const hubQuery = () => `?hub=${encodeURIComponent(hub.url)}`;

test('the article\u2019s chooser loads a PyTorch checkpoint from the hub into every figure, with the CLI\u2019s attention, and its permalink reopens it from the cache without the hub', async (t) => {
  const id = 'test-org/bert-mini-bin';
  const { page, context, errors } = await site.open(`index.html${hubQuery()}`);
  await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
  const before = await page.locator(".model-line [data-fact=\"modelName\"]").textContent();
  await page.click('#model-chooser summary');
  await page.fill('#hub-model', id);
  await page.click('#model-chooser .chooser-hub button[type="submit"]');
  const download = page.locator('#model-chooser .chooser-plan button');
  await download.waitFor({ timeout: TIMEOUT });
  const plan = await page.locator('#model-chooser .chooser-plan').textContent();
  t.diagnostic(`plan: ${plan}`);
  assert.match(plan, /pytorch_model\.bin \(\d+\.\d MB\)/, 'the plan names the weights file and its size');
  assert.match(plan, new RegExp(repo(id).sha.slice(0, 10)), 'the plan names the commit');
  await Promise.all([page.waitForURL(/#.*hf=/, { timeout: TIMEOUT }), download.click()]);
  assert.ok(page.url().includes(`hf=${encodeURIComponent(`${id}@${repo(id).sha}`)}`), `the hash names the repository at its commit: ${page.url()}`);
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  const name = await page.locator(".model-line [data-fact=\"modelName\"]").textContent();
  assert.equal(name, id, `the model line names the repository (was ${before})`);
  // The prose's facts are this model's: what was downloaded, the licence its card states, and
  // which model the compact copy of the precision paragraph belongs to.
  assert.match(await page.locator('#downloads').textContent(), new RegExp(`${id}.s files from the Hugging Face hub at commit ${repo(id).sha.slice(0, 10)}`));
  assert.match(await page.locator('.licence').textContent(), /offers the weights under apache-2\.0/);
  assert.match(await page.locator('#precision').textContent(), /^The third of these you can check already, here\. The model you chose runs from its own 32-bit weights/);
  const largest = await parity(page, id);
  t.diagnostic(`${id} in the article: largest |page - CLI| attention ${largest.toExponential(2)} (bar ${PARITY})`);
  assert.ok(largest <= PARITY);
  // The figures drew this model's numbers: the instrument's result has its shape.
  const shape = await page.locator('#instrument').evaluate((el) => ({ layers: el.result.layers, heads: el.result.heads }));
  assert.deepEqual(shape, { layers: repo(id).expect.layers, heads: repo(id).expect.heads });
  const kept = await cachedKeys(page, `${id}/resolve/${repo(id).sha}`);
  assert.ok(kept.some((k) => k.endsWith('pytorch_model.bin')) && kept.some((k) => k.endsWith('config.json')), `the files are cached by commit: ${kept.join(', ')}`);

  // The permalink, with the hub unreachable: the listing and the files come from the cache.
  const requestsBefore = hub.requests.length;
  await context.route(`${hub.url}/**`, (route) => route.abort());
  await context.route(`${hub.cdnUrl}/**`, (route) => route.abort());
  await page.reload();
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  assert.equal(await page.locator(".model-line [data-fact=\"modelName\"]").textContent(), id);
  assert.equal(hub.requests.length, requestsBefore, 'nothing was asked of the hub');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a post runs a safetensors checkpoint named in its hash, says its set statistics are the shipped model\u2019s, and keeps the model in its links', async (t) => {
  const id = 'test-org/bert-mini-st';
  const { page, context, errors } = await site.open(`heads.html${hubQuery()}#hf=${id}`);
  await page.locator('#status[data-state="live"]').waitFor({ timeout: TIMEOUT });
  assert.match(await page.locator('#status').textContent(), new RegExp(id));
  assert.match(await page.locator('.set-note').textContent(), /computed when the site was built/);
  const largest = await parity(page, id);
  t.diagnostic(`${id} in the heads post: largest |page - CLI| attention ${largest.toExponential(2)} (bar ${PARITY})`);
  assert.ok(largest <= PARITY);
  // A post's own hash writes keep the model key.
  await page.evaluate(async () => {
    const { writeHash } = await import('/runtime/state.js');
    writeHash({ s: 'Another sentence.' });
  });
  assert.ok(page.url().includes('hf=test-org'), `the post's link keeps the model: ${page.url()}`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a download cancelled midway leaves the page on the model it had', async () => {
  const { page, context } = await site.open(`index.html${hubQuery()}`);
  await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
  const before = await page.locator(".model-line [data-fact=\"modelName\"]").textContent();
  hub.setDelay(150);
  try {
    await page.click('#model-chooser summary');
    await page.fill('#hub-model', 'test-org/bert-small-st');
    await page.click('#model-chooser .chooser-hub button[type="submit"]');
    await page.locator('#model-chooser .chooser-plan button').click({ timeout: TIMEOUT });
    await page.locator('#model-chooser .chooser-status', { hasText: / of \d/ }).waitFor({ timeout: TIMEOUT });
    await page.click('#model-chooser .chooser-cancel');
    await page.locator('#model-chooser .chooser-status', { hasText: /cancelled/ }).waitFor({ timeout: TIMEOUT });
  } finally {
    hub.setDelay(0);
  }
  assert.ok(!page.url().includes('hf='), 'the address did not change');
  assert.equal(await page.locator(".model-line [data-fact=\"modelName\"]").textContent(), before);
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  assert.deepEqual(await cachedKeys(page, 'bert-small-st'), [], 'nothing of the cancelled model was cached');
  await context.close();
});

test('a hostile checkpoint is refused on the page by name, runs nothing, caches nothing, and the chooser keeps the model the page had', async () => {
  const id = 'test-org/evil-os-system';
  const { page, context } = await site.open(`index.html${hubQuery()}#hf=${id}`);
  await page.locator('#loader[data-state="error"]').waitFor({ timeout: TIMEOUT });
  assert.match(await page.locator('#progress-text').textContent(), /os\.system/);
  assert.deepEqual(await cachedKeys(page, 'evil-os-system'), []);
  await context.close();

  const second = await site.open(`index.html${hubQuery()}`);
  await second.page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
  await second.page.click('#model-chooser summary');
  await second.page.fill('#hub-model', 'test-org/evil-popen');
  await second.page.click('#model-chooser .chooser-hub button[type="submit"]');
  await second.page.locator('#model-chooser .chooser-plan button').click({ timeout: TIMEOUT });
  await second.page.locator('#model-chooser .chooser-status[data-state="error"]').waitFor({ timeout: TIMEOUT });
  assert.match(await second.page.locator('#model-chooser .chooser-status').textContent(), /Popen.*keeps running/s);
  assert.ok(!second.page.url().includes('hf='));
  assert.deepEqual(await cachedKeys(second.page, 'evil-popen'), []);
  assert.equal(hub.canaryHits(), 0, 'a payload reached the canary');
  await second.context.close();
});

test('?hub= names only this machine: any other address leaves the page on the public hub', async () => {
  const { page, context } = await site.open('index.html?hub=https%3A%2F%2Fevil.example');
  const hubUsed = await page.evaluate(async () => (await import('/engine/model_address.js')).hubFromAddress());
  assert.equal(hubUsed, 'https://huggingface.co');
  await context.close();
});

// Every figure of the article and of each post, under a model from the hub: drawn from that
// model (its shape), none failed, no page error.
test('every figure of the article and of each post runs a model from the hub', async (t) => {
  const id = 'test-org/bert-small-st';
  const { layers, heads } = repo(id).expect;
  const { page, context, errors } = await site.open(`index.html${hubQuery()}#hf=${id}`);
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  // Far figures take their view when the reader comes near: scroll through the page.
  const height = await page.evaluate(() => document.body.scrollHeight);
  for (let y = 0; y < height; y += 700) {
    await page.evaluate((top) => window.scrollTo(0, top), y);
    await page.waitForTimeout(60);
  }
  await page.waitForFunction(() => !document.querySelector('[data-figure][data-waiting]'), null, { timeout: TIMEOUT });
  const figures = await page.evaluate(() => [...document.querySelectorAll('[data-figure]')].map((el) => ({
    figure: el.dataset.figure, mode: el.view?.mode ?? null, layers: el.result?.layers ?? null, heads: el.result?.heads ?? null, error: el.view?.error?.message ?? null,
  })));
  t.diagnostic(JSON.stringify(figures));
  assert.ok(figures.length >= 6, `only ${figures.length} figures`);
  for (const f of figures) {
    assert.notEqual(f.mode, 'error', `${f.figure}: ${f.error}`);
    if (f.layers !== null) assert.deepEqual([f.layers, f.heads], [layers, heads], `${f.figure} drew another model`);
  }
  assert.ok(figures.filter((f) => f.layers !== null).length >= 5, 'the figures drew live results');
  assert.deepEqual(errors, []);
  await context.close();
  for (const post of ['heads.html', 'confident.html', 'contribution.html', 'vocabulary.html', 'lenses.html']) {
    const opened = await site.open(`${post}${hubQuery()}#hf=${id}`);
    await opened.page.locator('#status[data-state="live"]').waitFor({ timeout: TIMEOUT });
    assert.match(await opened.page.locator('#status').textContent(), new RegExp(id), `${post} names the model`);
    await opened.page.locator('[data-ready="true"]').first().waitFor({ state: 'attached', timeout: TIMEOUT });
    const failed = await opened.page.evaluate(() => [...document.querySelectorAll('.error-line, [data-state="error"]')].map((el) => el.textContent.trim()).filter(Boolean));
    assert.deepEqual(failed, [], `${post}: ${failed.join(' | ')}`);
    assert.deepEqual(opened.errors, [], `${post}: page errors`);
    await opened.context.close();
  }
});

// A checkpoint's files from the reader's computer: loaded in the worker, kept by this browser
// under #local=KEY, reopened from there, with the CLI's attention.
test('a checkpoint opened from this computer runs the figures, with the CLI\u2019s attention, and its link reopens it in this browser', async (t) => {
  const id = 'test-org/bert-cased';
  const folder = join(FIXTURES, repo(id).dir);
  const { page, context, errors } = await site.open('index.html');
  await page.locator('#open').waitFor({ state: 'visible', timeout: TIMEOUT });
  await page.click('#model-chooser summary');
  const files = ['config.json', 'vocab.txt', 'tokenizer_config.json', 'model.safetensors'].map((name) => join(folder, name));
  await Promise.all([page.waitForURL(/#.*local=/, { timeout: TIMEOUT }), page.setInputFiles('#model-chooser input[type="file"][multiple]', files)]);
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  assert.match(await page.locator('.model-line').textContent(), /your files \(config\.json.*opened from your computer/s);
  const largest = await parity(page, id);
  t.diagnostic(`${id} opened from files: largest |page - CLI| attention ${largest.toExponential(2)} (bar ${PARITY})`);
  assert.ok(largest <= PARITY);
  await page.reload();
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
  assert.ok(await parity(page, id) <= PARITY, 'the link reopens the same model');
  assert.deepEqual(errors, []);
  await context.close();
});

// An embedded figure on another site takes model-src="hf:ID" where the host page allows the hub
// in its head; a meta in the body does not count, and without one the figure says what to add.
test('an embedded figure runs model-src="hf:ID" only where the host page\u2019s head allows the hub', async (t) => {
  const host = await startHost(web);
  try {
    const id = 'test-org/bert-mini-st';
    const sentence = 'The keys to the cabinet are on the table.';
    const figure = `<attention-row model-src="hf:${id}" sentence="${sentence}" word="keys"></attention-row>`;
    const script = `<script type="module" src="${site.baseUrl}dist/attention-widgets.js"></script>`;
    const meta = `<meta name="attention-widgets-origins" content="${hub.url}">`;
    writeFileSync(join(host.dir, 'hf-head.html'), `<!doctype html><html><head><meta charset="utf-8"><title>hf</title>${meta}${script}</head><body>${figure}</body></html>`);
    writeFileSync(join(host.dir, 'hf-body.html'), `<!doctype html><html><head><meta charset="utf-8"><title>hf</title>${script}</head><body>${meta}${figure}</body></html>`);
    const context = await site.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${host.url}hf-head.html${hubQuery()}`);
    await page.locator('attention-row .status[data-mode="live"]').waitFor({ timeout: TIMEOUT });
    const attention = await page.locator('attention-row').evaluate((el) => Array.from(el.result.attention));
    const cli = JSON.parse(execFileSync(CLI, ['analyze', '--model', join(FIXTURES, repo(id).expect.attn), '--json', sentence], { encoding: 'utf8' })).attention.flat(Infinity);
    const largest = attention.reduce((m, v, i) => Math.max(m, Math.abs(v - cli[i])), 0);
    t.diagnostic(`embedded ${id}: largest |figure - CLI| attention ${largest.toExponential(2)} (bar ${PARITY})`);
    assert.equal(attention.length, cli.length);
    assert.ok(largest <= PARITY);
    await page.goto(`${host.url}hf-body.html${hubQuery()}`);
    const status = page.locator('attention-row .status[data-mode="error"]');
    await status.waitFor({ timeout: TIMEOUT });
    assert.match(await status.textContent(), /does not allow/);
    await context.close();
  } finally {
    host.close();
  }
});

// A checkpoint without the masked-LM head: the post's prediction figure, which follows the page's
// choice, says it needs the head; its link is pinned to the commit it loaded.
test('the prediction figure says a model without the masked-LM head cannot predict, and the link pins the commit', async () => {
  const id = 'test-org/bert-nohead';
  const { page, context, errors } = await site.open(`contribution.html${hubQuery()}#hf=${id}`);
  await page.locator('#status[data-state="live"]').waitFor({ timeout: TIMEOUT });
  await page.waitForFunction((sha) => location.hash.includes(encodeURIComponent(`@${sha}`)), repo(id).sha, { timeout: TIMEOUT });
  const prediction = page.locator('attention-prediction').first();
  await prediction.scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /no masked-LM head/.test(document.querySelector('attention-prediction')?.shadowRoot?.textContent ?? ''), null, { timeout: TIMEOUT });
  assert.match(await prediction.evaluate((el) => el.result?.text ?? ''), /./, 'the figure drew the hub model\u2019s analysis');
  assert.equal(await prediction.evaluate((el) => el.result.layers), repo(id).expect.layers);
  assert.deepEqual(errors, []);
  await context.close();
});
