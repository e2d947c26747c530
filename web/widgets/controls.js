// The controls the figures share: the sentence's tokens as chips (click one to read its row)
// and a menu of every layer and head. Readers' choices go to onSelect as a patch of
// {token} or {layer, head}; the figure passes them on as its select event.
import { h, headName } from './dom.js';
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

  build(result, showSpecial) {
    this.tokens = result.tokens;
    this.showSpecial = showSpecial;
    this.selected = -1;
    const groups = [];
    let group = null;
    let groupWord = null;
    // One chip is made and cloned for every token.
    const template = h('button.chip', { type: 'button', 'aria-pressed': 'false', tabindex: this.roving ? '-1' : undefined });
    this.chips = result.tokens.map((token, i) => {
      const special = isSpecial(result.roles, i);
      const chip = template.cloneNode(false);
      chip.dataset.token = String(i);
      chip.textContent = token.text;
      if (special) {
        chip.classList.add('special');
        if (!showSpecial) chip.hidden = true;
      }
      if (this.grouped) {
        if (!group || token.word < 0 || token.word !== groupWord) {
          group = h('span.word', { role: 'presentation', hidden: special && !showSpecial });
          groupWord = token.word;
          groups.push(group);
        }
        group.append(chip);
        if (group.children.length > 1) group.classList.add('multi');
      }
      return chip;
    });
    this.el.replaceChildren(...(this.grouped ? groups : this.chips));
  }

  update(result, selected, showSpecial) {
    if (result.tokens !== this.tokens || showSpecial !== this.showSpecial) this.build(result, showSpecial);
    if (selected === this.selected) return;
    const old = this.chips[this.selected];
    if (old) {
      old.setAttribute('aria-pressed', 'false');
      if (this.roving) old.tabIndex = -1;
    }
    const chip = this.chips[selected];
    if (chip) {
      chip.setAttribute('aria-pressed', 'true');
      if (this.roving) chip.tabIndex = 0;
      revealRow(this.scroller, chip);
    }
    this.selected = selected;
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
