// Models from the Hugging Face hub (or files from the reader's computer), downloaded by the
// reader's browser: what the hub lists for a repository (its commit and files, with each LFS
// file's size and SHA-256), which files a BERT needs, and their download into the engine's
// worker, each checked before it is used (LFS files by their SHA-256, the small files by their
// git blob id) and kept in the Cache API by repository and commit once the whole checkpoint is
// here and checked (and taken out again if the engine refuses the model). The hub's address
// comes from ./model_address.js (the public hub, or for tests a server on this machine). Used by
// the page's chooser (the listing, to say what it will download) and by the worker
// (createEngine's checkpoint option, in ./local.js), which import it only then. No DOM here.
import { EngineError } from './errors.js';
import { fetchVerified, hex, MAX_MODEL_FILE_BYTES, openCache } from './files.js';
import { parseHubChoice } from './model_address.js';

const isCommit = (revision) => /^[0-9a-f]{40}$/.test(revision ?? '');

const encodePath = (text) => text.split('/').map(encodeURIComponent).join('/');
export const resolveUrl = (hub, id, commit, file) => `${hub}/${encodePath(id)}/resolve/${commit}/${encodePath(file)}`;
const infoUrl = (hub, id, revision) => `${hub}/api/models/${encodePath(id)}/revision/${encodeURIComponent(revision)}?blobs=true`;

// What the hub answered for a repository, in words a reader can act on.
function hubRefusal(id, status, what = 'the repository') {
  if (status === 401 || status === 403) return new EngineError('http', `The hub refused ${what} of ${id} (${status}): the repository does not exist, is private, or is gated (its owner asks readers to log in and accept terms). This page downloads only public, ungated models.`);
  if (status === 404) return new EngineError('http', `The hub has no ${what === 'the repository' ? 'such revision' : what} for ${id} (404). Check the name and the revision.`);
  return new EngineError('http', `The hub answered ${status} for ${what} of ${id}. Retry later.`);
}

async function hubFetch(url, id, what, signal) {
  try {
    return await fetch(url, { signal, cache: 'no-cache' });
  } catch (error) {
    if (signal?.aborted) throw cancelled();
    throw new EngineError('network', `Could not reach the hub for ${what} of ${id} (${error.message}). Check the connection; a page's Content-Security-Policy must allow the hub in connect-src.`, { cause: error });
  }
}

export const cancelled = () => new EngineError('cancelled', 'The download was cancelled; the model you had keeps running.');

// The hub's listing of a repository at a revision: {id, commit, gated, files: [{name, size,
// sha256 (LFS files), blobId (git's id of the others)}]}. A listing at a commit never changes,
// so it is kept in the Cache API (offline visits read it from there) once a model loaded.
export async function hubModelInfo(hub, { id, revision = 'main' }, { signal } = {}) {
  const url = infoUrl(hub, id, revision);
  const cache = isCommit(revision) ? await openCache() : null;
  const kept = cache ? await cache.match(url).catch(() => undefined) : undefined;
  let response = kept;
  if (!response) {
    response = await hubFetch(url, id, 'the file list', signal);
    if (!response.ok) throw hubRefusal(id, response.status);
  }
  let json;
  try {
    json = await response.json();
  } catch {
    throw new EngineError('http', `The hub's answer for ${id} is not its JSON file list; check the hub's address.`);
  }
  const commit = typeof json?.sha === 'string' && isCommit(json.sha) ? json.sha : null;
  if (!commit || !Array.isArray(json.siblings)) throw new EngineError('http', `The hub's answer for ${id} has no commit or file list.`);
  const files = json.siblings.filter((s) => typeof s?.rfilename === 'string').map((s) => ({
    name: s.rfilename,
    size: Number.isSafeInteger(s.size) ? s.size : Number.isSafeInteger(s.lfs?.size) ? s.lfs.size : null,
    sha256: typeof s.lfs?.sha256 === 'string' && /^[0-9a-f]{64}$/.test(s.lfs.sha256) ? s.lfs.sha256 : null,
    blobId: typeof s.blobId === 'string' && /^[0-9a-f]{40}$/.test(s.blobId) ? s.blobId : null,
  }));
  // The weights' licence as the repository's card states it (cardData.license, or a license:
  // tag), for the page's colophon; null where it states none.
  const tagged = Array.isArray(json.tags) ? json.tags.find((tag) => typeof tag === 'string' && tag.startsWith('license:')) : null;
  const card = json.cardData?.license;
  const license = (typeof card === 'string' ? card : Array.isArray(card) ? card.filter((x) => typeof x === 'string').join(', ') : tagged?.slice(8)) || null;
  // The hub answers with the repository's own id (a legacy or differently-cased one asked for
  // becomes 'google-bert/bert-base-uncased'): the files and the kept listing go by that one,
  // which the page's link then names.
  const canonical = typeof json.id === 'string' && parseHubChoice(json.id)?.id === json.id ? json.id : id;
  return { id: canonical, commit, gated: Boolean(json.gated), files, license: license?.slice(0, 100) ?? null, listingUrl: infoUrl(hub, canonical, commit), json };
}

// The files of a listing the engine needs (the table's "files": config, vocabulary, the
// tokenizer's settings if present, and one weights file, safetensors preferred), their total
// size and which needed ones are missing (said once the config is read), or a refusal.
export function checkpointFiles(info, names) {
  const byName = new Map(info.files.map((f) => [f.name, f]));
  const weights = names.weights.map((n) => byName.get(n)).find(Boolean);
  if (!weights) {
    const sharded = names.sharded_indexes.find((n) => byName.has(n));
    throw new EngineError('model', sharded
      ? `${info.id} keeps its weights in several files (${sharded}); the page reads one ${names.weights.join(' or ')} (a BERT this size has one).`
      : `${info.id} has no ${names.weights.join(' or ')}: it is not a PyTorch BERT checkpoint the page can read.`);
  }
  if (!byName.has(names.config)) throw new EngineError('model', `${info.id} has no ${names.config}; the page needs it to run a BERT.`);
  // A missing vocabulary is said after the config is read: a repository that is not a BERT at
  // all is refused for that first.
  const missing = byName.has(names.vocabulary) ? [] : [names.vocabulary];
  const files = [byName.get(names.config), byName.get(names.vocabulary), byName.get(names.tokenizer), weights].filter(Boolean);
  if (!weights.sha256) throw new EngineError('model', `The hub lists no SHA-256 for ${info.id}'s ${weights.name}, so the page cannot check it; it downloads only weights it can check.`);
  if (weights.size > MAX_MODEL_FILE_BYTES) throw new EngineError('model', `${info.id}'s ${weights.name} is ${(weights.size / 1e6).toFixed(0)} MB, more than this page loads (${MAX_MODEL_FILE_BYTES / 2 ** 20} MiB).`);
  return { files, weights: weights.name, bytes: files.reduce((sum, f) => sum + (f.size ?? 0), 0), missing };
}

// git's id of a file (what the hub lists as blobId for a file not in LFS): SHA-1 of
// "blob <size>\0" and the bytes.
async function gitBlobId(bytes) {
  const head = new TextEncoder().encode(`blob ${bytes.length}\0`);
  const all = new Uint8Array(head.length + bytes.length);
  all.set(head);
  all.set(bytes, head.length);
  return hex(await crypto.subtle.digest('SHA-1', all));
}

// Downloads a repository's files at its commit into {name: bytes}, each checked before it is
// used: an LFS file against the listing's size and SHA-256 (fetchVerified: an HTML page or a
// short answer is said as such, and a bad copy is fetched once more from the server), a small
// file against its size and git blob id. Nothing is cached here: keep() caches every file and
// the listing (answering whether all went in), forget() takes them out again (a model the
// engine refuses leaves nothing behind). The config comes first and is checked (checkConfig),
// so that a repository that is not a BERT, or one too large for the engine, is refused before
// its weights are downloaded.
export async function downloadCheckpoint(hub, info, plan, { signal, onProgress = () => {}, checkConfig = () => {} } = {}) {
  const files = {};
  const hashes = {};
  const keeps = [];
  const loaded = new Map();
  const report = () => {
    const done = [...loaded.values()].reduce((a, b) => a + b, 0);
    onProgress({ loaded: done, total: plan.bytes, percent: plan.bytes ? Math.min(100, (100 * done) / plan.bytes) : 0 });
  };
  for (const file of plan.files) {
    if (signal?.aborted) throw cancelled();
    const url = resolveUrl(hub, info.id, info.commit, file.name);
    const checksum = file.sha256 ? { sha256: file.sha256, bytes: file.size, from: 'the hub\u2019s listing' } : null;
    const use = async (bytes) => {
      if (!checksum && file.blobId && globalThis.crypto?.subtle && await gitBlobId(bytes) !== file.blobId) {
        return { refusal: new EngineError('model', `${info.id}'s ${file.name} does not match the hub's listing (its git blob id differs); the download was damaged or the answer was not the file.`) };
      }
      return { value: bytes };
    };
    let got;
    try {
      got = await fetchVerified(url, {
        what: `file ${file.name} of ${info.id}`, kind: 'model', cacheKey: url, checksum, signal, keep: 'later',
        limit: Math.min(MAX_MODEL_FILE_BYTES, file.size ?? MAX_MODEL_FILE_BYTES),
        onProgress: (p) => { loaded.set(file.name, p.loaded); report(); },
      }, use);
    } catch (error) {
      if (signal?.aborted) throw cancelled();
      if (error.status) throw hubRefusal(info.id, error.status, file.name);
      throw error;
    }
    files[file.name] = got.value;
    hashes[file.name] = file.sha256 ?? file.blobId;
    keeps.push(got.keep);
    if (file.name === plan.files[0].name) {
      await checkConfig(got.value);
      if (plan.missing?.length) throw new EngineError('model', `${info.id} has no ${plan.missing.join(' or ')}; the page needs it to run a BERT.`);
    }
  }
  // True when every file and the listing are in the cache (a full or refused cache: false; the
  // model runs, but a reload would download it again).
  const keep = async () => {
    const cache = await openCache();
    if (!cache) return false;
    let kept = true;
    for (const k of keeps) kept = (k ? await k() : true) && kept;
    try {
      await cache.put(info.listingUrl, new Response(JSON.stringify(info.json), { headers: { 'content-type': 'application/json' } }));
    } catch {
      kept = false;
    }
    return kept;
  };
  // Every file of this download out of the cache again (a model the engine refused after keep).
  const forget = async () => {
    const cache = await openCache();
    if (!cache) return;
    for (const file of plan.files) await cache.delete(resolveUrl(hub, info.id, info.commit, file.name)).catch(() => {});
    await cache.delete(info.listingUrl).catch(() => {});
  };
  return { files, hashes, keep, forget };
}

// Files the reader chose on this computer ([{name, blob}] of File objects; a folder's files
// under their paths): {name: bytes} of the ones the engine reads, by their base names.
export async function readLocalFiles(chosen, names) {
  const byBase = new Map();
  for (const { name, blob } of chosen) {
    const base = String(name).split('/').pop();
    if (!byBase.has(base)) byBase.set(base, blob);
  }
  // One weights file, the table's first that is there (safetensors before the PyTorch file).
  const weights = names.weights.find((n) => byBase.has(n));
  const wanted = new Set([names.config, names.vocabulary, names.tokenizer, ...(weights ? [weights] : names.sharded_indexes)]);
  const files = {};
  for (const [base, blob] of byBase) {
    if (!wanted.has(base)) continue;
    if (blob.size > MAX_MODEL_FILE_BYTES) throw new EngineError('model', `${base} is ${(blob.size / 1e6).toFixed(0)} MB, more than this page loads.`);
    files[base] = new Uint8Array(await blob.arrayBuffer());
  }
  return files;
}

// Files the reader opened are kept in the Cache API under this origin's address
// local-models/KEY/, KEY the first 32 hex digits of the SHA-256 of their contents, so that the
// page can reload on them (local=KEY in its hash) and read them offline; they never leave the
// browser.
const keptUrl = (key, name) => new URL(`local-models/${key}/${encodeURIComponent(name)}`, globalThis.location?.href ?? 'http://localhost/').href;
const KEPT_INDEX = 'index.json';

export async function keepFiles(files, label) {
  if (!globalThis.crypto?.subtle) return null;  // a page on plain HTTP away from localhost
  const names = Object.keys(files).sort();
  const parts = [];
  for (const name of names) parts.push(hex(await crypto.subtle.digest('SHA-256', files[name])), name);
  const key = hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(parts.join('\n')))).slice(0, 32);
  const cache = await openCache();
  if (!cache) return null;
  try {
    for (const name of names) await cache.put(keptUrl(key, name), new Response(files[name]));
    await cache.put(keptUrl(key, KEPT_INDEX), new Response(JSON.stringify({ label, files: names })));
  } catch {
    return null;  // a full or refused cache: the model runs, but a reload cannot find it
  }
  return key;
}

export async function readKeptFiles(key) {
  const cache = await openCache();
  const index = cache ? await cache.match(keptUrl(key, KEPT_INDEX)).catch(() => undefined) : undefined;
  const gone = () => new EngineError('model', 'This browser no longer keeps the model that was opened from a computer under this link (its files were in the browser\u2019s cache, which was cleared or belongs to another browser). Open its files again, or choose another model.');
  if (!index) throw gone();
  const { label, files: names } = await index.json();
  const files = {};
  for (const name of names) {
    const response = await cache.match(keptUrl(key, name));
    if (!response) throw gone();
    files[name] = new Uint8Array(await response.arrayBuffer());
  }
  return { label, files };
}
