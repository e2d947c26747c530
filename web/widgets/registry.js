// The one registry of figures: for each, its element name, the attributes it declares (each with
// a parser), the iframe form's height and whether it offers the embed and export toolbar. The
// figure's class joins its entry when its module runs define(key, class) (base.js). The
// embedding bundle, the iframe page (embed-frame.js), the snippets and the README's element list
// all read this table, so a figure that is not here cannot be embedded.
//
// A parser takes the attribute's value as written (a string; '' for a bare attribute) and returns
// { value } when it can be honoured, or { value: what is used instead, why, instead } when it
// cannot: the figure shows and warns "name="value" was not used: why; instead." (README).
// Attributes whose meaning needs the analysis (word, layer, head) or the page (the sources) are
// checked where that is known: data.js resolveAttributes and runtime/standalone.js (load).

import { DEFAULT_LENS, LENS_KEYS } from '../engine/lenses.js';

export const ATTRIBUTES = Object.freeze({
  sentence: 'sentence',
  word: 'word',
  layer: 'layer',
  head: 'head',
  hideSpecial: 'hide-special',
  modelSrc: 'model-src',
  manifestSrc: 'manifest-src',
  engineSrc: 'engine-src',
  theme: 'theme',       // light, dark or auto (the default: the host's color-scheme, else the reader's setting)
  heads: 'heads',       // <attention-compare>: its two heads as "layer.head layer.head", e.g. "2.1 4.3"
  scores: 'scores',     // <softmax-lab>: its five scores, e.g. "2 1 0.5 -0.5 -1.5"
  plan: 'plan',         // <attention-precision>: what the f32 reference is compared with, shipped or naive
  removed: 'removed',   // <attention-prediction>: heads to remove, "L.H" joined by commas, e.g. "2.3,4.1"
  sort: 'sort',         // <attention-contribution>: the table's order, attention, effect or head
  autoload: 'autoload', // <attention-prediction>, <attention-contribution>: start without waiting for the reader
  against: 'against',   // <attention-pair>: the second sentence, read against `sentence`
  lens: 'lens',         // <attention-row>, <attention-instrument>: the row's lens (web/engine/lenses.js), weight by default
});

export const SOURCE_ATTRIBUTES = Object.freeze([ATTRIBUTES.modelSrc, ATTRIBUTES.manifestSrc, ATTRIBUTES.engineSrc]);
// Attributes whose presence is the value (written bare: <attention-row hide-special>).
export const BARE_ATTRIBUTES = Object.freeze([ATTRIBUTES.hideSpecial, ATTRIBUTES.autoload]);

export const THEMES = Object.freeze(['auto', 'light', 'dark']);
export const PLANS = Object.freeze(['shipped', 'naive']);
export const SORTS = Object.freeze(['attention', 'effect', 'head']);
export const SCORE_COUNT = 5;
// "L.H" pairs counted from 1, as the engine's `removed` option takes them.
export const REMOVED_FORM = /^(\d{1,2}\.\d{1,2})(,\d{1,2}\.\d{1,2})*$/;

const oneOf = (choices, fallback) => (value) => (choices.includes(value)
  ? { value }
  : { value: fallback, why: `it is not one of ${choices.join(', ')}`, instead: `using ${fallback} instead` });
const anything = (value) => ({ value });

// Two heads "L.H L.H" (space or comma between), each as {layer, head} counted from 0, or null for
// "the default rule's choice".
export function parseHeadPair(value) {
  const parts = String(value ?? '').trim().split(/[\s,]+/).filter(Boolean);
  const pair = [0, 1].map((k) => {
    const m = /^(\d{1,2})\.(\d{1,2})$/.exec(parts[k] ?? '');
    return m && Number(m[1]) >= 1 && Number(m[2]) >= 1 ? { layer: Number(m[1]) - 1, head: Number(m[2]) - 1 } : null;
  });
  const fine = parts.length === 2 && pair.every(Boolean);
  return fine ? { value: pair } : { value: pair, why: 'it should be two heads as layer.head, counted from 1, e.g. "2.1 4.3"', instead: 'a panel whose head cannot be read shows the default rule\u2019s head' };
}

export function parseScores(value) {
  const parsed = String(value ?? '').split(/[\s,]+/).filter(Boolean).map(Number);
  if (parsed.length === SCORE_COUNT && parsed.every(Number.isFinite)) return { value: parsed };
  return { value: null, why: `it should be ${SCORE_COUNT} numbers, e.g. "2 1 0.5 -0.5 -1.5"`, instead: 'the scores shown stay as they are' };
}

export function parseRemoved(value) {
  const compact = String(value ?? '').replace(/\s+/g, '');
  if (compact === '' || REMOVED_FORM.test(compact)) return { value: compact };
  return { value: '', why: 'it should be heads as layer.head counted from 1, joined by commas, e.g. "2.3,4.1"', instead: 'no head is removed' };
}

const PARSERS = Object.freeze({
  [ATTRIBUTES.theme]: oneOf(THEMES, 'auto'),
  [ATTRIBUTES.lens]: oneOf(LENS_KEYS, DEFAULT_LENS),
  [ATTRIBUTES.heads]: parseHeadPair,
  [ATTRIBUTES.scores]: parseScores,
  [ATTRIBUTES.plan]: oneOf(PLANS, 'shipped'),
  [ATTRIBUTES.removed]: parseRemoved,
  [ATTRIBUTES.sort]: oneOf(SORTS, 'attention'),
});

// An attribute's value through its parser: { value, note } with note null when it is honoured.
export function parseAttribute(name, raw) {
  const parsed = (PARSERS[name] ?? anything)(raw);
  const note = parsed.why ? `${name}=\u201c${raw}\u201d was not used: ${parsed.why}; ${parsed.instead}.` : null;
  return { value: parsed.value, note };
}

// What every figure that draws the model's attention takes.
const MODEL_FIGURE = Object.freeze([ATTRIBUTES.sentence, ATTRIBUTES.word, ATTRIBUTES.layer, ATTRIBUTES.head, ATTRIBUTES.hideSpecial,
  ATTRIBUTES.modelSrc, ATTRIBUTES.manifestSrc, ATTRIBUTES.engineSrc, ATTRIBUTES.theme]);

const entry = (tag, attributes, frameHeight, reserve, exportable = true) => Object.freeze({
  tag, attributes: Object.freeze(attributes), frameHeight, reserve: reserve && Object.freeze(reserve), exportable,
});

// A figure's reserve: the height (CSS pixels) it keeps until it has something to draw, about what
// its live form takes for a sentence of ten to fifteen words, `narrow` below RESERVE_WIDE_FROM px
// of viewport and `wide` from there, so that the page under it does not move when it goes live.
// Measured with the default model's opening sentence; a longer sentence takes more.
export const RESERVE_WIDE_FROM = 700;
// As CSS for a selector: `:host` (the figure's own sheet), or the tag (the host page's lines for
// the time before the bundle has run, when the element is an unknown one, inline, on which a
// min-height does nothing: hence display: block).
export function reserveCss(reserve, selector = ':host') {
  if (!reserve) return '';
  return `${selector} { display: block; min-height: ${reserve.narrow}px; }\n@media (min-width: ${RESERVE_WIDE_FROM}px) { ${selector} { min-height: ${reserve.wide}px; } }\n`;
}

// Every figure, by the short name that embed.html's `widget` parameter takes.
// The heights (frameHeight for the iframe form; reserve for the element) were measured with the
// default model's opening sentence in a column 696 px wide (wide) and 366 px wide (narrow), the
// prediction, contribution and precision figures before the reader presses their buttons.
export const FIGURES = Object.freeze({
  instrument: entry('attention-instrument', [...MODEL_FIGURE, ATTRIBUTES.lens], 1280, { wide: 1260, narrow: 2110 }),
  row: entry('attention-row', [...MODEL_FIGURE, ATTRIBUTES.lens], 670, { wide: 650, narrow: 810 }),
  mechanism: entry('attention-mechanism', MODEL_FIGURE, 1830, { wide: 1810, narrow: 2300 }),
  softmax: entry('softmax-lab', [ATTRIBUTES.scores, ATTRIBUTES.theme], 360, null),
  compare: entry('attention-compare', [...MODEL_FIGURE, ATTRIBUTES.heads], 1540, { wide: 1520, narrow: 1650 }),
  heads: entry('attention-heads', MODEL_FIGURE, 860, { wide: 850, narrow: 1630 }),
  precision: entry('attention-precision', [...MODEL_FIGURE, ATTRIBUTES.plan], 210, { wide: 190, narrow: 320 }),
  prediction: entry('attention-prediction', [...MODEL_FIGURE, ATTRIBUTES.removed, ATTRIBUTES.autoload], 260, { wide: 240, narrow: 410 }, false),
  contribution: entry('attention-contribution', [...MODEL_FIGURE, ATTRIBUTES.sort, ATTRIBUTES.autoload], 310, { wide: 290, narrow: 490 }, false),
  map: entry('attention-map', MODEL_FIGURE, 500, { wide: 470, narrow: 815 }, false),
  pair: entry('attention-pair', [...MODEL_FIGURE, ATTRIBUTES.against], 1000, { wide: 940, narrow: 1930 }, false),
});

export const TAGS = Object.freeze(Object.fromEntries(Object.entries(FIGURES).map(([key, f]) => [key, f.tag])));

// Attributes every HTML element may carry, which a figure leaves to the browser.
const GLOBAL_ATTRIBUTES = new Set(['id', 'class', 'style', 'title', 'lang', 'dir', 'hidden', 'slot', 'part', 'role', 'tabindex',
  'translate', 'inert', 'is', 'nonce', 'popover', 'exportparts', 'accesskey', 'autofocus', 'draggable', 'spellcheck', 'contenteditable']);

function distance(a, b) {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; ++i) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; ++j) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

// The note for an attribute the figure does not declare (a misspelling such as `sentense`), or
// null for one it declares or leaves to the browser (global, data-*, aria-*, on*).
export function unknownAttributeNote(key, name) {
  const figure = FIGURES[key];
  if (!figure || figure.attributes.includes(name) || GLOBAL_ATTRIBUTES.has(name) || /^(data-|aria-|on)/.test(name)) return null;
  const nearest = figure.attributes.reduce((best, known) => {
    const d = distance(name, known);
    return d < best.d ? { known, d } : best;
  }, { known: null, d: Infinity });
  const guess = nearest.d <= 2 ? ` Did you mean ${nearest.known}?` : '';
  return `<${figure.tag}> has no attribute \u201c${name}\u201d; it was ignored.${guess} Its attributes: ${figure.attributes.join(', ')}.`;
}

// The warning for an element named like a figure that is none (a misspelling such as
// <attention-rwo>), with the nearest figure's tag; null for a figure's own tag or any other
// element.
export function unknownElementNote(tag) {
  const name = String(tag).toLowerCase();
  const tags = Object.values(TAGS);
  if (tags.includes(name) || !/^(attention|softmax)-/.test(name)) return null;
  const nearest = tags.reduce((best, known) => {
    const d = distance(name, known);
    return d < best.d ? { known, d } : best;
  }, { known: null, d: Infinity });
  const guess = nearest.d <= 3 ? ` Did you mean <${nearest.known}>?` : '';
  return `<${name}> is not one of the attention explainer\u2019s figures, so it shows nothing.${guess} The figures: ${tags.map((t) => `<${t}>`).join(', ')}.`;
}
