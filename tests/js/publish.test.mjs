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

test('the README\u2019s table of published files gives their sizes within 10% (or 2 kB)', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const table = readme.slice(readme.indexOf('**Publishing.**'), readme.indexOf('A reader\u2019s first view through an embed'.replace('\u2019', "'")));
  const out = join(scratch, 'sizes');
  const { files } = publish({ out, quiet: true });
  const size = (path) => files.filter((f) => f.path === path || (path.endsWith('/*.bin') && f.path.startsWith(path.slice(0, -5)) && f.path.endsWith('.bin')))
    .reduce((a, f) => a + f.bytes, 0);
  const toBytes = (value, unit) => Number(value) * (unit === 'MB' ? 1e6 : 1e3);
  let checked = 0;
  for (const line of table.split('\n').filter((l) => l.startsWith('| `') && !l.includes('--precision'))) {
    const [, names, sizes] = line.split('|').map((c) => c.trim());
    const paths = [...names.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const stated = [...sizes.matchAll(/([\d.]+)(?: \+ ([\d.]+))? (MB|kB)/g)][0];
    assert.ok(stated, `no size in: ${line}`);
    const parts = stated[2] ? [stated[1], stated[2]] : [stated[1]];
    const claimed = parts.map((v) => toBytes(v, stated[3]));
    const actual = parts.length === paths.length ? paths.map(size) : [paths.reduce((a, p) => a + size(p), 0)];
    assert.equal(claimed.length, actual.length, line);
    claimed.forEach((c, k) => {
      assert.ok(Math.abs(c - actual[k]) <= Math.max(0.1 * actual[k], 2000), `${paths.join(', ')}: the README says ${c} bytes, publish writes ${actual[k]}`);
      checked += 1;
    });
  }
  assert.ok(checked >= 9, `only ${checked} sizes checked`);
});
