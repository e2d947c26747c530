// Self-test of the mock hub and its checkpoints: node --test tests/hub/mock_hub.test.mjs
// Writes the checkpoints into build/hub-fixtures (tests/hub/make_checkpoints.py; nothing is
// written when they are up to date), starts the mock hub and checks its answers with fetch.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startMockHub } from './mock_hub.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(ROOT, 'build', 'hub-fixtures');
const PYTHON = process.env.HUB_PYTHON ?? '/usr/bin/python3';
const CLI = join(ROOT, 'build', 'native', 'attention-cli');

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const gitBlobId = (buf) => createHash('sha1').update(Buffer.concat([Buffer.from(`blob ${buf.length}\0`), buf])).digest('hex');

let hub;
let manifest;
const repo = (id) => manifest.repos.find((r) => r.id === id);
const file = (id, name) => repo(id).files.find((f) => f.rfilename === name);

before(async () => {
  const started = performance.now();
  const run = spawnSync(PYTHON, ['tests/hub/make_checkpoints.py', FIXTURES], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.status, 0, `make_checkpoints.py failed:\n${run.stdout}\n${run.stderr}`);
  console.log(`${run.stdout.trim()} [${((performance.now() - started) / 1000).toFixed(1)} s with start-up]`);
  hub = await startMockHub({ dir: FIXTURES });
  manifest = hub.manifest;
});

after(async () => { await hub?.close(); });

test('repos.json: every listed file exists, good repos have their .attn, refused ones a message', () => {
  assert.equal(typeof manifest.canaryPort, 'number');
  const ids = manifest.repos.map((r) => r.id);
  for (const id of ['test-org/bert-mini-st', 'test-org/bert-mini-bin', 'test-org/bert-small-st', 'test-org/bert-nohead',
    'test-org/bert-cased', 'test-org/bert-f16', 'test-org/bert-f16-bin', 'test-org/bert-both', 'test-org/not-bert',
    'test-org/gated', 'test-org/html-instead', 'test-org/wrong-sha', 'test-org/truncated', 'test-org/evil-os-system',
    'test-org/evil-eval', 'test-org/evil-popen', 'test-org/evil-reduce', 'test-org/evil-persid', 'test-org/evil-dotdot',
    'test-org/short-storage', 'test-org/st-overlap', 'test-org/st-huge']) assert.ok(ids.includes(id), id);
  for (const r of manifest.repos) {
    assert.match(r.sha, /^[0-9a-f]{40}$/);
    for (const f of r.files) assert.equal(statSync(join(FIXTURES, f.path)).size, f.servedSize, f.path);
    assert.ok(r.files.some((f) => f.rfilename === '.gitattributes') && r.files.some((f) => f.rfilename === 'README.md'));
    if (r.expect.load) {
      assert.ok(statSync(join(FIXTURES, r.expect.attn)).size > 1e6, `${r.id}: ${r.expect.attn}`);
      assert.ok(r.files.some((f) => f.rfilename === r.expect.weights));
    } else {
      assert.ok(r.expect.message && r.expect.messageAny.includes(r.expect.message), r.id);
    }
  }
});

test('model info: siblings without and with blobs, revision by commit, unknown revision', async () => {
  const r = repo('test-org/bert-mini-st');
  let res = await fetch(`${hub.url}/api/models/test-org/bert-mini-st`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), '*');
  let info = await res.json();
  assert.equal(info.id, 'test-org/bert-mini-st');
  assert.equal(info.modelId, info.id);
  assert.equal(info.sha, r.sha);
  assert.equal(info.gated, false);
  assert.equal(info.config.model_type, 'bert');
  assert.deepEqual(info.siblings.map((s) => Object.keys(s)), info.siblings.map(() => ['rfilename']));
  assert.deepEqual(info.siblings.map((s) => s.rfilename),
    ['.gitattributes', 'README.md', 'config.json', 'model.safetensors', 'tokenizer_config.json', 'vocab.txt']);

  res = await fetch(`${hub.url}/api/models/test-org/bert-mini-st/revision/${r.sha}?blobs=true`);
  assert.equal(res.status, 200);
  info = await res.json();
  const st = info.siblings.find((s) => s.rfilename === 'model.safetensors');
  assert.deepEqual(st.lfs, file('test-org/bert-mini-st', 'model.safetensors').lfs);
  assert.equal(st.size, st.lfs.size);
  assert.match(st.blobId, /^[0-9a-f]{40}$/);
  const config = info.siblings.find((s) => s.rfilename === 'config.json');
  assert.equal(config.lfs, undefined);
  assert.equal(config.blobId, gitBlobId(readFileSync(join(FIXTURES, 'test-org/bert-mini-st/config.json'))));

  res = await fetch(`${hub.url}/api/models/test-org/bert-mini-st/revision/v9.9`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get('x-error-code'), 'RevisionNotFound');

  res = await fetch(`${hub.url}/api/models/test-org/bert-mini-st/tree/main`);
  const tree = await res.json();
  assert.equal(tree.find((t) => t.path === 'model.safetensors').lfs.oid, st.lfs.sha256);
});

test('resolve: a small file directly, with ETag = blobId and X-Repo-Commit; preflight', async () => {
  const r = repo('test-org/bert-mini-st');
  const res = await fetch(`${hub.url}/test-org/bert-mini-st/resolve/main/config.json`);
  assert.equal(res.status, 200);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.headers.get('etag'), `"${file(r.id, 'config.json').blobId}"`);
  assert.equal(gitBlobId(body), file(r.id, 'config.json').blobId);
  assert.equal(res.headers.get('x-repo-commit'), r.sha);
  assert.match(res.headers.get('access-control-expose-headers'), /X-Linked-Size/);
  assert.equal(JSON.parse(body).model_type, 'bert');

  const pre = await fetch(`${hub.url}/test-org/bert-mini-st/resolve/main/model.safetensors`, {
    method: 'OPTIONS', headers: { Origin: 'http://127.0.0.1:1', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'range' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), '*');
  assert.match(pre.headers.get('access-control-allow-headers'), /range/i);
});

test('resolve: weights redirect (302) to the CDN; the download matches the listing sha256; Range', async () => {
  for (const [id, name] of [['test-org/bert-mini-st', 'model.safetensors'], ['test-org/bert-mini-bin', 'pytorch_model.bin']]) {
    const f = file(id, name);
    const r = repo(id);
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${hub.url}/${id}/resolve/${r.sha}/${name}`, { method, redirect: 'manual' });
      assert.equal(res.status, 302);
      assert.ok(res.headers.get('location').startsWith(`${hub.cdnUrl}/repos/`));
      assert.equal(res.headers.get('x-linked-etag'), `"${f.lfs.sha256}"`);
      assert.equal(res.headers.get('x-linked-size'), String(f.lfs.size));
      assert.equal(res.headers.get('x-repo-commit'), r.sha);
      await res.arrayBuffer();
    }
    const res = await fetch(`${hub.url}/${id}/resolve/main/${name}`);
    assert.equal(res.status, 200);
    assert.equal(res.url.startsWith(hub.cdnUrl), true);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('etag'), `"${f.lfs.sha256}"`);
    assert.equal(res.headers.get('content-length'), String(f.lfs.size));
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(sha256(body), f.lfs.sha256);
  }
  const res = await fetch(`${hub.url}/test-org/bert-mini-st/resolve/main/model.safetensors`, { headers: { Range: 'bytes=0-7' } });
  assert.equal(res.status, 206);
  assert.equal(res.headers.get('content-range'), `bytes 0-7/${file('test-org/bert-mini-st', 'model.safetensors').size}`);
  const head = Buffer.from(await res.arrayBuffer());
  assert.equal(head.length, 8);
  assert.deepEqual(head, readFileSync(join(FIXTURES, 'test-org/bert-mini-st/model.safetensors')).subarray(0, 8));
  // The page must prefer safetensors in bert-both: both files are there to choose from.
  const both = await (await fetch(`${hub.url}/api/models/test-org/bert-both`)).json();
  assert.deepEqual(both.siblings.map((s) => s.rfilename).filter((n) => /\.(bin|safetensors)$/.test(n)), ['model.safetensors', 'pytorch_model.bin']);
});

test('errors: 401 for a missing repo and for gated files (info served), 404 for a missing file or revision', async () => {
  let res = await fetch(`${hub.url}/api/models/test-org/no-such-model`);
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), { error: 'Repository not found' });
  res = await fetch(`${hub.url}/test-org/no-such-model/resolve/main/config.json`);
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('x-error-code'), 'RepoNotFound');
  await res.arrayBuffer();

  res = await fetch(`${hub.url}/api/models/test-org/gated?blobs=true`);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).gated, 'manual');
  for (const name of ['config.json', 'model.safetensors']) {
    res = await fetch(`${hub.url}/test-org/gated/resolve/main/${name}`);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('x-error-code'), 'GatedRepo');
    assert.match((await res.json()).error, /Access to model test-org\/gated is restricted/);
  }

  res = await fetch(`${hub.url}/test-org/bert-mini-st/resolve/main/nope.json`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get('x-error-code'), 'EntryNotFound');
  assert.deepEqual(await res.json(), { error: 'Entry not found' });
  res = await fetch(`${hub.url}/test-org/bert-mini-st/resolve/not-a-branch/config.json`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get('x-error-code'), 'RevisionNotFound');
  await res.arrayBuffer();
});

test('bad downloads: truncated mid-body, wrong sha256, HTML instead of weights', async () => {
  const f = file('test-org/truncated', 'model.safetensors');
  const res = await fetch(`${hub.url}/test-org/truncated/resolve/main/model.safetensors`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-length'), String(f.size));
  let received = 0;
  await assert.rejects(async () => { for await (const chunk of res.body) received += chunk.length; });
  assert.ok(received > 0 && received <= f.truncateAt, `received ${received} of ${f.size}`);
  const record = hub.requests.findLast((q) => q.origin === 'cdn' && q.path.includes(f.lfs.sha256));
  assert.equal(record.aborted, true);
  assert.equal(record.bytes, f.truncateAt);

  const w = file('test-org/wrong-sha', 'model.safetensors');
  const wrong = Buffer.from(await (await fetch(`${hub.url}/test-org/wrong-sha/resolve/main/model.safetensors`)).arrayBuffer());
  assert.equal(wrong.length, w.lfs.size);
  assert.notEqual(sha256(wrong), w.lfs.sha256);

  const h = file('test-org/html-instead', 'model.safetensors');
  const html = Buffer.from(await (await fetch(`${hub.url}/test-org/html-instead/resolve/main/model.safetensors`)).arrayBuffer());
  assert.match(html.toString('latin1', 0, 15), /^<!doctype html>/);
  assert.notEqual(sha256(html), h.lfs.sha256);
});

test('setDelay: a slow download can be cancelled after its first chunk', async () => {
  hub.setDelay(100);
  try {
    const f = file('test-org/bert-small-st', 'model.safetensors');
    const controller = new AbortController();
    const started = performance.now();
    const res = await fetch(`${hub.url}/test-org/bert-small-st/resolve/main/model.safetensors`, { signal: controller.signal });
    const reader = res.body.getReader();
    const { value } = await reader.read();
    assert.ok(value.length > 0);
    controller.abort();
    await assert.rejects(reader.read());
    await new Promise((r) => setTimeout(r, 300));
    const record = hub.requests.findLast((q) => q.origin === 'cdn' && q.path.includes(f.lfs.sha256));
    assert.equal(record.aborted, true);
    assert.ok(record.bytes < f.size / 4, `${record.bytes} bytes sent`);
    assert.ok(performance.now() - started < 5000);
  } finally {
    hub.setDelay(0);
  }
});

test('canary: the listener counts hits; the hostile payloads point at it', async () => {
  const before = hub.canaryHits();
  const res = await fetch(`http://127.0.0.1:${manifest.canaryPort}/canary?from=self-test`);
  assert.equal(res.status, 200);
  await res.text();
  assert.equal(hub.canaryHits(), before + 1);
  for (const id of ['test-org/evil-os-system', 'test-org/evil-eval', 'test-org/evil-popen']) {
    const bin = readFileSync(join(FIXTURES, file(id, 'pytorch_model.bin').path));
    assert.ok(bin.includes(`http://127.0.0.1:${manifest.canaryPort}/canary`), id);
  }
  assert.ok(hub.requests.some((q) => q.origin === 'canary' && q.status === 200));
});

test('the .attn files run in attention-cli with attention that is far from uniform (skipped without the CLI)', { skip: !existsSync(CLI) && 'build/native/attention-cli not built' }, () => {
  const text = 'The cat sat on the mat because it was tired.';
  const analyze = (id) => {
    const run = spawnSync(CLI, ['analyze', '--model', join(FIXTURES, repo(id).expect.attn), '--json', text], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout).attention;
  };
  const mini = analyze('test-org/bert-mini-st');
  assert.deepEqual(analyze('test-org/bert-mini-bin'), mini);
  for (const layer of mini) {
    for (const head of layer) {
      const meanMax = head.reduce((s, row) => s + Math.max(...row), 0) / head.length;
      assert.ok(meanMax > 3 / head.length, `mean row max ${meanMax} vs uniform ${1 / head.length}`);
    }
  }
});
