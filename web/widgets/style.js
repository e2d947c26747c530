// The styles every widget's shadow root starts with. Colours are custom properties with an
// --attn- prefix so that a host page may restyle a widget; the defaults follow the widget's
// theme (its `theme` attribute, else the host's color-scheme, else the reader's light or dark
// setting; base.js decides). Widgets size themselves to their container (container queries).

// Every custom property a host may set, in one place: the README's table is checked against
// this list (tests/browser/embed_author.test.mjs). Colours have a light and a dark value; the
// widget uses one set or the other by its `theme` (themeCss below); the rest are sizes.
export const THEME_PROPERTIES = Object.freeze([
  { name: '--attn-fg', light: '#1b1b1f', dark: '#e9e9ef', use: 'text' },
  { name: '--attn-muted', light: '#55555f', dark: '#a9a9b6', use: 'secondary text (captions, status line, legends)' },
  { name: '--attn-bg', light: '#ffffff', dark: '#16161b', use: 'background of an embedded figure and of its scrolling lists' },
  { name: '--attn-panel', light: '#f4f4f6', dark: '#202027', use: 'buttons, the status line, token chips' },
  { name: '--attn-line', light: '#d5d5dc', dark: '#3b3b46', use: 'borders and rules' },
  { name: '--attn-bar', light: '#2b5cad', dark: '#7fa6f5', use: 'attention bars, the selection, primary buttons' },
  { name: '--attn-bar-soft', light: '#9db6e0', dark: '#3b5587', use: 'secondary bars (the other side of a comparison)' },
  { name: '--attn-track', light: '#e8e8ee', dark: '#2a2a33', use: 'the faint track behind a bar, its full length the weight 1' },
  { name: '--attn-uniform', light: '#b3540a', dark: '#ffa552', use: 'the dashed uniform line 1/n' },
  { name: '--attn-bar-down', light: '#c0392b', dark: '#ff8a80', use: 'bars of a decrease (a head whose removal lowers the masked word\u2019s probability)' },
  { name: '--attn-focus', light: '#1a66d6', dark: '#8ab4ff', use: 'the keyboard focus ring' },
  { name: '--attn-error', light: '#b3261e', dark: '#ffb4ab', use: 'error text and notes about attributes' },
  { name: '--attn-error-bg', light: '#fdecea', dark: '#3a1d1b', use: 'error background' },
  { name: '--attn-scroll-shadow', light: 'rgb(0 0 0 / 0.28)', dark: 'rgb(0 0 0 / 0.7)', use: 'the shadow at the edge of a list that scrolls' },
  { name: '--attn-font-size', size: '15px', use: 'the type size (everything scales with it)' },
  { name: '--attn-rows-height', size: 'min(30em, 65vh)', use: 'the largest height of a row chart or table before it scrolls (unset, the step-by-step table of the mechanism, whose rows are taller, takes min(36em, 80vh))' },
  { name: '--attn-tokens-height', size: 'min(12em, 40vh)', use: 'the largest height of a list of tokens before it scrolls' },
]);

// The colours of one theme ('light' or 'dark') as a :host rule, with the matching color-scheme
// (so form controls and scrollbars follow). A host's own declarations on the element win over
// these (outer styles beat :host rules), so `attention-row { --attn-bg: ... }` restyles it.
export function themeCss(theme) {
  const colours = THEME_PROPERTIES.filter((p) => p[theme]).map((p) => `  ${p.name}: ${p[theme]};`).join('\n');
  return `:host {\n${colours}\n  color-scheme: ${theme};\n}\n`;
}

export const BASE_CSS = `
:host { min-width: 0; }
/* A host page's global rules reach a widget through its element and what that element passes
   down by inheritance. Important declarations of a shadow tree win over the page's, even over
   its important ones, so these keep the widget's layout and type whatever the host sets; a host
   restyles a widget through the --attn- properties instead. */
:host {
  display: block !important;
  box-sizing: border-box !important;
  container-type: inline-size !important;
  color: var(--attn-fg) !important;
  font: var(--attn-font-size, 15px)/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif !important;
  font-variant-numeric: tabular-nums !important;
  text-align: start !important;
  text-transform: none !important;
  text-indent: 0 !important;
  text-shadow: none !important;
  letter-spacing: normal !important;
  word-spacing: normal !important;
  white-space: normal !important;
  word-break: normal !important;
  overflow-wrap: normal !important;
  writing-mode: horizontal-tb !important;
  border-collapse: separate !important;
  cursor: auto !important;
  visibility: visible !important;
  -webkit-text-fill-color: currentColor !important;
}
:host([hidden]) { display: none !important; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
.tools { margin-top: 0.6em; font-size: 0.82em; color: var(--attn-muted); }
.tool-buttons { display: flex; flex-wrap: wrap; gap: 0.35em; align-items: center; }
.tool-buttons button { min-height: 1.9em; padding: 0.1em 0.6em; }
.embed-panel p { margin: 0.5em 0 0.2em; }
.snippet {
  display: block; width: 100%; resize: vertical; font: 0.95em/1.4 ui-monospace, "SF Mono", Menlo, Consolas, monospace;
  padding: 0.4em; border: 1px solid var(--attn-line); border-radius: 6px; background: var(--attn-bg); color: var(--attn-fg);
  margin-bottom: 0.3em;
}
button, input, select { font: inherit; color: inherit; }
select { background: var(--attn-bg); border: 1px solid var(--attn-line); border-radius: 6px; }
button {
  cursor: pointer;
  border: 1px solid var(--attn-line);
  background: var(--attn-panel);
  border-radius: 6px;
  padding: 0.25em 0.7em;
  min-height: 2.1em;
}
button:hover { border-color: var(--attn-muted); }
:focus-visible { outline: 3px solid var(--attn-focus); outline-offset: 2px; }
.primary { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); font-weight: 600; }
.status {
  display: flex; flex-wrap: wrap; align-items: center; gap: 0.3em 0.8em;
  min-height: 2.6em; padding: 0.3em 0.6em; margin-bottom: 0.6em;
  border-radius: 6px; background: var(--attn-panel); color: var(--attn-muted); font-size: 0.86em;
}
.status .badge {
  font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em; font-size: max(12px, 0.85em);
  padding: 0.05em 0.45em; border-radius: 4px; border: 1px solid currentColor;
}
.status[data-mode="live"] .badge { color: var(--attn-bar); }
.status[data-mode="error"] { background: var(--attn-error-bg); color: var(--attn-error); }
.status .message { flex: 1 1 16em; min-width: 0; overflow-wrap: anywhere; display: grid; }
.status .message > span { grid-area: 1 / 1; align-self: center; }
/* Only the current message takes space (a hidden longer one no longer leaves blank lines). */
.status .message > .inactive { display: none; }
.notes { margin: -0.3em 0 0.6em; padding: 0.3em 0.6em; border-left: 3px solid var(--attn-error); font-size: 0.86em; color: var(--attn-fg); }
.notes p { margin: 0.1em 0; }
.placeholder {
  display: grid; place-items: center; text-align: center; min-height: 12em; padding: 1em;
  border: 1px dashed var(--attn-line); border-radius: 8px; color: var(--attn-muted);
}
.muted { color: var(--attn-muted); }
.small { font-size: 0.86em; }
.mono { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; }
.visually-hidden {
  position: absolute !important; left: 0; top: 0; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap;
}
details.data { margin-top: 0.6em; font-size: 0.86em; }
details.data summary { cursor: pointer; color: var(--attn-muted); }
.table-scroll { overflow-x: auto; max-width: 100%; position: relative; }
table.values { border-collapse: collapse; margin-top: 0.4em; }
table.values th, table.values td { padding: 0.15em 0.6em; border-bottom: 1px solid var(--attn-line); text-align: right; white-space: nowrap; }
table.values th:first-child, table.values td:first-child { text-align: left; }
.special { font-style: italic; color: var(--attn-muted); }

/* Long sentences scroll inside their figure instead of stretching the page: a chart of one
   row, a list of tokens and a table of every token are bounded in height (--attn-rows-height
   sets the bound) and scroll on their own; the selected token is kept in view. */
.rows-scroll, .tokens-scroll, .table-scroll.bounded {
  max-height: var(--attn-rows-height, min(30em, 65vh)); overflow-y: auto; overflow-x: hidden;
  scrollbar-gutter: stable; position: relative;
}
/* A shadow at the edge where there is more to scroll (the local backgrounds cover it at the
   ends), so that a bounded list shows that it holds more than it shows. */
.rows-scroll, .tokens-scroll, .table-scroll.bounded {
  background:
    linear-gradient(var(--attn-bg) 40%, transparent) top / 100% 1.2em no-repeat local,
    linear-gradient(transparent, var(--attn-bg) 60%) bottom / 100% 1.2em no-repeat local,
    radial-gradient(farthest-side at 50% 0, var(--attn-scroll-shadow), transparent) top / 100% 0.5em no-repeat scroll,
    radial-gradient(farthest-side at 50% 100%, var(--attn-scroll-shadow), transparent) bottom / 100% 0.5em no-repeat scroll;
}
/* The mechanism's step-by-step table has taller rows than a chart: its bound holds a sentence of
   about twenty tokens before it scrolls. */
.table-scroll.bounded { overflow-x: auto; max-height: var(--attn-rows-height, min(36em, 80vh)); }
.tokens-scroll { max-height: var(--attn-tokens-height, min(12em, 40vh)); padding: 2px; }
.table-scroll.bounded thead th { position: sticky; top: 0; background: var(--attn-bg); z-index: 1; }
/* A table wider than its box says so in a line above it, which stays in view while the table
   scrolls sideways, and the edge past which its columns go on fades (data-overflow, data-more:
   dom.js watchOverflow). The line is decoration (alternative text ""): a screen reader reads the
   table. */
.table-scroll[data-overflow~="x"]::before {
  content: "Scroll sideways for every column \\2192" / ""; display: block; position: sticky; left: 0; width: max-content; max-width: 100%;
  font-size: 0.82em; font-weight: 650; color: var(--attn-bar); padding-bottom: 0.3em;
}
.table-scroll[data-more~="right"] { mask-image: linear-gradient(to left, transparent, #000 2.5em); }
/* A table wider than its box keeps its row names in view while it scrolls sideways. */
.table-scroll tbody th[scope="row"], .table-scroll thead tr:first-child th:first-child { position: sticky; left: 0; background: var(--attn-bg); z-index: 1; }
.table-scroll.bounded thead tr:first-child th:first-child { z-index: 2; }
/* Above the rows' sticky names (z-index 1), which would otherwise paint over the sum's label. */
.table-scroll.bounded tfoot th, .table-scroll.bounded tfoot td { position: sticky; bottom: 0; background: var(--attn-bg); z-index: 2; }
/* The sticky header and footer cover the box's own edge shadows: where rows go on past them,
   they cast the shadow themselves (data-more, dom.js watchOverflow). */
.table-scroll.bounded[data-more~="down"] tfoot > tr > * { box-shadow: 0 -0.5em 0.5em -0.3em var(--attn-scroll-shadow); }
.table-scroll.bounded[data-more~="up"] thead > tr > * { box-shadow: 0 0.5em 0.5em -0.3em var(--attn-scroll-shadow); }

/* The labelled bar chart of one attention row; it is a table, so it reads as one (its roles are
   written out, bars.js, as it is not laid out as a table). Each token's row is a flex row of its
   own: a row lays out alone, and a row out of sight (content-visibility: auto, at its height) is
   neither laid out nor painted until it comes near, while screen readers and find-in-page still
   read it. A table lays out all its rows together: on a phone a long sentence's 136 rows took
   most of the frame that draws them (bench_interaction.mjs --phone). */
table.bars, table.bars > tbody { display: block; }
table.bars { width: 100%; max-width: 40em; }
table.bars caption, .chart-caption { text-align: left; font-size: 0.86em; color: var(--attn-muted); padding-bottom: 0.3em; caption-side: top; }
.chart { max-width: 40em; }
/* A row is its value's box (1.5em) and the value cell's 1px above and below: the height it is
   given while skipped, so that nothing moves when it is drawn. */
table.bars > tbody > tr { display: flex; align-items: center; content-visibility: auto; contain-intrinsic-size: auto calc(1.5em + 2px); }
table.bars > tbody > tr[hidden] { display: none; }
/* Every row's label column is --label wide (.rows-frame below), so that every bar starts where
   the uniform line's track does (min-width 0: a flex item would otherwise grow to a long word
   and move its row's bar). */
table.bars th { flex: 0 0 var(--label); min-width: 0; box-sizing: border-box; text-align: right; font-weight: 400; padding: 0 0.5em 0 0; }
table.bars td.track { flex: 1 1 0; min-width: 0; position: relative; padding: 0; height: 1.5em; }
table.bars td.value { flex: 0 0 var(--value); box-sizing: border-box; text-align: right; padding: 1px 0 1px 0.4em; }
/* A value sits in a box of fixed size (size and layout containment, no clip: a clip would be
   one more piece for the compositor per row), so that a new value lays out that box alone. */
table.bars th > span { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
table.bars td.value > span { display: block; contain: size layout style; height: 1.5em; line-height: 1.5em; white-space: nowrap; }
/* A bar is the track's full width, scaled to its weight (a transform: a new row of weights is
   repainted, not laid out again); the 1px stub at the track's start marks a weight too small to
   see, as a minimum width did. */
table.bars .bar {
  position: absolute; left: 0; top: 0.2em; bottom: 0.2em; width: 100%; background: var(--attn-bar);
  border-radius: 0 3px 3px 0; transform-origin: left center; transform: scaleX(0);
}
table.bars td.track::after {
  content: ""; position: absolute; left: 0; top: 0.2em; bottom: 0.2em; width: 1px; background: var(--attn-bar);
}
/* On a scale from 0 to 1 (table.bars.tracked) every bar lies on a faint track of the full
   length, the weight 1: a row's budget, which its bars share. Drawn by the cell itself (no
   element per row), under the bar. */
table.bars.tracked td.track::before {
  content: ""; position: absolute; left: 0; right: 0; top: 0.2em; bottom: 0.2em;
  background: var(--attn-track); border-radius: 3px;
}
/* The value column holds the longest value its digits give, bold ("<0.0001", ">0.9999" for a
   row of four decimals; a compact chart prints three), cut by nothing. The label column is as
   wide as the chart's longest label (--label-ch, its length in characters, which RowChart sets;
   about 0.7em a character), at least 7.5em (5.5em compact), at most 12em or 40% of the chart; a
   longer word is cut with an ellipsis, and its row header's title holds it whole. */
.rows-frame {
  position: relative; max-width: 40em; --label-min: 7.5em; --value: 5.4em;
  --label: min(max(var(--label-min), calc(var(--label-ch, 0) * 0.7em + 0.5em)), 12em, 40%);
}
.rows-frame:has(> table.compact) { --label-min: 5.5em; --value: 4.8em; }
.uniform-line {
  position: absolute; top: 0; bottom: 0; width: 0; pointer-events: none;
  left: calc(var(--label) + (100% - var(--label) - var(--value)) * var(--u, 0));
  border-left: 2px dashed var(--attn-uniform);
}
table.bars tr.selected th { font-weight: 700; }
table.bars tr.top td.value { font-weight: 700; }
table.bars.compact > tbody > tr { contain-intrinsic-size: auto calc(1.25em + 2px); }
table.bars.compact td.track { height: 1.25em; }
table.bars.compact td.value > span { height: 1.25em; line-height: 1.25em; }
/* A row of differences (RowChart's signed form): bars from the track's middle, right for more
   weight in the first row, left (in the decrease colour) for more in the second; the middle is
   marked where the start stub is otherwise. */
table.bars.signed .bar { left: 50%; width: 50%; border-radius: 0 3px 3px 0; }
table.bars.signed .bar.down { background: var(--attn-bar-down); }
table.bars.signed td.track::after { left: 50%; background: var(--attn-muted); }
table.bars.signed td.value { flex-basis: 6.2em; }
.legend { display: flex; flex-wrap: wrap; gap: 0.2em 1em; font-size: 0.82em; color: var(--attn-muted); margin-top: 0.3em; }
.legend .swatch-line { display: inline-block; width: 1.4em; border-top: 2px dashed var(--attn-uniform); vertical-align: middle; margin-right: 0.3em; }
.legend .swatch-bar { display: inline-block; width: 1.4em; height: 0.7em; background: var(--attn-bar); vertical-align: middle; margin-right: 0.3em; border-radius: 2px; }
.legend .swatch-track { display: inline-block; width: 2.8em; height: 0.7em; background: linear-gradient(to right, var(--attn-bar) 40%, var(--attn-track) 40%); vertical-align: middle; margin-right: 0.3em; border-radius: 2px; }
/* A line that reads out the cell under the pointer, the last one tapped, or the one the
   keyboard is on (Figures 1 and 5): two lines high (a long token wraps, the number stays in
   view), so that the figure keeps its size while it changes. */
.readout {
  margin: 0.4em 0 0; font-size: 0.86em; min-height: 2.9em; line-height: 1.45; color: var(--attn-fg);
  overflow-wrap: anywhere;
}
.readout b { font-weight: 650; }
.readout.echo { margin: -0.6em 0 0; }
.readout .hint { color: var(--attn-muted); }
.facts { display: flex; flex-wrap: wrap; gap: 0.2em 1.2em; margin-top: 0.5em; font-size: 0.92em; }
.facts b { font-weight: 650; }
/* No transition on the bars: an animated transform makes each bar a compositor layer, and a
   long sentence's hundreds of layers cost more to set up than the redraw itself. */
`;

// Added in other sites' pages: the widget brings its own background, so that its colours stay
// readable on any page, whatever the host's own theme.
export const EMBEDDED_CSS = `
/* Important, like the layout above: a blog's "* { padding: 0 }" reaches the element too. The
   background is still the host's to choose, through --attn-bg. */
:host { background: var(--attn-bg) !important; border-radius: 8px !important; padding: 0.6em !important; }
`;
