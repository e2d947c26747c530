#!/usr/bin/env bash
# Makes the compact model the page loads by default from the f32 reference:
#   model_data/explainer-mini.attn -> model_data/explainer-mini.compact.attn
# by the per-tensor study of precision_study.py (`tensors`): each matrix's effect on attention
# measured alone at every level, the bytes it saves, and the smallest plan along the resulting
# path whose attention max |diff| is at most 1e-3 on both the study and the validation sentences
# (tests/fixtures/precision_sentences*.txt). Prints the tables for model_data/README.md.
# `precision_study run` measures the uniform plans (one level for all encoder weights) that came
# before it, for comparison.
# Usage: scripts/training/make_compact_model.sh [IN.attn [OUT.attn]]
# (needs scripts/build.sh native)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../env.sh"
IN="${1:-$ROOT/model_data/explainer-mini.attn}"
OUT="${2:-$ROOT/model_data/explainer-mini.compact.attn}"
OMP_NUM_THREADS=1 "$PY" -m scripts.training.precision_study tensors "$IN" --ship "$OUT"
