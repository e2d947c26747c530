// Model downloads have a size bound before they are complete (web/engine/engine.js
// fetchVerified, security review F5), in Node against a local HTTP server: a response whose
// Content-Length is over the engine's limit is refused before its body is read, and one without a
// Content-Length stops being read as soon as it passes the manifest's length. Each server sends
// at most CAP bytes, so that the engine before this bound (which read every byte) fails quickly.
// Needs build/wasm (scripts/build.sh wasm).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine, MAX_MODEL_FILE_BYTES } from '../../web/engine/engine.js';
import { MAX_UNDECLARED_BYTES } from '../../web/engine/files.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const wasmDir = join(root, 'build', 'wasm');
const CAP = 32 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x41);

let server;
let base;
const sent = {};  // path -> bytes written before the client went away (or CAP was reached)

before(async () => {
  server = createServer(async (request, response) => {
    const path = request.url;
    const headers = { 'content-type': 'application/octet-stream' };
    // A file that says it is 2 GiB; the other gives no length (chunked).
    if (path === '/declared-huge.attn') headers['content-length'] = String(2 * 1024 * 1024 * 1024);
    // A model-src answer without a length that goes on (chunked), up to 80 MiB.
    const most = path === '/chunked-80mib.attn' ? 80 * 1024 * 1024 : CAP;
    response.writeHead(200, headers);
    sent[path] = 0;
    let open = true;
    response.on('close', () => { open = false; });
    while (open && sent[path] < most) {
      if (!response.write(CHUNK)) await new Promise((resolve) => { response.once('drain', resolve); response.once('close', resolve); });
      sent[path] += CHUNK.length;
    }
    if (open) response.destroy();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => server?.close());

test('a Content-Length over the limit is refused before the body is read', async (t) => {
  if (!requireInputs(t, [join(wasmDir, 'attention_engine.wasm')], 'build it with scripts/build.sh wasm')) return;
  await assert.rejects(createEngine({ engineUrl: pathToFileURL(wasmDir).href, modelUrl: `${base}/declared-huge.attn` }), (error) => {
    assert.equal(error.kind, 'model');
    assert.equal(error.message, `The model file ${base}/declared-huge.attn is ${2 * 1024 * 1024 * 1024} bytes, more than this engine loads (${MAX_MODEL_FILE_BYTES}); use a smaller or compact model file.`);
    return true;
  });
  assert.ok(sent['/declared-huge.attn'] < CAP / 2, `the server sent ${sent['/declared-huge.attn']} bytes`);
});

test('a body without Content-Length is read only until it passes the manifest\u2019s length, on each try', async (t) => {
  if (!requireInputs(t, [join(wasmDir, 'attention_engine.wasm')], 'build it with scripts/build.sh wasm')) return;
  const manifest = {
    default: 'm',
    models: { m: { file: `${base}/unbounded.attn`, bytes: 1000, sha256: 'ab'.repeat(32) } },
    engine: { glue: pathToFileURL(join(wasmDir, 'attention_engine.js')).href, wasm: pathToFileURL(join(wasmDir, 'attention_engine.wasm')).href, bytes: 0, sha256: '' },
  };
  await assert.rejects(createEngine({ manifest, manifestUrl: `${base}/manifest.json` }), (error) => {
    assert.equal(error.kind, 'model');
    assert.match(error.message, /unbounded\.attn could not be used: got more than 1000 bytes, expected 1000, also when fetched again from the server\./);
    return true;
  });
  assert.ok(sent['/unbounded.attn'] < CAP / 2, `the server sent ${sent['/unbounded.attn']} bytes`);
});

test('a model-src answer without Content-Length stops at MAX_UNDECLARED_BYTES (64 MiB), far below the 1 GiB a file may declare', async (t) => {
  if (!requireInputs(t, [join(wasmDir, 'attention_engine.wasm')], 'build it with scripts/build.sh wasm')) return;
  await assert.rejects(createEngine({ engineUrl: pathToFileURL(wasmDir).href, modelUrl: `${base}/chunked-80mib.attn` }), (error) => {
    assert.equal(error.kind, 'model');
    assert.match(error.message, /came without a Content-Length and passed 64 MiB/);
    return true;
  });
  assert.ok(sent['/chunked-80mib.attn'] < MAX_UNDECLARED_BYTES + 16 * 1024 * 1024, `the server sent ${sent['/chunked-80mib.attn']} bytes`);
});
