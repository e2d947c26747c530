// Serves web/ (or another folder) on 127.0.0.1 as scripts/serve.sh documents: CORS on (other
// origins embed the widgets), application/wasm for .wasm, the Cache-Control policy of
// http_policy.mjs (pages eligible for the back/forward cache), and the .br or .gz copy of a file
// where one exists and the browser accepts it. Usage: node scripts/site/serve.mjs [PORT] [FOLDER]
import httpServer from 'http-server';
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { cacheControl } from './http_policy.mjs';

// http-server sends FILE.br or FILE.gz whenever it exists; a copy older than its file (the file
// rebuilt or rewritten since) would be sent in its place. For such a request the browser's
// Accept-Encoding is dropped, so the file itself goes out.
function skipStaleCopies(folder) {
  return (req, res) => {
    const accepts = req.headers['accept-encoding'];
    if (accepts) {
      try {
        let file = join(folder, decodeURIComponent(new URL(req.url, 'http://x').pathname));
        // A folder's address is answered with its index.html (and that page's copies).
        if (statSync(file).isDirectory()) file = join(file, 'index.html');
        const changed = statSync(file).mtimeMs;
        const stale = ['br', 'gz'].some((suffix) => {
          try {
            return statSync(`${file}.${suffix}`).mtimeMs < changed;
          } catch {
            return false;
          }
        });
        if (stale) delete req.headers['accept-encoding'];
      } catch {
        // No such file (a folder, a 404): http-server answers as it does.
      }
    }
    res.emit('next');
  };
}

export function createSiteServer(folder, { cors = true, headers = {}, logFn = () => {} } = {}) {
  return httpServer.createServer({
    root: folder, cache: cacheControl, cors, headers: { ...headers }, showDir: false, brotli: true, gzip: true, logFn,
    before: [skipStaleCopies(folder)],
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8000);
  const folder = resolve(process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web'));
  const server = createSiteServer(folder);
  server.listen(port, '127.0.0.1', () => console.log(`serve: the article is at http://localhost:${port}/ (Ctrl-C stops the server)`));
}
