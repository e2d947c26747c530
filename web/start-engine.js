// Starts the page's engine (its worker, the wasm and the model's download) as early as the
// page can. The article and every post import this module before any other, and a module's
// imports are evaluated in order, depth first: so this runs before the figures' modules define
// and build their elements (on a phone that took the main thread about 0.5 s, and the download
// waited for it). The page's EngineSession (web/controller.js) asks getEngine for the same
// options later and gets this same engine, with the progress reported so far. The article reads
// its choice of model from its address (<html data-model-from-address>); the posts load the
// default, whose set statistics they show.
import { getEngine } from './engine/engine.js';
import { modelChoice } from './controller.js';

const options = document.documentElement.hasAttribute('data-model-from-address') ? modelChoice() : {};
// A failure is the page's session's to show (it gets the same promise); not an unhandled one.
getEngine(options).catch(() => {});
