// Bundles the embeddable widgets (web/widgets/index.js and everything it imports) into one
// ES module, web/dist/attention-widgets.js, with esbuild. The bundle finds the engine and the
// models from its own URL, so it must stay one folder below web/ (next to engine/ and models/).
// Usage: node scripts/build_embed.mjs   (scripts/build_site.mjs runs it)
import { build } from 'esbuild';
import { statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE_PATH = join(root, 'web', 'dist', 'attention-widgets.js');

export async function buildEmbed() {
  await build({
    entryPoints: [join(root, 'web', 'widgets', 'index.js')],
    outfile: BUNDLE_PATH,
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    sourcemap: 'linked',
    // engine.js reads file: URLs with node:fs only under Node; browsers never take that path.
    external: ['node:*'],
    legalComments: 'none',
    logLevel: 'warning',
    banner: { js: '// Attention explainer widgets: <attention-row>, <attention-heads>, <attention-compare>, <softmax-lab>, <attention-instrument>, <attention-mechanism>. See the README, "Embedding".' },
  });
  console.log(`build_embed: ${relative(root, BUNDLE_PATH)} (${statSync(BUNDLE_PATH).size} bytes)`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildEmbed();
