// "Vocabulary entries that cannot survive being typed": the wasm tokenizer types every entry of
// the loaded model's vocabulary back (the rule is in ./survival.js and on the page), lists the
// entries that do not come back as their own id, grouped by cause, with the count and the time
// it took in the reader's browser; and a tokenizer playground that shows, for any text, each
// piece, its id and offsets, and what happened to the text on the way (lower-casing, accent
// stripping, CJK and punctuation splitting, [UNK], characters dropped).
// First of all imports, so that it runs before the figures' modules are evaluated.
import '../start-engine.js';
import { CAUSES, failureCause, FIRST_PREFIX, typeBack } from './survival.js';
import { tokenizerOf } from './tokenizer.js';
import { fillFacts, h, Latest, loadEngine, readHash, scrollBox, writeHash } from './common.js';
import { MAX_LINK_TEXT } from '../runtime/state.js';
import { thousands } from '../widgets/format.js';

const status = document.getElementById('status');
const groupsSlot = document.getElementById('groups');
const playground = document.getElementById('playground');
const HASH = { t: 'text' };
const DEFAULT_TEXT = 'Café déjà vu: naïve ÜBER-fast 東京 tokenizers 🙂 isn\u2019t [MASK] unaffable.';
const SAMPLE = 40;

const codePoints = (text) => [...text];
const hex = (ch) => `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
const stripAccents = (text) => text.normalize('NFD').replace(/\p{M}/gu, '');
const CJK = /^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u{20000}-\u{2a6df}\u{2a700}-\u{2ebef}\u{2f800}-\u{2fa1f}]$/u;
const PUNCT = /^[\p{P}!-/:-@[-`{-~]$/u;

// What happened to the typed text on its way to one token, in words (the playground's notes).
export function explainToken(token, text, unkId) {
  if (token.start < 0) return token.text === '[CLS]' ? 'added at the start of every text' : 'added at the end of every text';
  const span = codePoints(text).slice(token.start, token.end).join('');
  const bare = token.text.replace(/^##/, '');
  const notes = [];
  if (token.id === unkId && token.text === '[UNK]' && span !== '[UNK]') {
    notes.push(`[UNK]: no sequence of entries spells \u201c${span}\u201d (${codePoints(span).map(hex).join(' ')}), so the whole word becomes [UNK]`);
    return notes.join('; ');
  }
  if (token.text.startsWith('##')) notes.push('continues the word before it (##)');
  if (CJK.test(span)) notes.push('CJK ideograph: always a word of its own');
  else if (PUNCT.test(span)) notes.push('punctuation: always a token of its own');
  if (/^\[[A-Za-z0-9]+\]$/.test(token.text) && span === token.text) notes.push('a special entry, kept whole when typed');
  if (bare !== span) {
    const lower = span.toLowerCase();
    if (bare === lower) notes.push(`lower-cased: \u201c${span}\u201d \u2192 \u201c${bare}\u201d`);
    else if (bare === stripAccents(lower)) notes.push(`${lower !== span ? 'lower-cased and ' : ''}accents stripped: \u201c${span}\u201d \u2192 \u201c${bare}\u201d`);
    else notes.push(`normalised: \u201c${span}\u201d \u2192 \u201c${bare}\u201d`);
  }
  return notes.length ? notes.join('; ') : 'as typed';
}

// Code points no token covers, other than spaces: removed before matching (controls, formats).
export function droppedCharacters(tokens, text) {
  const chars = codePoints(text);
  const covered = new Array(chars.length).fill(false);
  for (const t of tokens) for (let k = Math.max(0, t.start); k < t.end; ++k) covered[k] = true;
  return chars.filter((ch, k) => !covered[k] && !/\s/u.test(ch));
}

async function drawPlayground(tokenizer, unkId) {
  const text = readHash(HASH).t ?? DEFAULT_TEXT;
  const input = h('textarea', { id: 'typed', rows: '2', spellcheck: 'false', 'aria-label': 'Text to tokenize' });
  input.value = text;
  const out = h('div', { id: 'pieces-out' });
  let timer = 0;
  const latest = new Latest();
  const show = async (value, push) => {
    const mine = latest.next();
    let result;
    try {
      result = await tokenizer.tokenize(value);
    } catch (e) {
      if (latest.current(mine)) out.replaceChildren(h('p.error-line', { role: 'status', text: e.message }));
      return;
    }
    if (!latest.current(mine)) return;
    // A text the link cannot hold is tokenized all the same (nothing is cut), and says so.
    const linked = value.length <= MAX_LINK_TEXT;
    if (linked) writeHash({ t: value }, { push });
    const dropped = droppedCharacters(result.tokens, value);
    out.replaceChildren(
      h('div.pieces', { role: 'list', 'aria-label': 'The pieces of the text' }, result.tokens.map((t) => h('span.piece', {
        role: 'listitem', dataset: { id: String(t.id), unk: String(t.id === unkId && t.text === '[UNK]'), start: String(t.start), end: String(t.end) },
      }, t.text, h('small', { text: `id ${t.id}${t.start >= 0 ? ` \u00b7 ${t.start}\u2013${t.end}` : ''}` })))),
      scrollBox('div.scroll', 'The pieces of your text', h('table.data', { dataset: { scope: 'pieces' } },
        h('caption', { text: `${result.tokens.length} tokens${result.truncated ? ` (cut from ${result.full_length}: the model reads at most 512)` : ''}; offsets count code points of your text, end exclusive` }),
        h('thead', {}, h('tr', {}, ['Piece', 'Id', 'Offsets', 'Typed', 'What happened'].map((c, k) => h('th', { scope: 'col', class: k === 1 || k === 2 ? undefined : 'text', text: c })))),
        h('tbody', {}, result.tokens.map((t) => h('tr', {},
          h('td.text', {}, h('code', { text: t.text })),
          h('td', { text: String(t.id) }),
          h('td', { text: t.start >= 0 ? `${t.start}\u2013${t.end}` : '\u2013' }),
          h('td.text', { text: t.start >= 0 ? codePoints(value).slice(t.start, t.end).join('') : '' }),
          h('td.text', { text: explainToken(t, value, unkId) })))))),
      ...(dropped.length ? [h('p.note', { text: `Removed before matching (control and formatting characters): ${dropped.map(hex).join(' ')}.` })] : []),
      ...(linked ? [] : [h('p.note', { text: `This text is ${thousands(value.length)} characters long, more than the page's link keeps (${thousands(MAX_LINK_TEXT)}): the address still holds the last shorter one.` })]));
    out.dataset.ready = 'true';
    out.dataset.text = value;
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => show(input.value, false), 150);
  });
  input.addEventListener('change', () => show(input.value, true));
  playground.replaceChildren(h('label', { for: 'typed', class: 'note', text: 'Type any text; the pieces follow as you type.' }), input, out);
  await show(text, false);
  addEventListener('hashchange', () => {
    const now = readHash(HASH).t ?? DEFAULT_TEXT;
    if (now !== input.value) {
      input.value = now;
      show(now, false);
    }
  });
}

// A cause's first entries, each a button that reads out its id and the text typed for it in the
// line under them: on a click or a tap, and from the keyboard, where the entries are one tab stop
// and the arrow keys move along them (a title tooltip, which this was, shows to a mouse only).
function sampleOf(entries) {
  const reading = h('p.entry-reading', { 'aria-live': 'polite' });
  // The entry read is the group's tab stop.
  const read = (k) => {
    const f = entries[k];
    reading.replaceChildren(h('code', { text: f.entry }), `: id ${f.id}, typed as \u201c${f.text}\u201d.`);
    buttons.forEach((b, j) => { b.tabIndex = j === k ? 0 : -1; });
  };
  const buttons = entries.map((f, k) => h('button.entry', {
    type: 'button', tabindex: k ? '-1' : '0', dataset: { k: String(k) }, text: f.entry, on: { click: () => read(k), focus: () => read(k) },
  }));
  const list = h('div.entries', { role: 'group', 'aria-label': 'Entries: arrow keys move between them, each read out below' }, buttons);
  list.addEventListener('keydown', (event) => {
    const k = Number(event.target.dataset?.k);
    const to = { ArrowLeft: k - 1, ArrowUp: k - 1, ArrowRight: k + 1, ArrowDown: k + 1, Home: 0, End: buttons.length - 1 }[event.key];
    if (to === undefined || Number.isNaN(k)) return;
    event.preventDefault();
    buttons[Math.max(0, Math.min(buttons.length - 1, to))].focus();
  });
  read(0);
  return [list, reading];
}

function drawGroups(survival, causes) {
  const groups = new Map(Object.keys(CAUSES).map((c) => [c, []]));
  survival.failures.forEach((f, k) => groups.get(causes[k]).push(f));
  const found = [...groups.entries()].filter(([, list]) => list.length).sort((a, b) => b[1].length - a[1].length);
  const none = [...groups.entries()].filter(([, list]) => !list.length);
  const items = found.map(([cause, list]) => h('li', { dataset: { cause, count: String(list.length) } },
    h('b', { text: `${thousands(list.length)} ` }), CAUSES[cause], '.',
    sampleOf(list.slice(0, SAMPLE)),
    list.length > SAMPLE ? h('details.more', {}, h('summary', { text: `All ${thousands(list.length)}` }),
      h('div.entries', {}, list.map((f) => h('code', { text: f.entry })))) : null));
  groupsSlot.replaceChildren(h('ul.groups', {}, items),
    ...(none.length ? [h('p.none', {}, 'No entry failed for the other causes the page looks for: ',
      none.map(([cause], k) => [k ? '; ' : '', h('span', { dataset: { cause, count: '0' }, text: CAUSES[cause] })]), '.')] : []));
  groupsSlot.dataset.ready = 'true';
}

async function main() {
  const { engine } = await loadEngine(status);
  const tokenizer = tokenizerOf(engine);
  const vocab = await tokenizer.vocabulary();
  const unkId = vocab.indexOf('[UNK]');
  const playgroundDone = drawPlayground(tokenizer, unkId);
  const t0 = performance.now();
  const survival = await typeBack(vocab, tokenizer.idsOf);
  const typedMs = performance.now() - t0;
  const causes = [];
  for (const f of survival.failures) causes.push(failureCause(f, (await tokenizer.tokenize(f.text)).tokens, unkId));
  const failed = survival.failures.length;
  const count = (cause) => causes.filter((c) => c === cause).length;
  fillFacts(document, {
    titleCounts: `${thousands(failed)} of ${thousands(survival.total)}, typed back in your browser`,
    total: thousands(survival.total),
    failed: thousands(failed),
    survivors: thousands(survival.survivors),
    texts: thousands(survival.texts.length),
    typedMs: `${thousands(Math.round(typedMs))} ms`,
    where: tokenizer.where,
    prefix: survival.prefix ?? '(none found)',
    firstPrefix: FIRST_PREFIX,
    firstPass: thousands(survival.firstPassPieceFailures),
    rescued: thousands(survival.rescued),
    greedy: thousands(count('greedy')),
    unused: thousands(count('unused')),
  });
  document.body.dataset.failed = String(failed);
  drawGroups(survival, causes);
  await playgroundDone;
}

main().catch((error) => {
  status.textContent = `The page failed: ${error.message}`;
  status.dataset.state = 'error';
});
