// How the site's files should be served: one home for the Cache-Control policy that
// scripts/serve.sh sends, the browser tests' server sends, and the publish step recommends.
// - Files named by their content's SHA-256 (web/sets/<sha>.json, web/examples/<sha>.json) never
//   change under their name: a year, immutable.
// - Everything else (the pages, the scripts, the manifest, the models and shards, whose names
//   stay when a build changes them) is `no-cache`: kept, but asked for again (a 304 when it did
//   not change). The engine checks each model file against the manifest's SHA-256 anyway.
// - Never `no-store`: a page served with it cannot enter the back/forward cache, so a reader who
//   goes back to the article would wait for the engine again.
export const IMMUTABLE = 'public, max-age=31536000, immutable';
export const REVALIDATE = 'no-cache';
const CHECKSUMMED = /(^|\/)(sets|examples)\/[0-9a-f]{64}(\.words)?\.json$/;

export function cacheControl(pathname) {
  return CHECKSUMMED.test(pathname) ? IMMUTABLE : REVALIDATE;
}

// What the publish step prints for a host.
export const HOST_HEADERS = [
  `Cache-Control: ${REVALIDATE} for every file but those named by their SHA-256 (none among the published files today; the site's sets/ and examples/ files are: ${IMMUTABLE})`,
  'Content-Encoding: br or gzip where the client accepts it (publish writes .br and .gz copies of every text file and the wasm beside it)',
];
