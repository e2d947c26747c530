// A browser's DOM in Node for the widgets' own logic (happy-dom from npm): the globals the widget
// modules read at import time and when an element upgrades. Import this module before any
// widget module. The example of the shipped default model (web/examples/, written by the site
// build) gives the figures a real analysis without the engine.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Window } from 'happy-dom';

export const window = new Window({ url: 'http://localhost:8000/index.html' });
const GLOBALS = ['document', 'customElements', 'HTMLElement', 'CustomEvent', 'Event', 'MutationObserver', 'Node', 'navigator', 'location', 'CSS'];
globalThis.window = window;
for (const key of GLOBALS) {
  Object.defineProperty(globalThis, key, { value: window[key], configurable: true, writable: true });
}
globalThis.getComputedStyle = window.getComputedStyle.bind(window);
globalThis.matchMedia = window.matchMedia.bind(window);
globalThis.requestAnimationFrame = window.requestAnimationFrame.bind(window);
globalThis.cancelAnimationFrame = window.cancelAnimationFrame.bind(window);

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The default model's precomputed example (its JSON), or a clear failure naming the step that
// makes it.
export function defaultExample() {
  const manifest = JSON.parse(readFileSync(join(root, 'web', 'models', 'manifest.json'), 'utf8'));
  const sha = manifest.models[manifest.default].sha256;
  const path = join(root, 'web', 'examples', `${sha}.json`);
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path} is missing (${error.code}); build the site first: node scripts/site/build_site.mjs`);
  }
}

// console.warn calls made while `work` runs, as strings (the widgets warn each attribute note).
export async function warnings(work) {
  const said = [];
  const original = console.warn;
  console.warn = (...args) => said.push(args.join(' '));
  try {
    await work();
  } finally {
    console.warn = original;
  }
  return said;
}

export async function closeWindow() {
  await window.happyDOM.abort();
  window.close();
}
