// The wasm tokenizer on its own, for the vocabulary post: tokenize(text) gives {tokens, truncated,
// full_length} (tokens as analyze reports them: {id, text, start, end, word}), idsOf(texts) the
// ids of many texts at once, vocabulary() the model's entries by id. It asks the page's engine
// (getEngine) for them (the bindings' Engine.tokenize and Engine.vocabulary, through the worker);
// a refusal arrives as the client's EngineError, like any other.
export function tokenizerOf(engine) {
  return {
    where: engine.thread === 'worker' ? 'the page\u2019s engine, in its worker' : 'the page\u2019s engine',
    tokenize: (text) => engine.tokenize(text),
    idsOf: (texts) => engine.tokenizeMany(texts),
    vocabulary: async () => Array.from(await engine.vocabulary()),
  };
}
