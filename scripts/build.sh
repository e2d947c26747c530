#!/usr/bin/env bash
# Builds the native CLI and tests. Usage: scripts/build.sh [native|native-asan|wasm ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
presets=("$@"); ((${#presets[@]})) || presets=(native)
for preset in "${presets[@]}"; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
done
