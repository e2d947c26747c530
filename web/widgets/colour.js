// Colour scales safe for colour-blind readers: a viridis-like sequential scale for weights
// (perceptually ordered, readable in greyscale) and a purple-orange diverging scale for signed
// vector components. Both are interpolated between a few anchor colours.

const SEQUENTIAL = [
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37],
];

function interpolate(anchors, t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (anchors.length - 1);
  const k = Math.min(anchors.length - 2, Math.floor(x));
  const f = x - k;
  return anchors[k].map((c, i) => Math.round(c + f * (anchors[k + 1][i] - c)));
}

// Weight in [0, 1] to [r, g, b]. The square root spreads the small weights that fill most rows.
export const weightColour = (w) => interpolate(SEQUENTIAL, Math.sqrt(Math.max(0, w)));

const DIVERGING_LIGHT = [[84, 39, 136], [153, 142, 195], [247, 247, 247], [241, 163, 64], [179, 88, 6]];
const DIVERGING_DARK = [[178, 171, 210], [110, 96, 160], [40, 40, 46], [200, 120, 30], [253, 184, 99]];

// Signed value v scaled by `limit` to [r, g, b]: purple negative, orange positive.
export function signedColour(v, limit, dark) {
  return interpolate(dark ? DIVERGING_DARK : DIVERGING_LIGHT, 0.5 + 0.5 * Math.max(-1, Math.min(1, v / limit)));
}

export const css = ([r, g, b]) => `rgb(${r} ${g} ${b})`;

export const prefersDark = () =>
  typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;

// weightColour at 1,024 steps of its square-root scale, packed as RGBA bytes and read four bytes
// at a time (one 32-bit word per pixel, whatever the machine's byte order: the table's bytes and
// the image's are both in RGBA order), for painting whole matrices (a step is under one unit of
// any channel).
const WEIGHT_STEPS = 1024;
let weightTable = null;
function weightLut() {
  if (!weightTable) {
    const bytes = new Uint8ClampedArray(4 * (WEIGHT_STEPS + 1));
    for (let k = 0; k <= WEIGHT_STEPS; ++k) {
      const [r, g, b] = interpolate(SEQUENTIAL, k / WEIGHT_STEPS);
      bytes.set([r, g, b, 255], 4 * k);
    }
    weightTable = new Uint32Array(bytes.buffer);
  }
  return weightTable;
}

// A weight's entry in weightLut.
const weightStep = (w) => (w > 0 ? Math.min(WEIGHT_STEPS, Math.round(Math.sqrt(w) * WEIGHT_STEPS)) : 0);

// Paints a rows x cols matrix of weights (row-major) into a canvas, one pixel per weight.
// A canvas already of that size keeps its bitmap (every pixel is written).
export function paintWeights(canvas, rows, cols, weights) {
  if (canvas.width !== cols) canvas.width = cols;
  if (canvas.height !== rows) canvas.height = rows;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(cols, rows);
  const lut = weightLut();
  const pixels = new Uint32Array(image.data.buffer, image.data.byteOffset, rows * cols);
  for (let k = 0, n = rows * cols; k < n; ++k) pixels[k] = lut[weightStep(weights[k])];
  ctx.putImageData(image, 0, 0);
}

// Paints the n x n matrix `weights` (row-major), restricted to the positions in `list` (all n
// when list is null), into the box {x, y, w, h} of a pixel buffer (one RGBA word per pixel,
// `stride` pixels to a row): each pixel shows the weight nearest its centre, as a canvas of one
// pixel per weight scaled with `image-rendering: pixelated` does.
export function paintWeightsInto(pixels, stride, { x, y, w, h }, weights, n, list = null) {
  const m = list ? list.length : n;
  const lut = weightLut();
  const columns = new Int32Array(w);
  for (let px = 0; px < w; ++px) {
    const c = Math.min(m - 1, Math.floor(((px + 0.5) * m) / w));
    columns[px] = list ? list[c] : c;
  }
  // Each weight's colour is looked up once a row, however many pixels show it.
  const colours = new Uint32Array(n);
  const used = new Int32Array(m);
  for (let c = 0; c < m; ++c) used[c] = list ? list[c] : c;
  let last = -1;
  for (let py = 0; py < h; ++py) {
    const r = Math.min(m - 1, Math.floor(((py + 0.5) * m) / h));
    let o = (y + py) * stride + x;
    // A row of pixels on the same weights as the one above it is a copy of it.
    if (r === last) {
      pixels.copyWithin(o, o - stride, o - stride + w);
      continue;
    }
    last = r;
    const base = (list ? list[r] : r) * n;
    if (w >= m) {
      for (let c = 0; c < m; ++c) colours[used[c]] = lut[weightStep(weights[base + used[c]])];
      for (let px = 0; px < w; ++px) pixels[o++] = colours[columns[px]];
    } else {
      for (let px = 0; px < w; ++px) pixels[o++] = lut[weightStep(weights[base + columns[px]])];
    }
  }
}

// Paints rows x cols values into a canvas, one pixel per value (CSS scales it up, pixelated).
export function paintCells(canvas, rows, cols, colourAt) {
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(cols, rows);
  for (let r = 0; r < rows; ++r) {
    for (let c = 0; c < cols; ++c) {
      const [red, green, blue] = colourAt(r, c);
      const o = (r * cols + c) * 4;
      image.data[o] = red;
      image.data[o + 1] = green;
      image.data[o + 2] = blue;
      image.data[o + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}
