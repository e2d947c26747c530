// The model chooser's closed line is in each page's HTML (so that the page does not move when
// web/runtime/model-chooser.js fills it in), with the summary that module would write: every page
// that starts the engine has it once, in the same words.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

import { CHOOSER_SUMMARY } from '../../web/runtime/model-chooser.js';

const web = new URL('../../web/', import.meta.url);

test('every page that starts the engine holds the chooser\u2019s closed line, with the module\u2019s summary', () => {
  const pages = readdirSync(web).filter((name) => name.endsWith('.html'));
  const engines = pages.filter((name) => readFileSync(new URL(name, web), 'utf8').includes('src="start-engine.js"'));
  assert.ok(engines.length >= 6, `only ${engines.length} pages start the engine`);
  const line = `<details class="model-chooser" id="model-chooser"><summary>${CHOOSER_SUMMARY}</summary></details>`;
  for (const name of engines) {
    const html = readFileSync(new URL(name, web), 'utf8');
    assert.equal(html.split(line).length - 1, 1, `${name} does not hold the chooser's line once`);
  }
});
