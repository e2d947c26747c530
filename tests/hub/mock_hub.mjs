// A local stand-in for the Hugging Face hub, serving the checkpoints that
// tests/hub/make_checkpoints.py writes (OUT_DIR/repos.json and a folder per repository), with
// the public hub's URL layout, status codes and headers, for the browser tests of loading a BERT
// from the hub. No npm dependencies.
//
//   import { startMockHub } from './mock_hub.mjs';
//   const hub = await startMockHub({ dir: 'build/hub-fixtures' });
//   hub.url       'http://127.0.0.1:PORT'   the hub (api, resolve)
//   hub.cdnUrl    'http://127.0.0.1:PORT2'  the LFS origin the hub redirects weights to
//   hub.requests  [{origin: 'hub'|'cdn'|'canary', method, path, status, range?, bytes, completed,
//                   aborted, truncated?}], every request in arrival order (path includes the
//                   query; bytes: body bytes written so far; completed: the whole response went
//                   out; aborted: it did not (the client went away or the server cut it);
//                   truncated: the server cut it, the truncated repository)
//   hub.canaryHits()  requests seen on the canary port (repos.json canaryPort, 47999)
//   hub.setDelay(ms)  delay between the 64 KiB chunks of LFS bodies (0: none), for cancel tests
//   hub.close()       stops all three listeners
//   also hub.manifest (repos.json), hub.canaryUrl, hub.canaryPort (null with canary: false)
//
// Routes (as the public hub answers an anonymous client):
//   GET /api/models/<owner>/<name>[/revision/<main|sha>][?blobs=true]  model info; siblings
//       carry size, blobId and lfs {sha256, size, pointerSize} only with blobs=true
//   GET /api/models/<owner>/<name>/tree/<main|sha>      [{type, oid, size, path, lfs?}]
//   GET|HEAD /<owner>/<name>/resolve/<main|sha>/<file>  small files: 200 with ETag "<blobId>";
//       LFS files (weights): 302 to the CDN with X-Linked-Etag, X-Linked-Size, X-Repo-Commit
//   CDN GET|HEAD /repos/<aa>/<bb>/<sha256(repo id)>/<lfs sha256>?...  the bytes, Range supported
//   Missing or unknown repository: 401 {"error": "Repository not found"} (X-Error-Code
//   RepoNotFound); gated repository: info 200 with gated "manual", files 401 (GatedRepo);
//   missing file: 404 {"error": "Entry not found"} (EntryNotFound); unknown revision: 404
//   (RevisionNotFound). The truncated repository's CDN response declares the full
//   Content-Length and destroys the socket at files[].truncateAt. CORS on everything
//   (Access-Control-Allow-Origin *), OPTIONS preflights answered. Every response is
//   Cache-Control: no-store, so that a browser's request log is the same on every load.
//
// Standalone: node tests/hub/mock_hub.mjs OUT_DIR [--port N] [--cdn-port N] [--no-canary] [--log]

import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { open, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const CHUNK = 64 * 1024;
const LAST_MODIFIED = '2024-06-01T12:00:00.000Z';
const EXPOSE = 'ETag, X-Repo-Commit, X-Linked-Etag, X-Linked-Size, Content-Length, Content-Range, '
  + 'Accept-Ranges, X-Error-Code, X-Error-Message';

function corsHeaders(req) {
  return {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Expose-Headers': EXPOSE,
    ...(req.headers.origin ? { Vary: 'Origin' } : {}),
  };
}

function preflightHeaders(req) {
  return {
    ...corsHeaders(req),
    'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
    'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] || 'Range, Authorization, Content-Type',
    'Access-Control-Max-Age': '86400',
    ...(req.headers['access-control-request-private-network'] ? { 'Access-Control-Allow-Private-Network': 'true' } : {}),
  };
}

const sha256Hex = (text) => createHash('sha256').update(text).digest('hex');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function contentType(name) {
  if (name.endsWith('.json')) return 'application/json; charset=utf-8';
  if (name.endsWith('.safetensors') || name.endsWith('.bin')) return 'application/octet-stream';
  return 'text/plain; charset=utf-8';
}

function contentDisposition(name) {
  return `inline; filename*=UTF-8''${encodeURIComponent(name)}; filename="${name.replace(/"/g, '')}";`;
}

// A single "bytes=a-b" range of a body of `size` bytes: {start, end (exclusive)}, null for none
// (or a form this server ignores: several ranges), 'invalid' for an unsatisfiable one.
function parseRange(header, size) {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return null;
  let start;
  let end;
  if (m[1] === '') {
    if (m[2] === '') return 'invalid';
    const n = Number(m[2]);
    if (n === 0) return 'invalid';
    start = Math.max(0, size - n);
    end = size;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size : Math.min(size, Number(m[2]) + 1);
    if (start >= size || end <= start) return 'invalid';
  }
  return { start, end };
}

export async function startMockHub({ dir, log = false, canary = true, port = 0, cdnPort = 0, host = '127.0.0.1' } = {}) {
  if (!dir) throw new Error('startMockHub: give { dir }, the OUT_DIR of tests/hub/make_checkpoints.py');
  const root = resolve(dir);
  let manifest;
  try {
    manifest = JSON.parse(await readFile(join(root, 'repos.json'), 'utf8'));
  } catch (e) {
    throw new Error(`startMockHub: cannot read ${join(root, 'repos.json')} (run /usr/bin/python3 tests/hub/make_checkpoints.py ${dir} first): ${e.message}`);
  }
  const repos = new Map(manifest.repos.map((r) => [r.id, r]));
  // CDN object key (sha256 of the repo id, lfs sha256) -> [repo, file]
  const objects = new Map();
  for (const repo of manifest.repos) {
    repo.hash = sha256Hex(repo.id);
    for (const file of repo.files) if (file.lfs) objects.set(`${repo.hash}/${file.lfs.sha256}`, [repo, file]);
  }

  const requests = [];
  let delayMs = 0;
  let hits = 0;
  const say = typeof log === 'function' ? log : log ? (line) => console.log(line) : null;

  // Records the request; returns the record and a function that sends the head.
  function track(origin, req, res) {
    const record = { origin, method: req.method, path: req.url, status: 0, bytes: 0, completed: false, aborted: false };
    if (req.headers.range) record.range = req.headers.range;
    requests.push(record);
    res.on('finish', () => { record.completed = true; });
    res.on('close', () => {
      if (!record.completed) record.aborted = true;
      say?.(`[mock-hub ${origin}] ${req.method} ${req.url} -> ${record.status}${record.aborted ? ' (aborted)' : ''}`);
    });
    return record;
  }

  function send(req, res, record, status, headers, body) {
    record.status = status;
    const data = body == null ? null : Buffer.isBuffer(body) ? body : Buffer.from(body);
    res.writeHead(status, {
      ...corsHeaders(req), 'Cache-Control': 'no-store',
      ...(data ? { 'Content-Length': String(data.length) } : {}), ...headers,
    });
    if (data && req.method !== 'HEAD') {
      record.bytes = data.length;
      res.end(data);
    } else {
      res.end();
    }
  }

  function sendJson(req, res, record, status, value, headers = {}) {
    send(req, res, record, status, { 'Content-Type': 'application/json; charset=utf-8', ...headers }, JSON.stringify(value));
  }

  function sendError(req, res, record, status, code, message) {
    sendJson(req, res, record, status, { error: message }, { 'X-Error-Code': code, 'X-Error-Message': message });
  }

  // Waits until the socket drains or closes.
  const drained = (res) => new Promise((r) => {
    const done = () => { res.off('drain', done); res.off('close', done); r(); };
    res.on('drain', done);
    res.on('close', done);
  });

  // Sends bytes [start, end) of a file as the body, in 64 KiB chunks with the current delay
  // between them; stops at truncateAt (then destroys the socket).
  async function sendFile(req, res, record, path, start, end, { chunked = false, truncateAt = null } = {}) {
    if (req.method === 'HEAD') { res.end(); return; }
    const fh = await open(path, 'r');
    try {
      const limit = truncateAt == null ? end : Math.max(start, Math.min(end, truncateAt));
      let pos = start;
      while (pos < limit) {
        if (res.destroyed) return;
        const n = Math.min(chunked ? CHUNK : 1 << 20, limit - pos);
        const buf = Buffer.allocUnsafe(n);
        const { bytesRead } = await fh.read(buf, 0, n, pos);
        if (bytesRead !== n) throw new Error(`${path}: short read`);
        pos += n;
        record.bytes += n;
        if (pos >= limit && limit < end) {
          // The last bytes before the cut: wait until they are handed to the kernel.
          await new Promise((r) => res.write(buf, () => r()));
          break;
        }
        if (!res.write(buf)) await drained(res);
        if (chunked && delayMs > 0 && pos < limit) await sleep(delayMs);
      }
      if (limit < end) {
        record.truncated = true;
        record.aborted = true;
        await sleep(20);
        res.destroy();
      } else {
        res.end();
      }
    } finally {
      await fh.close();
    }
  }

  const siblings = (repo, blobs) => repo.files.map((f) => (blobs
    ? { rfilename: f.rfilename, blobId: f.blobId, size: f.size, ...(f.lfs ? { lfs: f.lfs } : {}) }
    : { rfilename: f.rfilename }));

  function modelInfo(repo, blobs) {
    const [owner] = repo.id.split('/');
    return {
      _id: createHash('sha1').update(repo.id).digest('hex').slice(0, 24),
      id: repo.id,
      modelId: repo.id,
      author: owner,
      sha: repo.sha,
      lastModified: LAST_MODIFIED,
      createdAt: LAST_MODIFIED,
      private: false,
      gated: repo.gated ? 'manual' : false,
      disabled: false,
      downloads: 0,
      likes: 0,
      library_name: repo.info.library_name,
      pipeline_tag: repo.info.pipeline_tag,
      tags: repo.info.tags,
      config: repo.info.config,
      cardData: { license: 'apache-2.0', library_name: repo.info.library_name },
      siblings: siblings(repo, blobs),
      spaces: [],
      ...(repo.info.safetensors ? { safetensors: repo.info.safetensors } : {}),
      usedStorage: repo.files.reduce((sum, f) => sum + f.size, 0),
    };
  }

  const revisionOk = (repo, rev) => rev === 'main' || rev === repo.sha;

  // Path segments, decoded; null when a segment is not valid percent-encoding.
  function segments(pathname) {
    try {
      return pathname.split('/').slice(1).map(decodeURIComponent);
    } catch {
      return null;
    }
  }

  // A CORS preflight (OPTIONS) answered 204 with the hub's headers: true when req was one.
  function answeredPreflight(req, res, record) {
    if (req.method !== 'OPTIONS') return false;
    record.status = 204;
    res.writeHead(204, preflightHeaders(req));
    res.end();
    return true;
  }

  async function hubHandler(req, res) {
    const record = track('hub', req, res);
    if (answeredPreflight(req, res, record)) return;
    const url = new URL(req.url, 'http://hub.invalid');
    const parts = segments(url.pathname);
    if (!parts) return sendError(req, res, record, 400, 'BadRequest', 'Invalid URL');
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(req, res, record, 405, 'MethodNotAllowed', 'Method not allowed');

    if (parts[0] === 'api' && parts[1] === 'models') {
      const [owner, name, kind, rev] = parts.slice(2);
      const repo = name ? repos.get(`${owner}/${name}`) : null;
      if (!repo) return sendError(req, res, record, 401, 'RepoNotFound', 'Repository not found');
      const blobs = ['true', '1'].includes(url.searchParams.get('blobs'));
      if (kind === undefined || kind === '') return sendJson(req, res, record, 200, modelInfo(repo, blobs));
      if ((kind === 'revision' || kind === 'tree') && rev !== undefined) {
        if (!revisionOk(repo, rev)) return sendError(req, res, record, 404, 'RevisionNotFound', `Invalid rev id: ${rev}`);
        if (kind === 'revision') return sendJson(req, res, record, 200, modelInfo(repo, blobs));
        const under = parts.slice(6).join('/');
        const tree = repo.files.filter((f) => !under || f.rfilename.startsWith(`${under}/`)).map((f) => ({
          type: 'file', oid: f.blobId, size: f.size, path: f.rfilename,
          ...(f.lfs ? { lfs: { oid: f.lfs.sha256, size: f.lfs.size, pointerSize: f.lfs.pointerSize } } : {}),
        }));
        return sendJson(req, res, record, 200, tree);
      }
      return sendError(req, res, record, 404, 'NotFound', 'Not Found');
    }

    // /<owner>/<name>/resolve/<rev>/<file...>
    if (parts.length >= 5 && parts[2] === 'resolve') {
      const [owner, name, , rev] = parts;
      const filename = parts.slice(4).join('/');
      const repo = repos.get(`${owner}/${name}`);
      if (!repo) return sendError(req, res, record, 401, 'RepoNotFound', 'Repository not found');
      if (repo.gated) {
        return sendError(req, res, record, 401, 'GatedRepo', `Access to model ${repo.id} is restricted. You must have access to it and be authenticated to access it. Please log in.`);
      }
      if (!revisionOk(repo, rev)) return sendError(req, res, record, 404, 'RevisionNotFound', `Invalid rev id: ${rev}`);
      const file = repo.files.find((f) => f.rfilename === filename);
      if (!file) return sendError(req, res, record, 404, 'EntryNotFound', 'Entry not found');
      const common = { 'X-Repo-Commit': repo.sha, 'Content-Disposition': contentDisposition(file.rfilename) };
      if (file.lfs) {
        const sha = file.lfs.sha256;
        const expires = 1893456000; // 2030-01-01
        const query = new URLSearchParams({
          'response-content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(file.rfilename)}; filename="${file.rfilename}";`,
          Expires: String(expires), Signature: 'mock-signature', 'Key-Pair-Id': 'MOCKKEYPAIRID',
        });
        const location = `${cdnUrl}/repos/${repo.hash.slice(0, 2)}/${repo.hash.slice(2, 4)}/${repo.hash}/${sha}?${query}`;
        return send(req, res, record, 302, {
          ...common, Location: location, 'Content-Type': 'text/plain; charset=utf-8',
          ETag: `"${sha}"`, 'X-Linked-Etag': `"${sha}"`, 'X-Linked-Size': String(file.lfs.size),
        }, `Found. Redirecting to ${location}`);
      }
      const path = join(root, file.path);
      const size = file.servedSize;
      const range = parseRange(req.headers.range, size);
      const headers = { ...common, 'Content-Type': contentType(file.rfilename), ETag: `"${file.blobId}"`, 'Accept-Ranges': 'bytes' };
      if (range === 'invalid') return send(req, res, record, 416, { ...headers, 'Content-Range': `bytes */${size}` }, '');
      const { start, end } = range ?? { start: 0, end: size };
      record.status = range ? 206 : 200;
      res.writeHead(record.status, {
        ...corsHeaders(req), 'Cache-Control': 'no-store', ...headers, 'Content-Length': String(end - start),
        ...(range ? { 'Content-Range': `bytes ${start}-${end - 1}/${size}` } : {}),
      });
      return sendFile(req, res, record, path, start, end);
    }
    return sendError(req, res, record, 404, 'NotFound', 'Not Found');
  }

  async function cdnHandler(req, res) {
    const record = track('cdn', req, res);
    if (answeredPreflight(req, res, record)) return;
    const url = new URL(req.url, 'http://cdn.invalid');
    const parts = segments(url.pathname) ?? [];
    const found = parts.length === 5 && parts[0] === 'repos' ? objects.get(`${parts[3]}/${parts[4]}`) : null;
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(req, res, record, 405, {}, 'Method not allowed');
    if (!found) {
      return send(req, res, record, 403, { 'Content-Type': 'application/xml' },
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>');
    }
    const [, file] = found;
    const size = file.servedSize;
    const range = parseRange(req.headers.range, size);
    const disposition = url.searchParams.get('response-content-disposition');
    const headers = {
      'Content-Type': 'application/octet-stream', ETag: `"${file.lfs.sha256}"`, 'Accept-Ranges': 'bytes',
      'Last-Modified': new Date(LAST_MODIFIED).toUTCString(),
      ...(disposition ? { 'Content-Disposition': disposition } : {}),
    };
    if (range === 'invalid') return send(req, res, record, 416, { ...headers, 'Content-Range': `bytes */${size}` }, '');
    const { start, end } = range ?? { start: 0, end: size };
    record.status = range ? 206 : 200;
    res.writeHead(record.status, {
      ...corsHeaders(req), 'Cache-Control': 'no-store', ...headers, 'Content-Length': String(end - start),
      ...(range ? { 'Content-Range': `bytes ${start}-${end - 1}/${size}` } : {}),
    });
    return sendFile(req, res, record, join(root, file.path), start, end,
      { chunked: true, truncateAt: file.truncateAt ?? null });
  }

  function canaryHandler(req, res) {
    const record = track('canary', req, res);
    hits += 1;
    record.status = 200;
    res.writeHead(200, { ...corsHeaders(req), 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end('canary\n');
  }

  const wrap = (handler) => (req, res) => {
    Promise.resolve(handler(req, res)).catch((e) => {
      say?.(`[mock-hub] ${req.method} ${req.url}: ${e.stack}`);
      if (!res.headersSent) res.writeHead(500, corsHeaders(req));
      res.destroy();
    });
  };

  const listen = (server, p) => new Promise((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(p, host, () => { server.off('error', reject); resolveListen(server.address().port); });
  });

  const servers = [];
  const hubServer = createServer(wrap(hubHandler));
  const cdnServer = createServer(wrap(cdnHandler));
  let url;
  let cdnUrl;
  let canaryPort = null;
  try {
    cdnUrl = `http://${host}:${await listen(cdnServer, cdnPort)}`;
    servers.push(cdnServer);
    url = `http://${host}:${await listen(hubServer, port)}`;
    servers.push(hubServer);
    if (canary) {
      const canaryServer = createServer(canaryHandler);
      try {
        canaryPort = await listen(canaryServer, manifest.canaryPort);
      } catch (e) {
        throw new Error(`startMockHub: cannot open the canary port ${manifest.canaryPort} (${e.code}); `
          + 'is another mock hub running? (canary: false skips it)');
      }
      servers.push(canaryServer);
    }
  } catch (e) {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    throw e;
  }

  return {
    url,
    cdnUrl,
    canaryUrl: canaryPort ? `http://${host}:${canaryPort}/canary` : null,
    canaryPort,
    manifest,
    requests,
    canaryHits: () => hits,
    setDelay(ms) { delayMs = Math.max(0, Number(ms) || 0); },
    async close() {
      await Promise.all(servers.map((s) => new Promise((r) => {
        s.close(() => r());
        s.closeAllConnections?.();
      })));
    },
  };
}

// Standalone: node tests/hub/mock_hub.mjs OUT_DIR [--port N] [--cdn-port N] [--no-canary] [--log]
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const option = (flag) => { const i = args.indexOf(flag); return i >= 0 ? Number(args[i + 1]) : 0; };
  const dir = args.find((a, i) => !a.startsWith('--') && !['--port', '--cdn-port'].includes(args[i - 1]));
  if (!dir) {
    console.error('usage: node tests/hub/mock_hub.mjs OUT_DIR [--port N] [--cdn-port N] [--no-canary] [--log]');
    process.exit(2);
  }
  const hub = await startMockHub({
    dir, port: option('--port'), cdnPort: option('--cdn-port'), canary: !args.includes('--no-canary'), log: args.includes('--log'),
  });
  console.log(`mock hub  ${hub.url}`);
  console.log(`lfs cdn   ${hub.cdnUrl}`);
  console.log(`canary    ${hub.canaryUrl ?? '(off)'}`);
  for (const repo of hub.manifest.repos) {
    const e = repo.expect;
    console.log(`  ${repo.id.padEnd(28)} ${e.load ? 'load' : `refuse (${JSON.stringify(e.message)})`}  ${hub.url}/api/models/${repo.id}?blobs=true`);
  }
  const stop = async () => { await hub.close(); process.exit(0); };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
