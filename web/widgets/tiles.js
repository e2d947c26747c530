// Many small heatmaps drawn on one canvas laid over the elements that hold their places (Figure
// 1's picker: one tile per head, up to 144 at bert-base's shape). Chromium gives every canvas on
// a page a compositor layer of its own, and every element drawn over one (a tile's marker) a
// layer too: sixteen canvases and their markers were 34 of the article's 40 layers, and each new
// sentence re-uploaded them all. Here the picker is one layer whatever the model's shape.
//
// The canvas is as large as its container in device pixels and each tile is sampled at its
// box's own resolution (nearest weight, as CSS's `image-rendering: pixelated` scales), so the work
// per paint follows the screen, not the sentence: 16 tiles of 512 x 512 weights are painted
// from the pixels they cover. The marker (the selected token's row, outlined) is drawn on top.
// The canvas lets the pointer through (pointer-events: none): the elements under it take the
// clicks, the focus and the accessible names.
import { h, watchWidth } from './dom.js';
import { paintWeightsInto } from './colour.js';

export const TILES_CSS = `
  canvas.tiles { position: absolute; inset: 0; width: 100%; height: 100%; pointer-events: none; color: var(--attn-fg); }
`;

export class WeightTiles {
  // container: the positioned element the canvas covers (its last child).
  constructor(container) {
    this.container = container;
    this.canvas = h('canvas.tiles', { 'aria-hidden': 'true' });
    this.tiles = [];
    this.mark = null;
    watchWidth(container, () => this.schedule());
    document.fonts?.ready?.then(() => this.schedule());
  }

  // tiles: [{ el, weights, n, list }]: el's box shows the matrix of `weights` (n x n, row-major)
  // restricted to the positions in `list` (all n when list is null), list's length on each side.
  // mark: the place on those axes of the row to outline, or null for none.
  set(tiles, mark) {
    this.tiles = tiles;
    this.mark = mark;
    this.schedule();
  }

  setMark(mark) {
    if (mark === this.mark) return;
    this.mark = mark;
    this.schedule();
  }

  // Painted again whole (the theme's ink for the marker changed).
  repaint() {
    this.painted = null;
    this.schedule();
  }

  // The canvas's size and every tile's place in it, in device pixels; null where nothing shows.
  measure() {
    const box = this.canvas.getBoundingClientRect();
    const dpr = globalThis.devicePixelRatio || 1;
    const width = Math.round(box.width * dpr);
    const height = Math.round(box.height * dpr);
    if (!width || !height) return null;
    const places = [];
    for (const tile of this.tiles) {
      const r = tile.el.getBoundingClientRect();
      const x = Math.max(0, Math.round((r.left - box.left) * dpr));
      const y = Math.max(0, Math.round((r.top - box.top) * dpr));
      const w = Math.min(width, Math.round((r.right - box.left) * dpr)) - x;
      const h = Math.min(height, Math.round((r.bottom - box.top) * dpr)) - y;
      places.push(w > 0 && h > 0 ? { x, y, w, h, m: tile.list ? tile.list.length : tile.n } : null);
    }
    return { width, height, dpr, places, key: `${width}x${height} ${places.map((p) => (p ? `${p.x},${p.y},${p.w},${p.h},${p.m}` : '-')).join(' ')}` };
  }

  // Where the marker's lines go in a tile: the rows of device pixels just above and below the
  // marked row, and the columns at the tile's sides.
  static markerBox(p, mark, line) {
    const top = p.y + Math.round((mark * p.h) / p.m);
    const bottom = p.y + Math.round(((mark + 1) * p.h) / p.m);
    return { x: p.x, y: top - line, w: p.w, h: bottom - top + 2 * line };
  }

  // Painted once whatever else changed the page has been written: a marker that moved in the
  // next frame (its boxes read in the layout the frame needs anyway), new tiles in a task of
  // their own just after it, their boxes read from the layout that frame made. On a phone,
  // painting every tile inside the frame that lays out a new sentence's chips and bars made
  // that frame the longest task after typing. The canvas says data-pending until it is painted.
  schedule() {
    if (this.canvas.parentNode !== this.container) this.container.append(this.canvas);
    const { dataset } = this.canvas;
    if ('pending' in dataset || typeof requestAnimationFrame !== 'function') return;
    dataset.pending = '';
    const paint = () => {
      delete dataset.pending;
      this.paint();
    };
    requestAnimationFrame(() => (this.painted?.tiles === this.tiles ? paint() : setTimeout(paint, 0)));
  }

  paint() {
    const { canvas } = this;
    const at = this.measure();
    if (!at) return;
    const { width, height, dpr, places } = at;
    const line = Math.max(1, Math.round(dpr));
    const ctx = canvas.getContext('2d');
    // The same tiles in the same places: only the marker moved, so the rows under the old one
    // are put back from the image and the new one drawn (a click on a word repaints no tile).
    if (this.painted?.tiles === this.tiles && this.painted.key === at.key) {
      if (this.painted.mark === this.mark) return;
      if (this.painted.mark !== null) {
        for (const p of places) {
          if (!p) continue;
          const b = WeightTiles.markerBox(p, this.painted.mark, line);
          ctx.putImageData(this.image, 0, 0, b.x, b.y, b.w, b.h);
        }
      }
    } else {
      if (canvas.width !== width) canvas.width = width;
      if (canvas.height !== height) canvas.height = height;
      if (this.image?.width !== width || this.image?.height !== height) this.image = ctx.createImageData(width, height);
      const pixels = new Uint32Array(this.image.data.buffer, this.image.data.byteOffset, width * height);
      // Pixels outside the tiles stay clear; they need clearing only when the tiles moved.
      if (this.painted?.key !== at.key) pixels.fill(0);
      this.tiles.forEach((tile, k) => {
        if (places[k]) paintWeightsInto(pixels, width, places[k], tile.weights, tile.n, tile.list);
      });
      ctx.putImageData(this.image, 0, 0);
    }
    this.painted = { tiles: this.tiles, key: at.key, mark: this.mark };
    if (this.mark === null) return;
    // The marker: a line of one CSS pixel (whole device pixels, so it stays crisp) just above and
    // just below the selected token's row of every tile, joined at the tile's sides.
    ctx.strokeStyle = getComputedStyle(canvas).color;
    ctx.lineWidth = line;
    for (const p of places) {
      if (!p) continue;
      const b = WeightTiles.markerBox(p, this.mark, line);
      ctx.strokeRect(b.x + line / 2, b.y + line / 2, b.w - line, b.h - line);
    }
  }
}
