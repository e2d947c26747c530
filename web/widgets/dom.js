// Building DOM without markup strings: every piece of text, the reader's included, goes in as
// a text node, so nothing a reader types can become an element or run as a script.
// h('tag.class1.class2', {attrs, on: {event: fn}, dataset, style}, ...children)
// A box that scrolls when its content (a table, a tall chart) is larger than the screen: it
// takes the keyboard's focus and has a name, so that a keyboard can scroll it and a screen
// reader says what it holds (WCAG 2.1.1; axe's scrollable-region-focusable).
// It says where it holds more than it shows (watchOverflow), for the styles' scroll cues.
export function scrollBox(spec, label, ...children) {
  const box = h(spec, { tabindex: '0', role: 'region', 'aria-label': label }, ...children);
  watchOverflow(box);
  return box;
}

// A scroll box's overflow as attributes the styles draw cues from (a hint line, a fading edge,
// a shadow under a sticky row): data-overflow lists the axes it scrolls on ("x y"), data-more
// the sides past which its content goes on from where it is scrolled now ("left right up
// down"); each is absent when empty. Kept up to date when the box or its content changes size
// (one ResizeObserver for every box) and when it scrolls.
const watchedBoxes = new WeakSet();
const overflowObserver = typeof ResizeObserver === 'function'
  ? new ResizeObserver((entries) => {
    for (const { target } of entries) {
      const box = watchedBoxes.has(target) ? target : target.parentElement;
      // A child that has left its box is no longer followed.
      if (!box || !watchedBoxes.has(box)) {
        overflowObserver.unobserve(target);
        continue;
      }
      for (const child of box.children) overflowObserver.observe(child);
      markOverflow(box);
    }
  })
  : null;

export function watchOverflow(box) {
  if (!overflowObserver || watchedBoxes.has(box)) return;
  watchedBoxes.add(box);
  overflowObserver.observe(box);
  box.addEventListener('scroll', () => markOverflow(box), { passive: true });
}

function markOverflow(box) {
  const x = box.scrollWidth - box.clientWidth > 1;
  const y = box.scrollHeight - box.clientHeight > 1;
  const more = [
    x && box.scrollLeft > 1 && 'left', x && box.scrollLeft + box.clientWidth < box.scrollWidth - 1 && 'right',
    y && box.scrollTop > 1 && 'up', y && box.scrollTop + box.clientHeight < box.scrollHeight - 1 && 'down',
  ].filter(Boolean).join(' ');
  setData(box, 'overflow', [x && 'x', y && 'y'].filter(Boolean).join(' '));
  setData(box, 'more', more);
}

function setData(el, key, value) {
  if ((el.dataset[key] ?? '') === value) return;
  if (value) el.dataset[key] = value;
  else delete el.dataset[key];
}

export function h(spec, props = {}, ...children) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) el.className = classes.join(' ');
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'on') {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (key === 'style') {
      for (const [name, v] of Object.entries(value)) el.style.setProperty(name, v);
    } else if (key === 'text') {
      el.textContent = String(value);
    } else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'hidden') {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === 'text') el.textContent = String(value);
    else if (value !== undefined && value !== null) el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

// Sets an element's text only when it changes (a write of the same text still costs a layout).
export function setText(el, text) {
  const value = String(text);
  if (el.textContent !== value) el.textContent = value;
}

// Axis labels are drawn at MIN_LABEL_PX or more. Where they are spaced closer than that (a long
// sentence, a phone), only every step-th is drawn, counted from the label at `anchor` (the
// selected token's, so that it is always named), as a chart thins its tick labels; the others
// keep their place unseen (the figures' readouts name any token). Returns the step.
export const MIN_LABEL_PX = 12;
export function thinLabels(labels, spacing, anchor = 0) {
  const step = spacing > 0 ? Math.max(1, Math.ceil(MIN_LABEL_PX / spacing - 1e-9)) : Infinity;
  labels.forEach((label, c) => {
    const visibility = Math.abs(c - anchor) % step ? 'hidden' : '';
    if (label.style.visibility !== visibility) label.style.visibility = visibility;
  });
  return step;
}

// One ResizeObserver for every figure: element -> fit(its new content width).
const widthWatchers = new WeakMap();
let widthObserver = null;
export function watchWidth(el, fit) {
  if (typeof ResizeObserver !== 'function') return;
  widthObserver ??= new ResizeObserver((entries) => {
    for (const entry of entries) widthWatchers.get(entry.target)?.(entry.contentRect.width);
  });
  widthWatchers.set(el, fit);
  widthObserver.observe(el);
}
export function unwatchWidth(el) {
  if (!el) return;
  widthWatchers.delete(el);
  widthObserver?.unobserve(el);
}

// Fills every [data-fact] element (`elements`: a list of them, or the root they are under) from
// `facts`, as text. A number changes only where its text does: a click that leaves it as it was
// does not touch its element (nor the layout of the paragraph around it). An element whose fact
// is absent keeps its placeholder wording.
export function fillFacts(elements, facts) {
  const list = typeof elements.querySelectorAll === 'function' ? elements.querySelectorAll('[data-fact]') : elements;
  for (const el of list) {
    const value = facts[el.dataset.fact];
    if (value !== undefined && el.textContent !== String(value)) el.textContent = String(value);
  }
}
