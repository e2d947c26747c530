#!/usr/bin/env bash
# Sets up what is missing and runs every test: native GoogleTest (plain and with ASan/UBSan),
# reference parity fixtures, and the JS tests. Exits non-zero on the first failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
"$ROOT/scripts/setup.sh"

echo "== vocabulary: rebuild from npm and compare with the committed file"
node scripts/build_vocab.mjs "$ROOT/build/vocab.check.txt"
cmp "$ROOT/build/vocab.check.txt" "$ROOT/model_data/vocab.txt"

echo "== native build"
scripts/build.sh native

if [[ -x scripts/make_test_fixtures.sh ]]; then
  echo "== reference fixtures (independent PyTorch implementation)"
  scripts/make_test_fixtures.sh "$ROOT/build/fixtures"
fi

echo "== GoogleTest (native)"
ctest --preset native -j "$JOBS"

echo "== GoogleTest (AddressSanitizer + UBSan)"
scripts/build.sh native-asan
ctest --preset native-asan -j "$JOBS"

echo "== JS tests (node:test)"
shopt -s nullglob
js_tests=(tests/js/*.test.mjs)
if ((${#js_tests[@]})); then
  node --test "${js_tests[@]}"
fi
