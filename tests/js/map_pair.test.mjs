// The model map (<attention-map>) and the two-sentence figure (<attention-pair>) in Node, under
// the DOM shim, on the committed example of the default model: the map has a head link per head
// of the example's shape, lights the view's head and follows it, links every part to its place
// in the article and is one tab stop; two sentences are aligned token by token, their difference
// is row A minus row B and sums to 0; a row of differences draws its bars both ways. The same
// figures with the live engine: tests/browser/map_pair.test.mjs.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { closeWindow, defaultExample } from './dom_shim.mjs';

const { figureView } = await import('../../web/runtime/view.js');
const { alignTokens, describeModel, resultFromExample, rowDifference } = await import('../../web/widgets/data.js');
const { differenceScale, RowChart } = await import('../../web/widgets/bars.js');
const { DEFAULT_WORD_TEXT } = await import('../../web/content.js');
const { MAP_TARGETS } = await import('../../web/widgets/attention-map.js');
await import('../../web/widgets/attention-pair.js');

after(closeWindow);

const example = defaultExample();
const result = resultFromExample(example);

const tokens = (...texts) => ({ tokens: texts.map((text) => ({ text })) });

function exampleView(selection = { token: -1, layer: -1, head: -1 }) {
  return figureView({ example: result, sentence: result.text, selection, wordText: DEFAULT_WORD_TEXT, model: describeModel(example.model) });
}

test('two sentences that differ in one word are aligned by place; a word in more pieces stands alone', () => {
  const big = tokens('[CLS]', 'it', 'is', 'too', 'big', '.', '[SEP]');
  const small = tokens('[CLS]', 'it', 'is', 'too', 'small', '.', '[SEP]');
  const one = alignTokens(big, small);
  assert.deepEqual(one.pairs, [0, 1, 2, 3, 4, 5, 6].map((k) => ({ a: k, b: k })));
  assert.deepEqual([...one.partner], [0, 1, 2, 3, 4, 5, 6]);
  const pieces = tokens('[CLS]', 'it', 'is', 'too', 'sm', '##all', '.', '[SEP]');
  const two = alignTokens(big, pieces);
  assert.deepEqual(two.pairs, [{ a: 0, b: 0 }, { a: 1, b: 1 }, { a: 2, b: 2 }, { a: 3, b: 3 }, { a: 4, b: 4 }, { a: -1, b: 5 }, { a: 5, b: 6 }, { a: 6, b: 7 }]);
  assert.deepEqual([...alignTokens(pieces, big).partner], [0, 1, 2, 3, 4, -1, 5, 6]);
  // The difference: first minus second, a token without a partner against 0; it sums to 0.
  const rowA = [0.1, 0.2, 0.3, 0.1, 0.2, 0.05, 0.05];
  const rowB = [0.1, 0.1, 0.2, 0.1, 0.3, 0.1, 0.05, 0.05];
  const diff = rowDifference(two.pairs, rowA, rowB);
  const expected = [0, 0.1, 0.1, 0, -0.1, -0.1, 0, 0];
  diff.forEach((d, k) => assert.ok(Math.abs(d - expected[k]) < 1e-12, `difference ${k}: ${d}`));
  assert.ok(Math.abs(diff.reduce((s, d) => s + d, 0)) < 1e-12);
});

test('a row of differences draws its bars from the middle, both ways, and writes each value with its sign', () => {
  assert.equal(differenceScale([0.04, -0.046]), 0.05);
  assert.equal(differenceScale([0.3, -0.12]), 0.5);
  assert.equal(differenceScale([0, 0]), 0.001);
  const chart = new RowChart({ signed: true });
  document.body.append(chart.el);
  const t = tokens('a', 'b', 'c').tokens;
  chart.update({ tokens: t, roles: Uint8Array.from([0, 0, 0]), row: Float64Array.from([0.02, -0.04, 0.0005]) });
  const rows = [...chart.table.querySelectorAll('tbody tr')];
  assert.deepEqual(rows.map((tr) => tr.querySelector('.bar').classList.contains('down')), [false, true, false]);
  assert.deepEqual(rows.map((tr) => tr.querySelector('td.value').textContent), ['+0.0200', '\u22120.0400', '+5.0\u00d710\u207b\u2074']);
  assert.ok(chart.table.classList.contains('signed') && chart.uniform.hidden, 'a signed chart has no uniform line');
  assert.ok(rows[1].classList.contains('top'), 'the largest difference either way is marked');
  chart.el.remove();
});

test('the map has a link per head of the model\u2019s shape, lights the view\u2019s head and follows it, and links every part to the article', async () => {
  const map = document.createElement('attention-map');
  document.body.append(map);
  const view = await exampleView();
  map.view = view;
  const root = map.shadowRoot;
  const heads = [...root.querySelectorAll('a.head')];
  assert.equal(heads.length, result.layers * result.heads);
  assert.equal(root.querySelectorAll('li.layer').length, result.layers);
  const lit = () => [...root.querySelectorAll('a.head[aria-current]')].map((a) => [Number(a.dataset.layer), Number(a.dataset.head)]);
  assert.deepEqual(lit(), [[view.layer, view.head]]);
  assert.match(root.querySelector('.here-line').textContent, new RegExp(`Layer ${view.layer + 1}, head ${view.head + 1}`));
  // Every part links to an id the article has (tests/browser/map_pair.test.mjs checks the page).
  const targets = new Set(Object.values(MAP_TARGETS).map((id) => `#${id}`));
  const links = [...root.querySelectorAll('a')];
  for (const a of links) assert.ok(targets.has(a.getAttribute('href')), `${a.textContent}: ${a.getAttribute('href')}`);
  assert.deepEqual(new Set(links.map((a) => a.dataset.part)), new Set(Object.keys(MAP_TARGETS)));
  // One tab stop, on the lit head; the arrow keys move it.
  const stops = () => links.filter((a) => a.tabIndex === 0);
  assert.deepEqual(stops(), [root.querySelector('a.head[aria-current]')]);
  stops()[0].dispatchEvent(new window.KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
  assert.equal(stops().length, 1);
  assert.equal(links.indexOf(stops()[0]), links.indexOf(root.querySelector('a.head[aria-current]')) + 1);
  // Another head in the view: the map lights it, and only it.
  const other = { layer: (view.layer + 1) % result.layers, head: (view.head + 1) % result.heads };
  map.view = await exampleView({ token: view.token, ...other });
  assert.deepEqual(lit(), [[other.layer, other.head]]);
  assert.ok(root.querySelector(`li.layer[data-layer="${other.layer}"]`).classList.contains('here'));
  assert.equal(root.querySelectorAll('li.layer.here').length, 1);
  // A head's link chooses that head.
  const chosen = [];
  map.addEventListener('attention-select', (e) => chosen.push(e.detail));
  heads[0].dispatchEvent(new Event('click', { bubbles: true, cancelable: true }));
  assert.deepEqual(chosen, [{ layer: 0, head: 0 }]);
  map.remove();
});

test('the pair figure shows both rows and their difference, row A minus row B', async () => {
  const pair = document.createElement('attention-pair');
  document.body.append(pair);
  const view = await exampleView();
  // The example against itself: every difference is 0 and both rows are the engine's row.
  pair.view = { ...view, mode: 'live', against: { sentence: result.text, result, error: null } };
  const root = pair.shadowRoot;
  const values = (kind) => [...root.querySelectorAll(`section[data-kind="${kind}"] tbody tr`)].map((tr) => Number(tr.dataset.value));
  const a = values('first');
  const b = values('second');
  const d = values('difference');
  assert.equal(a.length, result.n);
  assert.deepEqual(a, b);
  assert.ok(Math.abs(a.reduce((s, x) => s + x, 0) - 1) < 1e-6);
  assert.deepEqual(d, a.map(() => 0));
  assert.equal(root.querySelector('input#first').value, result.text);
  assert.equal(root.querySelector('input#second').value, result.text);
  // Without the second sentence's result, the figure says why instead of a difference.
  pair.view = { ...view, mode: 'live', against: { sentence: 'x', result: null, error: 'Refused for the test.' } };
  assert.equal(root.querySelector('section[data-kind="difference"] .missing').textContent, 'Refused for the test.');
  assert.equal(root.querySelector('section[data-kind="difference"] .chart').hidden, true);
  pair.remove();
});
