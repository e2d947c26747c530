// Writes the series' set statistics: the native CLI's `profile` and `contribution` over the
// fixed sentence set (web/posts/sentences.txt) with one model file, the f32 reference where
// there is one. The posts show these at once, so no reader waits minutes for a measurement the
// build can make once. Two files under web/sets/, named by the model file's sha256 so that a
// post never shows another model's numbers: NAME.json (the sentences, every head's profile with
// its intervals, the contribution summary and per-head table, and the article's pronoun study,
// scripts/site/pronoun_study.mjs, and how far the page's compact file departs from it on the
// same sentences: attention-cli compare) and NAME.words.json (every word's
// measurement, which the page offers as a download but never fetches by itself). A file whose
// inputs (model, sentences, CLI) are unchanged is kept, since the contribution pass takes
// minutes on a small machine.
// Usage (from build_site.mjs): makeSets({ modelPath, modelKey, cli, outDir })
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { PRONOUN_FILE, pronounStudy, readPronounCases } from './pronoun_study.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SENTENCE_FILE = join(root, 'web', 'posts', 'sentences.txt');

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

function runCli(cli, args) {
  const started = Date.now();
  const out = execFileSync(cli, [...args, '--json', '--progress'], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
  return { result: JSON.parse(out.toString()), seconds: (Date.now() - started) / 1000 };
}

// Returns the manifest's `sets` entry: {model, sha256, file, words, sentences}.
export function makeSets({ modelPath, modelKey, cli, outDir, pagePath = null, pageKey = null }) {
  const modelSha = sha256(readFileSync(modelPath));
  const sentencesText = readFileSync(SENTENCE_FILE, 'utf8');
  const pronounText = readFileSync(PRONOUN_FILE, 'utf8');
  const cliSha = sha256(readFileSync(cli));
  // What each part is computed from: a part whose inputs are unchanged is kept.
  const inputs = sha256(`${modelSha}\n${sha256(sentencesText)}\n${cliSha}`);
  const pagePart = pagePath ? sha256(readFileSync(pagePath)) : 'none';
  const pronounInputs = sha256(`${modelSha}\n${sha256(pronounText)}\n${sha256(sentencesText)}\n${pagePart}\n${cliSha}`);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `${modelSha}.json`);
  const wordsFile = join(outDir, `${modelSha}.words.json`);
  const entry = { model: modelKey, sha256: modelSha, file: `../sets/${modelSha}.json`, words: `../sets/${modelSha}.words.json` };
  let kept = null;
  if (existsSync(file) && existsSync(wordsFile)) {
    try {
      kept = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      kept = null;  // an unreadable file is written again
    }
  }
  if (kept?.inputs === inputs && kept.pronounInputs === pronounInputs) return { ...entry, sentences: kept.sentences.length };

  let set = kept?.inputs === inputs ? kept : null;
  if (!set) {
    const sentences = sentencesText.split('\n').map((line) => line.replace(/\r$/, '')).filter((line) => line);
    const common = ['--model', modelPath, '--sentences', SENTENCE_FILE];
    const profile = runCli(cli, ['profile', ...common]);
    const contribution = runCli(cli, ['contribution', ...common]);
    const { words, ...contributionRest } = contribution.result;
    set = {
      inputs,
      model: { ...profile.result.model, key: modelKey, sha256: modelSha },
      sentences,
      profile: profile.result,
      contribution: { ...contributionRest, words: words.length },
      seconds: { profile: profile.seconds, contribution: contribution.seconds },
    };
    writeFileSync(wordsFile, JSON.stringify({ model: set.model, sentences, words }) + '\n');
    console.log(`make_sets: ${sentences.length} sentences, ${words.length} whole words, with ${modelKey}: `
      + `profile ${profile.seconds.toFixed(1)} s, contribution ${contribution.seconds.toFixed(1)} s`);
  }
  const cases = readPronounCases(pronounText);
  const analyses = cases.map((c) => {
    const out = JSON.parse(execFileSync(cli, ['analyze', '--model', modelPath, '--json', '-'], { input: c.sentence, maxBuffer: 1 << 28 }).toString());
    // The engine's result layout (web/engine/result.js) from the CLI's nested arrays.
    return { tokens: out.tokens, n: out.tokens.length, layers: out.model.layers, heads: out.model.heads, attention: Float32Array.from(out.attention.flat(3)) };
  });
  // How far the file the page runs (the compact one) departs from this model over the same
  // sentences: the posts state it beside every live number.
  let page = null;
  if (pagePath) {
    // The CLI names the file by its path on this machine, which the site does not publish.
    const { model: _path, ...compared } = JSON.parse(execFileSync(cli, ['compare', '--reference', modelPath, '--model', pagePath, '--sentences', SENTENCE_FILE]).toString());
    page = { model: pageKey, ...compared };
  }
  set = { ...set, pronounInputs, pronouns: pronounStudy(cases, analyses), page };
  writeFileSync(file, JSON.stringify(set) + '\n');
  console.log(`make_sets: the pronoun study over ${set.pronouns.cases} sentences -> ${file}`);
  return { ...entry, sentences: set.sentences.length };
}
