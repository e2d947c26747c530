// How the pages and the figures write names and sizes, each in one place: a head's name, a file
// size, an exponent, the download's progress.
export { thousands } from '../engine/errors.js';

// Fixed-decimal numbers with a real minus sign, as the article prints them.
// A softmax weight for prose: every weight is above zero, so a small one reads "less than
// 0.001", never "0.000"; one that rounds to 1 reads "more than 0.999", never "1.000".
// short: for a readout or a table cell, "<0.001" and ">0.999".
export function fmtWeight(value, digits = 3, { short = false } = {}) {
  const step = 10 ** -digits;
  if (value > 0 && value < step) return `${short ? '<' : 'less than '}${step.toFixed(digits)}`;
  // A softmax weight is never exactly 1; one that float32 rounded to 1 is still "more than".
  if (value <= 1 && value > 1 - step / 2) return `${short ? '>' : 'more than '}${(1 - step).toFixed(digits)}`;
  return fmt(value, digits);
}

// A probability at its size: 0.025, 0.00038, 2.1e-5 (never 0.000 for a positive one).
export function fmtProbability(value) {
  if (value === 0) return '0';
  const a = Math.abs(value);
  if (a >= 0.01) return fmt(value, 3);
  return a >= 1e-4 ? value.toPrecision(2) : value.toExponential(1);
}

// A change (a difference of two weights or probabilities), readable when it is small, with its
// sign: 4 decimals, or 2 significant digits.
export function signed(value) {
  if (value === 0) return '0';
  const sign = value > 0 ? '+' : '\u2212';
  const a = Math.abs(value);
  if (a >= 1e-3) return `${sign}${a.toFixed(4)}`;
  const [mantissa, exponent] = a.toExponential(1).split('e');
  return `${sign}${mantissa}\u00d710${superscript(Number(exponent))}`;
}

export function fmt(value, digits = 3) {
  if (!Number.isFinite(value)) return String(value);
  const text = Math.abs(value).toFixed(digits);
  return value < 0 && Number(text) !== 0 ? `\u2212${text}` : text;
}

// A byte count as the page quotes file sizes: "20.3 MB" (decimal megabytes).
export const megabytes = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

// A head in prose ("layer 2, head 3"), at the start of a line ("Layer 2, head 3"), and where
// space is short ("L2 H3"); layer and head count from 0 here and from 1 on the page.
export const headName = (layer, head) => `layer ${layer + 1}, head ${head + 1}`;
export const HeadName = (layer, head) => `Layer ${layer + 1}, head ${head + 1}`;
export const headShort = (layer, head) => `L${layer + 1} H${head + 1}`;

// An integer exponent in superscript digits: -4 -> "⁻⁴".
const SUPERSCRIPT = '\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079';
export const superscript = (exponent) => [...String(exponent)].map((c) => SUPERSCRIPT['-0123456789'.indexOf(c)] ?? c).join('');

// The download's progress as the status lines say it (null: not started yet).
export function progressText(progress) {
  if (!progress) return 'Starting the download of the engine and the model\u2026';
  const percent = Math.floor(progress.percent ?? 0);
  if (percent >= 100) return `Downloaded ${megabytes(progress.loaded)} (100%); starting the engine\u2026`;
  return progress.total
    ? `Loading the live model: ${megabytes(progress.loaded)} of ${megabytes(progress.total)} (${percent}%)`
    : `Loading the live model: ${megabytes(progress.loaded)}`;
}
