// What the pages and the figures start from, below both: the preset sentences of the sentence
// box and the word whose row the page opens on. scripts/site/make_examples.mjs reads them too, so
// the precomputed example and the live page start from the same sentence and word.
export const PRESETS = Object.freeze([
  'The animal did not cross the street because it was too tired.',
  'She poured the milk into the cup until it was full.',
  'Unbelievably, the embeddings were tokenized into wordpieces.',
  'The keys to the cabinet are on the table.',
]);

// The word whose row the page opens on, for the first preset.
export const DEFAULT_WORD_TEXT = 'it';
