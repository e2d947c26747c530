// Which model a page's address names, read as data: a checkpoint on the Hugging Face hub in its
// hash (hf=ID or ID@REVISION), or one the reader opened from their computer (local=KEY), and the
// hub's address (the public hub, or for tests ?hub= on this machine). Apart from ./hub.js (the
// listing and the downloads), because every page's start reads it (web/start-engine.js) and the
// downloads' code is needed only once a model is chosen. No DOM here.

export const DEFAULT_HUB = 'https://huggingface.co';

// The model key of a page's hash: a checkpoint on the hub (hf=ID or ID@COMMIT) or one the reader
// opened from their computer and this browser keeps (local=KEY). Every page reads it
// (start-engine.js, modelChoice), and the one writer of history (runtime/state.js) keeps it.
export const MODEL_HASH_KEYS = Object.freeze(['hf', 'local']);

// This machine's names, the only hubs a page's address may name (tests).
export const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

// The hub a page talks to: ?hub=URL only where it names this machine (the tests' mock hub);
// anything else is the public hub, so that a link cannot send a reader's browser elsewhere.
export function hubFromAddress(search = globalThis.location?.search ?? '') {
  const given = new URLSearchParams(search).get('hub');
  if (!given) return DEFAULT_HUB;
  try {
    const url = new URL(given);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname)) return url.origin;
  } catch {
    // Not an address: the public hub.
  }
  return DEFAULT_HUB;
}

// The checkpoint a page's hash names (MODEL_HASH_KEYS): {hub, id, revision} for hf=, {local}
// for local=, or null.
export function checkpointFromHash(hash = globalThis.location?.hash ?? '', search = globalThis.location?.search ?? '') {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const hf = parseHubChoice(params.get('hf'));
  if (hf) return { hub: hubFromAddress(search), ...hf };
  const local = params.get('local');
  return local && /^[0-9a-f]{16,64}$/.test(local) ? { local } : null;
}

// A repository id with an optional revision, 'owner/name' or 'owner/name@revision' (a legacy
// id such as 'bert-base-uncased' has no owner): {id, revision} or null. Read as data: only the
// characters the hub allows in ids and git in revisions, no '..'.
export function parseHubChoice(text) {
  const match = /^([A-Za-z0-9][\w.-]{0,95}(?:\/[A-Za-z0-9][\w.-]{0,95})?)(?:@([\w.\/-]{1,100}))?$/.exec(String(text ?? '').trim());
  if (!match || match[0].includes('..')) return null;
  return { id: match[1], revision: match[2] ?? 'main' };
}

export const formatHubChoice = ({ id, revision }) => (revision && revision !== 'main' ? `${id}@${revision}` : id);
