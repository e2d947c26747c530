// "Text in, view out", once for every page: the article (article.js), a figure used on its own
// (widgets/base.js) and the series' posts (posts/common.js) are adapters of what is here.
//   - textRefusal: why a text the reader submitted is not analysed (empty, or longer than the
//     engine takes and a link holds), in one wording; refuseLongPastes: a sentence box refuses
//     a paste or drop that would make it that long.
//   - EngineSession: the page's shared engine as one piece of state {engine, progress, error,
//     restarting}: the download's progress summed over its files, a failure with a retry, and,
//     after a trap (the engine's worker ended), a new engine from the cached files while the
//     figures keep the last result.
//   - readHash / writeHash: the page's state in its URL hash, through the one codec of state.js.
// Superseding (a newer request replaces one still waiting) is the engine's `channel` option and
// Latest (widgets/view.js); a view is built by figureView (widgets/view.js).
import { getEngine, onEngineProgress, tooLong } from './engine/engine.js';
import { formatHashState, MAX_LINK_TEXT, readHashState } from './state.js';
import { megabytes } from './widgets/dom.js';

export { MAX_LINK_TEXT };

// Why `text` is not analysed, or null. `keeps` says what stays on screen instead ("The figures
// still show the last sentence."). A text longer than MAX_LINK_TEXT is never cut: the reader
// shortens it.
export function textRefusal(text, keeps) {
  const value = String(text ?? '');
  if (!value.trim()) return `Type a sentence first: an empty one has no words, only [CLS] and [SEP]. ${keeps}`;
  // tooLong's limit is MAX_LINK_TEXT's (state.js defines the one as the other).
  const long = tooLong(value);
  return long ? `${long} Shorten it to analyse it. ${keeps}` : null;
}

// A paste or a drop that would make a sentence box's text longer than the engine takes is refused
// before it reaches the box, and `say(message)` says why (textRefusal's words, then `keeps`). Held
// in the box such a text would cost every frame a layout of all of it (Chromium took 80-130 ms for
// 1 MB on this machine) for a text nothing can analyse; refused, the box keeps what it had and the
// reader's clipboard still holds the paste. Typing, or a script setting the value, still reaches
// textRefusal on submit.
export function refuseLongPastes(input, say, keeps) {
  const guard = (event) => {
    const added = (event.clipboardData ?? event.dataTransfer)?.getData('text/plain') ?? '';
    if (added.length <= MAX_LINK_TEXT - input.value.length) return;
    // A paste replaces the selection; a drop inserts where it lands.
    const start = event.type === 'paste' ? input.selectionStart ?? input.value.length : input.value.length;
    const end = event.type === 'paste' ? input.selectionEnd ?? start : start;
    const text = input.value.slice(0, start) + added + input.value.slice(end);
    if (!tooLong(text)) return;
    event.preventDefault();
    say(`${tooLong(text)} The box refused the ${event.type === 'paste' ? 'paste' : 'dropped text'} and keeps what it had. ${keeps}`);
  };
  input.addEventListener('paste', guard);
  input.addEventListener('drop', guard);
}

// The state a page keeps in its hash: keys {name: 'text' | 'index' | 'flag' | 'name'}.
export const readHash = (keys) => readHashState(location.hash, keys);

export function writeHash(state, { push = false } = {}) {
  const hash = formatHashState(state);
  if (hash !== location.hash) history[push ? 'pushState' : 'replaceState'](null, '', hash);
}

// The download's progress as the status lines say it (null: not started yet).
export function progressText(progress) {
  if (!progress) return 'Starting the download of the engine and the model\u2026';
  const percent = Math.floor(progress.percent ?? 0);
  if (percent >= 100) return `Downloaded ${megabytes(progress.loaded)} (100%); starting the engine\u2026`;
  return progress.total
    ? `Loading the live model: ${megabytes(progress.loaded)} of ${megabytes(progress.total)} (${percent}%)`
    : `Loading the live model: ${megabytes(progress.loaded)}`;
}

// What a session says while the engine is away after a trap.
export const RESTARTING = 'The engine stopped after a failure and is starting again from the cached files; until it is ready the figures show your last sentence.';

// The engine for `options` (getEngine's), as state that `onChange(session)` hears about: when
// the download progresses (at most once per animation frame), when the engine is ready, when it
// failed. expectedBytes(): the download's size where the server does not say it yet (the
// manifest's engine + model), so that the percentage does not jump.
export class EngineSession {
  constructor({ options = {}, expectedBytes = () => 0, onChange = () => {} } = {}) {
    this.options = options;
    this.expectedBytes = expectedBytes;
    this.onChange = onChange;
    this.engine = null;
    this.progress = null;
    this.error = null;
    this.restarting = null;
    this._parts = {};
    this._ticket = 0;
    this._stop = null;
    this._frame = 0;
  }

  get ready() {
    return Boolean(this.engine);
  }

  // Loads (again, after a failure: the retry). Resolves with the engine, or null when it failed
  // or a newer start replaced this one; the failure is in `error`.
  start() {
    const ticket = ++this._ticket;
    this.error = null;
    this.progress = null;
    this._parts = {};
    this._follow();
    this.onChange(this);
    return getEngine(this.options).then((engine) => {
      if (ticket !== this._ticket) return null;
      this.engine = engine;
      this.restarting = null;
      this._unfollow();
      this.onChange(this);
      return engine;
    }, (error) => {
      if (ticket !== this._ticket) return null;
      this.error = { message: error.message, kind: error.kind };
      this.restarting = null;
      this._unfollow();
      this.onChange(this);
      return null;
    });
  }

  // After a trap the engine's worker is gone: true when that happened, and a new engine is on
  // its way (the figures say `restarting` meanwhile).
  restartIfFailed() {
    if (!this.engine?.failed) return false;
    this.engine = null;
    this.restarting = RESTARTING;
    this.start();
    return true;
  }

  // Stops hearing the download (a figure that left the page); resume() starts again.
  close() {
    this._unfollow();
  }

  resume() {
    if (!this.engine && !this.error) this._follow();
  }

  _follow() {
    if (this._stop) return;
    this._stop = onEngineProgress((p) => {
      this._parts[p.phase ?? 'all'] = p;
      const parts = Object.values(this._parts);
      const loaded = parts.reduce((a, x) => a + x.loaded, 0);
      const total = parts.reduce((a, x) => a + (x.total || 0), 0);
      const denominator = Math.max(total, parts.length < 2 ? this.expectedBytes() : 0);
      this.progress = { loaded, total: denominator, percent: denominator ? Math.min(100, (100 * loaded) / denominator) : 0 };
      if (this._frame) return;
      const tell = () => {
        this._frame = 0;
        if (!this.engine) this.onChange(this);
      };
      this._frame = typeof requestAnimationFrame === 'function' ? requestAnimationFrame(tell) : setTimeout(tell, 16);
    });
  }

  _unfollow() {
    this._stop?.();
    this._stop = null;
  }
}
