#!/usr/bin/env bash
# The main job: set up what is missing, build the native CLI and the wasm engine, assemble the
# site with the shipped default model, and serve the article on localhost.
# Usage: scripts/run.sh [--model NAME] [PORT]   (NAME: a model_data/NAME.attn, e.g. after
# scripts/get_model.sh prajjwal1/bert-mini)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
model_args=()
if [[ "${1:-}" == "--model" ]]; then model_args=(--default "$2"); shift 2; fi
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" native wasm
node "$ROOT/scripts/site/build_site.mjs" "${model_args[@]}"
exec "$ROOT/scripts/serve.sh" "$@"
