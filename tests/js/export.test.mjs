// The exported SVG's text (web/widgets/export.js svgText) in Node: every character XML 1.0
// forbids becomes U+FFFD, and everything XML allows is kept as it is. Node has no
// XMLSerializer; a stand-in returns the markup it is given, so this checks svgText's own step
// (tests/browser/embed.test.mjs exports a real figure and parses it in Chromium).
import assert from 'node:assert/strict';
import { test } from 'node:test';

globalThis.XMLSerializer = class {
  serializeToString(markup) {
    return markup;
  }
};
const { svgText } = await import('../../web/widgets/export.js');

const body = (markup) => svgText(markup).replace(/^<\?xml[^>]*>\n/, '').replace(/\n$/, '');

test('svgText replaces the characters XML 1.0 forbids with U+FFFD', () => {
  const forbidden = [];
  for (let c = 0; c < 0x20; ++c) if (c !== 0x09 && c !== 0x0a && c !== 0x0d) forbidden.push(String.fromCharCode(c));
  forbidden.push('\uFFFE', '\uFFFF', '\uD800', '\uDBFF', '\uDC00', '\uDFFF');
  for (const c of forbidden) {
    assert.equal(body(`<text>a${c}b</text>`), '<text>a\uFFFDb</text>', `U+${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }
  // A high surrogate at the very end, and two lone ones in a row, each count once.
  assert.equal(body('<text>x\uD83D</text>\uD83D'), '<text>x\uFFFD</text>\uFFFD');
  assert.equal(body('\uDE00\uD83D'), '\uFFFD\uFFFD');
});

test('svgText keeps everything XML 1.0 allows', () => {
  const allowed = '<text x="1">tab\there, lines\n\r, DEL \u007f, C1 \u0085, \u00e9\u6771\uFFFD \uD83D\uDE00 \uE000</text>';
  assert.equal(body(allowed), allowed);
  assert.match(svgText('<svg/>'), /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<svg\/>\n$/);
});
