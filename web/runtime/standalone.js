// A figure on its own (outside the article): with a `sentence` attribute, or inside the embedding
// bundle, a figure follows its own attributes and the page's shared engine. This module is that
// figure's host, as article.js is the article's: importing it installs the driver that
// AttentionFigure (widgets/base.js) starts when such a figure is connected. The reader's choices
// stop here (they never reach a host page's state) and live in the driver, not in the
// attributes; once drawn, the figure tells the host with an attention-change event.
import { DEFAULT_MANIFEST_URL } from '../engine/engine.js';
import { checkpointFromHash, DEFAULT_HUB, hubFromAddress, LOOPBACK_HOSTS, parseHubChoice } from '../engine/model_address.js';
import { DEFAULT_WORD_TEXT, PAIR_PRESETS, PRESETS } from '../content.js';
import { AttentionFigure, ATTRIBUTES, EVENTS } from '../widgets/base.js';
import { describeModel, resolveAttributes } from '../widgets/data.js';
import { EngineSession, PairLoop, ViewLoop } from './session.js';
import { figureView } from './view.js';

// engine-src, manifest-src and model-src are as powerful as <script src>: the engine's glue (from
// engine-src, or named by a manifest) runs in the host page's worker or page, and a model file's
// name and provenance become the figure's claims. So an address on another origin than these
// widgets' own is refused unless the host page allows that origin, in its head:
//   <meta name="attention-widgets-origins" content="https://models.example https://cdn.example">
// (a page setting, which markup inside an article cannot give itself by an attribute).
export const ORIGINS_META = 'attention-widgets-origins';
const WIDGETS_ORIGIN = new URL(import.meta.url).origin;

// The origins the page allows: only a meta that is a child of <head> counts (markup in a page's
// body, an article's Markdown, cannot allow an origin), read once, when the first figure loads
// (one that a script adds later changes nothing).
let allowedOrigins = null;
function listedOrigins() {
  if (!allowedOrigins) {
    const metas = [...(document.head?.children ?? [])].filter((el) => el.localName === 'meta' && el.getAttribute('name') === ORIGINS_META);
    allowedOrigins = new Set(metas.flatMap((meta) => (meta.getAttribute('content') ?? '').split(/\s+/)).flatMap((entry) => {
      try {
        return entry ? [new URL(entry).origin] : [];
      } catch {
        return [];
      }
    }));
  }
  return allowedOrigins;
}

function allowedOrigin(url) {
  const origin = new URL(url).origin;
  return origin === WIDGETS_ORIGIN || listedOrigins().has(origin);
}

// model-src="hf:ID" or "hf:ID@REVISION": a checkpoint on the Hugging Face hub, which the
// figure's engine downloads from the hub (web/engine/hub.js) where the page allows the hub's
// origin like any other: {hub, id, revision}, {refusal}, or null for any other model-src.
function hubSource(figure) {
  const raw = figure.getAttribute(ATTRIBUTES.modelSrc)?.trim() ?? '';
  if (!raw.startsWith('hf:')) return null;
  const choice = parseHubChoice(raw.slice(3));
  if (!choice) return { refusal: `model-src=\u201c${raw}\u201d is not a repository on the hub; write hf:owner/name, or hf:owner/name@revision.` };
  // A test hub (?hub=, loopback only) is taken from the address of the widgets' own pages or of
  // a host page on this machine; a link to another site's page cannot redirect its figures.
  const hub = location.origin === WIDGETS_ORIGIN || LOOPBACK_HOSTS.has(location.hostname) ? hubFromAddress() : DEFAULT_HUB;
  if (!allowedOrigin(hub)) {
    return { refusal: `model-src=\u201c${raw}\u201d downloads the model from the Hugging Face hub (${hub}), which this page does not allow; its author allows it in the page's head with <meta name="${ORIGINS_META}" content="${hub}"> (and its Content-Security-Policy's connect-src allows the hub and the host its files redirect to).` };
  }
  return { hub, ...choice };
}

// Why an address attribute is refused before any download, or null.
function sourceRefusal(sources) {
  const refused = Object.entries(sources).find(([, url]) => !/^https?:/.test(url));
  if (refused) return `${refused[0]} must be an http or https address; it is \u201c${refused[1]}\u201d.`;
  const foreign = Object.entries(sources).find(([, url]) => !allowedOrigin(url));
  if (!foreign) return null;
  const origin = new URL(foreign[1]).origin;
  return `${foreign[0]}=\u201c${foreign[1]}\u201d is on ${origin}, not on these widgets\u2019 origin (${WIDGETS_ORIGIN}); an address that loads the engine or the model must be on that origin, unless this page allows ${origin} in its head with <meta name="${ORIGINS_META}" content="${origin}">.`;
}

// An embedded figure starts (its engine session: the shared engine's download, then its
// analysis) when it comes within NEAR of the viewport, not when it is connected: a host's post of
// 200 figures computes what the reader can see and what is a scroll away, not all of them at
// once (security review 4: 200 figures went live in 111 s using 2.9 GB). One observer for every
// figure. Without IntersectionObserver a figure starts at once.
export const NEAR = '150% 0px';
const starters = new WeakMap();  // figure -> what starts it
let nearObserver = null;
function whenNear(figure, start) {
  if (typeof IntersectionObserver !== 'function') {
    start();
    return;
  }
  nearObserver ??= new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const run = entry.isIntersecting ? starters.get(entry.target) : null;
      if (!run) continue;
      starters.delete(entry.target);
      nearObserver.unobserve(entry.target);
      run();
    }
  }, { rootMargin: NEAR });
  starters.set(figure, start);
  nearObserver.observe(figure);
}

// A drawn figure that goes further than FAR from the viewport lets go of its analysis and its
// drawing (AttentionFigure.release: it keeps its height), and starts again, as at first, when it
// comes within NEAR: a page of 200 figures holds those near the reader, not every one the reader
// has scrolled past. One observer for every started figure; between NEAR and FAR a figure
// neither starts nor lets go, so one at the edge does not flicker.
export const FAR = '400% 0px';
const farHandlers = new WeakMap();  // figure -> its driver's far(isFar)
let farObserver = null;
function watchFar(figure, release) {
  if (typeof IntersectionObserver !== 'function') return;
  farObserver ??= new IntersectionObserver((entries) => {
    for (const entry of entries) farHandlers.get(entry.target)?.(!entry.isIntersecting);
  }, { rootMargin: FAR });
  farHandlers.set(figure, release);
  farObserver.observe(figure);
}

class StandaloneDriver {
  constructor(figure) {
    this.figure = figure;
    // The reader's choices ({sentence, token, layer, head, showSpecial}, layer and head from 0):
    // they override the attributes, which stay as the author wrote them.
    this.reader = {};
    this.refused = null;  // an address attribute refused before any download: {message, kind}
    this.session = null;
    this.loop = null;
    this.released = false;  // let go of its analysis and drawing, far from the viewport
    this.far = false;  // further than FAR from the viewport (lazy figures only)
    figure.addEventListener(EVENTS.select, (event) => {
      event.stopPropagation();
      this.choose(event.detail);
    });
    figure.addEventListener(EVENTS.retry, (event) => {
      event.stopPropagation();
      this.load();
    });
    // In the embedding bundle (figures on other sites' pages, any number of them) a figure
    // starts when it comes near the viewport; on the site's own pages, whose few figures a post
    // places itself, at once.
    // (The iframe page, one figure in its own frame, starts at once.)
    this.lazy = AttentionFigure.embedded && globalThis.top === globalThis.self;
    if (this.lazy) {
      whenNear(figure, () => {
        this.load();
        watchFar(figure, (far) => this.farAway(far));
      });
    } else this.load();
  }

  // Whether the figure is further than FAR from the viewport; a figure that goes there lets go
  // (or, still loading or with the reader's focus in it, does so once it has drawn: refresh).
  farAway(far) {
    this.far = far;
    if (far) this.release();
  }

  // Far from the viewport: the figure lets go of its drawing and analysis, and this driver of its
  // last result; it is drawn again, with the reader's choices, when it comes near.
  release() {
    if (this.released || !this.figure.release()) return;
    this.released = true;
    this.loop?.forget();
    whenNear(this.figure, () => this.comeBack());
  }

  comeBack() {
    this.released = false;
    this.refresh();
  }

  get engine() {
    return this.session?.engine ?? null;
  }

  close() {
    this.session?.close();
    farObserver?.unobserve(this.figure);
    if (this.released) {
      nearObserver?.unobserve(this.figure);
      starters.delete(this.figure);
    }
  }

  // Back on the page after close(): watched again.
  resume() {
    this.session?.resume();
    if (this.lazy && this.loop) watchFar(this.figure, (far) => this.farAway(far));
    if (this.released) whenNear(this.figure, () => this.comeBack());
  }

  // A reader's choice from the figure (an attention-select patch).
  choose(d) {
    const r = this.reader;
    if (d.sentence !== undefined) {
      r.sentence = d.sentence;
      delete r.token;
    }
    // A figure that compares two sentences: the second one.
    if (d.against !== undefined) {
      r.against = d.against;
      delete r.token;
    }
    for (const key of ['token', 'layer', 'head', 'showSpecial', 'lens']) if (d[key] !== undefined) r[key] = d[key];
    if ((d.layer !== undefined) !== (d.head !== undefined)) {
      // One of the pair: the other stays as shown.
      if (r.layer === undefined) r.layer = this.figure.view?.layer ?? -1;
      if (r.head === undefined) r.head = this.figure.view?.head ?? -1;
    }
    this.refresh({ announce: !d.transient });
  }

  // An attribute the author (or the host's script) changes replaces the reader's choice of it.
  attributeChanged(name) {
    const r = this.reader;
    if (name === ATTRIBUTES.sentence || name === ATTRIBUTES.against) this.reader = {};
    else if (name === ATTRIBUTES.word) delete r.token;
    else if (name === ATTRIBUTES.layer || name === ATTRIBUTES.head) {
      delete r.layer;
      delete r.head;
    } else if (name === ATTRIBUTES.hideSpecial) delete r.showSpecial;
    else if (name === ATTRIBUTES.lens) delete r.lens;
    this.refresh();
  }

  load() {
    const sources = this.figure.sources();
    const hub = hubSource(this.figure);
    if (hub) delete sources[ATTRIBUTES.modelSrc];
    const refusal = hub?.refusal ?? sourceRefusal(sources);
    this.refused = refusal ? { message: refusal, kind: 'setup' } : null;
    if (refusal) {
      this.close();
      this.session = null;
      this.loop = null;
      this.refresh();
      return;
    }
    const options = { manifestUrl: sources[ATTRIBUTES.manifestSrc] ?? DEFAULT_MANIFEST_URL };
    if (sources[ATTRIBUTES.modelSrc]) options.modelUrl = sources[ATTRIBUTES.modelSrc];
    if (hub) options.checkpoint = { hub: hub.hub, id: hub.id, revision: hub.revision };
    // On the site's own pages (a post's figures), a figure that names no file of its own runs
    // the model the reader chose for the page (its hash), as the page does. Elsewhere a host
    // page's hash is not the widgets' to read: a link to it could switch its figures' model.
    // (The iframe page, embed.html, has no chooser: a link to it names only the site's own model.)
    const offersChoice = location.origin === WIDGETS_ORIGIN && Boolean(document.getElementById('model-chooser'));
    const chosen = !Object.keys(sources).length && !hub && offersChoice ? checkpointFromHash() : null;
    if (chosen) options.checkpoint = chosen;
    if (sources[ATTRIBUTES.engineSrc]) options.engineUrl = sources[ATTRIBUTES.engineSrc];
    this.session?.close();
    this.session = new EngineSession({ options, onChange: () => this.refresh() });
    this.loop = this.figure.constructor.comparesSentences
      ? new PairLoop(this.session, { channel: this.figure.channel })
      : new ViewLoop(this.session, { channel: this.figure.channel, vectors: this.figure.constructor.needsVectors });
    this.session.start();
  }

  async refresh({ announce = false } = {}) {
    // Not started yet, or let go of (far from the viewport): its view comes when it is near.
    if ((!this.loop && !this.refused) || this.released) return;
    const figure = this.figure;
    const r = this.reader;
    const attribute = (name) => figure.getAttribute(name);
    const written = attribute(ATTRIBUTES.sentence);
    const notes = [];
    // An empty sentence is a mistake, said as such; the default sentence is shown.
    if (written !== null && !written.trim() && r.sentence === undefined) {
      notes.push({ attribute: 'sentence', value: written, message: `sentence=\u201c${written}\u201d is empty; showing the default sentence \u201c${PRESETS[0]}\u201d instead.` });
    }
    const given = r.sentence ?? (written?.trim() ? written : null);
    const wordText = given === null ? DEFAULT_WORD_TEXT : '';
    // A figure that compares two sentences reads `sentence` against `against` (by default the
    // first Winograd pair); a sentence given alone is read against itself, and a note says so.
    const pair = figure.constructor.comparesSentences;
    const againstWritten = attribute(ATTRIBUTES.against);
    let against = null;
    if (pair) {
      against = r.against ?? (againstWritten?.trim() ? againstWritten : given === null ? PAIR_PRESETS[0][1] : given);
      if (r.against === undefined && given !== null && !againstWritten?.trim()) {
        notes.push({ attribute: 'against', value: againstWritten ?? '', message: `${againstWritten === null ? 'against is missing' : `against=\u201c${againstWritten}\u201d is empty`}: the sentence is read against itself, so every difference is 0; give against="\u2026" the sentence to compare it with.` });
      }
    }
    // The author's word, layer and head, where the reader has not chosen them; resolveAttributes
    // says which could not be honoured.
    let authorNotes = [];
    const selection = (result) => {
      const fromAuthor = resolveAttributes(result, {
        token: r.token,
        word: r.token === undefined && r.sentence === undefined ? attribute(ATTRIBUTES.word) : null,
        layer: r.layer === undefined ? attribute(ATTRIBUTES.layer) : null,
        head: r.head === undefined ? attribute(ATTRIBUTES.head) : null,
      }, wordText);
      authorNotes = fromAuthor.notes;
      return { token: fromAuthor.token, layer: r.layer ?? fromAuthor.layer, head: r.head ?? fromAuthor.head };
    };
    const common = {
      sentence: given ?? (pair ? PAIR_PRESETS[0][0] : PRESETS[0]), selection, wordText,
      showSpecial: r.showSpecial ?? !figure.hasAttribute(ATTRIBUTES.hideSpecial), sources: figure.sources(),
      lens: r.lens ?? figure.attributeValue(ATTRIBUTES.lens, undefined), wantLenses: Boolean(figure.constructor.showsLenses),
    };
    // Refused addresses load nothing: the view says why. While a trapped engine restarts, the
    // model stays the one the figure showed.
    const view = this.refused
      ? await figureView({ ...common, error: this.refused })
      : await this.loop.view(true, (live) => ({
        ...common,
        model: this.session.engine ? describeModel(this.session.engine.info) : live ? figure.view?.model ?? null : null,
      }), against);
    // Let go of while its view was computed: it is drawn when it comes near.
    if (!view || this.released) return;
    figure.view = view;
    if (view.result) figure.setNotes('selection', [...notes, ...authorNotes]);
    else if (notes.length) figure.setNotes('selection', notes);
    if (announce && view.result) figure.emit(EVENTS.change, figure.selection);
    // Drawn while far away (its download ended after the reader scrolled past): it lets go now.
    if (this.far && view.result) this.release();
  }
}

AttentionFigure.driveStandalone = (figure) => new StandaloneDriver(figure);
