// A sentence box's refusals, in one wording for every box (Figure 1's, the posts'): what the
// engine takes is its own rule (tooLong, web/engine/), what the reader is told is here.
import { MAX_TEXT_CHARS, tooLong } from '../engine/engine.js';

// Why `text` is not analysed, or null. `keeps` says what stays on screen instead ("The figures
// still show the last sentence."). A text longer than the engine takes is never cut: the reader
// shortens it.
export function textRefusal(text, keeps) {
  const value = String(text ?? '');
  if (!value.trim()) return `Type a sentence first: an empty one has no words, only [CLS] and [SEP]. ${keeps}`;
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
    if (added.length <= MAX_TEXT_CHARS - input.value.length) return;
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
