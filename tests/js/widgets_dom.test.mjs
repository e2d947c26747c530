// The widgets' own logic in Node, under a DOM shim (happy-dom; tests/js/dom_shim.mjs): the one
// registry of figures, attribute mistakes said visibly and on the console, the token chips, the
// snippet attributes and the iframe height, and subscriptions undone when a figure leaves the
// page. Reads a committed example of the default model (tests/fixtures/widgets/example.json).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { closeWindow, defaultExample, warnings } from './dom_shim.mjs';

const { ATTRIBUTES, FIGURES, TAGS, parseAttribute, unknownAttributeNote } = await import('../../web/widgets/registry.js');
const { figureView } = await import('../../web/runtime/view.js');
const { describeModel, resultFromExample } = await import('../../web/widgets/data.js');
const { DEFAULT_WORD_TEXT } = await import('../../web/content.js');
const { TokenChips } = await import('../../web/widgets/controls.js');
const { RowChart } = await import('../../web/widgets/bars.js');
const { ROLE } = await import('../../web/engine/result.js');
const { panelsPerRow } = await import('../../web/widgets/attention-heads.js');
await import('../../web/embed-bundle.js');

after(closeWindow);

const example = defaultExample();
const result = resultFromExample(example);
const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

function place(tag, attributes = {}) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
  document.body.append(el);
  return el;
}

const notesOf = (el) => {
  const notes = el.shadowRoot.querySelector('.notes');
  return notes.hidden ? [] : [...notes.querySelectorAll('p')].map((p) => p.textContent);
};

async function exampleView(overrides = {}) {
  return figureView({
    example: result, sentence: result.text, selection: { token: -1, layer: -1, head: -1 }, wordText: DEFAULT_WORD_TEXT,
    model: describeModel(example.model), ...overrides,
  });
}

test('all eleven figures are registered, defined under their tag and observe exactly their declared attributes', () => {
  assert.deepEqual(Object.keys(FIGURES).sort(), ['compare', 'contribution', 'heads', 'instrument', 'map', 'mechanism', 'pair', 'precision', 'prediction', 'row', 'softmax']);
  for (const [key, figure] of Object.entries(FIGURES)) {
    const defined = customElements.get(figure.tag);
    assert.ok(defined, `${figure.tag} is not defined`);
    assert.equal(defined.figureKey, key);
    assert.deepEqual([...defined.observedAttributes], [...figure.attributes], figure.tag);
    assert.ok(Number.isInteger(figure.frameHeight) && figure.frameHeight > 200, `${key} frame height ${figure.frameHeight}`);
    assert.equal(TAGS[key], figure.tag);
    for (const name of figure.attributes) assert.ok(Object.values(ATTRIBUTES).includes(name), `${key} declares ${name}, which ATTRIBUTES lacks`);
  }
});

// Every declared attribute with a parser: a bad value and a good one.
const CASES = [
  ['row', ATTRIBUTES.theme, 'drak', 'dark'],
  ['compare', ATTRIBUTES.heads, '1.1', '2.1 4.3'],
  ['compare', ATTRIBUTES.heads, '0.1 x', '1.2,3.4'],
  ['softmax', ATTRIBUTES.scores, '1 2 three 4 5', '2 1 0.5 -0.5 -1.5'],
  ['precision', ATTRIBUTES.plan, 'fancy', 'naive'],
  ['prediction', ATTRIBUTES.removed, '2-3', '2.3, 4.1'],
  ['contribution', ATTRIBUTES.sort, 'size', 'effect'],
];

test('a bad attribute value is shown above the figure and warned once; a good one is not', async () => {
  for (const [key, name, bad, good] of CASES) {
    const tag = FIGURES[key].tag;
    let el;
    const said = await warnings(async () => {
      el = place(tag, { [name]: bad });
      await flush();
    });
    const notes = notesOf(el);
    assert.equal(notes.length, 1, `${tag} ${name}="${bad}": ${JSON.stringify(notes)}`);
    assert.match(notes[0], new RegExp(`^${name}=\u201c${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\u201d was not used: `));
    assert.equal(said.filter((s) => s.includes(notes[0])).length, 1, `${tag}: warned ${JSON.stringify(said)}`);
    const quiet = await warnings(async () => {
      el.setAttribute(name, good);
      await flush();
    });
    assert.deepEqual(notesOf(el), [], `${tag} ${name}="${good}" still has a note`);
    assert.deepEqual(quiet, []);
    el.remove();
  }
});

test('the parsed values are the ones the figures use', () => {
  assert.deepEqual(parseAttribute(ATTRIBUTES.heads, '2.1 4.3').value, [{ layer: 1, head: 0 }, { layer: 3, head: 2 }]);
  assert.deepEqual(parseAttribute(ATTRIBUTES.heads, '2.1').value, [{ layer: 1, head: 0 }, null]);
  assert.equal(parseAttribute(ATTRIBUTES.removed, ' 2.3, 4.1 ').value, '2.3,4.1');
  assert.equal(parseAttribute(ATTRIBUTES.removed, 'everything').value, '');
  assert.deepEqual(parseAttribute(ATTRIBUTES.scores, '1,2,3,4,5').value, [1, 2, 3, 4, 5]);
  const prediction = place(FIGURES.prediction.tag, { removed: '1.1,x' });
  assert.equal(prediction.removed, '');
  prediction.setAttribute('removed', '1.1, 2.2');
  assert.equal(prediction.removed, '1.1,2.2');
  prediction.remove();
  const lab = place(FIGURES.softmax.tag, { scores: '3 1 0 -1 -3' });
  assert.deepEqual(lab.scores, [3, 1, 0, -1, -3]);
  lab.setAttribute('scores', 'nonsense');
  assert.deepEqual(lab.scores, [3, 1, 0, -1, -3], 'a bad value keeps the scores shown');
  lab.remove();
});

test('a misspelt attribute is named, with the one it resembles; global, data-* and aria-* attributes are not', async () => {
  let el;
  await warnings(async () => {
    el = place(FIGURES.row.tag, { sentense: 'A cat sat.', id: 'x', class: 'wide', 'data-note': '1', 'aria-label': 'figure' });
    await flush();
  });
  const notes = notesOf(el);
  assert.equal(notes.length, 1, JSON.stringify(notes));
  assert.match(notes[0], /has no attribute \u201csentense\u201d; it was ignored\. Did you mean sentence\?/);
  el.remove();
  assert.equal(unknownAttributeNote('softmax', 'sentence')?.includes('Its attributes: scores, theme.'), true);
  assert.equal(unknownAttributeNote('row', 'zzzzzzzz')?.includes('Did you mean'), false);
});

test('a theme attribute sets the figure\'s theme; a figure that left the page stops following the host', async () => {
  const dark = place(FIGURES.row.tag, { theme: 'dark' });
  assert.equal(dark.theme, 'dark');
  dark.setAttribute('theme', 'light');
  assert.equal(dark.theme, 'light');
  const staying = place(FIGURES.row.tag);
  let stayed = 0;
  let left = 0;
  staying.updateTheme = () => { stayed += 1; };
  dark.updateTheme = () => { left += 1; };
  dark.remove();
  document.documentElement.className = 'dark';
  await flush();
  assert.ok(stayed >= 1, 'the figure still on the page was not told');
  assert.equal(left, 0, 'the removed figure was still told of the host\'s theme');
  staying.remove();
  document.documentElement.className = '';
});

test('the row figure draws one chip per token, hides [CLS] and [SEP] on request and says which token the reader chose', async () => {
  const row = place(FIGURES.row.tag);
  row.view = await exampleView();
  const chips = [...row.shadowRoot.querySelectorAll('button.chip')];
  assert.equal(chips.length, result.n);
  assert.deepEqual(chips.map((c) => c.textContent), result.tokens.map((t) => t.text));
  const pressed = chips.filter((c) => c.getAttribute('aria-pressed') === 'true');
  assert.equal(pressed.length, 1);
  assert.equal(pressed[0].textContent, DEFAULT_WORD_TEXT);
  row.view = await exampleView({ showSpecial: false });
  const hidden = [...row.shadowRoot.querySelectorAll('button.chip')].filter((c) => c.hidden).map((c) => c.textContent);
  assert.deepEqual(hidden, ['[CLS]', '[SEP]']);
  const picked = new Promise((resolve) => row.addEventListener('attention-select', (e) => resolve(e.detail), { once: true }));
  row.shadowRoot.querySelectorAll('button.chip')[2].click();
  assert.deepEqual(await picked, { token: 2 });
  row.remove();
});

// A text the engine refuses is an input problem, said as one (security review 4: a text over
// 20,000 characters was reported as "the live model did not load"); a model that failed to load
// is still said as that.
test('a refused text is said as the text\u2019s problem, not as a model that did not load', async () => {
  const long = 'a '.repeat(12500);
  const engine = { analyze: async () => { throw Object.assign(new Error('The text is 25,000 characters long; the page takes at most 20,000.'), { kind: 'input' }); } };
  const row = place(FIGURES.row.tag);
  row.view = await figureView({ engine, sentence: long, selection: { token: -1, layer: -1, head: -1 }, wordText: '', model: describeModel(example.model) });
  const status = row.shadowRoot.querySelector('.status').textContent;
  assert.match(status, /This text cannot be analysed: The text is 25,000 characters long/);
  assert.doesNotMatch(status, /did not load/);
  const failing = { analyze: async () => { throw Object.assign(new Error('Could not download the model.'), { kind: 'network' }); } };
  row.view = await figureView({ engine: failing, sentence: 'The cat sat.', selection: { token: -1, layer: -1, head: -1 }, wordText: '', model: null });
  assert.match(row.shadowRoot.querySelector('.status').textContent, /The live model did not load: Could not download the model\./);
  row.remove();
});

// happy-dom has no canvas: a 2D context that draws nothing, for the figures that paint.
function withoutCanvas(t) {
  const prototype = window.HTMLCanvasElement.prototype;
  const original = prototype.getContext;
  const context = new Proxy({}, {
    get: (target, name) => (name === 'createImageData'
      ? (w, h) => ({ width: w, height: h, data: new Uint8ClampedArray(w * h * 4) })
      : name in target ? target[name] : () => {}),
    set: (target, name, value) => { target[name] = value; return true; },
  });
  prototype.getContext = () => context;
  t.after(() => { prototype.getContext = original; });
}

// Figure 1 (or another figure: key) without a canvas, driven by its page as in the article (no
// sentence of its own arrives meanwhile); both undone when the test ends.
async function placeInstrument(t, key = 'instrument') {
  withoutCanvas(t);
  const { AttentionFigure } = await import('../../web/widgets/base.js');
  const embedded = AttentionFigure.embedded;
  AttentionFigure.embedded = false;
  t.after(() => { AttentionFigure.embedded = embedded; });
  return place(FIGURES[key].tag);
}

test('Figure 1 draws a new sentence\'s row in a task after its chips, and a selection made meanwhile wins', async (t) => {
  const figure = await placeInstrument(t);
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const shown = () => {
    const table = figure.shadowRoot.querySelector('table.bars');
    const pressed = (selector) => [...figure.shadowRoot.querySelectorAll(selector)].filter((b) => b.getAttribute('aria-pressed') === 'true');
    return { pending: table.hasAttribute('data-pending'), token: Number(table.dataset.token), tokens: figure.chart.tokens, chips: pressed('button.chip'), cells: pressed('button.cell') };
  };
  figure.view = await exampleView();
  const first = shown();
  assert.equal(first.pending, false, 'the first sentence is drawn whole at once');
  assert.equal(first.tokens, result.tokens);

  // Another analysis (a result object of its own): chips and marks now, the row after a frame.
  const second = resultFromExample(example);
  figure.view = await exampleView({ example: second });
  let now = shown();
  assert.equal(now.pending, true, 'the chart says it is pending');
  assert.equal(now.tokens, result.tokens, 'the chart still shows the sentence before');
  assert.equal(figure.chipList.tokens, second.tokens, 'the chips are the new sentence\'s');
  await frame();
  now = shown();
  assert.equal(now.pending, false);
  assert.equal(now.tokens, second.tokens);
  assert.equal(now.token, figure.view.token);

  // A word chosen before the deferred row is drawn: drawn at once for that word, and the
  // deferred drawing then does nothing; one chip and one head pressed, those of the view.
  const third = resultFromExample(example);
  figure.view = await exampleView({ example: third });
  const token = third.n - 2;
  figure.view = await exampleView({ example: third, selection: { token, layer: 1, head: 2 } });
  now = shown();
  assert.equal(now.pending, false);
  assert.equal(now.token, token);
  await frame();
  now = shown();
  assert.equal(now.token, token);
  assert.deepEqual(now.chips.map((c) => c.textContent), [third.tokens[token].text]);
  assert.deepEqual(now.cells.map((c) => [c.dataset.layer, c.dataset.head]), [['1', '2']]);
  figure.remove();
});

test('Figure 1: a finger pressed on another head\'s tile is read out by the click that selects it, or on pointercancel', async (t) => {
  const figure = await placeInstrument(t);
  figure.view = await exampleView();
  const readout = () => {
    const d = figure.shadowRoot.querySelector('p.readout').dataset;
    return { source: d.source, layer: Number(d.layer), head: Number(d.head) };
  };
  const press = (layer, head, type) => figure.shadowRoot.querySelector(`button.cell[data-layer="${layer}"][data-head="${head}"]`)
    .dispatchEvent(new window.PointerEvent(type, { bubbles: true, pointerType: 'touch' }));
  const { layer, head } = figure.view;
  const before = readout();
  assert.equal(before.source, 'selection');
  // Another head's tile: nothing is drawn at the press or while the finger stays on it (the
  // click that follows draws it with the head it selects); a press that turns into a scroll is
  // drawn when the browser cancels it; a finger that slides onto a third tile, at once.
  const other = { layer: (layer + 1) % result.layers, head: (head + 1) % result.heads };
  press(other.layer, other.head, 'pointerdown');
  press(other.layer, other.head, 'pointermove');
  assert.deepEqual(readout(), before, 'the press drew the line before its click');
  press(other.layer, other.head, 'pointercancel');
  assert.deepEqual(readout(), { source: 'tap', ...other });
  const third = { layer: (layer + 2) % result.layers, head: (head + 2) % result.heads };
  press(other.layer, other.head, 'pointerdown');
  press(third.layer, third.head, 'pointermove');
  assert.deepEqual(readout(), { source: 'tap', ...third }, 'a finger sliding onto another tile is not read out');
  press(third.layer, third.head, 'pointerup');
  // The selected head's own tile: no click changes the figure, so the line is drawn at the press.
  press(layer, head, 'pointerdown');
  assert.deepEqual(readout(), { source: 'tap', layer, head });
  figure.remove();
});

// The example carries the opening selection's values and context, so Figure 2 draws its value
// side before the engine has loaded: a weight per token (the row's), the sum, and the recheck of
// the weighted sum against the engine's context, within the unit test's bar (article_data.test).
test('Figure 2 draws the value side of the example: every token\'s weight, the context and its recheck', async (t) => {
  const { mechanism } = await import('../../web/widgets/data.js');
  const el = await placeInstrument(t, 'mechanism');
  const view = await exampleView();
  el.view = view;
  const root = el.shadowRoot;
  const m = mechanism(view.result, view.layer, view.head, view.token);
  assert.ok(m?.values, 'the example holds the value slices of its selection');
  const rows = [...root.querySelectorAll('table.value-sum tbody tr')];
  assert.equal(rows.length, result.n);
  rows.forEach((tr, j) => assert.equal(Number(tr.dataset.weight), m.engineRow[j]));
  const check = root.querySelector('p.value-check');
  assert.ok(Number(check.dataset.difference) <= 1e-5, `recheck ${check.dataset.difference}`);
  assert.match(check.textContent, /largest difference from the engine\u2019s context is \d\.\de-\d/);
  assert.equal(root.querySelectorAll('ol.steps > li').length, 6);
  assert.match(root.querySelector('ol.steps').textContent, new RegExp(`${m.d} numbers, what W_O multiplies`));
  // Without values (an example written before them) the figure stops at the softmax.
  const { values, context, ...vectors } = view.result.vectors;
  el.view = { ...view, result: { ...view.result, vectors } };
  assert.equal(root.querySelectorAll('ol.steps > li').length, 4);
  assert.equal(root.querySelector('table.value-sum'), null);
  el.remove();
});

test('the heads figure puts a layer in one row of up to eight panels, else in rows of equal length', () => {
  const cases = { 1: 1, 2: 2, 4: 4, 8: 8, 12: 6, 16: 8, 6: 6, 20: 5, 24: 8, 11: 6 };
  for (const [heads, perRow] of Object.entries(cases)) assert.equal(panelsPerRow(Number(heads)), perRow, `${heads} heads`);
});

// A sentence as the chips and the chart read it: tokens (text, word index; -1 for [CLS] and
// [SEP]) and their roles. words: each word's pieces.
function sentenceOf(words) {
  const tokens = [{ text: '[CLS]', word: -1 }];
  words.forEach((pieces, w) => pieces.forEach((text) => tokens.push({ text, word: w })));
  tokens.push({ text: '[SEP]', word: -1 });
  const roles = Uint8Array.from(tokens, (t, j) => (j === 0 ? ROLE.cls : j === tokens.length - 1 ? ROLE.sep : t.text === ',' ? ROLE.punctuation : ROLE.ordinary));
  return { tokens, roles, groups: ['[CLS]', ...words.map((pieces) => pieces.join(' ')), '[SEP]'] };
}

// A subtree as markup with each element's attributes in name order and an empty class attribute
// read as none (a kept element that lost its class has one; a new one has none).
function markup(node) {
  if (node.nodeType !== 1) return node.textContent;
  const attributes = [...node.attributes].filter((a) => !(a.name === 'class' && a.value === '')).map((a) => `${a.name}="${a.value}"`).sort();
  return `<${node.localName} ${attributes.join(' ')}>${[...node.childNodes].map(markup).join('')}</${node.localName}>`;
}

test('the chips and the bar chart keep their elements from one sentence to the next and end as a fresh build would', () => {
  const sentences = [
    sentenceOf([['the'], ['play', '##ing'], ['field'], [',']]),
    sentenceOf([['the'], ['play', '##ing'], ['field'], [','], ['was'], ['wet']]),
    sentenceOf([['un', '##believ', '##able'], ['rain']]),
    sentenceOf([['a'], ['b'], ['c'], ['d'], ['e'], ['f'], ['g']]),
    sentenceOf([['x', '##y'], ['z', '##w', '##v']]),
  ];
  for (const grouped of [true, false]) {
    for (const showSpecial of [true, false]) {
      const kept = new TokenChips({ label: 'kept', onSelect: () => {}, grouped, roving: true });
      const chart = new RowChart({ track: true });
      let first = null;
      for (const [k, s] of sentences.entries()) {
        const row = Float32Array.from(s.tokens, (_, j) => (j + 1) / ((s.tokens.length * (s.tokens.length + 1)) / 2));
        kept.update({ ...s }, 1, showSpecial);
        chart.update({ tokens: s.tokens, roles: s.roles, row, selected: 1, showSpecial, scaleMax: 1 });
        const fresh = new TokenChips({ label: 'kept', onSelect: () => {}, grouped, roving: true });
        fresh.update({ ...s }, 1, showSpecial);
        assert.equal(markup(kept.el), markup(fresh.el), `chips after sentence ${k} (grouped ${grouped}, showSpecial ${showSpecial})`);
        if (grouped) {
          // One span.word per word, holding its pieces in order; marked multi when it has several.
          const words = [...kept.el.children];
          assert.deepEqual(words.map((g) => [...g.children].map((c) => c.textContent).join(' ')), s.groups);
          assert.deepEqual(words.map((g) => g.classList.contains('multi')), s.groups.map((g) => g.includes(' ')));
          assert.deepEqual(words.map((g) => g.hidden), s.groups.map((g) => !showSpecial && g.startsWith('[')));
        }
        assert.deepEqual(kept.chips.map((c) => c.textContent), s.tokens.map((t) => t.text));
        assert.deepEqual(chart.rows.map((r) => r.tr.querySelector('th').textContent), s.tokens.map((t) => t.text));
        const freshChart = new RowChart({ track: true });
        freshChart.update({ tokens: s.tokens, roles: s.roles, row, selected: 1, showSpecial, scaleMax: 1 });
        assert.equal(markup(chart.table), markup(freshChart.table), `chart after sentence ${k} (showSpecial ${showSpecial})`);
        if (k === 0) first = { chip: kept.chips[1], row: chart.rows[1].tr };
      }
      assert.equal(kept.chips[1], first.chip, 'the second token\'s chip is the same element');
      assert.equal(chart.rows[1].tr, first.row, 'the second token\'s row is the same element');
    }
  }
});

test('the embed snippet holds the figure\'s state and the iframe its registered height', async () => {
  const row = place(FIGURES.row.tag);
  const view = await exampleView();
  row.view = view;
  const attributes = Object.fromEntries(row.snippetAttributes(view));
  assert.equal(attributes.sentence, result.text);
  assert.equal(attributes.word, DEFAULT_WORD_TEXT);
  assert.equal(attributes.layer, String(view.layer + 1));
  assert.equal(attributes.head, String(view.head + 1));
  row.fillSnippets();
  assert.match(row.snippetEl.value, /<attention-row sentence="The animal[^"]*" word="it" layer="\d+" head="\d+"><\/attention-row>/);
  assert.match(row.frameSnippetEl.value, new RegExp(`height="${FIGURES.row.frameHeight}"`));
  assert.match(row.frameSnippetEl.value, /widget=row&/);
  row.remove();
  // The figures without export (prediction, contribution) keep their toolbar hidden.
  const prediction = place(FIGURES.prediction.tag);
  prediction.view = await exampleView();
  assert.equal(prediction.canExport(), false);
  assert.equal(prediction.toolsEl.hidden, true);
  prediction.remove();
});

test('the README lists every registered figure and every declared attribute', async () => {
  const { readFileSync } = await import('node:fs');
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const [key, figure] of Object.entries(FIGURES)) {
    assert.ok(readme.includes(`\`<${figure.tag}>\` (\`${key}\``), `README's element list lacks <${figure.tag}> (${key})`);
  }
  for (const name of Object.values(ATTRIBUTES)) {
    assert.match(readme, new RegExp(`^\\| \`${name}\`( |,)|^\\| \`[a-z-]+\`, \`${name}\` `, 'm'), `README's attribute table lacks ${name}`);
  }
});

test('weights and precisions are said at their size and in words', async () => {
  const { fmtWeight } = await import('../../web/widgets/format.js');
  const { precisionWords } = await import('../../web/widgets/data.js');
  assert.equal(fmtWeight(0.4), '0.400');
  assert.equal(fmtWeight(0.0002), 'less than 0.001');
  assert.equal(fmtWeight(0), '0.000');
  assert.equal(fmtWeight(0.99996), 'more than 0.999');
  // float32 rounds a softmax weight of 1 - 1e-9 to exactly 1; it is still not 1.
  assert.equal(fmtWeight(1), 'more than 0.999');
  assert.equal(fmtWeight(Math.fround(1 - 1e-9)), 'more than 0.999');
  // The short form, for a readout or a table cell.
  assert.equal(fmtWeight(0.0002, 3, { short: true }), '<0.001');
  assert.equal(fmtWeight(1, 3, { short: true }), '>0.999');
  assert.equal(fmtWeight(0.25, 3, { short: true }), '0.250');
  assert.equal(fmtWeight(0.00002, 4, { short: true }), '<0.0001');
  assert.equal(precisionWords('f32+rans'), '32-bit floats and weights rounded to a few levels and packed with an entropy coder (rANS)');
  assert.equal(precisionWords('f16+int8'), '16-bit floats and 8-bit integers with a scale per group');
  assert.equal(precisionWords('bf7'), 'bf7');
  assert.equal(precisionWords(''), 'unknown precision');
});

test('scrolling boxes take the focus and have a name; a redrawn slot gives the focus back to its counterpart', async () => {
  const { h, scrollBox } = await import('../../web/widgets/dom.js');
  const box = scrollBox('div.scroll', 'The pieces of your text', h('table'));
  assert.equal(box.getAttribute('tabindex'), '0');
  assert.equal(box.getAttribute('role'), 'region');
  assert.equal(box.getAttribute('aria-label'), 'The pieces of your text');
  const { replaceKeepingFocus } = await import('../../web/posts/common.js');
  const slot = h('div');
  document.body.append(slot);
  const form = () => h('form', {}, h('input', { id: 'sentence' }), h('a', { href: '#s=a+b&w=3', text: 'b' }));
  slot.replaceChildren(form());
  slot.querySelector('#sentence').focus();
  replaceKeepingFocus(slot, form());
  assert.equal(document.activeElement, slot.querySelector('#sentence'), 'the new sentence box has the focus');
  slot.querySelector('a').focus();
  replaceKeepingFocus(slot, form());
  assert.equal(document.activeElement, slot.querySelector('a'), 'the new link to the same word has the focus');
  // Focus elsewhere on the page stays where it is.
  const outside = h('button', { text: 'elsewhere' });
  document.body.append(outside);
  outside.focus();
  replaceKeepingFocus(slot, form());
  assert.equal(document.activeElement, outside);
  slot.remove();
  outside.remove();
});

test('every figure that waits for the model reserves its height by its column\u2019s width until it has drawn, and the README\u2019s lines are the published file\u2019s', async () => {
  const { readFileSync } = await import('node:fs');
  const { hostReserveCss, reserveHeight, compressReserve, RESERVE_STEP } = await import('../../web/widgets/registry.js');
  const { reservesCss } = await import('../../scripts/site/build_embed.mjs');
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const css = hostReserveCss();
  assert.ok(reservesCss().endsWith(css), 'dist/attention-reserves.css holds the registry\u2019s lines');
  // The README's excerpt: its lines are the file's, in the file's order.
  const block = readme.match(/```\n(:has\([^\n]*\n(?:[^`][^\n]*\n)*)```/)?.[1];
  assert.ok(block, 'the README shows the reserves\u2019 lines');
  const lines = css.split('\n');
  let at = -1;
  for (const line of block.trim().split('\n')) {
    const found = line.includes('...') ? lines.findIndex((l) => l.startsWith(line.slice(0, line.indexOf('...')))) : lines.indexOf(line);
    assert.ok(found > at, `README line not in the published reserves, or out of order: ${line}`);
    at = found;
  }
  assert.match(css, /^:has\(> attention-instrument, > attention-row, [^)]*> attention-pair\) \{ container-type: inline-size; \}\n/);
  for (const [key, f] of Object.entries(FIGURES)) {
    if (key === 'softmax') continue;
    // Rows by increasing width, each differing from the one before by more than the step.
    assert.ok(f.reserve.length >= 2, `${key}: a reserve of rows by width`);
    assert.deepEqual(compressReserve(f.reserve), f.reserve, `${key}: no row within ${RESERVE_STEP} of the one before`);
    for (let i = 1; i < f.reserve.length; ++i) assert.ok(f.reserve[i][0] > f.reserve[i - 1][0], `${key}: widths increase`);
    assert.equal(reserveHeight(f.reserve, 0), f.reserve[0][1]);
    assert.equal(reserveHeight(f.reserve, f.reserve[1][0] - 1), f.reserve[0][1]);
    assert.equal(reserveHeight(f.reserve, f.reserve[1][0]), f.reserve[1][1]);
    assert.equal(reserveHeight(f.reserve, 5000), f.reserve.at(-1)[1]);
    assert.ok(Number.isInteger(f.frameHeight) && f.frameHeight > 100, `${key}: a frame height`);
  }
  // A figure that waits for the model holds its reserve; once it has a result, it lets it go.
  const row = place(FIGURES.row.tag);
  assert.equal(row._reserving, true);
  const drawn = await exampleView();
  row.view = drawn;
  assert.equal(row._reserving, false);
  // Released (far from the viewport): no analysis, no drawing, its height kept; drawn again, its own.
  row.getBoundingClientRect = () => ({ width: 600, height: 945.5 });
  assert.equal(row.release(), true);
  assert.equal(row.view.result, null);
  assert.equal(row.view.released, true);
  assert.match(row._heldCss, /height: 945\.5px !important/);
  assert.equal(row.shadowRoot.querySelector('.rows-scroll'), null, 'the drawing is let go of');
  assert.equal(row.release(), false, 'nothing left to let go of');
  row.view = drawn;
  assert.equal(row._heldCss, '');
  assert.ok(row.shadowRoot.querySelector('.rows-scroll'), 'drawn again');
  row.remove();
  // A figure holding what the reader asked it to compute keeps it.
  const prediction = place(FIGURES.prediction.tag);
  prediction.view = await exampleView();
  assert.equal(prediction.release(), false);
  prediction.remove();
});

test('counts are grouped by thousands exactly as Intl (en-US) groups them, without calling it for integers', async () => {
  const { thousands } = await import('../../web/widgets/format.js');
  const samples = [0, 1, 9, 10, 999, 1000, 1001, 9999, 10000, 30522, 123456, 999999, 1000000, -1, -999, -1000, -1234567, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
  let seed = 12345;
  for (let i = 0; i < 2000; ++i) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    samples.push(Math.floor(seed / 2 ** (seed % 31)) * (i % 2 ? -1 : 1));
  }
  for (const n of samples) assert.equal(thousands(n), n.toLocaleString('en-US'), String(n));
  // Anything but a safe integer is the locale's own formatting.
  for (const x of [1.5, 1234.5678, NaN, Infinity, 2 ** 60]) assert.equal(thousands(x), x.toLocaleString('en-US'));
  const original = Number.prototype.toLocaleString;
  Number.prototype.toLocaleString = () => { throw new Error('toLocaleString was called'); };
  try {
    assert.equal(thousands(1234567), '1,234,567');
  } finally {
    Number.prototype.toLocaleString = original;
  }
});
