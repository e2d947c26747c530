#!/usr/bin/env bash
# Sets up what is missing and runs every test: the vocabulary check, native GoogleTest (plain and
# with ASan/UBSan) including parity with the independent PyTorch reference, the Python tests, the
# wasm engine in Node, and the page in headless Chromium. Exits non-zero on the first failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
"$ROOT/scripts/setup.sh"
mkdir -p "$ROOT/build"

echo "== vocabulary: rebuild from npm and compare with the committed file"
node scripts/build_vocab.mjs "$ROOT/build/vocab.check.txt"
cmp "$ROOT/build/vocab.check.txt" "$ROOT/model_data/vocab.txt"

echo "== native and wasm builds"
scripts/build.sh native wasm

echo "== reference fixtures (independent PyTorch implementation)"
export ATTN_FIXTURES_DIR="$ROOT/build/fixtures"
scripts/make_test_fixtures.sh "$ATTN_FIXTURES_DIR"
export ATTN_REQUIRE_FIXTURES=1

echo "== GoogleTest (native)"
ctest --preset native -j "$JOBS"

echo "== Python tests (model file, converter, reference)"
"$PY" -m unittest discover -s tests/py

echo "== JS tests (node:test): tokenizer parity, wasm engine"
node --test tests/js/*.test.mjs

shopt -s nullglob
browser_tests=(tests/browser/*.test.mjs)
if ((${#browser_tests[@]})); then
  echo "== browser tests (Chromium)"
  node scripts/build_site.mjs
  node --test --test-concurrency=1 "${browser_tests[@]}"
fi

echo "== GoogleTest (AddressSanitizer + UBSan)"
scripts/build.sh native-asan
ctest --preset native-asan -j "$JOBS"
