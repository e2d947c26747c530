// What the article's small pictures say beside their shapes: Figure 1's bars lie on tracks of
// the full length (the weight 1), in the page and in the exported SVG, and in the theme's
// colour; Figure 1's heatmaps and Figure 5's panels read out the weight under the pointer, the
// one tapped (a phone has no hover) and the one the keyboard is on, in a line that is there
// without hover, with the numbers the engine gives for that cell; the enlarged heatmap and
// Figure 5's panels carry their tokens; Figure 2's value step equals the engine's context; and
// at 360 px nothing is wider than the screen. Needs the assembled site
// (node scripts/site/build_site.mjs).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { figuresDrawn, modelShape, startSite } from './harness.mjs';
import { weightColour } from '../../web/widgets/colour.js';
import { fmt } from '../../web/widgets/format.js';
import { THEME_PROPERTIES } from '../../web/widgets/style.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = join(root, 'web');
const artifacts = join(root, 'test-artifacts');
const LOAD_TIMEOUT_MS = 60000;
// Figure 2's weighted sum of the value slices against the engine's context (as article_data.test).
const VALUE_TOLERANCE = 1e-5;

let site;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  site = await startSite(web);
});

after(() => site?.close());

async function openLive(options = {}) {
  const context = await site.browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(site.baseUrl);
  await page.locator('#open').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT_MS });
  await page.click('#open');
  await page.locator('#instrument .status[data-mode="live"]').waitFor({ timeout: LOAD_TIMEOUT_MS });
  await figuresDrawn(page);
  await scrolled(page);
  return { context, page, errors };
}

// Resolves once the page has stopped scrolling (the open button scrolls to the instrument
// smoothly): the scroll position unchanged over a few frames.
async function scrolled(page) {
  await page.waitForFunction(() => new Promise((resolve) => {
    const y = scrollY;
    let frames = 0;
    const step = () => (++frames < 5 ? requestAnimationFrame(step) : resolve(scrollY === y));
    requestAnimationFrame(step);
  }), null, { polling: 100 });
}

// The instrument's selection, from its chart.
const shownRow = (page) => page.locator('#instrument table.bars').evaluate((t) => ({
  sentence: t.dataset.sentence, layer: Number(t.dataset.layer), head: Number(t.dataset.head), token: Number(t.dataset.token),
}));

// The engine's own analysis of the sentence, asked directly in the page: one weight, the
// tokens, the head's label.
async function engineCell(page, { sentence, layer, head, row, column }) {
  return page.evaluate(async (a) => {
    const { getEngine } = await import('/engine/engine.js');
    const { attentionRow, headLabel } = await import('/engine/result.js');
    const result = await (await getEngine()).analyze(a.sentence);
    const weights = attentionRow(result, a.layer, a.head, a.row);
    let argmax = 0;
    for (let j = 1; j < weights.length; ++j) if (weights[j] > weights[argmax]) argmax = j;
    const column = a.column ?? argmax;
    return {
      value: String(weights[column]), column, tokens: result.tokens.map((t) => t.text), n: result.n,
      label: headLabel(result, a.layer, a.head) ?? '',
    };
  }, { sentence, layer, head, row, column });
}

// What Figure 1's tiles show, read back from the picker's one canvas: for every tile, the colour
// at the centre of each cell of its heatmap (the rows next to the marked one left out: the marker
// is drawn over their edges), and the colour just above the marked row at the tile's middle; with
// the engine's own weights for them, its n and the axis (the tokens the tiles show).
async function tilePixels(page, sentence) {
  return page.evaluate(async (sentence) => {
    const { getEngine } = await import('/engine/engine.js');
    const { attentionMatrix, isSpecial } = await import('/engine/result.js');
    const result = await (await getEngine()).analyze(sentence);
    const root = document.getElementById('instrument').shadowRoot;
    const canvas = root.querySelector('.picker canvas.tiles');
    // Painted in a task after the frame that laid the figure out (web/widgets/tiles.js).
    while (canvas.hasAttribute('data-pending')) await new Promise((resolve) => setTimeout(resolve, 20));
    const box = canvas.getBoundingClientRect();
    const image = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const scale = canvas.width / box.width;
    const at = (x, y) => {
      const o = (Math.floor((y - box.top) * scale) * canvas.width + Math.floor((x - box.left) * scale)) * 4;
      return [...image.data.subarray(o, o + 4)];
    };
    const token = Number(root.querySelector('table.bars').dataset.token);
    const hidden = !root.querySelector('label.options input[type="checkbox"]').checked;
    const axis = result.tokens.map((_, j) => j).filter((j) => !hidden || !isSpecial(result.roles, j));
    const mark = axis.indexOf(token);
    const m = axis.length;
    const cells = [];
    const markers = [];
    for (const el of root.querySelectorAll('button.cell')) {
      const layer = Number(el.dataset.layer);
      const head = Number(el.dataset.head);
      const r = el.querySelector('.map').getBoundingClientRect();
      const weights = attentionMatrix(result, layer, head);
      for (let row = 0; row < m; ++row) {
        if (Math.abs(row - mark) <= 1) continue;
        for (let column = 0; column < m; ++column) {
          const pixel = at(r.left + ((column + 0.5) / m) * r.width, r.top + ((row + 0.5) / m) * r.height);
          cells.push({ layer, head, row, column, pixel, weight: weights[axis[row] * result.n + axis[column]] });
        }
      }
      markers.push({ layer, head, pixel: at(r.left + r.width / 2, r.top + (mark / m) * r.height - 0.5 / scale) });
    }
    const ink = getComputedStyle(canvas).color.match(/\d+/g).map(Number);
    return { cells, markers, ink, m, rowPixels: (canvas.width / box.width) * (root.querySelector('button.cell .map').getBoundingClientRect().height / m) };
  }, sentence);
}

// Every cell of every tile in weightColour's colour for the engine's weight (within one unit a
// channel: the page's colour table has 1,024 steps), and the marker in the theme's ink.
function assertTiles(shown, where) {
  assert.ok(shown.rowPixels >= 2, `${where}: rows ${shown.rowPixels} pixels high, too few to read a cell's centre`);
  let largest = 0;
  for (const c of shown.cells) {
    const want = [...weightColour(c.weight), 255];
    const diff = Math.max(...want.map((v, i) => Math.abs(v - c.pixel[i])));
    largest = Math.max(largest, diff);
    assert.ok(diff <= 1, `${where}: L${c.layer + 1} H${c.head + 1} cell (${c.row}, ${c.column}) is ${c.pixel} for the weight ${c.weight} (${want})`);
  }
  console.log(`# ${where}: ${shown.cells.length} cells of ${shown.markers.length} tiles (${shown.m} tokens a side), largest channel difference ${largest}`);
  for (const k of shown.markers) assert.deepEqual(k.pixel.slice(0, 3), shown.ink.slice(0, 3), `${where}: no marker above the selected row of L${k.layer + 1} H${k.head + 1}`);
}

const readoutOf = (page, host) => page.locator(`${host} p.readout:not(.echo)`).evaluate((el) => ({ ...el.dataset, text: el.textContent, visible: el.getBoundingClientRect().height > 0 }));

// The readout says what the engine says for (layer, head, row, column): its numbers, its tokens.
function assertReading(reading, expected, cell, where) {
  assert.equal(Number(reading.layer), cell.layer, `${where}: layer`);
  assert.equal(Number(reading.head), cell.head, `${where}: head`);
  assert.equal(Number(reading.row), cell.row, `${where}: row`);
  assert.equal(Number(reading.column), expected.column, `${where}: column`);
  assert.equal(reading.value, expected.value, `${where}: the readout's weight is not the engine's`);
  const head = `L${cell.layer + 1} H${cell.head + 1}`;
  // A weight is above 0 and below 1, so the line never prints 0.000 or 1.000.
  const v = Number(expected.value);
  const printed = v < 0.001 ? '<0.001' : v > 0.9995 ? '>0.999' : v.toFixed(3);
  const words = `\u201c${expected.tokens[cell.row]}\u201d \u2192 \u201c${expected.tokens[expected.column]}\u201d ${printed}`;
  assert.ok(reading.text.startsWith(`${head}${expected.label ? ` ${expected.label}` : ''} \u00b7 ${words}`), `${where}: the readout says \u201c${reading.text}\u201d, not \u201c${head} \u2026 ${words}\u201d`);
}

// The client point at the middle of cell (row, column) of an n x n picture in box.
const cellPoint = (box, n, row, column) => ({ x: box.x + ((column + 0.5) * box.width) / n, y: box.y + ((row + 0.5) * box.height) / n });

describe('the figures\u2019 tracks, labels and readouts', { timeout: 300000 }, () => {
  test('Figure 1: every bar lies on a track of the full length, in the theme\u2019s colour and in the exported SVG', async () => {
    const { context, page, errors } = await openLive();
    const bars = await page.locator('#instrument table.bars tbody tr:not([hidden])').evaluateAll((rows) => rows.map((tr) => {
      const cell = tr.querySelector('td.track');
      const before = getComputedStyle(cell, '::before');
      return {
        value: Number(tr.dataset.value), cell: cell.getBoundingClientRect().width, track: parseFloat(before.width),
        colour: before.backgroundColor, content: before.content, bar: tr.querySelector('.bar').getBoundingClientRect().width,
      };
    }));
    assert.ok(bars.length > 3);
    const rgb = (hex) => `rgb(${[1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16)).join(', ')})`;
    const track = THEME_PROPERTIES.find((p) => p.name === '--attn-track');
    for (const b of bars) {
      assert.notEqual(b.content, 'none', 'a bar has no track');
      assert.ok(Math.abs(b.track - b.cell) < 1, `a track is ${b.track} px in a cell of ${b.cell} px`);
      assert.equal(b.colour, rgb(track.light));
      // On the scale from 0 to 1: a bar is its weight's share of the track (at least 1 px).
      assert.ok(Math.abs(b.bar - Math.max(1, b.value * b.track)) < 1.5, `a bar of ${b.value} is ${b.bar} px on a track of ${b.track} px`);
    }
    // The dark theme's track.
    await page.locator('#instrument').evaluate((el) => el.setAttribute('theme', 'dark'));
    const dark = await page.locator('#instrument table.bars td.track').first().evaluate((cell) => getComputedStyle(cell, '::before').backgroundColor);
    assert.equal(dark, rgb(track.dark));
    // The exported picture draws the tracks too, one per bar, as wide as the longest bar can be.
    const svg = await page.locator('#instrument').evaluate((el) => {
      const doc = new DOMParser().parseFromString(el.toSVG(), 'image/svg+xml');
      const tracks = [...doc.querySelectorAll('rect.track')];
      const bars = [...doc.querySelectorAll('rect.bar')];
      return { tracks: tracks.length, bars: bars.length, widths: new Set(tracks.map((t) => t.getAttribute('width'))).size, fill: tracks[0]?.getAttribute('fill'), barOfOne: (() => {
        const top = bars.reduce((a, b) => (Number(b.dataset.value) > Number(a.dataset.value) ? b : a));
        return Number(top.getAttribute('width')) / Number(top.dataset.value) / Number(tracks[0]?.getAttribute('width'));
      })() };
    });
    assert.equal(svg.tracks, svg.bars);
    assert.equal(svg.widths, 1, 'the tracks are not all one length');
    assert.equal(svg.fill, track.light);
    assert.ok(Math.abs(svg.barOfOne - 1) < 1e-6, 'in the SVG a weight of 1 would not fill the track');
    const headsSvg = await page.locator('attention-heads').evaluate((el) => el.toSVG());
    assert.match(headsSvg, /class="track"/, 'Figure 5\u2019s exported picture has no tracks');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('Figure 1: the heatmaps\u2019 readout follows a tap, the pointer and the keyboard, with the engine\u2019s numbers', async () => {
    const { context, page, errors } = await openLive({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const shown = await shownRow(page);
    // Without hover, the line reads the selection: the selected head's largest weight in the row.
    let reading = await readoutOf(page, '#instrument');
    assert.ok(reading.visible, 'no readout on a phone');
    assert.equal(reading.source, 'selection');
    assertReading(reading, await engineCell(page, { ...shown, row: shown.token, column: null }), { ...shown, row: shown.token }, 'the selection');

    // A tap on a cell of another head's heatmap: that head is chosen, and the line reads that
    // head's row of the selected token (its largest weight), as the chart does, not the cell
    // the finger covered.
    const shape = await modelShape(page);
    const target = { layer: (shown.layer + 1) % shape.layers, head: (shown.head + 3) % shape.heads };
    const canvas = page.locator(`#instrument button.cell[data-layer="${target.layer}"][data-head="${target.head}"] .map`);
    await canvas.scrollIntoViewIfNeeded();
    await scrolled(page);
    const { n } = await engineCell(page, { ...shown, row: 0, column: 0 });
    const cell = { ...target, row: 2, column: n - 3 };
    const point = cellPoint(await canvas.boundingBox(), n, cell.row, cell.column);
    await page.touchscreen.tap(point.x, point.y);
    await page.waitForFunction((t) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.layer === String(t.layer)
      && document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.head === String(t.head), target);
    reading = await readoutOf(page, '#instrument');
    assert.equal(reading.source, 'tap');
    assertReading(reading, await engineCell(page, { sentence: shown.sentence, ...target, row: shown.token, column: null }), { ...target, row: shown.token }, 'a tapped tile');
    // It stays after the tap (no hover to lose on a touch screen), and the chart that changed
    // is on screen under the tiles.
    await page.waitForTimeout(300);
    const chartTop = await page.locator('#instrument table.bars').evaluate((t) => t.getBoundingClientRect().top);
    assert.ok(chartTop >= 0 && chartTop < 844, `after a tile tap the row's chart is off screen (its top at ${chartTop} px)`);
    await page.screenshot({ path: join(artifacts, 'phone-390-figure1-after-tile-tap.png') });
    assert.equal((await readoutOf(page, '#instrument')).value, reading.value);

    // The enlarged heatmap: the tokens along both sides, and a tap reads its cell.
    const labels = await page.locator('#instrument .zoom .rows span').allTextContents();
    assert.deepEqual(labels, (await engineCell(page, { ...shown, row: 0, column: 0 })).tokens);
    assert.deepEqual(await page.locator('#instrument .zoom .cols span').allTextContents(), labels);
    const map = page.locator('#instrument .zoom .map canvas');
    await map.scrollIntoViewIfNeeded();
    await scrolled(page);
    const zoomCell = { ...target, row: n - 2, column: 1 };
    const zoomPoint = cellPoint(await map.boundingBox(), n, zoomCell.row, zoomCell.column);
    await page.touchscreen.tap(zoomPoint.x, zoomPoint.y);
    await page.waitForFunction(() => document.getElementById('instrument').shadowRoot.querySelector('p.readout').dataset.row !== '2');
    // On a phone the enlarged heatmap sits far below the line: the line is repeated under it.
    const echo = page.locator('#instrument p.readout.echo');
    assert.ok(await echo.isVisible(), 'no readout near the enlarged heatmap on a phone');
    assert.equal(await echo.textContent(), (await readoutOf(page, '#instrument')).text);
    assertReading(await readoutOf(page, '#instrument'), await engineCell(page, { sentence: shown.sentence, ...zoomCell }), zoomCell, 'a tapped cell of the enlarged heatmap');
    assert.equal(await page.locator('#instrument .zoom .rows span.on').textContent(), labels[zoomCell.row]);
    await page.locator('#instrument').screenshot({ path: join(artifacts, 'readout-instrument-phone.png') });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('Figure 1 with a mouse and a keyboard: hover reads, leaving restores the selection, arrow keys read', async () => {
    const { context, page, errors } = await openLive();
    const shown = await shownRow(page);
    const { n } = await engineCell(page, { ...shown, row: 0, column: 0 });
    const target = { layer: 2, head: 1 };
    const canvas = page.locator(`#instrument button.cell[data-layer="${target.layer}"][data-head="${target.head}"] .map`);
    const cell = { ...target, row: n - 1, column: 0 };
    // Chrome moves the hover once a scroll ends (a synthetic mouse move where the mouse was, here
    // the open button's place): the mouse goes out of the way first, and that move is let pass.
    await page.mouse.move(5, 5);
    await page.waitForTimeout(300);
    const point = cellPoint(await canvas.boundingBox(), n, cell.row, cell.column);
    await page.mouse.move(point.x, point.y, { steps: 2 });
    let reading = await readoutOf(page, '#instrument');
    assert.equal(reading.source, 'pointer');
    assertReading(reading, await engineCell(page, { sentence: shown.sentence, ...cell }), cell, 'the cell under the mouse');
    await page.mouse.move(5, 5);
    reading = await readoutOf(page, '#instrument');
    assert.equal(reading.source, 'selection', 'the hover\u2019s reading stayed after the mouse left');
    assert.deepEqual([Number(reading.layer), Number(reading.head)], [shown.layer, shown.head]);

    // The keyboard on the enlarged heatmap: arrow keys move from cell to cell.
    await page.locator('#instrument .zoom .map').focus();
    await page.keyboard.press('ArrowRight');
    reading = await readoutOf(page, '#instrument');
    assert.equal(reading.source, 'keyboard');
    const start = await engineCell(page, { ...shown, row: shown.token, column: null });
    const next = { ...shown, row: shown.token, column: Math.min(n - 1, start.column + 1) };
    assertReading(reading, await engineCell(page, { sentence: shown.sentence, ...next }), next, 'an arrow key on the enlarged heatmap');
    await page.keyboard.press('ArrowDown');
    const below = { ...next, row: Math.min(n - 1, next.row + 1) };
    assertReading(await readoutOf(page, '#instrument'), await engineCell(page, { sentence: shown.sentence, ...below }), below, 'down one row');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('Figure 1\u2019s tiles show the engine\u2019s weights with and without [CLS] and [SEP], and a cell still reads its own tokens\u2019 weight', async () => {
    const { context, page, errors } = await openLive();
    const shown = await shownRow(page);
    const { n, tokens } = await engineCell(page, { ...shown, row: 0, column: 0 });
    assertTiles(await tilePixels(page, shown.sentence), 'with [CLS] and [SEP]');
    await page.locator('#instrument label.options input[type="checkbox"]').uncheck();
    await page.waitForFunction(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true)))));
    const without = await tilePixels(page, shown.sentence);
    assert.equal(without.m, n - 2);
    assertTiles(without, 'without [CLS] and [SEP]');
    const sizes = await page.locator('#instrument').evaluate((el) => ({
      zoom: [el.shadowRoot.querySelector('.zoom canvas').width, el.shadowRoot.querySelector('.zoom canvas').height],
      labels: [...el.shadowRoot.querySelectorAll('.zoom .cols span')].map((x) => x.textContent),
    }));
    assert.deepEqual(sizes.zoom, [n - 2, n - 2]);
    assert.deepEqual(sizes.labels, tokens.slice(1, -1));
    // The top left cell is now the first word reading the first word (tokens 1 and 1).
    const target = { layer: 1, head: 2 };
    const canvas = page.locator(`#instrument button.cell[data-layer="${target.layer}"][data-head="${target.head}"] .map`);
    // The tile in view (the picker may reach below the screen), and its place read once the
    // picker is laid out again without [CLS] and [SEP].
    await canvas.scrollIntoViewIfNeeded();
    await scrolled(page);
    await page.mouse.move(5, 5);
    await page.waitForTimeout(300);
    const point = cellPoint(await canvas.boundingBox(), n - 2, 0, n - 3);
    await page.mouse.move(point.x, point.y, { steps: 2 });
    // The readout follows the last pointer move; under load it may be drawn a frame later.
    await page.waitForFunction((t) => {
      const d = document.getElementById('instrument').shadowRoot.querySelector('p.readout:not(.echo)')?.dataset;
      return d?.source === 'pointer' && d.layer === String(t.layer) && d.head === String(t.head);
    }, target, { timeout: 5000 }).catch(() => {});
    const cell = { ...target, row: 1, column: n - 2 };
    assertReading(await readoutOf(page, '#instrument'), await engineCell(page, { sentence: shown.sentence, ...cell }), cell, 'a cell of a heatmap without [CLS] and [SEP]');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('on a phone, a tapped word brings its changed row chart into view', async () => {
    const { context, page, errors } = await openLive({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const chips = page.locator('#instrument button.chip:not(.special)');
    await chips.first().scrollIntoViewIfNeeded();
    const before = await page.locator('#instrument table.bars').evaluate((t) => t.getBoundingClientRect().top);
    assert.ok(before > 844 * 0.8, `the test needs the chart below the screen after the chips (its top is at ${before} px)`);
    const word = await chips.nth(2).textContent();
    await chips.nth(2).tap();
    await page.waitForFunction((text) => {
      const table = document.getElementById('instrument').shadowRoot.querySelector('table.bars');
      const top = table.getBoundingClientRect().top;
      return table.caption?.textContent.includes(`\u201c${text}\u201d`) && top >= 0 && top < innerHeight * 0.5;
    }, word, { timeout: 10000 });
    await page.screenshot({ path: join(artifacts, 'phone-390-figure1-after-word-tap.png') });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('Figure 5: every panel carries its tokens, and a tap on a column reads its weight', async () => {
    const { context, page, errors } = await openLive({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const shown = await shownRow(page);
    const { tokens } = await engineCell(page, { ...shown, row: 0, column: 0 });
    const figure = page.locator('attention-heads');
    await figure.scrollIntoViewIfNeeded();
    const panels = page.locator('attention-heads button.multiple');
    const headCount = await figure.evaluate((el) => el.result.layers * el.result.heads);
    assert.equal(await panels.count(), headCount);
    for (let k = 0; k < headCount; ++k) {
      const labels = panels.nth(k).locator('.axis span');
      assert.deepEqual(await labels.allTextContents(), tokens, `panel ${k} has other labels`);
    }
    // Drawn at 12 px or more, each under its own column; where the columns are narrower than
    // that (two panels a row on a phone) every second or third is drawn, counted from the
    // selected token's, and the legend says so.
    const geometry = await panels.nth(5).evaluate((button) => {
      const chart = button.querySelector('svg').getBoundingClientRect();
      return { chart: [chart.left, chart.width], labels: [...button.querySelectorAll('.axis span')].map((s) => { const r = s.getBoundingClientRect(); return [r.left + r.width / 2, r.width, r.height, getComputedStyle(s).visibility !== 'hidden', parseFloat(getComputedStyle(s).fontSize)]; }) };
    });
    const drawn = geometry.labels.map((l, c) => (l[3] ? c : -1)).filter((c) => c >= 0);
    const step = drawn[1] - drawn[0];
    const stepped = drawn.length > 1 ? step : 1;
    assert.ok(drawn.includes(shown.token), `the selected token (${shown.token}) is not named: ${drawn}`);
    assert.ok(stepped >= 1 && stepped <= 3, `every ${stepped}th label is drawn`);
    assert.deepEqual(drawn, tokens.map((_, c) => c).filter((c) => Math.abs(c - shown.token) % stepped === 0), 'the drawn labels are not evenly spaced');
    assert.ok(geometry.chart[1] / tokens.length * stepped >= 12, 'the drawn labels are closer than 12 px');
    drawn.forEach((c) => {
      const [centre, width, height, , size] = geometry.labels[c];
      const expected = geometry.chart[0] + ((c + 0.5) * geometry.chart[1]) / tokens.length;
      assert.ok(Math.abs(centre - expected) < geometry.chart[1] / tokens.length / 2, `label ${c} is not under its column`);
      assert.ok(width > 0 && height > 0, `label ${c} is not drawn`);
      assert.ok(size >= 12, `label ${c} is ${size} px`);
    });
    if (stepped > 1) assert.match(await figure.evaluate((el) => el.shadowRoot.textContent), /every (second|third) one, counted from .*, named under the columns/);
    let reading = await readoutOf(page, 'attention-heads');
    assert.ok(reading.visible);
    assert.equal(reading.source, 'selection');
    assertReading(reading, await engineCell(page, { ...shown, row: shown.token, column: null }), { ...shown, row: shown.token }, 'Figure 5 without a tap');
    // Tap the column of token 3 in layer 1, head 2.
    const panel = page.locator('attention-heads button.multiple[data-layer="0"][data-head="1"]');
    await panel.scrollIntoViewIfNeeded();
    await scrolled(page);
    const box = await panel.locator('svg').boundingBox();
    const column = 3;
    await page.touchscreen.tap(box.x + ((column + 0.5) * box.width) / tokens.length, box.y + box.height / 2);
    await page.waitForFunction(() => document.querySelector('attention-heads').shadowRoot.querySelector('p.readout').dataset.source === 'tap');
    reading = await readoutOf(page, 'attention-heads');
    const cell = { layer: 0, head: 1, row: shown.token, column };
    assertReading(reading, await engineCell(page, { sentence: shown.sentence, ...cell }), cell, 'a tapped column of Figure 5');
    assert.equal(await page.locator('attention-heads button.multiple[aria-pressed="true"]').getAttribute('data-head'), '1', 'the tap did not choose the head');
    // The reading is on screen where the tap was, although the grid is taller than the phone:
    // the tapped panel's own line says it (the line under the grid may be screens away, and a
    // line floating over the panels would cover their labels).
    const own = await panel.locator('.fav').evaluate((el) => ({ text: el.textContent, probed: el.classList.contains('probed'), top: el.getBoundingClientRect().top, bottom: el.getBoundingClientRect().bottom, height: innerHeight }));
    assert.ok(own.probed, 'the tapped panel does not show the reading');
    assert.equal(own.text, `\u201c${tokens[column]}\u201d ${reading.text.match(/([<>]?\d\.\d{3})$/)?.[1]}`);
    assert.ok(own.top >= 0 && own.bottom <= own.height + 0.5, `the tapped panel's reading is off screen (${own.top} to ${own.bottom} of ${own.height})`);
    await page.screenshot({ path: join(artifacts, 'phone-390-figure5-after-tap.png') });
    const readoutStyle = await page.locator('attention-heads p.readout').evaluate((el) => getComputedStyle(el).position);
    assert.notEqual(readoutStyle, 'sticky', 'the readout floats over the panels');
    await figure.screenshot({ path: join(artifacts, 'readout-heads-phone.png') });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('Figure 2 shows the value step: every token\u2019s weight, the context and its recheck, equal to the engine\u2019s context', async (t) => {
    const { context, page, errors } = await openLive();
    const figure = page.locator('attention-mechanism');
    // The engine's values and contexts of the selection, asked directly in the page (through the
    // worker and its transfer, as the figures get them), and the weighted sum recomputed here from
    // its row and value slices.
    const engineSide = (shown) => page.evaluate(async (a) => {
      const { getEngine } = await import('/engine/engine.js');
      const { attentionRow, tokenVector } = await import('/engine/result.js');
      const result = await (await getEngine()).analyze(a.sentence, { vectors: true });
      const dHead = result.hidden / result.heads;
      const row = attentionRow(result, a.layer, a.head, a.token);
      const context = tokenVector(result.contexts, result, a.layer, a.token).subarray(a.head * dHead, (a.head + 1) * dHead);
      let largest = 0;
      for (let c = 0; c < dHead; ++c) {
        let sum = 0;
        for (let j = 0; j < result.n; ++j) sum += row[j] * tokenVector(result.values, result, a.layer, j)[a.head * dHead + c];
        largest = Math.max(largest, Math.abs(sum - context[c]));
      }
      return { row: Array.from(row, String), context: Array.from(context), largest, hidden: result.hidden };
    }, shown);
    const drawn = () => figure.evaluate((el) => {
      const root = el.shadowRoot;
      const check = root.querySelector('p.value-check');
      return {
        weights: [...root.querySelectorAll('table.value-sum tbody tr')].map((tr) => tr.dataset.weight),
        difference: check && Number(check.dataset.difference), checkText: check?.textContent ?? '',
        sumText: [...root.querySelectorAll('ol.steps > li:nth-child(5) .vec')].map((d) => d.textContent).join(''),
        steps: root.querySelectorAll('ol.steps > li').length,
        visible: check ? check.checkVisibility() : false,
        concat: root.querySelector('ol.steps > li:nth-child(6)')?.textContent ?? '',
      };
    });
    for (const step of ['opening selection', 'another token']) {
      if (step === 'another token') {
        const before = await shownRow(page);
        await page.locator('#instrument button.chip').nth(Math.max(1, before.token - 2)).click();
        await figuresDrawn(page);
        // The click's row is drawn a few tasks later (under a full run's load, after the read); wait
        // up to 10 s for it, then assert.
        await page.waitForFunction((t) => document.getElementById('instrument').shadowRoot.querySelector('table.bars')?.dataset.token !== String(t), before.token, { timeout: 10000 }).catch(() => {});
        assert.notEqual((await shownRow(page)).token, before.token);
      }
      const shown = await shownRow(page);
      const expected = await engineSide(shown);
      // Figure 2 sits below the instrument: a figure off screen takes a new view when it comes
      // near or when the page is quiet, so the test waits (up to 10 s) for it to show this token.
      let seen = await drawn();
      for (let tries = 0; tries < 50 && JSON.stringify(seen.weights) !== JSON.stringify(expected.row); ++tries) {
        await page.waitForTimeout(200);
        seen = await drawn();
      }
      assert.equal(seen.steps, 6, `${step}: Figure 2 has the value step and the heads' contexts`);
      assert.ok(seen.visible, `${step}: the recheck line is not visible`);
      assert.deepEqual(seen.weights, expected.row, `${step}: the value step's weights are not the engine's row`);
      t.diagnostic(`${step} (token ${shown.token}, layer ${shown.layer + 1}, head ${shown.head + 1}): the page's recheck ${seen.difference.toExponential(2)}, this test's ${expected.largest.toExponential(2)} (bar ${VALUE_TOLERANCE})`);
      assert.ok(seen.difference <= VALUE_TOLERANCE, `${step}: the figure's recheck says ${seen.difference}`);
      assert.ok(expected.largest <= VALUE_TOLERANCE, `${step}: the engine's context differs from the weighted sum by ${expected.largest}`);
      assert.match(seen.checkText, new RegExp(`the largest difference from the engine\u2019s context is ${seen.difference.toExponential(1)}\\.`));
      // The context the figure prints is the engine's, at its printed digits.
      const printed = expected.context.slice(0, 4).map((v) => fmt(v, 2));
      assert.ok(seen.sumText.includes(`= [${printed.join(', ')}, \u2026`), `${step}: the figure prints ${seen.sumText}, not the engine's context ${printed.join(', ')}`);
      assert.match(seen.concat, new RegExp(`${expected.hidden} numbers, what W_O multiplies`));
    }
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('at 360 px, with every figure drawn, nothing is wider than the screen', async () => {
    const { context, page, errors } = await openLive({ viewport: { width: 360, height: 740 }, hasTouch: true, isMobile: true });
    for (const figure of await page.locator('[data-figure], [data-figure-static]').all()) {
      await figure.scrollIntoViewIfNeeded();
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    }
    const widths = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
      figures: [...document.querySelectorAll('[data-figure], [data-figure-static]')].map((el) => {
        const body = el.shadowRoot.querySelector('.body');
        return { name: el.localName, right: el.getBoundingClientRect().right, overflow: body.scrollWidth - body.clientWidth };
      }),
    }));
    assert.ok(widths.scroll <= widths.client, `the page is ${widths.scroll} px wide on a ${widths.client} px screen`);
    for (const f of widths.figures) {
      assert.ok(f.right <= widths.client, `${f.name} reaches ${f.right} px`);
      assert.ok(f.overflow <= 0, `${f.name}'s body overflows by ${f.overflow} px`);
    }
    assert.deepEqual(errors, []);
    await context.close();
  });
});
