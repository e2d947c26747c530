// The embedding helpers in Node: attribute escaping of snippets (checked by decoding the
// entities back by hand), the iframe URL, the permalink's `view` key read as data, and the
// engine sharing rules the widgets rely on (one engine per engine + model, an engine folder and
// a model file without any manifest). Needs build/wasm and the fixtures' model files.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { getEngine, resetSharedEngine } from '../../web/engine/engine.js';
import { BUNDLE_URL, elementSnippet, escapeAttribute, FRAME_URL, frameUrl } from '../../web/widgets/snippet.js';
import { formatHash, parseHash } from '../../web/runtime/state.js';
import { requireInputs } from './inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixtures = process.env.ATTN_FIXTURES_DIR ?? join(root, 'build', 'fixtures');
const wasmDir = join(root, 'build', 'wasm');

const HOSTILE = [
  '<img src=x onerror="alert(1)">',
  '"><script>alert(2)</script>',
  "' onmouseover='alert(3)' x='",
  'Tom & Jerry &amp; &quot;friends&quot;',
  'plain',
  '',
];

// Undoes the four entities, in the order that cannot create a new one.
const decode = (text) => text.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

test('attribute values are escaped so that they cannot leave the attribute', () => {
  for (const value of HOSTILE) {
    const escaped = escapeAttribute(value);
    assert.doesNotMatch(escaped, /["<>]/, escaped);
    assert.doesNotMatch(escaped.replace(/&(amp|quot|lt|gt);/g, ''), /&/, escaped);
    assert.equal(decode(escaped), value);
  }
});

test('an element snippet is one script tag and one element with the attributes in order', () => {
  const snippet = elementSnippet('attention-row', [['sentence', HOSTILE[1]], ['word', '3'], ['hide-special', true]]);
  const lines = snippet.split('\n');
  assert.equal(lines.length, 2);
  assert.equal(lines[0], `<script type="module" src="${BUNDLE_URL}"></script>`);
  const m = /^<attention-row sentence="([^"]*)" word="3" hide-special><\/attention-row>$/.exec(lines[1]);
  assert.ok(m, lines[1]);
  assert.equal(decode(m[1]), HOSTILE[1]);
  assert.match(BUNDLE_URL, /\/web\/dist\/attention-widgets\.js$/);
});

test('the iframe URL carries the widget and every attribute as parameters', () => {
  const url = new URL(frameUrl('compare', [['sentence', HOSTILE[0]], ['heads', '1.2 3.4'], ['hide-special', true]]));
  assert.equal(url.href.split('?')[0], FRAME_URL);
  assert.deepEqual([...url.searchParams], [['widget', 'compare'], ['sentence', HOSTILE[0]], ['heads', '1.2 3.4'], ['hide-special', '']]);
});

test('the permalink keeps the figure in view as data only', () => {
  const state = { sentence: HOSTILE[1], token: 4, layer: 0, head: 3, showSpecial: false, view: 'heads' };
  assert.deepEqual(parseHash(formatHash(state)), state);
  for (const view of ['<b>', 'heads"><img', 'a'.repeat(21), 'Heads', 'he-ads', '']) {
    assert.equal(parseHash(`#v=${encodeURIComponent(view)}`).view, undefined, view);
  }
});

test('widgets that name the same engine and model share one; another model gets its own', async (t) => {
  const inputs = [join(wasmDir, 'attention_engine.wasm'), join(fixtures, 'tiny.attn'), join(fixtures, 'mini.attn')];
  if (!requireInputs(t, inputs, 'run scripts/build.sh wasm and scripts/reference/make_test_fixtures.sh build/fixtures')) return;
  resetSharedEngine();
  // No manifest exists at this address: with an engine folder and a model file none is read.
  const manifestUrl = pathToFileURL(join(fixtures, 'no-such-manifest.json')).href;
  const engineUrl = pathToFileURL(wasmDir).href;  // without the trailing slash on purpose
  const tiny = { manifestUrl, engineUrl, modelUrl: pathToFileURL(join(fixtures, 'tiny.attn')).href };
  const mini = { manifestUrl, engineUrl, modelUrl: pathToFileURL(join(fixtures, 'mini.attn')).href };
  const [a, b, c] = await Promise.all([getEngine(tiny), getEngine({ ...tiny }), getEngine(mini)]);
  assert.equal(a, b);
  assert.notEqual(a, c);
  assert.notEqual(a.info.url, c.info.url);
  assert.equal(await getEngine(), a, 'getEngine() without options is not the first engine asked for');
  assert.ok((await a.analyze('The cat sat.')).n > 2);
  resetSharedEngine();
});

after(() => resetSharedEngine());
