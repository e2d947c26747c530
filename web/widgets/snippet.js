// The code another site pastes to show a figure: one script tag for the bundle and one element
// with the figure's state as attributes, or an iframe of embed.html with the same state as URL
// parameters. Values are escaped for a double-quoted HTML attribute, so a sentence holding
// markup stays a sentence in the host's page.

// Where the bundle and the iframe page live, relative to this module; both resolve to the same
// files from web/widgets/ (the article) and from web/dist/ (the bundle).
export const BUNDLE_URL = new URL('../dist/attention-widgets.js', import.meta.url).href;
export const FRAME_URL = new URL('../embed.html', import.meta.url).href;

// The iframe page's parameter that names the figure; the others are the element's attributes.
export const FRAME_WIDGET_PARAM = 'widget';

export function escapeAttribute(value) {
  return String(value).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

// attributes: [[name, value]] in order; a value of true writes the bare attribute.
export function elementSnippet(tag, attributes) {
  const parts = attributes.map(([name, value]) => (value === true ? ` ${name}` : ` ${name}="${escapeAttribute(value)}"`));
  return `<script type="module" src="${escapeAttribute(BUNDLE_URL)}"></script>\n<${tag}${parts.join('')}></${tag}>`;
}

export function frameUrl(widget, attributes) {
  const params = new URLSearchParams({ [FRAME_WIDGET_PARAM]: widget });
  for (const [name, value] of attributes) params.set(name, value === true ? '' : String(value));
  return `${FRAME_URL}?${params}`;
}

export function frameSnippet(widget, attributes, title, height) {
  return `<iframe src="${escapeAttribute(frameUrl(widget, attributes))}" title="${escapeAttribute(title)}" width="100%" height="${height}" style="border:0" loading="lazy"></iframe>`;
}
