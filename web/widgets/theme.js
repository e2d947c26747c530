// A figure's look, apart from what it draws: which theme it takes (its attribute, else the host
// page's color-scheme or background, else the reader's setting), the page-wide watch that tells
// every figure when the host's theme may have changed (ended when the last figure leaves), and
// its styles as constructed style sheets, which a strict Content-Security-Policy allows.
import { ATTRIBUTES } from './registry.js';
import { h } from './dom.js';

// The theme a figure uses: its `theme` attribute, else (auto) the color-scheme its parent
// computes: only dark or only light (e.g. `html.dark { color-scheme: dark }`) gives that; both
// (`light dark`, a page that follows the reader) gives the reader's operating-system setting.
// A host that declares none is drawn light whatever the reader's setting, so the figure reads
// the page's background instead: dark where the nearest opaque background behind it is dark (a
// dark theme that sets only colours), else light.
export function effectiveTheme(el) {
  const asked = el.getAttribute(ATTRIBUTES.theme);
  if (asked === 'light' || asked === 'dark') return asked;
  const parent = el.parentElement ?? el.getRootNode()?.host ?? document.documentElement;
  const scheme = parent ? getComputedStyle(parent).colorScheme ?? '' : '';
  const words = scheme.split(/\s+/);
  const dark = words.includes('dark');
  const light = words.includes('light');
  if (dark && !light) return 'dark';
  if (light && !dark) return 'light';
  if (dark && light) return typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  return backgroundTheme(parent) ?? 'light';
}

// 'dark' or 'light' by the relative luminance (WCAG's) of the first background at least half
// opaque from `node` up through its ancestors (and out of shadow roots); null when none is.
export function backgroundTheme(node) {
  for (let n = node; n; n = n.parentElement ?? n.getRootNode?.()?.host ?? null) {
    const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)$/.exec(getComputedStyle(n).backgroundColor ?? '');
    if (!m) continue;
    const alpha = m[4] === undefined ? 1 : m[4].endsWith('%') ? parseFloat(m[4]) / 100 : Number(m[4]);
    if (alpha < 0.5) continue;
    const channel = (v) => {
      const c = Number(v) / 255;
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    };
    const luminance = 0.2126 * channel(m[1]) + 0.7152 * channel(m[2]) + 0.0722 * channel(m[3]);
    return luminance < 0.18 ? 'dark' : 'light';
  }
  return null;
}

// Every connected figure, told when the host's theme may have changed: a class, style or
// data-* attribute on <html> or <body> (a dark toggle), or the reader's setting.
const themed = new Set();
let themeWatch = null;
const THEME_TRIGGERS = ['class', 'style', 'data-theme', 'data-color-scheme', 'theme'];
const updateThemes = () => { for (const f of themed) f.updateTheme(); };
export function watchTheme(figure) {
  themed.add(figure);
  if (typeof MutationObserver === 'undefined') return;
  if (!themeWatch) {
    themeWatch = new MutationObserver(updateThemes);
    const watchNode = (node) => node && themeWatch?.observe(node, { attributes: true, attributeFilter: THEME_TRIGGERS });
    watchNode(document.documentElement);
    if (document.body) watchNode(document.body);
    else document.addEventListener('DOMContentLoaded', () => watchNode(document.body), { once: true });
    if (typeof matchMedia === 'function') matchMedia('(prefers-color-scheme: dark)').addEventListener?.('change', updateThemes);
  }
  // The figure's own theme attribute needs no watch: every figure declares it (registry.js), so
  // its attributeChangedCallback hears it.
}

// When the last figure leaves the page, the page-wide watch ends (a new figure starts it again).
export function unwatchTheme(figure) {
  themed.delete(figure);
  if (themed.size || !themeWatch) return;
  themeWatch.disconnect();
  themeWatch = null;
  if (typeof matchMedia === 'function') matchMedia('(prefers-color-scheme: dark)').removeEventListener?.('change', updateThemes);
}

// A figure's styles as constructed style sheets adopted by its shadow root, so that a host's
// strict Content-Security-Policy (style-src without 'unsafe-inline') does not leave it unstyled:
// CSP governs <style> elements and style attributes, not sheets built through the CSSOM. Each
// distinct text is parsed once per page and shared by every figure. Where a browser lacks
// adoptedStyleSheets, <style> elements carry the same text. Returns {set(k, text)} to replace
// the k-th sheet (the theme).
const SHEETS = new Map();
const CONSTRUCTED = typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype
  && typeof ShadowRoot === 'function' && 'adoptedStyleSheets' in ShadowRoot.prototype;
function sheetOf(text) {
  let sheet = SHEETS.get(text);
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(text);
    SHEETS.set(text, sheet);
  }
  return sheet;
}
export function adoptStyles(root, texts) {
  if (CONSTRUCTED) {
    root.adoptedStyleSheets = texts.map(sheetOf);
    return {
      set(k, text) {
        const sheets = root.adoptedStyleSheets.slice();
        sheets[k] = sheetOf(text);
        root.adoptedStyleSheets = sheets;
      },
    };
  }
  const elements = texts.map((text) => h('style', { text }));
  root.append(...elements);
  return { set: (k, text) => { elements[k].textContent = text; } };
}
