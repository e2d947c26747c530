// Starts the page's engine (its worker, the wasm and the model's download) as early as the
// page can. Every page that runs the engine loads this module twice over: as a script of its
// own, `async`, first in its head (so it runs as soon as its few modules are here, before the
// page's figures have even arrived: on a phone, before the 30 other modules are parsed and
// evaluated), and as the first import of its entry (the article's, a post's), so that it runs
// first there too where the async script has not run yet. A module runs once per page however
// often it is named. The page's EngineSession (web/runtime/session.js) asks getEngine for the same
// options later and gets this same engine, with the progress reported so far. The article
// reads its choice of model from its address (<html data-model-from-address>); the posts load
// the default, whose set statistics they show.
import { getEngine } from './engine/engine.js';

// The article's choice of model from its address (getEngine's options): ?model=KEY (from the
// manifest) or ?model-src=URL (same origin only, so a link cannot make the page fetch from
// elsewhere). The posts always load the default: their set statistics are the default's.
export function modelChoice() {
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

const options = document.documentElement.hasAttribute('data-model-from-address') ? modelChoice() : {};
// A failure is the page's session's to show (it gets the same promise); not an unhandled one.
getEngine(options).catch(() => {});
