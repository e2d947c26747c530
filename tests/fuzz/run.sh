#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset fuzz: clang, ASan + UBSan) and runs each for
# SECONDS (default 30), growing a working corpus under build/fuzz/corpus/<target> from the
# committed seeds in tests/fuzz/corpus/<target> (written by tests/fuzz/make_seeds.py; see
# tests/fuzz/README.md). libFuzzer adds new inputs only to the first corpus folder it is given,
# so the working one goes first and the repository is never written. Any crash, sanitizer
# report, leak or broken promise fails the run; libFuzzer writes the input to build/fuzz/ as
# crash-*.
# Targets run $JOBS at a time (one per core), each into its own log, printed when it ends.
# Usage: tests/fuzz/run.sh [SECONDS]     (scripts/test.sh runs it for 60 s per target)
#        tests/fuzz/run.sh --build-only  (only the fuzz targets; scripts/test.sh builds the whole
#                                         preset, the GoogleTests too, in the background)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"
seconds="${1:-30}"
targets=(model_file tokenizer rans json shards)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$JOBS" --target "${targets[@]/%/_fuzz}"
[[ "$seconds" == "--build-only" ]] && exit 0
# max_len: a structure-aware model input needs a few hundred bytes to choose a config and
# weights, and a rans input a byte or two per value it sets (up to three lanes); text beyond
# 2 KB adds nothing the tokenizer has not seen, nor beyond 1 KB anything the JSON writer has;
# a shards input needs a few bytes per shard it assembles, or a shard's own 64-byte header and
# payload when it is raw.
declare -A max_len=([model_file]=4096 [tokenizer]=2048 [rans]=4096 [json]=1024 [shards]=4096)
mkdir -p build/fuzz/logs
fuzz_one() {
  local target="$1" corpus="build/fuzz/corpus/$1"
  mkdir -p "$corpus"
  (cd build/fuzz && "./${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=4096 \
      -max_len="${max_len[$target]}" -print_final_stats=1 \
      "../../$corpus" "../../tests/fuzz/corpus/$target") >"build/fuzz/logs/$target.log" 2>&1
}
failed=0
for ((first = 0; first < ${#targets[@]}; first += JOBS)); do
  batch=("${targets[@]:first:JOBS}")
  declare -A pid=()
  for target in "${batch[@]}"; do
    echo "fuzz: $target for ${seconds} s"
    fuzz_one "$target" &
    pid[$target]=$!
  done
  for target in "${batch[@]}"; do
    status=0
    wait "${pid[$target]}" || status=$?
    echo "-- $target (exit $status)"
    if ((status == 0)); then
      grep -E '^(Done|stat::)' "build/fuzz/logs/$target.log" || true
    else
      tail -n 60 "build/fuzz/logs/$target.log"
      failed=1
    fi
  done
  unset pid
done
exit "$failed"
