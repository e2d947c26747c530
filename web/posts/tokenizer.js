// The wasm tokenizer on its own, for the vocabulary post: tokenize(text) gives {tokens, truncated,
// full_length} (tokens as analyze reports them: {id, text, start, end, word}), idsOf(texts) the
// ids of many texts at once, vocabulary() the model's entries by id. It asks the page's engine
// (getEngine) for them; an engine that does not offer them yet (they are the bindings'
// Engine.tokenize and Engine.vocabulary) is replaced by the bindings' object (./native.js).
import { nativeOf } from './native.js';

const ids = (entry) => (Array.isArray(entry) || ArrayBuffer.isView(entry) ? Array.from(entry) : entry.tokens.map((t) => t.id));

function checked(value) {
  if (value && typeof value === 'object' && typeof value.error === 'string') throw new Error(value.error);
  return value;
}

export async function tokenizerOf(engine) {
  if (typeof engine.tokenize === 'function' && typeof engine.vocabulary === 'function') {
    return {
      where: engine.thread === 'worker' ? 'the page\u2019s engine, in its worker' : 'the page\u2019s engine',
      tokenize: async (text) => checked(await engine.tokenize(text)),
      idsOf: typeof engine.tokenizeMany === 'function'
        ? async (texts) => (await engine.tokenizeMany(texts)).map(ids)
        : async (texts) => {
          const out = [];
          for (const text of texts) out.push(ids(checked(await engine.tokenize(text))));
          return out;
        },
      vocabulary: async () => Array.from(checked(await engine.vocabulary())),
    };
  }
  const { native, where } = await nativeOf(engine);
  if (typeof native?.tokenize !== 'function' || typeof native?.vocabulary !== 'function') {
    throw new Error('This build of the engine has no tokenizer entry point (Engine.tokenize and Engine.vocabulary); rebuild it with scripts/build.sh wasm.');
  }
  const tokenize = (text) => {
    const raw = checked(native.tokenize(text, 0));
    return { tokens: Array.from(raw.tokens), truncated: raw.truncated, full_length: raw.full_length };
  };
  return {
    where,
    tokenize: async (text) => tokenize(text),
    idsOf: async (texts) => texts.map((text) => tokenize(text).tokens.map((t) => t.id)),
    vocabulary: async () => Array.from(checked(native.vocabulary())),
  };
}
