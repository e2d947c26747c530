#!/usr/bin/env bash
# Makes the compact model the page loads by default from the f32 reference:
#   model_data/explainer-mini.attn -> model_data/explainer-mini.compact.attn
# by measuring every candidate precision plan on the fixed sentence set
# (tests/fixtures/precision_sentences.txt) and keeping the smallest whose attention max |diff|
# is at most 1e-3 (precision_study.py). Prints the table for model_data/README.md.
# Usage: scripts/training/make_compact_model.sh [IN.attn [OUT.attn]]
# (needs scripts/build.sh native)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../env.sh"
IN="${1:-$ROOT/model_data/explainer-mini.attn}"
OUT="${2:-$ROOT/model_data/explainer-mini.compact.attn}"
OMP_NUM_THREADS=1 "$PY" -m scripts.training.precision_study run "$IN" --ship "$OUT"
