#!/usr/bin/env bash
# Sets up what is missing and runs every test: the vocabulary check, native GoogleTest (plain,
# and with ASan/UBSan in clang's build of preset fuzz) including parity with the independent
# PyTorch reference, the Python tests, the wasm engine in Node, the page in headless Chromium, the model-file loader's tests again in a
# wasm32 AddressSanitizer build, and short fuzzing runs. Exits non-zero on the first failure.
# A test whose input (CLI build, fixture, model file) is missing fails here: the developer switch
# ATTN_ALLOW_SKIP=1, which lets such tests skip when a suite is run by hand, is switched off.
#
# scripts/test.sh --quick is the developer's loop: every stage but the browser tests, the
# sanitizer builds and their tests, and fuzzing, with the exhaustive checks sampled (ATTN_QUICK=1:
# the vocabulary post's causes). Under 5 minutes once the builds exist. CI runs the full one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
quick=0
case "${1:-}" in
  --quick) quick=1; export ATTN_QUICK=1 ;;
  "") unset ATTN_QUICK ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
if [[ -n "${ATTN_ALLOW_SKIP:-}" ]]; then
  echo "test: ignoring ATTN_ALLOW_SKIP=$ATTN_ALLOW_SKIP (scripts/test.sh runs every test)"
  unset ATTN_ALLOW_SKIP
fi
# Each stage's wall time is printed when the next begins, and the total at the end, so that a slow
# run says where its time went.
stage_name=""
stage_start=$SECONDS
stage() {
  if [[ -n "$stage_name" ]]; then echo "   ($stage_name: $((SECONDS - stage_start)) s)"; fi
  stage_name="$1"
  stage_start=$SECONDS
  [[ -n "$1" ]] && echo "== $1"
  return 0
}
stage "setup"
"$ROOT/scripts/setup.sh"
mkdir -p "$ROOT/build"

stage "vocabulary: rebuild from npm and compare with the committed file"
node scripts/vocab/build_vocab.mjs "$ROOT/build/vocab.check.txt"
cmp "$ROOT/build/vocab.check.txt" "$ROOT/model_data/vocab.txt"

stage "native and wasm builds"
scripts/build.sh native wasm wasm-test

stage "reference fixtures (independent PyTorch implementation)"
export ATTN_FIXTURES_DIR="$ROOT/build/fixtures"
scripts/reference/make_test_fixtures.sh "$ATTN_FIXTURES_DIR"

stage "GoogleTest (native)"
ctest --preset native -j "$JOBS"

# One background job at the lowest priority takes the second core while the stages in front use
# one (the set statistics, the JS tests, the browser tests): the Python tests, the two sanitizer
# builds, their tests and the fuzzing runs. At nice 19 it gets only what the stages in front leave
# idle, so their timings are not disturbed, and what it has left when they end runs at full speed.
# Its output goes to build/logs/background.log and is printed when it ends. Each step in it is
# timed like a stage.
background() {
  local start=$SECONDS
  step() { echo "   ($1: $((SECONDS - start)) s)"; start=$SECONDS; }
  echo "== Python tests (model file, converter, reference)"
  "$PY" -m unittest discover -s tests/py
  step "Python tests"
  # One clang build with ASan + UBSan holds both the GoogleTests and the fuzz targets (preset
  # fuzz): a second, GCC build of the tests (preset native-asan, kept for developers) cost the
  # run more than twice as much again.
  echo "== builds: clang with ASan + UBSan (the GoogleTests and the fuzz targets), wasm32 with ASan"
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$JOBS"
  cmake --preset wasm-asan >/dev/null
  cmake --build --preset wasm-asan -j "$JOBS" --target loader_tests
  step "sanitizer builds"
  echo "== GoogleTest (AddressSanitizer + UBSan, clang)"
  ctest --preset fuzz -j "$JOBS"
  step "GoogleTest with ASan + UBSan"
  echo "== the loader's tests in wasm32 with AddressSanitizer (Emscripten, run by Node)"
  node --no-experimental-fetch build/wasm-asan/loader_tests.cjs
  step "wasm32 ASan loader tests"
  echo "== fuzzing (libFuzzer with ASan + UBSan)"
  tests/fuzz/run.sh 60
  step "fuzzing"
}
mkdir -p build/logs
if ((quick)); then
  stage "Python tests (model file, converter, reference)"
  "$PY" -m unittest discover -s tests/py
  stage "the site (engine, models, the split model, manifest, bundle, examples, set statistics)"
  node scripts/site/build_site.mjs
  stage "the series' set claims re-derived on both sentence sets (independent Python)"
  "$PY" tests/py/claims_check.py
  stage "JS tests (node:test): tokenizer parity, wasm engine (exhaustive checks sampled)"
  node --test tests/js/*.test.mjs tests/hub/*.test.mjs
  stage ""
  echo "== every quick test passed in $SECONDS s (not run: browser tests, sanitizers, fuzzing; scripts/test.sh runs them)"
  exit 0
fi
background_log="$ROOT/build/logs/background.log"
export -f background
# Its own session (setsid), so that a failure in front stops the whole job. Where the kernel
# groups a session's processes for scheduling (autogroup, Linux's default), nice acts only inside
# the group and the group competes as an equal: so the group itself is set to nice 19 too.
setsid nice -n 19 bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null || true; set -euo pipefail; source scripts/env.sh; background' \
  >"$background_log" 2>&1 &
background_pid=$!
trap 'kill -- "-$background_pid" 2>/dev/null || true' EXIT
echo "   (in the background at nice 19: the Python tests, the sanitizer builds and their tests, fuzzing; log $background_log)"

stage "the site (engine, models, the split model, manifest, bundle, examples, set statistics)"
node scripts/site/build_site.mjs

stage "the series' set claims re-derived on both sentence sets (independent Python)"
"$PY" tests/py/claims_check.py

stage "JS tests (node:test): tokenizer parity, wasm engine, checkpoint readers, the mock hub"
node --test tests/js/*.test.mjs tests/hub/*.test.mjs

shopt -s nullglob
browser_tests=(tests/browser/*.test.mjs)
if ((${#browser_tests[@]})); then
  stage "browser tests (Chromium)"
  node --test --test-concurrency=1 "${browser_tests[@]}"
fi

stage "the background job: Python tests, sanitizer builds and tests, fuzzing (waiting for it, then its log)"
background_status=0
wait "$background_pid" || background_status=$?
trap - EXIT
cat "$background_log"
if ((background_status != 0)); then
  echo "test: the background job failed (exit $background_status); its log is above"
  exit "$background_status"
fi
stage ""
echo "== every test passed in $SECONDS s"
