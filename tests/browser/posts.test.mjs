// The series' posts in Debian's Chromium: heads.html, confident.html and vocabulary.html each
// load without errors; the heads post's set table is the set statistics the site build wrote
// (attention-cli profile, checked against independent code in tests/py/test_sentence_set.py),
// and its table for the reader's sentence equals shares recomputed here from the engine's rows;
// every other number equals one computed here independently (from the engine's attention rows in
// the page, or from the native CLI tokenizer); the rows they read sum to 1 within 1e-6; head
// labels are visible text, not hover titles; at 360 px nothing scrolls sideways; typed text is
// inert (never markup); the URL hash carries the state as data; and screenshots at 1280 and 390
// px go to test-artifacts/. Needs the assembled site (node scripts/site/build_site.mjs) and, for
// the vocabulary post, build/native/attention-cli.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { HOSTILE_TEXT as HOSTILE, ROW_SUM_TOLERANCE, startSite, waitReady } from './harness.mjs';
import { PRESETS } from '../../web/content.js';
import { failureCause, typeBack } from '../../web/posts/survival.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const artifacts = join(root, 'test-artifacts');
const cli = join(root, 'build', 'native', 'attention-cli');
const vocabPath = join(root, 'model_data', 'vocab.txt');
const LOAD_TIMEOUT_MS = 90000;

let site;
let baseUrl;
let browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  site = await startSite(web);
  ({ baseUrl, browser } = site);
});

after(() => site?.close());

const openPost = (path, size) => site.open(path, size);

const ready = (page, selector, timeout = LOAD_TIMEOUT_MS) => waitReady(page, selector, timeout);

async function noSideScroll(page, name) {
  const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(over <= 0, `${name} scrolls sideways by ${over} px at 360 px`);
}

// Full-page pictures at desktop and phone widths, once the post and its figure (`figure`: a
// widget's tag and a selector inside its shadow root) have drawn.
async function screenshots(path, name, waitFor, figure = null) {
  for (const width of [1280, 390]) {
    const { page, context, errors } = await openPost(path, { width });
    for (const selector of waitFor) await ready(page, selector);
    if (figure) {
      await page.waitForFunction(([tag, inner]) => document.querySelector(tag)?.shadowRoot?.querySelector(inner), figure, { timeout: LOAD_TIMEOUT_MS });
    }
    // The article's stylesheet skips painting figures off screen (content-visibility: auto),
    // which a full-page picture would show as blank space.
    await page.addStyleTag({ content: 'attention-heads, attention-compare { content-visibility: visible !important; }' });
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(artifacts, `post-${name}-${width}.png`), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  }
}

// Labels are visible text: every chip shown, with its text, and no label left to a title.
async function labelsVisible(page, scope) {
  const chips = page.locator(`${scope} span.label[data-kind]`);
  const count = await chips.count();
  assert.ok(count > 0, `no head labels in ${scope}`);
  const texts = await chips.allTextContents();
  assert.ok(texts.every((t) => /^(previous-token|next-token|\[CLS\]\/\[SEP\] sink|self|punctuation|broad|mixed)$/.test(t)), texts.join(','));
  for (let k = 0; k < Math.min(count, 5); ++k) assert.ok(await chips.nth(k).isVisible());
}

// Typed text goes in as text: nothing it spells becomes an element or runs.
async function assertInert(page) {
  const found = await page.evaluate(() => ({
    injected: window.__injected ?? null,
    img: document.querySelectorAll('main img').length,
    script: document.querySelectorAll('main script').length,
    bold: [...document.querySelectorAll('main b')].filter((b) => b.textContent === 'bold').length,
  }));
  assert.deepEqual(found, { injected: null, img: 0, script: 0, bold: 0 });
}

// Per head over results, computed from the attention rows themselves (not the core's row
// statistics or counts): rows, where each row's argmax falls (the partition the posts show),
// word rows and how many of those that have a previous (next) text token put their argmax on
// it, the largest deviation of a row sum from 1, and the core's label per result.
function pageCounts(page, sentences) {
  return page.evaluate(async (texts) => {
    const { getEngine } = await import('/engine/engine.js');
    const { attentionRow, headLabel, ROLE } = await import('/engine/result.js');
    const engine = await getEngine();
    const results = [];
    for (const text of texts) results.push(await engine.analyze(text));
    const out = [];
    let worstSum = 0;
    const { layers, heads } = results[0];
    const special = (r, k) => r.roles[k] === ROLE.cls || r.roles[k] === ROLE.sep;
    for (let layer = 0; layer < layers; ++layer) {
      for (let head = 0; head < heads; ++head) {
        const c = { layer, head, rows: 0, special: 0, self: 0, neighbour: 0, punctuation: 0, other: 0, withPrevious: 0, previous: 0, withNext: 0, next: 0, coreLabels: [], coreCounts: [] };
        for (const r of results) {
          c.coreLabels.push(headLabel(r, layer, head));
          c.coreCounts.push(r.head_profiles[layer * heads + head].counts);
          for (let i = 0; i < r.n; ++i) {
            const row = attentionRow(r, layer, head, i);
            let j = 0;
            let sum = 0;
            for (let k = 0; k < r.n; ++k) {
              sum += row[k];
              if (row[k] > row[j]) j = k;
            }
            worstSum = Math.max(worstSum, Math.abs(sum - 1));
            c.rows += 1;
            if (special(r, j)) c.special += 1;
            else if (j === i) c.self += 1;
            else if (Math.abs(j - i) === 1) c.neighbour += 1;
            else if (r.roles[j] === ROLE.punctuation) c.punctuation += 1;
            else c.other += 1;
            if (r.roles[i] !== ROLE.ordinary) continue;
            if (i >= 1 && !special(r, i - 1)) {
              c.withPrevious += 1;
              c.previous += j === i - 1;
            }
            if (i + 1 < r.n && !special(r, i + 1)) {
              c.withNext += 1;
              c.next += j === i + 1;
            }
          }
        }
        out.push(c);
      }
    }
    return { heads: out, worstSum };
  }, sentences);
}

// The set statistics the site build wrote for the manifest's model (the file the posts show).
function shippedSet() {
  const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
  assert.ok(manifest.sets?.file, 'the manifest names no set statistics; run node scripts/site/build_site.mjs');
  return JSON.parse(readFileSync(join(web, 'models', manifest.sets.file), 'utf8'));
}

async function tableRows(page, scope) {
  return page.locator(`table.data[data-scope="${scope}"] tbody tr`).evaluateAll((trs) => trs.map((tr) => ({ ...tr.dataset })));
}

const close = (a, b, what) => assert.ok(Math.abs(Number(a) - Number(b)) < 1e-9, `${what}: page ${a}, expected ${b}`);

describe('the series\u2019 posts', { timeout: 600000 }, () => {
  test('heads.html: the set table is the shipped set statistics; the reader\u2019s sentence equals the engine; permalinks; hostile input; 360 px', async () => {
    const { page, context, errors } = await openPost('heads.html');
    await ready(page, '#set-table');
    await ready(page, '#yours');
    const set = shippedSet();
    const shown = await tableRows(page, 'set');
    assert.equal(shown.length, set.profile.heads.length);
    shown.forEach((row, k) => {
      const x = set.profile.heads[k];
      const c = x.counts;
      assert.deepEqual([Number(row.layer) + 1, Number(row.head) + 1], [x.layer, x.head]);
      assert.equal(row.label, x.label, `L${x.layer} H${x.head}`);
      assert.equal(row.borderline, String(x.borderline));
      close(row.previous, c.word_previous / c.word_rows_with_previous, 'previous share');
      close(row.next, c.word_next / c.word_rows_with_next, 'next share');
      const partition = row.partition.split(' ').map(Number);
      close(partition.reduce((a, b) => a + b, 0), 100, 'the partition sums to 100%');
      // Each shown share is its count over all rows, to the 0.1% the table prints.
      [c.target_special, c.target_self, c.target_previous + c.target_next, c.target_punctuation, c.target_other].forEach((count, q) => {
        assert.ok(Math.abs(partition[q] - (100 * count) / c.rows) <= 0.1 + 1e-9, `partition column ${q}: ${partition[q]} vs ${(100 * count) / c.rows}`);
      });
    });
    // The title's counts: heads whose whole interval of the share lies at or above 90% on the set
    // and on the held-out sentences.
    const words = ['no', 'one', 'two', 'three', 'four', 'five', 'six'];
    const held = set.heldout.profile;
    const both = (key) => set.profile.heads.filter((x, k) => x.shares[key].estimate.low >= 0.9 && held.heads[k].shares[key].estimate.low >= 0.9).length;
    const previous = both('word_previous');
    const next = both('word_next');
    const title = await page.locator('h1').textContent();
    assert.match(title, new RegExp(`over ${set.profile.sentences} sentences and ${held.sentences} held out, ${words[previous]} almost always says? \u201cthe previous token\u201d and ${words[next]} \u201cthe next token\u201d`));
    // The sharp heads the last section names: at least 0.9 on one neighbour for most word rows, on both sets.
    const sharp = set.profile.heads.filter((x, k) => x.sharp_neighbour.estimate.low > 0.5 && held.heads[k].sharp_neighbour.estimate.low > 0.5);
    // A label that differs on the held-out sentences is named with both labels.
    const conclusionText = await page.locator('[data-fact="conclusion"]').textContent();
    set.profile.heads.forEach((x, k) => {
      if (x.label === held.heads[k].label) return;
      assert.ok(conclusionText.includes(`L${x.layer} H${x.head} is ${x.label} on the set and ${held.heads[k].label} there`), conclusionText);
    });
    const sharpText = await page.locator('[data-fact="sharpHeads"]').textContent();
    assert.ok(sharp.length >= 1 && sharp.every((x) => sharpText.includes(`layer ${x.layer}, head ${x.head}`) || sharpText.includes(`L${x.layer} H${x.head}`)), sharpText);
    assert.equal(await page.locator('[data-fact="onlyPrevious"]').textContent(), `${words[previous]} ${previous === 1 ? 'head does' : 'heads do'}`);
    assert.ok(set.profile.sentences >= 200, `the set has ${set.profile.sentences} sentences`);
    // The reader's sentence: the core's counts and label, and the shares recomputed here from the rows.
    const mine = await pageCounts(page, [set.sentences[0]]);
    assert.ok(mine.worstSum <= ROW_SUM_TOLERANCE, `a row sums to 1 \u00b1 ${mine.worstSum}`);
    // One name for the post: its title, its heading and the article's link to it; the count of
    // heads is in the subtitle.
    const totalWord = await page.locator('[data-fact="totalWord"]').textContent();
    assert.ok(title.startsWith(`Every head, and what each one does: ${totalWord} heads over `), title);
    assert.equal(await page.title(), 'Every head, and what each one does');
    (await tableRows(page, 'yours')).forEach((row, k) => {
      const c = mine.heads[k];
      assert.equal(row.label, c.coreLabels[0]);
      close(row.previous, c.withPrevious ? c.previous / c.withPrevious : 0, 'previous share (yours)');
      close(row.next, c.withNext ? c.next / c.withNext : 0, 'next share (yours)');
      const partition = row.partition.split(' ').map(Number);
      [c.special, c.self, c.neighbour, c.punctuation, c.other].forEach((count, q) => {
        assert.ok(Math.abs(partition[q] - (100 * count) / c.rows) <= 0.1 + 1e-9, `yours, partition column ${q}`);
      });
      assert.equal(c.coreCounts[0].rows, c.rows);
    });
    await labelsVisible(page, '#set-table');
    await labelsVisible(page, '#yours');
    // The widget draws the same sentence.
    await page.waitForFunction(() => document.querySelector('attention-heads')?.shadowRoot?.querySelector('.multiples'), null, { timeout: LOAD_TIMEOUT_MS });

    // Hostile input, then the permalink it made.
    await page.fill('#sentence', HOSTILE);
    await page.press('#sentence', 'Enter');
    await page.waitForFunction((s) => document.getElementById('yours').dataset.sentence === s, HOSTILE);
    await assertInert(page);
    assert.ok((await page.locator('#yours table caption').textContent()).length > 0);
    const link = page.url();
    assert.equal(new URLSearchParams(new URL(link).hash.slice(1)).get('s'), HOSTILE);
    // An empty sentence is refused with a message; the table stays.
    await page.fill('#sentence', '   ');
    await page.press('#sentence', 'Enter');
    assert.match(await page.locator('#yours .error-line').first().textContent(), /Type a sentence/);
    assert.equal(await page.locator('#yours').getAttribute('data-sentence'), HOSTILE);
    assert.deepEqual(errors, []);
    await context.close();

    const second = await openPost(new URL(link).pathname.slice(1) + new URL(link).hash, { width: 360, height: 740 });
    await ready(second.page, '#yours');
    assert.equal(await second.page.locator('#yours').getAttribute('data-sentence'), HOSTILE);
    await assertInert(second.page);
    await noSideScroll(second.page, 'heads.html');
    assert.deepEqual(second.errors, []);
    await second.context.close();
    await screenshots('heads.html', 'heads', ['#set-table', '#yours'], ['attention-heads', '.multiples']);
  });

  test('confident.html: the most confident head for every word equals the engine\u2019s; the shares; permalinks; 360 px', async () => {
    const { page, context, errors } = await openPost('confident.html');
    await ready(page, '#winners');
    await ready(page, '#yours');
    // For every word of the reader's sentence: the head of largest ratio to uniform, from the
    // attention rows.
    const expected = await page.evaluate(async (texts) => {
      const { getEngine } = await import('/engine/engine.js');
      const { attentionRow, ROLE } = await import('/engine/result.js');
      const engine = await getEngine();
      const words = [];
      let worstSum = 0;
      for (const text of texts) {
        const r = await engine.analyze(text);
        for (let i = 0; i < r.n; ++i) {
          if (r.roles[i] !== ROLE.ordinary) continue;
          let best = null;
          for (let layer = 0; layer < r.layers; ++layer) {
            for (let head = 0; head < r.heads; ++head) {
              const row = attentionRow(r, layer, head, i);
              let j = 0;
              let sum = 0;
              for (let k = 0; k < r.n; ++k) {
                sum += row[k];
                if (row[k] > row[j]) j = k;
              }
              worstSum = Math.max(worstSum, Math.abs(sum - 1));
              if (!best || row[j] * r.n > best.ratio) best = { layer, head, argmax: j, max: row[j], ratio: row[j] * r.n };
            }
          }
          words.push({ text, token: i, ...best, positional: Math.abs(best.argmax - i) === 1 });
        }
      }
      return { words, worstSum };
    }, [PRESETS[0]]);
    assert.ok(expected.worstSum <= ROW_SUM_TOLERANCE);
    // Over the set and the held-out sentences the post shows the build's numbers
    // (tests/py/claims_check.py re-derives them with independent code): the page must show
    // those, not numbers of its own.
    const set = await page.evaluate(async () => (await (await import('/engine/sets.js')).loadSetStatistics()).set);
    const c = set.profile.confident;
    const d = set.heldout.profile.confident;
    const pct = (v) => `${(100 * v).toFixed(1)}%`;
    assert.equal(await page.locator('[data-fact="titleCounts"]').textContent(),
      `for ${pct(c.positional_share.value)} of ${c.words.toLocaleString('en-US')} words in ${set.profile.sentences} sentences, and ${pct(d.positional_share.value)} of ${d.words.toLocaleString('en-US')} held out`);
    assert.equal(await page.locator('[data-fact="positionalShare"]').textContent(), pct(c.positional_share.value));
    assert.match(await page.locator('[data-fact="positionalInterval"]').textContent(), new RegExp(`${pct(c.positional_share.low)} to ${pct(c.positional_share.high)}`));
    const claim = await page.locator('[data-fact="titleClaim"]').textContent();
    assert.equal(claim, c.positional_share.low > 0.5 && d.positional_share.low > 0.5 ? 'The most confident head is a positional one' : 'The most confident head is not always a positional one');
    for (const row of await tableRows(page, 'winners')) assert.equal(Number(row.wins), c.wins[Number(row.layer) * set.profile.model.heads + Number(row.head)]);
    // The reader's sentence, word by word.
    const first = expected.words;
    const rows = await tableRows(page, 'words');
    assert.equal(rows.length, first.length);
    rows.forEach((row, k) => {
      const w = first[k];
      assert.deepEqual([Number(row.token), Number(row.layer), Number(row.head), Number(row.argmax)], [w.token, w.layer, w.head, w.argmax]);
      close(row.max, w.max, 'largest weight');
      assert.equal(row.positional, String(w.positional));
      assert.ok(!['previous-token', 'next-token', 'self', '[CLS]/[SEP] sink'].includes(row.contentLabel), `content head labelled ${row.contentLabel}`);
    });
    await labelsVisible(page, '#winners');
    await labelsVisible(page, '#yours');
    // The compare figure's rows sum to 1.
    await page.waitForFunction(() => document.querySelector('attention-compare')?.shadowRoot?.querySelector('table.bars tbody tr'), null, { timeout: LOAD_TIMEOUT_MS });
    const sums = await page.locator('attention-compare').evaluate((el) => [...el.shadowRoot.querySelectorAll('table.bars')].map((t) => [...t.querySelectorAll('tbody tr')].reduce((a, tr) => a + Number(tr.dataset.value), 0)));
    assert.ok(sums.length >= 2 && sums.every((s) => Math.abs(s - 1) <= ROW_SUM_TOLERANCE), `compare rows sum to ${sums}`);
    // Value-weighted (a_ij x ||W_O v_j||): the build's count.
    await ready(page, '#value-weighted');
    assert.equal(await page.locator('#value-weighted').getAttribute('data-positional'), String(c.value_weighted_positional));
    assert.match(await page.locator('[data-fact="vwPositional"]').textContent(), new RegExp(`^${c.value_weighted_positional.toLocaleString('en-US')} of ${c.words.toLocaleString('en-US')}$`));

    // A word's link is a permalink: sentence and word in the hash.
    const target = rows[3];
    await page.locator(`table.data[data-scope="words"] tbody tr[data-token="${target.token}"] a`).click();
    await page.waitForFunction((t) => document.querySelector(`table.data[data-scope="words"] tr[data-token="${t}"]`)?.getAttribute('aria-current') === 'true', target.token);
    const params = new URLSearchParams(new URL(page.url()).hash.slice(1));
    assert.deepEqual([params.get('s'), params.get('w')], [PRESETS[0], target.token]);
    await page.fill('#sentence', HOSTILE);
    await page.press('#sentence', 'Enter');
    await page.waitForFunction((s) => document.getElementById('yours').dataset.sentence === s, HOSTILE);
    await assertInert(page);
    assert.deepEqual(errors, []);
    await context.close();

    const second = await openPost(`confident.html#${new URLSearchParams({ s: PRESETS[1], w: '4' })}`, { width: 360, height: 740 });
    await ready(second.page, '#yours');
    assert.equal(await second.page.locator('table.data[data-scope="words"] tr[aria-current="true"]').getAttribute('data-token'), '4');
    await noSideScroll(second.page, 'confident.html');
    assert.deepEqual(second.errors, []);
    await second.context.close();
    await screenshots('confident.html', 'confident', ['#winners', '#yours'], ['attention-compare', 'table.bars']);
  });

  test('vocabulary.html: the survival count and causes equal the CLI tokenizer\u2019s; the playground; permalinks; 360 px', async () => {
    assert.ok(existsSync(cli), `${cli} is missing: run scripts/build.sh native`);
    const vocab = readFileSync(vocabPath, 'utf8').split('\n').slice(0, -1);
    const cliIds = (texts) => {
      const lines = execFileSync(cli, ['tokenize', '--vocab', vocabPath, '--lines'], { input: `${texts.join('\n')}\n`, maxBuffer: 1 << 28 }).toString().split('\n');
      return texts.map((_, k) => lines[k].trim().split(' ').map(Number));
    };
    const cliTokens = (text) => JSON.parse(execFileSync(cli, ['tokenize', '--vocab', vocabPath, '--json', '-'], { input: text }).toString()).tokens;
    const native = await typeBack(vocab, cliIds);
    const causes = {};
    for (const f of native.failures) {
      const cause = failureCause(f, cliTokens(f.text), vocab.indexOf('[UNK]'));
      causes[cause] = (causes[cause] ?? 0) + 1;
    }

    const { page, context, errors } = await openPost('vocabulary.html');
    await ready(page, '#groups');
    assert.equal(await page.locator('body').getAttribute('data-failed'), String(native.failures.length));
    assert.equal(await page.locator('[data-fact="titleCounts"]').textContent(), `${native.failures.length.toLocaleString('en-US')} of 30,522, typed back in your browser`);
    assert.equal(await page.locator('[data-fact="survivors"]').textContent(), native.survivors.toLocaleString('en-US'));
    const shown = Object.fromEntries(await page.locator('#groups [data-cause]').evaluateAll((els) => els.map((e) => [e.dataset.cause, Number(e.dataset.count)])));
    for (const [cause, count] of Object.entries(causes)) assert.equal(shown[cause], count, cause);
    assert.equal(shown.greedy ?? 0, causes.greedy ?? 0);
    assert.match(await page.locator('[data-fact="typedMs"]').textContent(), /^[\d,]+ ms$/);

    // The playground: its pieces equal the CLI's for the default text and for typed text.
    await ready(page, '#pieces-out');
    const check = async (text) => {
      await page.waitForFunction((t) => document.getElementById('pieces-out')?.dataset.text === t, text);
      const ids = await page.locator('#pieces-out .piece').evaluateAll((els) => els.map((e) => Number(e.dataset.id)));
      assert.deepEqual(ids, cliTokens(text).map((t) => t.id), text);
    };
    await check(await page.locator('#typed').inputValue());
    const notes = (await page.locator('table.data[data-scope="pieces"] tbody').textContent());
    assert.match(notes, /accents stripped: \u201cCaf\u00e9\u201d \u2192 \u201ccafe\u201d/);
    assert.match(notes, /\[UNK\]/);
    assert.match(notes, /CJK ideograph/);
    await page.fill('#typed', HOSTILE);
    await check(HOSTILE);
    await assertInert(page);
    await page.locator('#typed').dispatchEvent('change');
    await page.waitForFunction((t) => new URLSearchParams(location.hash.slice(1)).get('t') === t, HOSTILE);
    assert.deepEqual(errors, []);
    await context.close();

    const typed = 'Déjà\u200bvu 東京 🙂';
    const second = await openPost(`vocabulary.html#${new URLSearchParams({ t: typed })}`, { width: 360, height: 740 });
    await ready(second.page, '#pieces-out');
    assert.equal(await second.page.locator('#typed').inputValue(), typed);
    assert.match(await second.page.locator('#pieces-out').textContent(), /Removed before matching .*U\+200B/);
    await noSideScroll(second.page, 'vocabulary.html');
    assert.deepEqual(second.errors, []);
    await second.context.close();
    await screenshots('vocabulary.html', 'vocabulary', ['#groups', '#pieces-out']);
  });
});
