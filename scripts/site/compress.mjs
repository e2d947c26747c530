// Precompressed copies for the server to send (Content-Encoding br or gzip; http-server's
// --brotli and --gzip serve FILE.br and FILE.gz when the browser accepts them): brotli at its
// highest quality and gzip at level 9, written beside the file. Only the kinds that compress:
// text and the wasm; the model files and shards are rANS-coded already.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export const COMPRESSIBLE = /\.(html|css|js|mjs|json|txt|tsv|svg|wasm)$/;

// Writes path.br and path.gz; returns {bytes, br, gz} (their sizes). A copy that would not be
// smaller is not written (and an old one is removed), so the server sends the file itself.
export function writeCompressed(path) {
  const bytes = readFileSync(path);
  const out = { bytes: bytes.length };
  const copies = {
    br: brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }),
    gz: gzipSync(bytes, { level: 9 }),
  };
  for (const [suffix, data] of Object.entries(copies)) {
    if (data.length < bytes.length) {
      writeFileSync(`${path}.${suffix}`, data);
      out[suffix] = data.length;
    } else {
      rmSync(`${path}.${suffix}`, { force: true });
      out[suffix] = bytes.length;
    }
  }
  return out;
}
