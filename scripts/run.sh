#!/usr/bin/env bash
# The main job: set up what is missing, build the native CLI and the wasm engine, assemble the
# site with the shipped default model, and serve the article on localhost.
# Usage: scripts/run.sh [--model NAME [--quick]] [PORT]
#   --model NAME: serve model_data/NAME.attn (for example after scripts/get_model.sh
#   prajjwal1/bert-mini) in place of the default. The first time, the precision study makes its
#   compact file, model_data/NAME.compact.attn (scripts/training/make_compact_model.sh: attention
#   within 1e-3 of NAME.attn), which the site splits and the page loads; it prints its progress
#   and an estimate of the time left (the full study took 31 minutes for the default's
#   bert-mini shape on a 2-core machine; at bert-base's shape it requantizes 828 files).
#   --quick: the study's quick plan (one level for every matrix, about five measurements; a
#   larger file for the same bar).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
model=""
quick=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="${2:?--model needs a NAME (model_data/NAME.attn)}"; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    *) break ;;
  esac
done
if ((${#quick[@]})) && [[ -z "$model" ]]; then
  echo "run: --quick chooses how --model NAME's compact file is made; the default model has one already" >&2
  exit 2
fi
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" native wasm
model_args=()
if [[ -n "$model" ]]; then
  base="${model%.compact}"
  if [[ ! -f "$ROOT/model_data/$base.attn" ]]; then
    echo "run: model_data/$base.attn does not exist; convert a checkpoint first (scripts/get_model.sh MODEL_ID, or python3 -m scripts.model.convert_model to-attn HF_DIR model_data/$base.attn)." >&2
    exit 2
  fi
  if [[ ! -f "$ROOT/model_data/$base.compact.attn" ]]; then
    echo "run: making model_data/$base.compact.attn, the compact file the page loads, with the precision study" >&2
    "$ROOT/scripts/training/make_compact_model.sh" "${quick[@]}" "$ROOT/model_data/$base.attn" "$ROOT/model_data/$base.compact.attn"
  fi
  model_args=(--default "$base.compact")
fi
node "$ROOT/scripts/site/build_site.mjs" "${model_args[@]}"
exec "$ROOT/scripts/serve.sh" "$@"
