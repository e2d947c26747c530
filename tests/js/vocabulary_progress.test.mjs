// The prediction and contribution figures' line about the vocabulary table's download
// (withVocabularyProgress, web/widgets/attention-prediction.js), in Node under happy-dom: it is
// empty once the work is done, even where a progress report was still on its way then (the
// reader saw "downloading... 954 of 954 files" under the finished prediction), and its sizes are
// the table's, from the engine's own count.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { closeWindow } from './dom_shim.mjs';
import { withVocabularyProgress } from '../../web/widgets/attention-prediction.js';

after(closeWindow);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test('the download line is empty once the work is done, whatever report was on its way', async () => {
  let loaded = 11;
  // Each report is a slow round trip to the worker: the one asked just before the work ends
  // answers after it.
  const engine = {
    shardStats: async () => {
      const answer = { loaded, count: 954, total: 14814047, bytes: 15000000 };
      await sleep(200);
      return answer;
    },
  };
  const said = [];
  const result = await withVocabularyProgress(engine, async () => {
    await sleep(650);
    loaded = 954;
    return 'predicted';
  }, (text) => said.push(text));
  assert.equal(result, 'predicted');
  assert.match(said[0], /14\.8 MB/, said[0]);
  assert.ok(said.some((text) => /are here/.test(text)), 'no progress was reported');
  await sleep(600);
  assert.equal(said[said.length - 1], '', `the line still says: ${said[said.length - 1]}`);
  assert.ok(said.every((text) => !/15\.0 MB/.test(text)), 'a size other than the table\u2019s');
});

test('nothing is said where the table is already here', async () => {
  const said = [];
  await withVocabularyProgress({ shardStats: async () => ({ loaded: 954, count: 954, total: 1, bytes: 1 }) }, async () => 1, (text) => said.push(text));
  assert.deepEqual(said, []);
});
