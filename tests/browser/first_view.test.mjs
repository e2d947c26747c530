// The article's first view does not fall into the trap its own series warns about: it opens on
// a word and a head that the engine does not label previous-token, next-token, self or
// [CLS]/[SEP] sink, with the word's largest weight on another word (the rule the page states,
// SELECTION_RULE in web/widgets/data.js), in the precomputed example and live; a click on
// another word moves to that word's own content head until the reader chooses a head, and then
// keeps the reader's head; the prose names the labels and says when the sharpest head of all is
// positional; the paragraph under Figure 1 states the opening view's own numbers and the pronoun
// study's as the site build computed them. Needs the assembled site (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figuresDrawn, startSite } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const LOAD_TIMEOUT_MS = 60000;
const NOT_CONTENT = ['previous-token', 'next-token', 'self', '[CLS]/[SEP] sink'];

let site;
let baseUrl;
let browser;

before(async () => {
  site = await startSite(web);
  ({ baseUrl, browser } = site);
});

after(() => site?.close());

async function shownRow(page) {
  return page.locator('#instrument table.bars').evaluate((t) => ({
    sentence: t.dataset.sentence, layer: Number(t.dataset.layer), head: Number(t.dataset.head), token: Number(t.dataset.token),
  }));
}

// The engine's label of the shown head, where the row's largest weight is, and the rule's own
// choice for the token, computed in the page from the shared engine.
async function judge(page, shown) {
  return page.evaluate(async (s) => {
    const { getEngine } = await import('/engine/engine.js');
    const { headLabel, rowStat, ROLE } = await import('/engine/result.js');
    const { resolveSelection } = await import('/widgets/data.js');
    const result = await (await getEngine()).analyze(s.sentence);
    const argmax = rowStat(result, s.layer, s.head, s.token).argmax;
    const rule = resolveSelection(result, { token: s.token, layer: -1, head: -1 }, '');
    return {
      label: headLabel(result, s.layer, s.head), argmax, argmaxRole: result.roles[argmax], ordinary: ROLE.ordinary,
      rule: [rule.layer, rule.head], tokens: result.tokens.map((t) => t.text),
    };
  }, shown);
}

function assertContent(verdict, shown, where) {
  assert.ok(verdict.label && !NOT_CONTENT.includes(verdict.label), `${where}: the first view is on a ${verdict.label} head (layer ${shown.layer + 1}, head ${shown.head + 1})`);
  assert.ok(Math.abs(verdict.argmax - shown.token) > 1, `${where}: the row's largest weight is on a neighbour or itself`);
  assert.equal(verdict.argmaxRole, verdict.ordinary, `${where}: the row's largest weight is on a marker or punctuation`);
}

describe('the article\u2019s first view', { timeout: 180000 }, () => {
  test('opens on a content head, example and live; clicks follow the rule until a head is chosen, and a button returns to it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(baseUrl);
    await page.locator('#instrument table.bars').waitFor({ timeout: LOAD_TIMEOUT_MS });
    const example = await shownRow(page);
    // While the example is shown the sentence box is disabled, visibly and for assistive
    // technology, and a line beside it says why; typing goes nowhere it could be lost.
    const box = page.locator('#instrument input#sentence');
    assert.ok(await box.isDisabled(), 'the sentence box takes typing while the figures show the example');
    assert.match(await page.locator('#instrument p.example-note').textContent(), /example computed ahead of time\. The sentence box works once/);
    await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
    assert.ok(await box.isDisabled(), 'the sentence box takes typing before the instrument is open');
    await page.waitForFunction(() => /once you open the instrument/.test(document.getElementById('instrument').shadowRoot.querySelector('p.example-note')?.textContent));
    assertContent(await judge(page, example), example, 'example');

    await page.click('#open');
    await page.locator('#instrument .status[data-mode="live"]').waitFor();
    assert.ok(await box.isEnabled(), 'the sentence box is still disabled once the instrument is open');
    assert.match(await page.locator('#instrument p.example-note').textContent(), /^Type any sentence/);

    await figuresDrawn(page);
    // Figure 4's three panels share one scale, 0 to 1: every bar's length over its track is its
    // weight, in every panel, so a broad row's bars are visibly shorter than a sharp row's.
    const bars = await page.locator('attention-compare').evaluate((el) => [...el.shadowRoot.querySelectorAll('section.panel table.bars tbody tr:not([hidden])')]
      .map((tr) => ({ value: Number(tr.dataset.value), bar: tr.querySelector('.bar').getBoundingClientRect().width, track: tr.querySelector('td.track').getBoundingClientRect().width })));
    assert.ok(bars.length >= 3 * 3, 'Figure 4 has no bars');
    let worst = 0;
    for (const b of bars) worst = Math.max(worst, Math.abs(b.bar / b.track - b.value));
    console.log(`# Figure 4: ${bars.length} bars over three panels, largest |length / track - weight| ${worst.toFixed(4)}`);
    assert.ok(worst <= 0.01, `a bar of Figure 4 is ${worst} of its track away from its weight`);
    const live = await shownRow(page);
    assert.deepEqual(live, example, 'the live view opened elsewhere than the example');
    const verdict = await judge(page, live);
    assertContent(verdict, live, 'live');
    assert.deepEqual([live.layer, live.head], verdict.rule);

    // The rule is stated on the page, and the prose names the labels and the sharpest head of all.
    const rule = await page.locator('[data-fact="selectionRule"]').textContent();
    const { SELECTION_RULE } = await page.evaluate(() => import('/widgets/data.js'));
    assert.equal(rule, SELECTION_RULE);
    assert.equal(await page.locator('[data-fact="sharpestLabel"]').textContent(), verdict.label);
    assert.ok(await page.locator('[data-fact="sharpestLabel"]').isVisible());
    const overall = await page.locator('[data-fact="overallSentence"]').textContent();
    assert.match(overall, /sharpest of all \d+ heads .*\((previous-token|next-token|self|\[CLS\]\/\[SEP\] sink|mixed|broad|punctuation)\)|No head of any label is sharper/);
    assert.doesNotMatch(await page.locator('main').textContent(), /would be 1\.000; with it, it is 0\.9/);

    // No head chosen: another word gets its own content head.
    const target = verdict.tokens.indexOf('was');
    await page.locator(`#instrument button.chip[data-token="${target}"]`).click();
    await page.waitForFunction((t) => Number(document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.token) === t, target);
    const moved = await shownRow(page);
    const movedVerdict = await judge(page, moved);
    assert.deepEqual([moved.layer, moved.head], movedVerdict.rule, 'a click without a chosen head did not apply the rule');
    assert.ok(!NOT_CONTENT.includes(movedVerdict.label));
    assert.doesNotMatch(page.url(), /[#&]l=/, 'the address recorded a head nobody chose');

    // A chosen head stays when the reader moves to another word.
    await page.click('#instrument button.cell[data-layer="1"][data-head="1"]');
    await page.waitForFunction(() => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.layer === '1');
    await page.locator(`#instrument button.chip[data-token="${live.token}"]`).click();
    await page.waitForFunction((t) => Number(document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.token) === t, live.token);
    const kept = await shownRow(page);
    assert.deepEqual([kept.layer, kept.head], [1, 1], 'the reader\u2019s head was not kept');
    assert.match(page.url(), /[#&]l=1&h=1/);
    // A visible way back to the rule's head, which hides itself once used.
    assert.ok(!(await page.locator('#default-head').isHidden()), 'no way back to the default head');
    await page.click('#default-head');
    await page.waitForFunction(() => document.getElementById('default-head').hidden);
    await page.waitForFunction(([l, hd]) => {
      const t = document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset;
      return t?.layer === String(l) && t?.head === String(hd);
    }, [live.layer, live.head]);
    const back = await shownRow(page);
    assert.deepEqual([back.layer, back.head], [live.layer, live.head], 'back to the default head did not apply the rule');
    assert.doesNotMatch(page.url(), /[#&]l=/);
    assert.deepEqual(errors, []);
    await context.close();
  });
  test('an empty sentence says what to type and keeps the figures', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(baseUrl);
    await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
    await page.click('#open');
    await page.locator('#instrument .status[data-mode="live"]').waitFor();
    const before = await shownRow(page);
    const input = page.locator('#instrument input#sentence');
    await input.fill('   ');
    await input.press('Enter');
    const note = page.locator('#instrument').locator('text=/Type a sentence first/');
    await note.waitFor();
    assert.deepEqual(await shownRow(page), before, 'the figures keep the last sentence');
    await context.close();
  });

  test('the paragraph under Figure 1 states the opening view\u2019s numbers and the pronoun study\u2019s', async () => {
    const manifest = JSON.parse(readFileSync(join(web, 'models', 'manifest.json'), 'utf8'));
    const set = JSON.parse(readFileSync(join(web, 'models', manifest.sets.file), 'utf8'));
    const example = JSON.parse(readFileSync(join(web, 'examples', `${manifest.models[manifest.default].sha256}.json`), 'utf8')).analysis;
    const { page, context, errors } = await site.open('');
    await page.waitForFunction(() => /sentences written for the purpose/.test(document.querySelector('[data-fact="pronounFinding"]')?.textContent ?? ''), null, { timeout: LOAD_TIMEOUT_MS });
    const shown = await shownRow(page);
    // The shown row, from the example file itself: its largest weight and the weight on "animal".
    const { n, heads } = example;
    const row = example.attention.slice(((shown.layer * heads + shown.head) * n + shown.token) * n).slice(0, n);
    const top = row.indexOf(Math.max(...row));
    const weight = (v) => (v > 0 && v < 0.001 ? 'less than 0.001' : v.toFixed(3));
    const fact = (name) => page.locator(`[data-fact="${name}"]`).first().textContent();
    assert.equal(example.tokens[shown.token].text, 'it');
    assert.equal(await fact('exampleHead'), `layer ${shown.layer + 1}, head ${shown.head + 1}`);
    assert.equal(await fact('exampleTop'), weight(row[top]));
    assert.equal(await fact('exampleTopToken'), example.tokens[top].text);
    assert.equal(await fact('exampleAnimal'), weight(row[example.tokens.findIndex((t) => t.text === 'animal')]));
    // The pronoun study's counts, as the site build wrote them.
    const study = set.pronouns;
    const held = set.heldout.pronouns;
    const finding = await fact('pronounFinding');
    const best = study.best;
    const twin = held.per_head.find((x) => x.layer === best.layer && x.head === best.head);
    assert.match(finding, new RegExp(`measured on ${study.cases} sentences`));
    assert.match(finding, new RegExp(`and on ${held.cases} held-out sentences`));
    assert.match(finding, new RegExp(`layer ${best.layer}, head ${best.head}, gives the antecedent the most weight in ${best.among_candidates} of ${study.cases} \\(${twin.among_candidates} of ${held.cases} held out\\)`));
    assert.match(finding, new RegExp(`always choosing the first noun mentioned gives ${study.first} \\(${held.first} held out\\)`));
    assert.match(finding, new RegExp(`both sentences of a pair right in ${best.pairs_both} of ${study.pairs} \\(${twin.pairs_both} of ${held.pairs} held out\\) pairs`));
    const resolves = (x, s) => x.among_candidates > Math.max(s.first, s.nearest) && x.pairs_both > s.pairs / 2;
    const anyHead = study.per_head.some((x) => resolves(x, study) && resolves(held.per_head.find((y) => y.layer === x.layer && y.head === x.head), held));
    assert.equal(/no evidence that any head/.test(finding), !anyHead, finding);
    assert.deepEqual(errors, []);
    await context.close();
  });
});
