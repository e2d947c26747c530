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
// its live form takes for a sentence of ten to fifteen words, so that the page under it does not
// move when it goes live. A figure's height follows the width of its column, not the viewport's
// (its layouts switch on its own width, by container queries), so a reserve is a list of rows
// [from, height]: from a column `from` px wide on, until the next row's, the figure takes
// `height` px. Measured by scripts/site/measure_reserves.mjs (the median of three sentences at
// every 20 px from 300 to 980); a longer sentence takes more.
// A row is kept where its height differs from the last kept one by more than RESERVE_STEP of it.
export const RESERVE_STEP = 0.03;
export function compressReserve(rows) {
  const kept = [];
  for (const [from, height] of rows) {
    const last = kept[kept.length - 1];
    if (!last || Math.abs(height - last[1]) > RESERVE_STEP * last[1]) kept.push([from, height]);
  }
  return kept;
}

// The reserve's height in a column `width` px wide (the first row's below its `from`).
export function reserveHeight(reserve, width) {
  let height = reserve[0][1];
  for (const [from, h] of reserve) if (width >= from) height = h;
  return height;
}

// The lines a host page's stylesheet gives the figures it uses, for the time before the bundle
// has run (an unknown element is inline, and has no height at all): each figure's parent is
// made a container for its width (the query container the rows' @container rules read; the
// figure takes that width), and each figure its reserve. Browsers without :has() or container
// queries keep the first row's height, a phone's.
export function hostReserveCss(figures = Object.values(FIGURES)) {
  const reserved = figures.filter((f) => f.reserve);
  const lines = [`:has(${reserved.map((f) => `> ${f.tag}`).join(', ')}) { container-type: inline-size; }`];
  for (const f of reserved) {
    lines.push(`${f.tag} { display: block; min-height: ${f.reserve[0][1]}px; }`);
    for (const [from, height] of f.reserve.slice(1)) lines.push(`@container (min-width: ${from}px) { ${f.tag} { min-height: ${height}px; } }`);
  }
  return `${lines.join('\n')}\n`;
}

// Every figure, by the short name that embed.html's `widget` parameter takes.
// frameHeight (the iframe form's height) was measured with the default model's opening sentence
// in a column 696 px wide; the reserves by scripts/site/measure_reserves.mjs (above). The
// prediction, contribution and precision figures are measured before the reader presses their
// buttons.
export const FIGURES = Object.freeze({
  instrument: entry('attention-instrument', [...MODEL_FIGURE, ATTRIBUTES.lens], 1280, [[300, 2739], [340, 2537], [480, 2455], [640, 1461], [700, 1374], [720, 1305], [780, 1251], [860, 1190], [960, 1298], [980, 1248]]),
  row: entry('attention-row', [...MODEL_FIGURE, ATTRIBUTES.lens], 670, [[300, 1364], [320, 1310], [340, 1231], [400, 1175], [440, 1093], [540, 1041], [600, 945], [760, 894]]),
  mechanism: entry('attention-mechanism', MODEL_FIGURE, 1830, [[300, 2513], [320, 2436], [360, 2318], [400, 2238], [420, 2161], [500, 1987], [600, 1870], [740, 1794], [860, 1736]]),
  softmax: entry('softmax-lab', [ATTRIBUTES.scores, ATTRIBUTES.theme], 360, null),
  compare: entry('attention-compare', [...MODEL_FIGURE, ATTRIBUTES.heads], 1540, [[300, 1703], [340, 1646], [420, 1590], [600, 1538], [780, 649], [920, 609]]),
  heads: entry('attention-heads', MODEL_FIGURE, 860, [[300, 1735], [360, 1795], [420, 1872], [480, 1930], [520, 1994], [540, 1010], [560, 948], [780, 981], [960, 1015]]),
  precision: entry('attention-precision', [...MODEL_FIGURE, ATTRIBUTES.plan], 210, [[300, 360], [340, 319], [380, 298], [400, 279], [480, 263], [520, 245], [600, 226], [640, 204], [720, 186], [920, 164]]),
  prediction: entry('attention-prediction', [...MODEL_FIGURE, ATTRIBUTES.removed, ATTRIBUTES.autoload], 260, [[300, 446], [320, 424], [340, 405], [400, 365], [440, 333], [500, 317], [520, 298], [540, 277], [600, 258], [720, 239], [760, 207], [980, 186]], false),
  contribution: entry('attention-contribution', [...MODEL_FIGURE, ATTRIBUTES.sort, ATTRIBUTES.autoload], 310, [[300, 533], [340, 493], [400, 474], [440, 442], [460, 420], [500, 405], [520, 350], [600, 310], [720, 291], [760, 259]], false),
  map: entry('attention-map', MODEL_FIGURE, 500, [[300, 950], [320, 892], [360, 843], [400, 805], [540, 774], [600, 542], [640, 513], [700, 497], [720, 478], [880, 405], [940, 377]], false),
  pair: entry('attention-pair', [...MODEL_FIGURE, ATTRIBUTES.against], 1000, [[300, 2100], [380, 2025], [440, 1901], [520, 1815], [680, 977], [740, 939], [760, 907], [940, 857]], false),
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
