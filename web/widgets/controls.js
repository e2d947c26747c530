// The controls the figures share: the sentence's tokens as chips (click one to read its row)
// and a menu of every layer and head. Readers' choices go to onSelect as a patch of
// {token} or {layer, head}; the figure passes them on as its select event.
import { h } from './dom.js';
import { headName } from './format.js';
import { revealRow } from './bars.js';
import { isSpecial } from '../engine/result.js';

// The token chips (TokenChips), for every figure that has them. A figure sets --chip-size and
// --chip-font to make them larger (the instrument's, the article's main control).
export const CHIP_CSS = `
  .chip {
    min-height: var(--chip-size, 2em); min-width: var(--chip-size, 2em); padding: 0.1em 0.45em;
    border-radius: 5px; font-size: var(--chip-font, 0.92em);
    border: 1px solid var(--attn-line); background: var(--attn-bg); max-width: 100%; overflow-wrap: anywhere;
  }
  .chip.special { font-style: italic; color: var(--attn-muted); }
  .chip[aria-pressed="true"] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); font-style: normal; }
`;

export const CONTROLS_CSS = `
  .controls { display: flex; flex-wrap: wrap; gap: 0.4em 0.8em; align-items: center; margin-bottom: 0.5em; }
  .controls select { max-width: 100%; padding: 0.2em 0.3em; border: 1px solid var(--attn-line); border-radius: 6px; background: var(--attn-bg); }
  .tokens { display: flex; flex-wrap: wrap; gap: 0.3em; margin: 0 0 0.7em; }
` + CHIP_CSS;

// The tokens as a group of toggle buttons, kept on screen: built once per sentence, then a new
// selection changes only the two chips concerned. [CLS] and [SEP] are hidden unless
// showSpecial. A long sentence scrolls inside the list (div.tokens-scroll, bounded in height),
// which keeps the selected chip in view. grouped: the chips of one word sit together in a
// span.word; roving: one chip is in the tab order (arrow keys move, see onKey).
export class TokenChips {
  constructor({ label, onSelect, onKey = null, grouped = false, roving = false }) {
    this.grouped = grouped;
    this.roving = roving;
    this.el = h('div.tokens', { role: 'group', 'aria-label': label });
    this.scroller = h('div.tokens-scroll', {}, this.el);
    this.chips = [];
    this.tokens = null;
    this.showSpecial = null;
    this.selected = -1;
    this.stop = null;  // the roving chip in the tab order
    const chipOf = (event) => event.target.closest?.('button.chip');
    this.el.addEventListener('click', (event) => {
      const chip = chipOf(event);
      if (chip) onSelect({ token: Number(chip.dataset.token) });
    });
    if (onKey) {
      this.el.addEventListener('keydown', (event) => {
        const chip = chipOf(event);
        if (chip) onKey(event, Number(chip.dataset.token));
      });
    }
  }

  // The chips (and the words' groups) are kept from one sentence to the next and rewritten where
  // they differ: a sentence typed on lays out its new tokens, not a new list.
  build(result, showSpecial) {
    this.tokens = result.tokens;
    this.showSpecial = showSpecial;
    this.selected = -1;
    const n = result.tokens.length;
    for (const chip of this.chips.splice(n)) chip.remove();
    const template = this.chips.length < n ? h('button.chip', { type: 'button', tabindex: this.roving ? '-1' : undefined }) : null;
    while (this.chips.length < n) {
      const chip = template.cloneNode(false);
      chip.dataset.token = String(this.chips.length);
      this.chips.push(chip);
    }
    this.groups ??= [];
    const wanted = [];  // per group: [first token, past the last]
    result.tokens.forEach((token, i) => {
      const chip = this.chips[i];
      const special = isSpecial(result.roles, i);
      if (chip.textContent !== token.text) chip.textContent = token.text;
      if (chip.classList.contains('special') !== special) chip.classList.toggle('special', special);
      if (chip.hidden !== (special && !showSpecial)) chip.hidden = special && !showSpecial;
      if (chip.getAttribute('aria-pressed') !== 'false') chip.setAttribute('aria-pressed', 'false');
      if (this.roving && chip.tabIndex !== -1) chip.tabIndex = -1;
      const last = wanted[wanted.length - 1];
      if (!last || token.word < 0 || token.word !== result.tokens[i - 1].word) wanted.push([i, i + 1]);
      else last[1] = i + 1;
    });
    if (!this.grouped) {
      this.sync(this.el, this.chips);
      return;
    }
    for (const group of this.groups.splice(wanted.length)) group.remove();
    wanted.forEach(([first, past], g) => {
      const group = this.groups[g] ?? (this.groups[g] = h('span.word', { role: 'presentation' }));
      this.sync(group, this.chips.slice(first, past));
      const special = isSpecial(result.roles, first);
      group.hidden = special && !showSpecial;
      group.classList.toggle('multi', past - first > 1);
    });
    this.sync(this.el, this.groups);
  }

  // The roving chips' keys: the arrow keys go to the previous or the next shown chip (left and
  // up back, right and down on: the chips wrap like lines of text), Home and End to the first
  // and the last. Moves the focus and returns the chip's token for the caller to select, or
  // undefined for another key (left to the browser).
  step(event, i) {
    const back = event.key === 'ArrowLeft' || event.key === 'ArrowUp';
    const on = event.key === 'ArrowRight' || event.key === 'ArrowDown';
    if (!back && !on && event.key !== 'Home' && event.key !== 'End') return undefined;
    event.preventDefault();
    const shown = this.chips.map((c, k) => (c.hidden ? -1 : k)).filter((k) => k >= 0);
    const at = shown.indexOf(i);
    const target = event.key === 'Home' ? shown[0] : event.key === 'End' ? shown[shown.length - 1] : shown[at + (back ? -1 : 1)];
    if (target === undefined) return undefined;
    this.chips[target].focus();
    return target;
  }

  // Makes parent's children exactly `children`, moving nothing that is already in place.
  sync(parent, children) {
    const now = parent.children;
    let k = 0;
    while (k < children.length && now[k] === children[k]) ++k;
    while (now.length > k) now[k].remove();
    parent.append(...children.slice(k));
  }

  update(result, selected, showSpecial) {
    if (result.tokens !== this.tokens || showSpecial !== this.showSpecial) this.build(result, showSpecial);
    if (selected !== this.selected) {
      this.chips[this.selected]?.setAttribute('aria-pressed', 'false');
      const chip = this.chips[selected];
      if (chip) {
        chip.setAttribute('aria-pressed', 'true');
        revealRow(this.scroller, chip);
      }
      this.selected = selected;
    }
    if (this.roving) this.rove();
  }

  // The one chip in the tab order: the selected one, or the first shown where none is (a
  // figure whose word is not chosen yet, or is a hidden [CLS]).
  rove() {
    const chip = this.chips[this.selected];
    const stop = chip && !chip.hidden ? chip : this.chips.find((c) => !c.hidden);
    if (stop === this.stop && stop?.tabIndex === 0) return;
    if (this.stop) this.stop.tabIndex = -1;
    if (stop) stop.tabIndex = 0;
    this.stop = stop;
  }
}

// "Head [layer 1, head 1 v]": every layer and head of the model, the current one chosen.
export class HeadMenu {
  constructor(onSelect) {
    this.menu = h('select', {
      'aria-label': 'Layer and head',
      on: { change: (e) => { const [l, hd] = e.target.value.split(',').map(Number); onSelect({ layer: l, head: hd }); } },
    });
    this.el = h('div.controls', {}, h('label', {}, 'Head ', this.menu));
    this.shape = '';
  }

  update(result, layer, head) {
    const shape = `${result.layers}x${result.heads}`;
    if (shape !== this.shape) {
      this.shape = shape;
      const options = [];
      for (let l = 0; l < result.layers; ++l) {
        for (let hd = 0; hd < result.heads; ++hd) options.push(h('option', { value: `${l},${hd}`, text: headName(l, hd) }));
      }
      this.menu.replaceChildren(...options);
    }
    const value = `${layer},${head}`;
    if (this.menu.value !== value) this.menu.value = value;
  }
}
