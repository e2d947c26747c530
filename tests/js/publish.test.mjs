// The publish step (scripts/site/publish.mjs) deletes nothing of an author's: a folder that
// holds anything but an earlier publish's files is refused untouched; republishing replaces only
// the files on its list; a list naming a path outside the folder removes nothing there. The
// folder carries the terms (LICENSE, NOTICE) and the bundle's source map. Needs the assembled
// site: node scripts/site/build_site.mjs
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { MARKER, publish } from '../../scripts/site/publish.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'attention-publish-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('a folder with an author\'s files and no publish list is refused, and nothing in it changes', () => {
  const blog = join(scratch, 'static');
  mkdirSync(join(blog, 'css'), { recursive: true });
  writeFileSync(join(blog, 'css', 'site.css'), 'body{}');
  writeFileSync(join(blog, 'favicon.ico'), 'icon');
  assert.throws(() => publish({ out: blog, quiet: true }), /is not empty and was not written by publish.*nothing was changed/);
  assert.deepEqual(readdirSync(blog).sort(), ['css', 'favicon.ico']);
  assert.equal(readFileSync(join(blog, 'css', 'site.css'), 'utf8'), 'body{}');
});

test('republishing replaces only what publish wrote; the terms and the source map travel with the files', () => {
  const out = join(scratch, 'attention');
  const first = publish({ out, quiet: true });
  const paths = first.files.map((f) => f.path);
  for (const path of ['LICENSE', 'NOTICE', 'dist/attention-widgets.js.map', 'css/embed.css', 'embed.html']) {
    assert.ok(paths.includes(path) && existsSync(join(out, path)), `${path} is not published`);
  }
  const listed = readFileSync(join(out, MARKER), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  assert.deepEqual(listed.sort(), [...paths, MARKER].sort());
  writeFileSync(join(out, 'notes.md'), 'mine');
  writeFileSync(join(out, 'engine', 'extra.js'), 'mine too');
  const again = publish({ out, quiet: true });
  assert.equal(again.files.length, first.files.length);
  assert.equal(readFileSync(join(out, 'notes.md'), 'utf8'), 'mine');
  assert.equal(readFileSync(join(out, 'engine', 'extra.js'), 'utf8'), 'mine too');
});

test('a publish list that names paths outside its folder deletes nothing outside', () => {
  const out = join(scratch, 'crafted');
  mkdirSync(out);
  const outside = join(scratch, 'outside.txt');
  writeFileSync(outside, 'keep');
  writeFileSync(join(out, MARKER), `../outside.txt\n${outside}\n.\n`);
  publish({ out, quiet: true });
  assert.equal(readFileSync(outside, 'utf8'), 'keep');
});
