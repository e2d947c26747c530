// The site's service worker: a reader who opened the article or a post once can open them again
// offline. Registered by the article and the posts (web/offline.js), never by a widget embedded
// on another site, and scoped to this folder.
//
// - Installing it stores the site's own files (the manifest's `site.files`: the pages, their
//   scripts and styles, the precomputed example, the posts' set statistics) in a cache named
//   for the manifest's `site.version`, the SHA-256 over every file's checksum, which the page
//   passes as ?v=. A new site (a new model, engine or page) is a new version: it installs beside
//   the old one, takes over, deletes the old cache and tells the pages (`attention-site-updated`).
// - Pages, scripts and data are served network first: online a reader always gets the files as
//   they are now (and the cache is refreshed), offline the stored copy.
// - The model, its shards, the all-rows file and the engine's wasm are not stored here: the
//   engine keeps them in the Cache API itself, keyed by their checksums, checks them before use,
//   and reads them from there before it asks the network (web/engine/files.js). Offline, a shard
//   an earlier visit never fetched fails as a download does, and the page says so. One request
//   for them is answered here: the page's head asks for the default model's first file before
//   any script runs (scripts/site/module_graph.mjs), and where the engine keeps that file (the
//   manifest's SHA-256 in its key) the answer is the kept copy, so a later visit asks the network
//   for nothing. Everything else goes to the network untouched.
const ENGINE_CACHE = 'attention-explainer';  // web/engine/files.js, CACHE_NAME
const VERSION = new URL(self.location.href).searchParams.get('v') || 'unversioned';
const PREFIX = 'attention-site-';
const CACHE = `${PREFIX}${VERSION}`;
const SCOPE = new URL('./', self.location.href).href;
const ENGINE_KEPT = /\.(attn|bin|wasm)$/;

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const response = await fetch(new URL('models/manifest.json', SCOPE), { cache: 'no-cache' });
    const manifest = await response.json();
    const files = manifest.site?.files ?? [];
    const cache = await caches.open(CACHE);
    // One at a time would take as long as the page's own loading; all at once would compete
    // with it. Eight in flight, each straight from the server.
    const queue = files.map((f) => new URL(f.path, SCOPE).href);
    const worker = async () => {
      while (queue.length) {
        const url = queue.shift();
        const answer = await fetch(url, { cache: 'no-cache' });
        if (answer.ok) await cache.put(url, answer);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    await cache.put(new URL('models/manifest.json', SCOPE).href, new Response(JSON.stringify(manifest), { headers: { 'content-type': 'application/json' } }));
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    const old = (await caches.keys()).filter((name) => name.startsWith(PREFIX) && name !== CACHE);
    await Promise.all(old.map((name) => caches.delete(name)));
    await self.clients.claim();
    if (old.length) {
      for (const client of await self.clients.matchAll({ type: 'window' })) client.postMessage({ type: 'attention-site-updated', version: VERSION });
    }
  })());
});

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET' || !request.url.startsWith(SCOPE)) return;
  const url = new URL(request.url);
  if (ENGINE_KEPT.test(url.pathname)) {
    // Not a request that asks for the server's copy (the engine's second try: cache 'reload').
    if (request.destination === '' && request.mode === 'cors' && url.pathname.endsWith('.attn') && !url.search && !['reload', 'no-store'].includes(request.cache)) {
      event.respondWith(keptModelFile(url.href).then((kept) => kept ?? fetch(request)));
    }
    return;
  }
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const response = await fetch(request);
      // Only whole, plain answers are kept (not a range, not an error page).
      if (response.ok && response.status === 200 && response.type === 'basic') cache.put(url.href, response.clone()).catch(() => {});
      return response;
    } catch (error) {
      // A page is found without its query or hash (the state in a link), the folder as its
      // index.html; a file by its address.
      const page = request.mode === 'navigate';
      const address = page && url.pathname.endsWith('/') ? `${url.origin}${url.pathname}index.html` : url.href;
      const kept = await cache.match(address, { ignoreSearch: page });
      if (kept) return kept;
      throw error;
    }
  })());
});

// The engine's kept copy of a model file of the manifest (this version's, which install stored),
// or undefined.
async function keptModelFile(href) {
  try {
    const manifestUrl = new URL('models/manifest.json', SCOPE).href;
    const manifest = await (await (await caches.open(CACHE)).match(manifestUrl))?.json();
    for (const entry of Object.values(manifest?.models ?? {})) {
      for (const file of [entry.core, entry]) {
        if (typeof file?.file === 'string' && /^[0-9a-f]{64}$/.test(file.sha256 ?? '') && new URL(file.file, manifestUrl).href === href) {
          return (await (await caches.open(ENGINE_CACHE)).match(`${href}?sha256=${file.sha256}`)) ?? undefined;
        }
      }
    }
  } catch {
    // No manifest or cache: the network answers.
  }
  return undefined;
}
