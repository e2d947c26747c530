#!/usr/bin/env bash
# Builds the native CLI and tests, or the wasm engine. Usage: scripts/build.sh [native|native-asan|wasm|wasm-test|wasm-asan|fuzz ...]
# (wasm-test: the engine with its test hooks, for tests/browser/recovery.test.mjs only; never shipped)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
presets=("$@"); ((${#presets[@]})) || presets=(native)
for preset in "${presets[@]}"; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
done
