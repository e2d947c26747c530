// The first 24 sentences of the series' set (web/posts/sentences.txt): the article's four
// presets and twenty more written for these pages (none is taken from the model's training
// text). The confident post computes over these live, in the reader's browser; the heads and
// contribution posts show statistics over the whole file, computed when the site is built
// (scripts/site/make_sets.mjs). tests/js/sentence_set.test.mjs checks that the two agree.
import { PRESETS } from '../content.js';

export const WRITTEN_FOR_THE_SERIES = Object.freeze([
  'The old bridge was closed after the storm damaged its supports.',
  'My sister bought a bicycle, but she rides it only on weekends.',
  'When the bell rang, the children ran out into the yard.',
  'He forgot his umbrella, so he arrived at the office soaking wet.',
  'The committee will announce its decision next Thursday.',
  'A small dog barked at the postman every morning.',
  'They planted tomatoes near the fence where the sun is strongest.',
  'The recipe calls for two eggs, a cup of flour and some butter.',
  'Nobody expected the quiet student to win the debate.',
  'The train to the coast leaves from platform four at noon.',
  'She wrote the letter twice before she was happy with it.',
  'Heavy snow kept the roads closed for most of the week.',
  'The museum keeps its oldest maps in a cool, dark room.',
  'If you press this button, the machine stops at once.',
  'Our neighbours painted their front door a bright shade of green.',
  'The doctor asked him how long the pain had lasted.',
  'Birds gathered on the wire as the evening grew colder.',
  'The library lends books, films and even musical instruments.',
  'After the long meeting, everyone wanted a cup of coffee.',
  'The river rose quickly, and the farmers moved their cattle uphill.',
]);

export const SENTENCE_SET = Object.freeze([...PRESETS, ...WRITTEN_FOR_THE_SERIES]);
