// The view a figure draws, built in one place for every host (the article, a figure on its own):
// see the view's shape at the top of widgets/base.js.
import { isSuperseded } from '../engine/engine.js';
import { resolveSelection } from '../widgets/data.js';
import { DEFAULT_LENS, isLens, lensRequest } from '../engine/lenses.js';

// The engine's lenses of a text for one request, as {lenses, lensError}: kept for the last few
// requests of each engine (at most LENS_MEMO_BYTES of arrays), so that going back to a token or a
// lens does not ask the worker again.
const LENS_MEMO_ENTRIES = 16;
const LENS_MEMO_BYTES = 16 * 2 ** 20;
const lensMemos = new WeakMap();  // engine -> Map(key -> promise of {lenses, lensError, bytes})
const answerBytes = (lenses) => Object.values(lenses ?? {}).reduce((sum, v) => sum + (ArrayBuffer.isView(v) ? v.byteLength : 0), 0);
function lensesOf(engine, text, request) {
  if (!lensMemos.has(engine)) lensMemos.set(engine, new Map());
  const memo = lensMemos.get(engine);
  const key = `${request.row}\u0000${request.flowRow}\u0000${text}`;
  let answer = memo.get(key);
  if (answer) {
    memo.delete(key);  // to the end: the most recent
  } else {
    answer = Promise.resolve(engine.lenses(text, request)).then((lenses) => ({ lenses, lensError: null, bytes: answerBytes(lenses) }),
      (error) => ({ lenses: null, lensError: error.message, bytes: 0 }));
    // A failed request is not kept: asking again is the retry.
    answer.then((a) => { if (a.lensError !== null) memo.delete(key); });
  }
  memo.set(key, answer);
  while (memo.size > LENS_MEMO_ENTRIES) memo.delete(memo.keys().next().value);
  // Bounded in bytes once the answer is here: the oldest go first, the newest always stays.
  answer.then(async () => {
    const sizes = await Promise.all([...memo.values()]);
    let total = sizes.reduce((sum, a) => sum + a.bytes, 0);
    for (const [k, v] of memo) {
      if (total <= LENS_MEMO_BYTES || v === answer) break;
      total -= (await v).bytes;
      memo.delete(k);
    }
  });
  return answer.then(({ lenses, lensError }) => ({ lenses, lensError }));
}

// With an engine the result is its analysis of `sentence` (with hidden states, queries and keys
// when `vectors`); without one it is the example, if any. A sentence the engine refuses leaves
// `previous` (the last good live result) on screen with inputError saying why, or, with no
// previous result, makes the view's error. `selection` ({token, layer, head}, -1 for a default,
// or a function of the result giving one) is resolved on the result, the default token being
// the first spelled `wordText`. The rest (model, progress, error, ready, showSpecial, sources)
// goes into the view as it is. Returns a promise of the view: the analysis runs in the engine's
// worker. `channel` names the caller: its newer request replaces one still waiting, and the
// replaced view comes back null (ViewLoop draws only the view of its newest request).
// `lens` (web/engine/lenses.js) is the row figures' lens; with `wantLenses` a live view also
// carries the engine's lenses of the sentence for the selected token (`lenses`, or
// `lensError` saying why not), which the figures that draw rows read.
export async function figureView({ engine = null, example = null, sentence, vectors = false, previous = null, selection, wordText, channel = null, wantLenses = false, ...rest }) {
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
  view.lens = isLens(view.lens) ? view.lens : DEFAULT_LENS;
  view.lenses = null;
  view.lensError = null;
  view.lensesPending = null;
  if (engine && wantLenses && view.mode === 'live' && view.result && !view.inputError && view.token >= 0) {
    const answer = lensesOf(engine, view.result.text, lensRequest(view.lens, view.token));
    if (view.lens === DEFAULT_LENS) {
      // The weights need no lenses: the view is drawn at once, and the figure takes the lenses
      // (its mixing bar's) when they come (AttentionFigure's view setter follows lensesPending).
      view.lensesPending = answer;
    } else {
      Object.assign(view, await answer);
    }
  }
  return view;
}
