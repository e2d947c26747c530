// The host page's helper for the iframe form of the figures (embed.html), bundled by
// scripts/site/build_embed.mjs as dist/attention-frames.js. A host that embeds frames adds one
// line, once per page, from the widgets' site W:
//   <script type="module" src="https://W/dist/attention-frames.js"></script>
// and then:
// - every frame of W's embed.html on the page takes its figure's height, as the frame reports it
//   once the figure has drawn (the iframe's own height attribute holds until then), so nothing
//   is clipped and no empty band is left;
// - every such frame is told the host's theme, resolved as a figure element on this page would
//   resolve `auto` (web/widgets/theme.js: the host's color-scheme, else its background), now and
//   whenever the host's dark toggle changes it, with no code of the host's.
// It reads only messages from its own page's frames and from W's origin (the origin this
// script was loaded from), and accepts only a height that is a positive integer below 20,000.
import { FRAME_MESSAGES } from './snippet.js';
import { effectiveTheme, watchTheme } from './theme.js';

const WIDGETS_ORIGIN = new URL(import.meta.url).origin;
const MAX_HEIGHT = 20000;

// The page's frames of W's embed.html.
function widgetFrames() {
  return [...document.querySelectorAll('iframe')].filter((frame) => {
    try {
      const url = new URL(frame.src, location.href);
      return url.origin === WIDGETS_ORIGIN && url.pathname.endsWith('/embed.html');
    } catch {
      return false;
    }
  });
}

// The theme each frame was last told; forgotten when the frame (re)loads, so that its first
// report after a load gets the theme again. A frame whose URL sets theme=light or theme=dark
// keeps it: the author chose it.
const sentTheme = new WeakMap();
function tellTheme(frame) {
  let asked = null;
  try {
    asked = new URL(frame.src, location.href).searchParams.get('theme');
  } catch {
    return;
  }
  if (asked === 'light' || asked === 'dark') return;
  const theme = effectiveTheme(frame);
  if (sentTheme.get(frame) === theme) return;
  sentTheme.set(frame, theme);
  frame.contentWindow?.postMessage({ type: FRAME_MESSAGES.theme, theme }, WIDGETS_ORIGIN);
}

document.addEventListener('load', (event) => {
  if (event.target?.localName === 'iframe') sentTheme.delete(event.target);
}, true);

addEventListener('message', (event) => {
  if (event.origin !== WIDGETS_ORIGIN || event.data?.type !== FRAME_MESSAGES.height) return;
  const frame = widgetFrames().find((f) => f.contentWindow === event.source);
  if (!frame) return;
  const height = event.data.height;
  if (Number.isInteger(height) && height > 0 && height < MAX_HEIGHT) frame.style.height = `${height}px`;
  tellTheme(frame);
});

// The host's toggle (a class or style on <html> or <body>) or the reader's setting changed:
// the same page-wide watch as the figures' own.
watchTheme({ updateTheme: () => { for (const frame of widgetFrames()) tellTheme(frame); } });
