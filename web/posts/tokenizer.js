// The wasm tokenizer on its own, for the vocabulary post: tokenize(text) gives {tokens, truncated,
// full_length} (tokens as analyze reports them: {id, text, start, end, word}), idsOf(texts) the
// ids of many texts at once, vocabulary() the model's entries by id. It asks the page's engine
// (getEngine) for them (the bindings' Engine.tokenize and Engine.vocabulary, through the worker).

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
  throw new Error('This engine has no tokenizer entry points (tokenize, vocabulary); rebuild it with scripts/build.sh wasm.');
}
