// The static-site generators' integrations (integrations/) are templates, which cannot import the
// registry of figures (web/widgets/registry.js): each holds its own copy of the figure names,
// their tags and the attributes. This test holds those copies to the registry, so that a figure
// or attribute added there fails here until the templates know it. (The templates at work, on
// real Hugo, Jekyll and MkDocs builds: tests/browser/generators.test.mjs.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { ATTRIBUTES, BARE_ATTRIBUTES, FIGURES } from '../../web/widgets/registry.js';

const read = (path) => readFileSync(new URL(`../../integrations/${path}`, import.meta.url), 'utf8');
const figureTags = Object.fromEntries(Object.entries(FIGURES).map(([key, f]) => [key, f.tag]));
const attributeNames = [...new Set(Object.values(ATTRIBUTES))].sort();

test('the Hugo shortcode knows every figure by its tag, and every attribute (with id and class), bare ones as bare', () => {
  const text = read('hugo/layouts/shortcodes/attention.html');
  const dict = /\$tags := dict ((?:"[^"]+" "[^"]+" ?)+)/.exec(text)?.[1];
  assert.ok(dict, 'no $tags dict in the shortcode');
  const words = [...dict.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  const tags = Object.fromEntries(words.flatMap((w, k) => (k % 2 === 0 ? [[w, words[k + 1]]] : [])));
  assert.deepEqual(tags, figureTags);
  const names = [...(/\$names := slice ((?:"[^"]+" ?)+)/.exec(text)?.[1] ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]).sort();
  // The figures' attributes, and the element's own id and class (attention-change.js finds a
  // figure by its id).
  assert.deepEqual(names, [...attributeNames, 'class', 'id'].sort());
  const bare = [...(/\$bare := slice ((?:"[^"]+" ?)+)/.exec(text)?.[1] ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]).sort();
  assert.deepEqual(bare, [...BARE_ATTRIBUTES].sort());
  for (const key of Object.keys(FIGURES)) assert.ok(text.includes(key), `the shortcode's help does not name ${key}`);
});

test('the Jekyll include knows every figure by its tag, passes every parameter on (bare ones as bare) and says when a figure is unknown', () => {
  const text = read('jekyll/_includes/attention.html');
  const tags = Object.fromEntries([...text.matchAll(/when "([a-z]+)" -%}{%- assign attention_tag = "([a-z-]+)"/g)].map((m) => [m[1], m[2]]));
  tags.row = /else -%}{%- assign attention_tag = "([a-z-]+)"/.exec(text)?.[1];
  assert.deepEqual(tags, figureTags);
  const list = (name) => (new RegExp(`assign ${name} = "([^"]+)" \\| split`).exec(text)?.[1] ?? '').split(',').sort();
  assert.deepEqual(list('attention_bare'), [...BARE_ATTRIBUTES].sort());
  assert.match(text, /{%- for pair in include -%}/, 'every parameter goes on the element (a misspelt one gets the figure\u2019s own note)');
  assert.match(text, /<!-- attention\.html: there is no figure/, 'an unknown figure leaves a comment');
});

test('the MkDocs override loads the bundle as a module from the configured site', () => {
  const text = read('mkdocs/overrides/main.html');
  assert.match(text, /{% extends "base.html" %}/);
  assert.match(text, /<script type="module" src="{{ config\.extra\.attention_widgets[^}]*}}dist\/attention-widgets\.js"><\/script>/);
});

test('the README\u2019s event listener and the file a host under a strict policy copies are the same lines', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const inline = /<script>\n([\s\S]*?)<\/script>/.exec(readme.slice(readme.indexOf('**Events and properties.**')))?.[1];
  assert.ok(inline, 'the README has no listener snippet');
  const file = read('attention-change.js').split('\n').filter((line) => !line.startsWith('//')).join('\n');
  const dedent = (text) => text.split('\n').map((line) => line.replace(/^ {2}/, '')).join('\n').trim();
  assert.equal(dedent(inline), file.trim());
});

test('a misspelt figure element is named with the nearest figure; figures and other elements are not', async () => {
  const { unknownElementNote } = await import('../../web/widgets/registry.js');
  assert.match(unknownElementNote('attention-rwo'), /<attention-rwo> is not one of the attention explainer.s figures.*Did you mean <attention-row>\?/);
  assert.match(unknownElementNote('softmax-lbs'), /Did you mean <softmax-lab>\?/);
  for (const tag of Object.values(figureTags)) assert.equal(unknownElementNote(tag), null, tag);
  assert.equal(unknownElementNote('my-widget'), null);
});

test('the Hugo frame shortcode knows every figure with the registry\u2019s frame height, and every attribute', () => {
  const text = read('hugo/layouts/shortcodes/attention-frame.html');
  const dict = /\$heights := dict ((?:"[^"]+" \d+ ?)+)/.exec(text)?.[1];
  assert.ok(dict, 'no $heights dict in the frame shortcode');
  const heights = Object.fromEntries([...dict.matchAll(/"([^"]+)" (\d+)/g)].map((m) => [m[1], Number(m[2])]));
  assert.deepEqual(heights, Object.fromEntries(Object.entries(FIGURES).map(([key, f]) => [key, f.frameHeight])));
  const names = [...(/\$names := slice ((?:"[^"]+" ?)+)/.exec(text)?.[1] ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]).sort();
  assert.deepEqual(names, attributeNames);
});
