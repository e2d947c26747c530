// The embedding bundle's entry: scripts/site/build_embed.mjs turns it into web/dist/attention-widgets.js,
// the one script another site loads. It defines every figure as a custom element that follows
// its own attributes; they all share one engine and one model download, found beside the bundle
// (../models/manifest.json from its own URL) unless the attributes name others.
import './embedded.js';
import './attention-row.js';
import './attention-heads.js';
import './attention-compare.js';
import './softmax-lab.js';
import './attention-instrument.js';
import './attention-mechanism.js';
import './attention-precision.js';
import './attention-prediction.js';
import './attention-contribution.js';

export { ATTRIBUTES, BARE_ATTRIBUTES, FIGURES, SOURCE_ATTRIBUTES, TAGS } from './registry.js';
export { FRAME_MESSAGES, FRAME_WIDGET_PARAM } from './snippet.js';
export { getEngine } from '../engine/engine.js';
