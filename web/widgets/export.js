// A figure as a picture: an SVG built from the numbers the figure shows (not a screenshot of
// its DOM), headed by the sentence, the model, the layer and the head, and a PNG painted from
// that SVG through a canvas. All text goes in as text nodes, so a hostile sentence stays text.
import { svg } from './dom.js';
import { fmt } from './format.js';
import { THEME_PROPERTIES } from './style.js';

const WIDTH = 760;
const MARGIN = 24;
const LINE = 20;           // height of one header line
const BAR_ROW = 18;        // height of one token's bar
const PANEL_GAP = 22;
const LABEL_WIDTH = 112;
const VALUE_WIDTH = 58;
const MAX_LINE_CHARS = 96; // header lines wrap here (about the width at 13 px)
export const PNG_SCALE = 2;

// The pictures use the light theme's colours (THEME_PROPERTIES), whatever the page shows.
const light = (name) => THEME_PROPERTIES.find((p) => p.name === name).light;
const COLOURS = {
  fg: light('--attn-fg'), muted: light('--attn-muted'), bg: light('--attn-bg'), bar: light('--attn-bar'), soft: light('--attn-bar-soft'),
  uniform: light('--attn-uniform'), line: light('--attn-line'), track: light('--attn-track'),
};
const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif';

function wrap(text, width = MAX_LINE_CHARS) {
  const lines = [];
  let line = '';
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    for (let rest = word; rest.length; rest = rest.slice(width)) {
      const piece = rest.slice(0, width);
      if (line && line.length + 1 + piece.length > width) {
        lines.push(line);
        line = piece;
      } else {
        line = line ? `${line} ${piece}` : piece;
      }
    }
  }
  if (line || !lines.length) lines.push(line);
  return lines;
}

const clip = (text, chars) => (text.length > chars ? `${text.slice(0, chars - 1)}\u2026` : text);

// The picture's model line: which model computed it and, where its file states them (the
// provenance's licence, describeModel()'s `license`), the terms of its weights.
export function modelLine(model) {
  const licence = model.license ? `; model licence: ${model.license}` : '';
  return `Model: ${model.name}${model.note ? ` (${model.note})` : ''}${licence}`;
}

// spec: { title, lines: [string], columns, panels: [{ title, labels, values, selected, uniform,
//   scaleMax, track }], note }. Each panel is a horizontal bar chart of one row of weights; with
//   track, every bar lies on a faint track of the full length (the scale's top, 1 there).
export function figureSvg(spec) {
  const columns = Math.max(1, Math.min(spec.columns ?? 1, spec.panels.length));
  const header = [...wrap(spec.title ?? ''), ...spec.lines.flatMap((l) => wrap(l))];
  const panelWidth = (WIDTH - 2 * MARGIN - (columns - 1) * PANEL_GAP) / columns;
  const compact = columns > 1;
  const labelWidth = compact ? Math.min(LABEL_WIDTH, panelWidth * 0.38) : LABEL_WIDTH;
  const valueWidth = compact ? Math.min(VALUE_WIDTH, panelWidth * 0.25) : VALUE_WIDTH;
  const rowHeight = compact ? BAR_ROW - 4 : BAR_ROW;
  const panelRows = Math.max(...spec.panels.map((p) => p.values.length));
  const panelHeight = LINE + panelRows * rowHeight + 6;
  const top = MARGIN + header.length * LINE + 8;
  const gridRows = Math.ceil(spec.panels.length / columns);
  const note = spec.note ? wrap(spec.note, MAX_LINE_CHARS + 10) : [];
  const height = Math.ceil(top + gridRows * (panelHeight + PANEL_GAP) + note.length * LINE + MARGIN);

  const text = (x, y, value, attrs = {}) => svg('text', { x, y, fill: COLOURS.fg, ...attrs, text: value });
  const root = svg('svg', {
    xmlns: 'http://www.w3.org/2000/svg', width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`,
    'font-family': FONT, 'font-size': 13,
  });
  root.append(svg('title', { text: [spec.title, ...spec.lines].join(' \u2014 ') }));
  root.append(svg('rect', { x: 0, y: 0, width: WIDTH, height, fill: COLOURS.bg }));
  header.forEach((line, k) => root.append(text(MARGIN, MARGIN + 14 + k * LINE, line,
    k === 0 ? { class: 'title', 'font-weight': 700, 'font-size': 15 } : { class: 'header', fill: COLOURS.muted })));

  spec.panels.forEach((panel, p) => {
    const x0 = MARGIN + (p % columns) * (panelWidth + PANEL_GAP);
    const y0 = top + Math.floor(p / columns) * (panelHeight + PANEL_GAP);
    const trackX = x0 + labelWidth + 6;
    const trackWidth = Math.max(10, panelWidth - labelWidth - valueWidth - 12);
    const scaleMax = panel.scaleMax ?? 1;
    const g = svg('g', { class: 'panel', 'data-panel': String(p) });
    g.append(text(x0, y0 + 14, clip(panel.title, compact ? 40 : 90), { 'font-weight': 600 }));
    const labelChars = Math.max(4, Math.floor(labelWidth / 7));
    panel.values.forEach((value, j) => {
      const y = y0 + LINE + j * rowHeight;
      const selected = j === panel.selected;
      g.append(text(x0 + labelWidth, y + rowHeight - 5, clip(panel.labels[j], labelChars), {
        'text-anchor': 'end', 'font-size': compact ? 11 : 13, 'font-weight': selected ? 700 : 400,
      }));
      if (panel.track) {
        g.append(svg('rect', { class: 'track', x: trackX, y: y + 2, height: rowHeight - 4, width: trackWidth, rx: 2, fill: COLOURS.track }));
      }
      g.append(svg('rect', {
        class: 'bar', 'data-value': String(value),
        x: trackX, y: y + 2, height: rowHeight - 4,
        width: Math.max(0.5, (trackWidth * Math.max(0, value)) / scaleMax), fill: selected ? COLOURS.soft : COLOURS.bar,
      }));
      g.append(text(x0 + panelWidth, y + rowHeight - 5, fmt(value, compact ? 3 : 4), { 'text-anchor': 'end', 'font-size': compact ? 11 : 13 }));
    });
    if (panel.uniform) {
      const ux = trackX + (trackWidth * panel.uniform) / scaleMax;
      g.append(svg('line', {
        class: 'uniform', x1: ux, x2: ux, y1: y0 + LINE, y2: y0 + LINE + panel.values.length * rowHeight,
        stroke: COLOURS.uniform, 'stroke-width': 1.5, 'stroke-dasharray': '4 3',
      }));
    }
    root.append(g);
  });
  note.forEach((line, k) => root.append(text(MARGIN, height - MARGIN + 4 - (note.length - 1 - k) * LINE, line, { class: 'note', fill: COLOURS.muted, 'font-size': 12 })));
  return { element: root, width: WIDTH, height };
}

// Characters XML 1.0 forbids anywhere in a document: C0 controls other than tab, new line and
// carriage return, U+FFFE, U+FFFF, and UTF-16 surrogates that are not part of a pair.
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

// The SVG document of a figure. XMLSerializer writes text nodes as they are, so a sentence or a
// model name holding such a character would give a file no XML parser reads, and no PNG
// (security review F6); each becomes U+FFFD here, the one place every export passes through.
export function svgText(element) {
  const markup = new XMLSerializer().serializeToString(element).replace(NOT_XML, '\uFFFD');
  return `<?xml version="1.0" encoding="UTF-8"?>\n${markup}\n`;
}

// Paints the SVG into a canvas at PNG_SCALE times its size and encodes it as PNG.
export async function pngBlob(svgString, width, height, scale = PNG_SCALE) {
  const url = URL.createObjectURL(new Blob([svgString], { type: 'image/svg+xml' }));
  try {
    const image = new Image();
    image.decoding = 'sync';
    await new Promise((resolve, reject) => {
      image.onload = resolve;
      image.onerror = () => reject(new Error('the SVG could not be drawn'));
      image.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(image, 0, 0, canvas.width, canvas.height);
    return await new Promise((resolve, reject) => canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error('the canvas gave no PNG'))), 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

// Hands a blob to the browser as a download; `parent` is where the temporary link lives (a
// shadow root keeps it out of the host page's DOM).
export function download(blob, filename, parent) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.hidden = true;
  parent.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
