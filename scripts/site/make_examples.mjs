// Writes the precomputed example the article draws before the engine has loaded: the first
// preset sentence analysed by the native CLI (attention, rollout, head profiles) with the same
// model file the page will load, plus the row statistics and the vectors of the opening
// selection: its input, query and context, the head's keys and values of every token (from the
// wasm engine in Node, since the CLI does not print them). The example's analysis is the
// engine's result schema (web/engine/result.js) with JSON arrays. The CLI's and the engine's
// attention are compared and the largest difference printed, so a stale or mismatched engine
// fails here rather than on the page. Files are named by the model's sha256, so the page never
// shows an example computed by another model.
// Usage: node scripts/site/make_examples.mjs [--manifest web/models/manifest.json] [--out web/examples]
//                                       [--cli build/native/attention-cli]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createEngine } from '../../web/engine/engine.js';
import { DEFAULT_WORD_TEXT, PRESETS } from '../../web/content.js';
import { tokenVector } from '../../web/engine/result.js';
import { resolveSelection } from '../../web/widgets/data.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The CLI (native, FMA) and the wasm engine sum in different orders; on the random test models,
// whose scores are deliberately large, the engine test's bar is 1e-5.
const CLI_ENGINE_TOLERANCE = 1e-5;

const round9 = (v) => Number(Number(v).toPrecision(9));  // float32 round-trips in 9 digits

function cliAnalyze(cli, modelPath, text) {
  const out = execFileSync(cli, ['analyze', '--model', modelPath, '--json', '-'], { input: text, maxBuffer: 1 << 28 });
  return JSON.parse(out.toString());
}

export async function makeExamples({ manifestPath, outDir, cli }) {
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const base = dirname(manifestPath);
  if (!existsSync(cli)) throw new Error(`${cli} is missing; build it with scripts/build.sh native.`);
  mkdirSync(outDir, { recursive: true });
  const text = PRESETS[0];
  const written = new Set();
  for (const [key, entry] of Object.entries(manifest.models)) {
    const modelPath = resolve(base, entry.file);
    const fromCli = cliAnalyze(cli, modelPath, text);

    // The engine in Node, from a manifest of file URLs next to the real one.
    const nodeManifest = {
      default: key,
      // The single file: the examples' numbers are the split layout's too (bit-identical rows).
      models: { [key]: { ...entry, file: pathToFileURL(modelPath).href, core: undefined, shards: undefined } },
      engine: {
        ...manifest.engine,
        glue: pathToFileURL(resolve(base, manifest.engine.glue)).href,
        wasm: pathToFileURL(resolve(base, manifest.engine.wasm)).href,
      },
    };
    // One name per model: the engine keeps each manifest URL it has read (one request per page).
    const nodeManifestPath = join(outDir, `.manifest-${process.pid}-${written.size}-${key.replace(/[^\w.-]/g, '_')}.json`);
    writeFileSync(nodeManifestPath, JSON.stringify(nodeManifest));
    let engine;
    try {
      // The plain wasm: with relaxed SIMD (a newer Node has it on) the examples' last digits
      // would depend on the machine's FMA.
      engine = await createEngine({ manifestUrl: pathToFileURL(nodeManifestPath).href, simd: 'plain' });
    } finally {
      rmSync(nodeManifestPath, { force: true });
    }
    const live = engine.analyze(text, { vectors: true });

    const ids = (tokens) => tokens.map((t) => `${t.id}:${t.start}:${t.end}`).join(' ');
    if (ids(live.tokens) !== ids(fromCli.tokens)) throw new Error(`${key}: the CLI and the engine tokenize "${text}" differently.`);
    const attention = fromCli.attention.flat(3);
    const rollout = fromCli.rollout.flat();
    let maxDifference = 0;
    attention.forEach((v, k) => { maxDifference = Math.max(maxDifference, Math.abs(v - live.attention[k])); });
    console.log(`make_examples: ${key}: CLI vs wasm engine attention, largest difference ${maxDifference.toExponential(2)} (bar ${CLI_ENGINE_TOLERANCE})`);
    if (!(maxDifference <= CLI_ENGINE_TOLERANCE)) throw new Error(`${key}: the CLI and the wasm engine disagree by ${maxDifference}; rebuild both.`);

    const { n, layers, heads, hidden } = live;
    const result = { n, layers, heads, hidden, tokens: fromCli.tokens, roles: live.roles, attention: Float32Array.from(attention), row_stats: live.row_stats };
    const { token, layer, head } = resolveSelection(result, { token: -1, layer: -1, head: -1 }, DEFAULT_WORD_TEXT);
    const dHead = hidden / heads;
    const keys = [];
    if (!live.values || !live.contexts) throw new Error(`${key}: the wasm engine gives no values or contexts; rebuild it with scripts/build.sh wasm.`);
    const values = [];
    for (let j = 0; j < n; ++j) {
      keys.push(...tokenVector(live.keys, live, layer, j).subarray(head * dHead, (head + 1) * dHead));
      values.push(...tokenVector(live.values, live, layer, j).subarray(head * dHead, (head + 1) * dHead));
    }

    const example = {
      generator: 'scripts/site/make_examples.mjs (attention, rollout and head profiles from attention-cli analyze --json; row statistics and vectors from the wasm engine)',
      model: { key, sha256: entry.sha256, name: engine.info.name, provenance: engine.info.provenance, precision: engine.info.precision },
      analysis: {
        text,
        tokens: fromCli.tokens,
        n, layers, heads, hidden,
        truncated: fromCli.truncated,
        full_length: fromCli.full_length,
        roles: Array.from(live.roles),
        attention: attention.map(round9),
        rollout: rollout.map(round9),
        row_stats: Array.from(live.row_stats, round9),  // the wasm core's; the CLI prints none
        head_profiles: fromCli.head_profiles,
        vectors: {
          token, layer, head,
          x: Array.from(tokenVector(live.hidden_states, live, layer, token), round9),
          q: Array.from(tokenVector(live.queries, live, layer, token), round9),
          keys: keys.map(round9),
          values: values.map(round9),
          context: Array.from(tokenVector(live.contexts, live, layer, token), round9),
        },
      },
    };
    const file = `${entry.sha256}.json`;
    writeFileSync(join(outDir, file), JSON.stringify(example));
    written.add(file);
    console.log(`make_examples: ${key}: ${join(outDir, file)} ("${text}", token ${token} "${fromCli.tokens[token].text}", layer ${layer + 1}, head ${head + 1})`);
  }
  // Examples of models no longer in the manifest are removed.
  for (const file of readdirSync(outDir)) {
    if (file.endsWith('.json') && !written.has(file)) rmSync(join(outDir, file));
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const options = {
    manifestPath: join(root, 'web', 'models', 'manifest.json'),
    outDir: join(root, 'web', 'examples'),
    cli: join(root, 'build', 'native', 'attention-cli'),
  };
  for (let i = 0; i < args.length; ++i) {
    const flag = { '--manifest': 'manifestPath', '--out': 'outDir', '--cli': 'cli' }[args[i]];
    if (!flag || i + 1 >= args.length) {
      console.error(`make_examples: unknown or incomplete argument ${args[i]}`);
      process.exit(2);
    }
    options[flag] = resolve(args[++i]);
  }
  try {
    await makeExamples(options);
  } catch (error) {
    console.error(`make_examples: ${error.message}`);
    process.exit(1);
  }
}
