// Starts the page's engine (its worker, the wasm and the model's download) as early as the
// page can. Every page that runs the engine loads this module twice over: as a script of its
// own, `async`, first in its head (so it runs as soon as its few modules are here, before the
// page's figures have even arrived: on a phone, before the 30 other modules are parsed and
// evaluated), and as the first import of its entry (the article's, a post's), so that it runs
// first there too where the async script has not run yet. A module runs once per page however
// often it is named. The page's EngineSession (web/runtime/session.js) asks getEngine for the same
// options later and gets this same engine, with the progress reported so far. Every page reads
// a checkpoint the reader chose from its hash; the article also ?model= and ?model-src=
// (<html data-model-from-address>).
import { getEngine } from './engine/engine.js';
import { checkpointFromHash } from './engine/model_address.js';

// The page's choice of model from its address (getEngine's options): a checkpoint named in the
// hash (every page), else, on the article (<html data-model-from-address>), ?model=KEY (from the
// manifest) or ?model-src=URL (same origin only, so a link cannot make the page fetch from
// elsewhere). Without a checkpoint the posts load the default, whose set statistics they show.
export function modelChoice() {
  const checkpoint = checkpointFromHash();
  if (checkpoint) return { checkpoint };
  if (!document.documentElement.hasAttribute('data-model-from-address')) return {};
  const params = new URLSearchParams(location.search);
  const choice = {};
  const key = params.get('model');
  if (key && /^[\w.-]{1,100}$/.test(key)) choice.model = key;
  const src = params.get('model-src');
  if (src) {
    try {
      const url = new URL(src, location.href);
      if (url.origin === location.origin) choice.modelUrl = url.href;
    } catch {
      // An unparsable address is ignored; the default model loads.
    }
  }
  return choice;
}

// A failure is the page's session's to show (it gets the same promise); not an unhandled one.
getEngine(modelChoice()).catch(() => {});
