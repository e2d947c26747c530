// The embedding bundle's entry: scripts/site/build_embed.mjs turns it into web/dist/attention-widgets.js,
// the one script another site loads. It defines every figure as a custom element that follows
// its own attributes (web/runtime/standalone.js is their host); they all share one engine and one
// model download, found beside the bundle (../models/manifest.json from its own URL) unless the
// attributes name others.
import './runtime/standalone.js';
import './widgets/embedded.js';
import './widgets/attention-row.js';
import './widgets/attention-heads.js';
import './widgets/attention-compare.js';
import './widgets/softmax-lab.js';
import './widgets/attention-instrument.js';
import './widgets/attention-mechanism.js';
import './widgets/attention-precision.js';
import './widgets/attention-prediction.js';
import './widgets/attention-contribution.js';
import './widgets/attention-map.js';
import './widgets/attention-pair.js';

import { unknownElementNote } from './widgets/registry.js';

export { ATTRIBUTES, BARE_ATTRIBUTES, FIGURES, SOURCE_ATTRIBUTES, TAGS } from './widgets/registry.js';
export { FRAME_MESSAGES, FRAME_WIDGET_PARAM } from './widgets/snippet.js';
export { getEngine } from './engine/engine.js';

// A misspelt figure's element (<attention-rwo>) is an unknown element that shows nothing: once
// the page's markup is here, the console says so, once per tag, with the nearest figure.
function warnUnknownElements() {
  const seen = new Set();
  for (const el of document.querySelectorAll('*')) {
    const note = el.localName.includes('-') && !seen.has(el.localName) ? unknownElementNote(el.localName) : null;
    if (!note) continue;
    seen.add(el.localName);
    console.warn(`attention widgets: ${note}`);
  }
}
if (typeof document !== 'undefined') {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', warnUnknownElements, { once: true });
  else warnUnknownElements();
}
