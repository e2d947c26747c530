// The controls two figures share: the sentence's tokens as chips (click one to read its row)
// and a menu of every layer and head. Readers' choices go to onSelect as a patch of
// {token} or {layer, head}; the figure passes them on as its select event.
import { h, headName } from './dom.js';
import { isSpecial } from '../engine/result.js';

export const CONTROLS_CSS = `
  .controls { display: flex; flex-wrap: wrap; gap: 0.4em 0.8em; align-items: center; margin-bottom: 0.5em; }
  .controls select { max-width: 100%; padding: 0.2em 0.3em; border: 1px solid var(--attn-line); border-radius: 6px; background: var(--attn-bg); }
  .tokens { display: flex; flex-wrap: wrap; gap: 0.3em; margin: 0 0 0.7em; }
  .chip {
    min-height: 2em; min-width: 2em; padding: 0.1em 0.45em; border-radius: 5px; font-size: 0.92em;
    border: 1px solid var(--attn-line); background: var(--attn-bg); max-width: 100%; overflow-wrap: anywhere;
  }
  .chip.special { font-style: italic; color: var(--attn-muted); }
  .chip[aria-pressed="true"] { background: var(--attn-bar); color: var(--attn-bg); border-color: var(--attn-bar); font-style: normal; }
`;

// The tokens as a group of toggle buttons; [CLS] and [SEP] are hidden unless showSpecial.
export function tokenChips(result, selected, showSpecial, onSelect, label) {
  const chips = result.tokens.map((t, i) => {
    const special = isSpecial(result.roles, i);
    return h(`button.chip${special ? '.special' : ''}`, {
      type: 'button', 'aria-pressed': String(i === selected), dataset: { token: String(i) },
      hidden: special && !showSpecial, text: t.text,
      on: { click: () => onSelect({ token: i }) },
    });
  });
  return h('div.tokens', { role: 'group', 'aria-label': label }, chips);
}

// "Head [layer 1, head 1 v]": every layer and head of the model, the current one chosen.
export function headMenu(result, layer, head, onSelect) {
  const menu = h('select', {
    'aria-label': 'Layer and head',
    on: { change: (e) => { const [l, hd] = e.target.value.split(',').map(Number); onSelect({ layer: l, head: hd }); } },
  });
  for (let l = 0; l < result.layers; ++l) {
    for (let hd = 0; hd < result.heads; ++hd) menu.append(h('option', { value: `${l},${hd}`, text: headName(l, hd) }));
  }
  menu.value = `${layer},${head}`;
  return h('div.controls', {}, h('label', {}, 'Head ', menu));
}
