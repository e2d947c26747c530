// What every figure and host shares about drawing views: Latest, the one rule for "draw only the
// newest" of a caller's asynchronous requests, and what a view says of a text cut to the
// model's length.
import { thousands } from './format.js';

// Callers that make requests asynchronously draw only their newest: latest.next() gives a
// ticket, latest.current(ticket) says whether it is still the newest.
export class Latest {
  constructor() {
    this._n = 0;
  }

  next() {
    return ++this._n;
  }

  current(ticket) {
    return ticket === this._n;
  }
}

// Where a text longer than the model reads was cut: the model reads result.n positions ([CLS]
// and [SEP] included), so the text's last analysed token is n - 2.
export function truncationNote(result) {
  if (!result?.truncated || result.n < 3) return '';
  const last = result.tokens[result.n - 2];
  return ` This text has ${thousands(result.full_length)} tokens and the model reads at most ${result.n}: `
    + `everything after \u201c${last.text.replace(/^##/, '')}\u201d (character ${thousands(last.end)} of ${thousands(result.text.length)}) is left out.`;
}
