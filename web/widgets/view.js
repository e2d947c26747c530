// The view a figure draws, built once for the article and for a figure on its own (figureView),
// and what it says of a text cut to the model's length; Latest keeps only the newest of a
// caller's asynchronous views.
import { isSuperseded } from '../engine/engine.js';
import { resolveSelection } from './data.js';
import { thousands } from './dom.js';

// The one view builder, for the article and for a figure on its own. With an engine the result
// is its analysis of `sentence` (with hidden states, queries and keys when `vectors`); without
// one it is the example, if any. A sentence the engine refuses leaves `previous` (the last good
// live result) on screen with inputError saying why, or, with no previous result, makes the
// view's error. `selection` ({token, layer, head}, -1 for a default, or a function of the result
// giving one) is resolved on the result, the default token being the first spelled `wordText`.
// The rest (model, progress, error, ready, showSpecial, sources) goes into the view as it is.
// Returns a promise of the view: the analysis runs in the engine's worker. `channel` names the
// caller: its newer request replaces one still waiting, and the replaced view comes back null
// (a caller draws only the view of its newest request, so a stale result is never drawn).
export async function figureView({ engine = null, example = null, sentence, vectors = false, previous = null, selection, wordText, channel = null, ...rest }) {
  const view = { model: null, progress: null, error: null, ready: Boolean(engine), showSpecial: true, sources: {}, ...rest, sentence, result: example, inputError: null };
  if (engine) {
    view.mode = 'live';
    try {
      view.result = await engine.analyze(sentence, { vectors, channel });
    } catch (error) {
      if (isSuperseded(error)) return null;
      view.result = previous;
      if (previous) {
        view.inputError = error.message;
      } else {
        view.mode = 'error';
        view.error = { message: error.message, kind: error.kind };
      }
    }
  } else {
    view.mode = view.error ? 'error' : example ? 'example' : 'loading';
  }
  if (view.result) Object.assign(view, resolveSelection(view.result, typeof selection === 'function' ? selection(view.result) : selection, wordText));
  return view;
}

// Callers that build views asynchronously draw only their newest: latest.next() gives a token,
// latest.current(token) says whether it is still the newest.
// Where a text longer than the model reads was cut: the model reads result.n positions ([CLS]
// and [SEP] included), so the text's last analysed token is n - 2.
export function truncationNote(result) {
  if (!result?.truncated || result.n < 3) return '';
  const last = result.tokens[result.n - 2];
  return ` This text has ${thousands(result.full_length)} tokens and the model reads at most ${result.n}: `
    + `everything after \u201c${last.text.replace(/^##/, '')}\u201d (character ${thousands(last.end)} of ${thousands(result.text.length)}) is left out.`;
}

export class Latest {
  constructor() {
    this._n = 0;
  }

  next() {
    return ++this._n;
  }

  current(token) {
    return token === this._n;
  }
}
