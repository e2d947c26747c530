// A browser's DOM in Node for the widgets' own logic (happy-dom from npm): the globals the widget
// modules read at import time and when an element upgrades. Import this module before any
// widget module. The example of the shipped default model (web/examples/, written by the site
// build) gives the figures a real analysis without the engine.
import { readFileSync, writeFileSync } from 'node:fs';
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

// A precomputed example of the shipped default model (the site build's web/examples/ file for
// it, copied into tests/fixtures/widgets/example.json), so that these tests need no site build.
// The widgets read it through resultFromExample as they read the site's own examples;
// scripts/site/make_examples.mjs writes the same format, and `node tests/js/dom_shim.mjs --update`
// copies the current site build's example over it.
const FIXTURE = join(root, 'tests', 'fixtures', 'widgets', 'example.json');
export function defaultExample() {
  return JSON.parse(readFileSync(FIXTURE, 'utf8'));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--update') {
  const manifest = JSON.parse(readFileSync(join(root, 'web', 'models', 'manifest.json'), 'utf8'));
  const built = join(root, 'web', 'examples', `${manifest.models[manifest.default].sha256}.json`);
  writeFileSync(FIXTURE, readFileSync(built));
  console.log(`dom_shim: ${FIXTURE} is now ${built}`);
  await closeWindow();
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
