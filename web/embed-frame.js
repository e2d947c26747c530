// The iframe form of a figure, for hosts that allow only iframes: embed.html?widget=row&sentence=
// ...&word=...&layer=2&head=3&theme=dark renders one figure from its URL parameters. The parameters are
// read as data: the widget must be one of the registered figures (web/widgets/registry.js), only
// the attributes that figure declares are copied (as attribute values, never markup), and model,
// manifest and engine addresses must be on this site, so that a link cannot make the frame show
// numbers from elsewhere.
import { ATTRIBUTES, BARE_ATTRIBUTES, FIGURES, FRAME_MESSAGES, FRAME_WIDGET_PARAM, SOURCE_ATTRIBUTES } from './dist/attention-widgets.js';

function sameOrigin(value) {
  try {
    return new URL(value, location.href).origin === location.origin;
  } catch {
    return false;
  }
}

function mount() {
  const params = new URLSearchParams(location.search);
  const widget = params.get(FRAME_WIDGET_PARAM) ?? 'row';
  if (!Object.hasOwn(FIGURES, widget)) {
    const message = document.createElement('p');
    message.className = 'frame-error';
    message.textContent = `There is no figure called \u201c${widget}\u201d. Use one of: ${Object.keys(FIGURES).join(', ')}.`;
    document.body.append(message);
    return;
  }
  const figure = document.createElement(FIGURES[widget].tag);
  for (const name of FIGURES[widget].attributes) {
    const value = params.get(name);
    if (value === null) continue;
    if (SOURCE_ATTRIBUTES.includes(name) && !sameOrigin(value)) continue;
    figure.setAttribute(name, BARE_ATTRIBUTES.includes(name) ? '' : value);
  }
  // theme=light|dark (the host's toggle, in the frame's URL): the frame's own page follows it
  // too, so its scrollbars and background match; auto or none: the reader's setting.
  const theme = params.get(ATTRIBUTES.theme);
  if (theme === 'light' || theme === 'dark') document.documentElement.style.colorScheme = theme;
  const sentence = params.get(ATTRIBUTES.sentence);
  if (sentence) document.title = `Attention figure: ${sentence}`;
  document.body.append(figure);
  // The host's theme, from its helper (dist/attention-frames.js) or its own script, reaches a
  // frame already open without reloading it: { type: FRAME_MESSAGES.theme, theme: 'dark' }.
  // Only the theme can be set so, to one of its three values.
  window.addEventListener('message', (event) => {
    if (event.source !== window.parent || event.data?.type !== FRAME_MESSAGES.theme) return;
    const value = event.data.theme;
    if (value !== 'light' && value !== 'dark' && value !== 'auto') return;
    figure.setAttribute(ATTRIBUTES.theme, value);
    document.documentElement.style.colorScheme = value === 'auto' ? '' : value;
  });
  reportHeight(figure);
}

// Whether the figure has drawn what it will keep showing (the example, the live figure or a
// failure): before that its height is the loading line's, and reporting it would collapse the
// host's placeholder height (the snippet's height="...") only for the frame to grow again.
function drawn(figure) {
  if (!figure.constructor.needsModel) return true;
  const view = figure.view;
  return Boolean(view?.result || view?.mode === 'error' || figure.shadowRoot?.querySelector('.status[data-mode="error"]'));
}

// The frame tells its parent how tall its content is whenever that changes, once the figure has
// drawn, so that the host (its helper, dist/attention-frames.js) can size the iframe to it: {
// type: FRAME_MESSAGES.height, height } with height in CSS pixels, an integer. It sends nothing else, and
// nothing about the reader. (css/embed.css fixes the figure's scrolling heights in the frame,
// which would otherwise follow the frame's own height through vh units, and so the host's sizing.)
function reportHeight(figure) {
  if (window.parent === window) return;
  let last = -1;
  const send = () => {
    if (!drawn(figure)) return;
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === last) return;
    last = height;
    window.parent.postMessage({ type: FRAME_MESSAGES.height, height }, '*');
  };
  new ResizeObserver(send).observe(document.documentElement);
  // A frame off the host's screen is not rendered (browsers throttle it), so its ResizeObserver
  // stays silent until the reader scrolls to it, and the host would keep the placeholder height
  // till then. Every change the figure draws is also a DOM mutation, which is delivered
  // regardless: after each batch, the height is measured (getBoundingClientRect lays the page out
  // if it must) and sent if it changed.
  let queued = false;
  const soon = () => {
    if (queued) return;
    queued = true;
    setTimeout(() => {
      queued = false;
      send();
    }, 0);
  };
  const watch = { childList: true, subtree: true, attributes: true, characterData: true };
  new MutationObserver(soon).observe(document.body, watch);
  if (figure.shadowRoot) new MutationObserver(soon).observe(figure.shadowRoot, watch);
  send();
}

mount();
