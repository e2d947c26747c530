#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset fuzz: clang, ASan + UBSan) and runs each for
# SECONDS (default 30), growing a corpus under build/fuzz/corpus/. Any crash, sanitizer report,
# leak or broken promise fails the run; libFuzzer writes the input to build/fuzz/ as crash-*.
# Usage: tests/fuzz/run.sh [SECONDS]     (scripts/test.sh runs it for 30 s per target)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"
seconds="${1:-30}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$JOBS" --target model_file_fuzz tokenizer_fuzz
# max_len: a structure-aware model input needs a few hundred bytes to choose a config and
# weights; text beyond 2 KB adds nothing the tokenizer has not seen.
declare -A max_len=([model_file]=4096 [tokenizer]=2048)
for target in model_file tokenizer; do
  corpus="build/fuzz/corpus/$target"
  mkdir -p "$corpus"
  echo "fuzz: $target for ${seconds} s"
  (cd build/fuzz && "./${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=4096 \
      -max_len="${max_len[$target]}" -print_final_stats=1 "../../$corpus" 2>&1 | tail -n 12)
  test "${PIPESTATUS[0]}" -eq 0
done
