// The article defines a term before it uses it. Each term a newcomer needs is marked where it is
// defined (<dfn>, or <dfn data-term="..."> where the words differ); in the article's text, read
// in document order with its figure captions, no occurrence of the term may come before that
// definition unless it is inside a link to the place that defines it (a forward reference the
// reader can follow). Run on web/index.html as written (the numbers the page fills in are
// placeholders there, which use no term).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { closeWindow, window } from './dom_shim.mjs';

// What a reader of the first figure meets and the article must define (the review behind
// issue 25 found each of these used before it was explained).
// The head labels' short names are ordinary words (next, self, broad), so they are checked
// apart: each is defined, in italics, in the paragraph that defines head labels, which every
// earlier mention links to.
const REQUIRED = ['attention row', '[CLS]', '[SEP]', '[UNK]', 'WordPiece', 'query', 'key', 'value', 'softmax', 'entropy', 'nats',
  'ratio to uniform', 'head labels', 'positional', 'content heads', 'residual path', 'attention rollout', 'compact copy'];

const parse = (markup) => new window.DOMParser().parseFromString(markup, 'text/html');

// A page's definitions and the uses of each defined term before its definition that are not
// inside a link to it: { definitions: Map(lower term -> {term, dfn}), early: [description] }.
export function readTerms(doc) {
  const main = doc.querySelector('main') ?? doc.body;
  // The text of `main` in document order, with the text node each character came from.
  const nodes = [];
  let text = '';
  const walker = doc.createTreeWalker(main, 4 /* NodeFilter.SHOW_TEXT */);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    nodes.push({ node, start: text.length });
    text += node.nodeValue;
  }
  const lower = text.toLowerCase();
  const nodeAt = (offset) => {
    let found = nodes[0];
    for (const entry of nodes) {
      if (entry.start > offset) break;
      found = entry;
    }
    return found.node;
  };
  const offsetOf = (element) => {
    const first = doc.createTreeWalker(element, 4).nextNode();
    return nodes.find((entry) => entry.node === first)?.start ?? -1;
  };
  // Occurrences of `term` as a whole word (letters on neither side; a plural "s" is the same
  // term: "keys" counts for "key", "monkey" does not).
  const occurrences = (term) => {
    const out = [];
    const needle = term.toLowerCase();
    for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, at + 1)) {
      const before = lower[at - 1] ?? ' ';
      const after = lower.slice(at + needle.length, at + needle.length + 2);
      if (/\p{L}/u.test(before)) continue;
      if (/^\p{L}/u.test(after) && !/^s(\P{L}|$)/u.test(after)) continue;
      out.push(at);
    }
    return out;
  };
  // Whether the text node sits inside a link to an element that holds the definition, or in the
  // heading of the section that defines it (a section named for its term).
  const forwardReference = (node, dfn) => {
    const heading = node.parentElement?.closest('h1, h2, h3, h4, h5, h6');
    if (heading?.parentElement?.contains(dfn)) return true;
    for (let el = node.parentElement; el; el = el.parentElement) {
      const href = el.tagName === 'A' ? el.getAttribute('href') : null;
      if (href?.startsWith('#')) {
        const target = doc.getElementById(href.slice(1));
        if (target && (target === dfn || target.contains(dfn))) return true;
      }
    }
    return false;
  };
  const definitions = new Map();
  for (const dfn of main.querySelectorAll('dfn')) {
    const term = (dfn.dataset.term ?? dfn.textContent).trim();
    if (!definitions.has(term.toLowerCase())) definitions.set(term.toLowerCase(), { term, dfn, at: offsetOf(dfn) });
  }
  const early = [];
  for (const { term, dfn, at } of definitions.values()) {
    for (const position of occurrences(term)) {
      if (position >= at) break;
      if (forwardReference(nodeAt(position), dfn)) continue;
      early.push(`"${term}" at \u2026${text.slice(Math.max(0, position - 50), position + term.length + 30).replace(/\s+/g, ' ')}\u2026`);
    }
  }
  return { definitions, early, doc };
}

const article = readTerms(parse(readFileSync(new URL('../../web/index.html', import.meta.url), 'utf8')));

test('every term a newcomer needs is defined in the article', () => {
  const missing = REQUIRED.filter((term) => !article.definitions.has(term.toLowerCase()));
  assert.deepEqual(missing, [], `no <dfn> for: ${missing.join(', ')}`);
});

test('no term is used before its definition, except through a link to it', () => {
  assert.deepEqual(article.early, [], `terms used before they are defined:\n${article.early.join('\n')}`);
});

test('every head label is defined where head labels are, and the first mention of them links there', async () => {
  const { SHORT_LABELS } = await import('../../web/widgets/data.js');
  const labels = article.definitions.get('head labels').dfn.closest('p');
  const italic = [...labels.querySelectorAll('i')].map((i) => i.textContent);
  for (const label of Object.values(SHORT_LABELS)) assert.ok(italic.includes(label), `#${labels.id} does not define ${label}`);
  const earlier = [...article.doc.querySelectorAll('main p')].filter((p) => p !== labels && labels.compareDocumentPosition(p) & 2 /* PRECEDING */
    && Object.values(SHORT_LABELS).every((label) => [...p.querySelectorAll('i')].some((i) => i.textContent === label)));
  for (const p of earlier) assert.ok(p.querySelector(`a[href="#${labels.id}"]`), `a paragraph lists the labels before #${labels.id} without a link to it`);
  // Each label's definition has its own anchor, and Figure 1's legend links each label to it.
  const legend = article.doc.getElementById('legend');
  for (const label of Object.values(SHORT_LABELS)) {
    const anchor = labels.querySelector(`i#label-${label}`);
    assert.ok(anchor && anchor.textContent === label, `#${labels.id} has no anchor #label-${label} on its definition`);
    const link = legend.querySelector(`a[href="#label-${label}"]`);
    assert.ok(link && link.textContent === label, `the legend under Figure 1 does not link ${label} to its definition`);
  }
});

test('the check finds a term used too early, and lets a link to its definition pass', () => {
  const page = readTerms(parse('<main><p>Use rollout now. See <a href="#d">rollout</a>. Keys and monkeys.</p>'
    + '<p id="d"><dfn>Rollout</dfn> and the <dfn>key</dfn> are defined here; rollout again.</p></main>'));
  assert.equal(page.early.length, 2, page.early.join('\n'));
  assert.match(page.early[0], /"Rollout" at \u2026Use rollout now/);
  assert.match(page.early[1], /"key" at \u2026.*Keys and monkeys/);
});

test.after(closeWindow);
