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

// The pairs of the two-sentence figure (<attention-pair>): Winograd schemas, two sentences that
// differ in one word, where that word changes what the pronoun refers to. The first opens the
// figure; the second is the article's opening sentence with its other ending.
export const PAIR_PRESETS = Object.freeze([
  Object.freeze(['The trophy doesn\'t fit in the suitcase because it is too big.', 'The trophy doesn\'t fit in the suitcase because it is too small.']),
  Object.freeze(['The animal did not cross the street because it was too tired.', 'The animal did not cross the street because it was too wide.']),
  Object.freeze(['The city councilmen refused the demonstrators a permit because they feared violence.', 'The city councilmen refused the demonstrators a permit because they advocated violence.']),
]);
