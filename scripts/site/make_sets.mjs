// Writes the series' set statistics: the native CLI's `profile`, `contribution` (once with
// each head zeroed, once with it replaced by its mean output) and `lens-set` (how well each
// lens of the attention agrees with occluding words) over the fixed sentence set
// (web/posts/sentences.txt) and over the held-out set (web/posts/heldout.txt: sentences written
// before any result was computed on them, kept apart so that a claim the posts make from the
// first set can be checked on sentences that did not shape it), with one model file, the f32
// reference where there is one. The posts show these at once, so no reader waits minutes for a
// measurement the build can make once. Two files under web/sets/, named by the model file's
// sha256 so that a post never shows another model's numbers: NAME.json (the sentences, every
// head's profile with its intervals, where each word's most confident head points, the
// contribution summaries and per-head tables, the same under `heldout`, and the article's
// pronoun study over web/posts/pronouns.tsv and its held-out cases, scripts/site/pronoun_study.mjs,
// and how far the page's compact file departs from the f32 one on the same sentences:
// attention-cli compare) and NAME.words.json (every word's measurement on the first set, which
// the page offers as a download but never fetches by itself), with NAME.words.lenses.json (every
// target's faithfulness on the first set and each sentence's share sums, the lenses post's
// download) and the files claims_check reads (extraWordFiles). A file whose inputs (model,
// sentences, CLI) are unchanged is kept, since the contribution passes take minutes.
// Usage (from build_site.mjs): makeSets({ modelPath, modelKey, cli, outDir })
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { HELDOUT_PRONOUN_FILE, PRONOUN_FILE, pronounStudy, readPronounCases } from './pronoun_study.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SENTENCE_FILE = join(root, 'web', 'posts', 'sentences.txt');
export const HELDOUT_FILE = join(root, 'web', 'posts', 'heldout.txt');

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

function runCli(cli, args) {
  const started = Date.now();
  const out = execFileSync(cli, [...args, '--json', '--progress'], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
  return { result: JSON.parse(out.toString()), seconds: (Date.now() - started) / 1000 };
}

const readSentences = (text) => text.split('\n').map((line) => line.replace(/\r$/, '')).filter((line) => line);

// profile, contribution with zero- and mean-ablation, and lens-set over one sentence file:
// {part, words, others}, the words (zero-ablation) kept apart for the download, and the other
// runs' per-word (per-target) rows in `others`.
function measureSet(cli, modelPath, file, modelKey) {
  const common = ['--model', modelPath, '--sentences', file];
  const profile = runCli(cli, ['profile', ...common]);
  const zero = runCli(cli, ['contribution', ...common]);
  const mean = runCli(cli, ['contribution', ...common, '--ablation', 'mean']);
  const lensSet = runCli(cli, ['lens-set', ...common]);
  const { words, ...contribution } = zero.result;
  const { words: meanWords, ...contributionMean } = mean.result;
  const { targets, per_sentence: perSentence, ...lenses } = lensSet.result;
  // Whether the two ablations name the same most consequential head for a word (the first head
  // of largest |p_removed - p_full|, as the summary chooses).
  const mostConsequential = (w) => {
    let best = 0;
    w.p_removed.forEach((p, k) => {
      if (Math.abs(p - w.p_full) > Math.abs(w.p_removed[best] - w.p_full)) best = k;
    });
    return best;
  };
  const same = words.filter((w, k) => mostConsequential(w) === mostConsequential(meanWords[k])).length;
  console.log(`make_sets: ${profile.result.sentences} sentences of ${file.split('/').at(-1)}, ${words.length} whole words, with ${modelKey}: `
    + `profile ${profile.seconds.toFixed(1)} s, contribution ${zero.seconds.toFixed(1)} s, with mean-ablation ${mean.seconds.toFixed(1)} s, `
    + `lens-set (${targets.length} targets) ${lensSet.seconds.toFixed(1)} s`);
  return {
    part: {
      profile: profile.result,
      contribution: { ...contribution, words: words.length },
      contribution_mean: { ...contributionMean, words: meanWords.length, same_most_consequential: same },
      lenses: { ...lenses, targets: targets.length },
      seconds: { profile: profile.seconds, contribution: zero.seconds, contribution_mean: mean.seconds, lenses: lensSet.seconds },
    },
    words,
    others: { mean: meanWords, lenses: { targets, per_sentence: perSentence } },
  };
}

// The per-word measurements beside NAME.words.json: the held-out set's and the mean-ablation
// runs', and lens-set's per-target rows and per-sentence sums on both sets
// (tests/py/claims_check.py re-derives every summary from them; of these only the first set's
// lenses file is offered as a download, by the lenses post).
export const extraWordFiles = (sha) => ({
  mean: `${sha}.words.mean.json`, heldout: `${sha}.words.heldout.json`, heldoutMean: `${sha}.words.heldout.mean.json`,
  lenses: `${sha}.words.lenses.json`, heldoutLenses: `${sha}.words.heldout.lenses.json`,
});

// The pronoun study over one file of cases: each sentence analysed by the CLI.
function pronounPart(cli, modelPath, text) {
  const cases = readPronounCases(text);
  const analyses = cases.map((c) => {
    const out = JSON.parse(execFileSync(cli, ['analyze', '--model', modelPath, '--json', '-'], { input: c.sentence, maxBuffer: 1 << 28 }).toString());
    // The engine's result layout (web/engine/result.js) from the CLI's nested arrays.
    return { tokens: out.tokens, n: out.tokens.length, layers: out.model.layers, heads: out.model.heads, attention: Float32Array.from(out.attention.flat(3)) };
  });
  return pronounStudy(cases, analyses);
}

// Returns the manifest's `sets` entry: {model, sha256, file, words, lens_words, sentences}.
export function makeSets({ modelPath, modelKey, cli, outDir, pagePath = null, pageKey = null }) {
  const modelSha = sha256(readFileSync(modelPath));
  const sentencesText = readFileSync(SENTENCE_FILE, 'utf8');
  const heldoutText = readFileSync(HELDOUT_FILE, 'utf8');
  const pronounText = readFileSync(PRONOUN_FILE, 'utf8');
  const heldoutPronounText = readFileSync(HELDOUT_PRONOUN_FILE, 'utf8');
  // The CLI and these scripts: a change to how a number is made makes it again.
  const cliSha = sha256(Buffer.concat([cli, fileURLToPath(import.meta.url), join(root, 'scripts', 'site', 'pronoun_study.mjs')]
    .map((path) => readFileSync(path))));
  // What each part is computed from: a part whose inputs are unchanged is kept.
  const inputs = sha256(`${modelSha}\n${sha256(sentencesText)}\n${sha256(heldoutText)}\n${cliSha}`);
  const pagePart = pagePath ? sha256(readFileSync(pagePath)) : 'none';
  const pronounInputs = sha256(`${modelSha}\n${sha256(pronounText)}\n${sha256(heldoutPronounText)}\n${sha256(sentencesText)}\n${pagePart}\n${cliSha}`);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `${modelSha}.json`);
  const wordsFile = join(outDir, `${modelSha}.words.json`);
  const entry = {
    model: modelKey, sha256: modelSha, file: `../sets/${modelSha}.json`, words: `../sets/${modelSha}.words.json`,
    lens_words: `../sets/${extraWordFiles(modelSha).lenses}`,
  };
  let kept = null;
  if (existsSync(file) && existsSync(wordsFile) && Object.values(extraWordFiles(modelSha)).every((name) => existsSync(join(outDir, name)))) {
    try {
      kept = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      kept = null;  // an unreadable file is written again
    }
  }
  if (kept?.inputs === inputs && kept.pronounInputs === pronounInputs) return { ...entry, sentences: kept.sentences.length };

  let set = kept?.inputs === inputs ? kept : null;
  if (!set) {
    const sentences = readSentences(sentencesText);
    const main = measureSet(cli, modelPath, SENTENCE_FILE, modelKey);
    const heldout = measureSet(cli, modelPath, HELDOUT_FILE, modelKey);
    set = {
      inputs,
      model: { ...main.part.profile.model, key: modelKey, sha256: modelSha },
      sentences,
      ...main.part,
      heldout: { file: 'web/posts/heldout.txt', sentences: readSentences(heldoutText), ...heldout.part },
    };
    writeFileSync(wordsFile, JSON.stringify({ model: set.model, sentences, words: main.words }) + '\n');
    const extra = extraWordFiles(modelSha);
    const heldoutSentences = readSentences(heldoutText);
    writeFileSync(join(outDir, extra.mean), JSON.stringify({ model: set.model, ablation: 'mean', sentences, words: main.others.mean }) + '\n');
    writeFileSync(join(outDir, extra.heldout), JSON.stringify({ model: set.model, ablation: 'zero', sentences: heldoutSentences, words: heldout.words }) + '\n');
    writeFileSync(join(outDir, extra.heldoutMean), JSON.stringify({ model: set.model, ablation: 'mean', sentences: heldoutSentences, words: heldout.others.mean }) + '\n');
    writeFileSync(join(outDir, extra.lenses), JSON.stringify({ model: set.model, sentences, ...main.others.lenses }) + '\n');
    writeFileSync(join(outDir, extra.heldoutLenses), JSON.stringify({ model: set.model, sentences: heldoutSentences, ...heldout.others.lenses }) + '\n');
  }
  // How far the file the page runs (the compact one) departs from this model over the same
  // sentences: the posts state it beside every live number.
  let page = null;
  if (pagePath) {
    // The CLI names the file by its path on this machine, which the site does not publish.
    const { model: _path, ...compared } = JSON.parse(execFileSync(cli, ['compare', '--reference', modelPath, '--model', pagePath, '--sentences', SENTENCE_FILE]).toString());
    page = { model: pageKey, ...compared };
  }
  set = {
    ...set,
    pronounInputs,
    pronouns: pronounPart(cli, modelPath, pronounText),
    heldout: { ...set.heldout, pronouns: pronounPart(cli, modelPath, heldoutPronounText) },
    page,
  };
  writeFileSync(file, JSON.stringify(set) + '\n');
  console.log(`make_sets: the pronoun study over ${set.pronouns.cases} + ${set.heldout.pronouns.cases} held-out sentences -> ${file}`);
  return { ...entry, sentences: set.sentences.length };
}
