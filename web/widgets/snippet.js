// The code another site pastes to show a figure: one script tag for the bundle and one element
// with the figure's state as attributes, or an iframe of embed.html with the same state as URL
// parameters. Values are escaped for a double-quoted HTML attribute, so a sentence holding
// markup stays a sentence in the host's page.

// Where the bundle and the iframe page live, relative to this module; both resolve to the same
// files from web/widgets/ (the article) and from web/dist/ (the bundle).
export const BUNDLE_URL = new URL('../dist/attention-widgets.js', import.meta.url).href;
export const FRAME_URL = new URL('../embed.html', import.meta.url).href;
// The host's helper for the iframe form (frame-host.js, bundled as dist/attention-frames.js).
export const FRAME_HELPER_URL = new URL('../dist/attention-frames.js', import.meta.url).href;

// The iframe page's parameter that names the figure; the others are the element's attributes.
export const FRAME_WIDGET_PARAM = 'widget';

// The two messages between a frame of embed.html and its host page: the frame posts its content's
// height ({type: height, height} in CSS pixels, an integer); the host may post its theme ({type:
// theme, theme: 'light' | 'dark' | 'auto'}). Nothing else is sent or accepted.
export const FRAME_MESSAGES = Object.freeze({ height: 'attention-height', theme: 'attention-theme' });

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

// The helper's script line (once per page: it sizes every frame of the page and passes the
// host's theme on), then the frame.
export function frameSnippet(widget, attributes, title, height) {
  return `<script type="module" src="${escapeAttribute(FRAME_HELPER_URL)}"></script>\n`
    + `<iframe src="${escapeAttribute(frameUrl(widget, attributes))}" title="${escapeAttribute(title)}" width="100%" height="${height}" frameborder="0" loading="lazy"></iframe>`;
}
