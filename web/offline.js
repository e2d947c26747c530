// Reading offline after the first visit: the article and the posts register the site's service
// worker (web/sw.js) once their engine is live, with the manifest's site version, so that a
// second visit without a network opens the pages and the engine with what the first one
// downloaded. A line at the top of the page says when it was opened offline, and when a new
// version of the site replaced the stored one. Widgets embedded on other sites never come here:
// the service worker is this site's own, scoped to its folder.
import { DEFAULT_MANIFEST_URL } from './engine/engine.js';
import { h } from './widgets/dom.js';

// The line floats at the bottom of the window (no text moves for it) until dismissed.
let line = null;
function say(text) {
  line?.remove();
  line = h('p.site-note', { role: 'status' }, h('span', { text }), h('button', { type: 'button', text: 'Dismiss', on: { click: () => { line?.remove(); line = null; } } }));
  document.body.append(line);
}

export const OFFLINE_TEXT = 'You are offline: this page, the engine and the model come from what an earlier visit stored. '
  + 'A sentence whose words were never looked up before needs the network for their rows of the vocabulary table.';
export const UPDATED_TEXT = 'This site has a new version (its files or its model changed); it is now the one stored for reading offline.';

export function keepForOffline(manifest) {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator) || !manifest?.site?.version) return null;
  if (!navigator.onLine) say(OFFLINE_TEXT);
  addEventListener('offline', () => say(OFFLINE_TEXT));
  navigator.serviceWorker.addEventListener('message', (event) => {
    if (event.data?.type === 'attention-site-updated') say(UPDATED_TEXT);
  });
  // The site's folder is the manifest's folder's parent (models/manifest.json); not this
  // module's own address, since the pages load it from their bundles in app/.
  const site = new URL('../', DEFAULT_MANIFEST_URL);
  const url = new URL(`sw.js?v=${encodeURIComponent(manifest.site.version)}`, site);
  return navigator.serviceWorker.register(url, { scope: site.pathname }).catch(() => null);
}
