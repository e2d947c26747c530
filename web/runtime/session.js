// "Text in, view out", once for every host: the article (article.js), a figure on its own
// (runtime/standalone.js) and the series' posts (posts/common.js) are adapters of what is here.
//   - EngineSession: the engine as one piece of state {engine, progress, error, restarting}: the
//     download's progress summed over its files, a failure with a retry, and, after a trap (the
//     engine's worker ended), a new engine from the cached files.
//   - ViewLoop: a host's requests for views (figureView's) with the one staleness rule (only the
//     newest request's view is drawn), the restart after a trap, and the last live result kept on
//     screen while a text is refused or the engine restarts.
import { getEngine, onEngineProgress } from '../engine/engine.js';
import { Latest } from '../widgets/view.js';
import { figureView } from './view.js';

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
    this._starts = new Latest();
    this._stop = null;
    this._frame = 0;
  }

  get ready() {
    return Boolean(this.engine);
  }

  // Loads (again, after a failure: the retry). Resolves with the engine, or null when it failed
  // or a newer start replaced this one; the failure is in `error`.
  start() {
    const ticket = this._starts.next();
    this.error = null;
    this.progress = null;
    this._parts = {};
    this._follow();
    this.onChange(this);
    return getEngine(this.options).then((engine) => {
      if (!this._starts.current(ticket)) return null;
      this.engine = engine;
      this.restarting = null;
      this._unfollow();
      this.onChange(this);
      return engine;
    }, (error) => {
      if (!this._starts.current(ticket)) return null;
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

// One host's loop from a request to the view it draws, over one EngineSession. view() gives
// the view of the newest request, or null for a request that a newer one overtook (its view is
// never drawn) and for one that found the engine trapped (the session then starts a new engine
// and tells the host, which asks again). The last live result stays on screen, with the
// refusal's words, while a text is refused or a trapped engine restarts.
export class ViewLoop {
  constructor(session, { channel = null, vectors = false } = {}) {
    this.session = session;
    this.channel = channel;
    this.vectors = vectors;
    this.live = null;  // the last live result the engine gave
    this._latest = new Latest();
    this._tickets = new WeakMap();  // view -> its request's ticket
  }

  // Whether `wantLive` gets the live engine now: it is ready, or it restarts and the figures
  // keep the last live result meanwhile.
  isLive(wantLive) {
    const s = this.session;
    return Boolean(wantLive && (s.engine || (s.restarting && this.live)));
  }

  // The view for `request` (figureView's arguments but the engine's: a function of whether the
  // view is live, or an object), live when `wantLive` and the engine allows it.
  async view(wantLive, request) {
    const ticket = this._latest.next();
    const s = this.session;
    const live = this.isLive(wantLive);
    // While a trapped engine is replaced, the figures keep the last live result and say why
    // nothing newer is drawn (figureView shows `previous` with the refusal's message).
    const engine = !live ? null : s.engine ?? { analyze: () => Promise.reject(new Error(s.restarting)) };
    const args = typeof request === 'function' ? request(live) : request;
    const view = await figureView({
      channel: this.channel, vectors: this.vectors, progress: s.progress, error: s.error, ready: s.ready,
      ...args, engine, previous: this.live,
    });
    if (!view || !this._latest.current(ticket)) return null;
    if (s.restartIfFailed()) return null;
    if (view.mode === 'live' && view.result && !view.inputError && s.engine) this.live = view.result;
    this._tickets.set(view, ticket);
    return view;
  }

  // Whether `view` is still the newest: no view was asked for since its request. A host that
  // draws a view in several turns checks it between them.
  isNewest(view) {
    return this._latest.current(this._tickets.get(view));
  }

  // Lets go of the last live result (a figure far from the viewport: StandaloneDriver.release).
  forget() {
    this.live = null;
  }
}

// Two sentences read through the same head, for a figure that compares them (<attention-pair>):
// a ViewLoop for each over one session, so that each keeps the newest-request rule, the restart
// after a trap and its last live result. view() takes ViewLoop.view's arguments and the second
// sentence, and gives the first sentence's view with the second's under `against`
// ({sentence, result, error}), or null when either request was overtaken or found the engine
// trapped.
export class PairLoop {
  constructor(session, { channel = 'pair' } = {}) {
    this.first = new ViewLoop(session, { channel: `${channel}:first` });
    this.second = new ViewLoop(session, { channel: `${channel}:second` });
  }

  async view(wantLive, request, against) {
    const args = (live) => (typeof request === 'function' ? request(live) : request);
    const [first, second] = await Promise.all([
      this.first.view(wantLive, request),
      // The second sentence's own selection is not drawn: the figure aligns its tokens to the first's.
      this.second.view(wantLive, (live) => ({ ...args(live), example: null, sentence: against, selection: { token: -1, layer: -1, head: -1 } })),
    ]);
    if (!first || !second || !this.first.isNewest(first) || !this.second.isNewest(second)) return null;
    const error = second.inputError ?? (second.mode === 'error' ? second.error?.message ?? null : null);
    const view = { ...first, against: { sentence: against, result: second.result, error } };
    this._last = { view, first, second };
    return view;
  }

  // Whether `view` is still the newest of both sentences' requests.
  isNewest(view) {
    const last = this._last;
    return Boolean(last) && view === last.view && this.first.isNewest(last.first) && this.second.isNewest(last.second);
  }

  forget() {
    this.first.forget();
    this.second.forget();
    this._last = null;
  }
}
