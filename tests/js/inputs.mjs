// What the JS tests need from the build (the wasm engine, the native CLI, the fixtures' model
// files) must be there: a missing one fails its test with the command that makes it, so that a
// run cannot pass by skipping. A developer who wants the rest to run anyway sets ATTN_ALLOW_SKIP=1
// (the switch the Python and C++ suites read too); then the test is skipped with the same message.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';

export const ALLOW_SKIP = process.env.ATTN_ALLOW_SKIP === '1';

// True when every path exists; otherwise fails the test t, or skips it under ATTN_ALLOW_SKIP=1.
export function requireInputs(t, paths, howToMake) {
  const missing = paths.filter((path) => !existsSync(path));
  if (!missing.length) return true;
  const message = `missing ${missing.join(', ')}: ${howToMake} (ATTN_ALLOW_SKIP=1 skips instead)`;
  if (!ALLOW_SKIP) assert.fail(message);
  t.skip(message);
  return false;
}
