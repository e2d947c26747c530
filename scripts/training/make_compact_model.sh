#!/usr/bin/env bash
# Makes the compact model the page loads from an f32 reference:
#   model_data/explainer-mini.attn -> model_data/explainer-mini.compact.attn  (the default)
# by the per-tensor study of precision_study.py (`tensors`): each matrix's effect on attention
# measured alone at every level, the bytes it saves, and the smallest plan along the resulting
# path whose attention max |diff| is at most 1e-3 on both the study and the validation sentences
# (tests/fixtures/precision_sentences*.txt). Prints the tables for model_data/README.md, and its
# progress with an estimate of the time left on stderr.
# --quick: the study's `uniform` plan instead (one level for every matrix, found by bisection in
# about five measurements; a larger file for the same bar).
# `precision_study run` measures the uniform plans (one level for all encoder weights) that came
# before it, for comparison.
# Usage: scripts/training/make_compact_model.sh [--quick] [IN.attn [OUT.attn]]
# (needs scripts/build.sh native)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../env.sh"
study=tensors
if [[ "${1:-}" == "--quick" ]]; then study=uniform; shift; fi
IN="${1:-$ROOT/model_data/explainer-mini.attn}"
OUT="${2:-$ROOT/model_data/explainer-mini.compact.attn}"
start=$SECONDS
OMP_NUM_THREADS=1 "$PY" -m scripts.training.precision_study "$study" "$IN" --ship "$OUT"
echo "make_compact_model: $study study of $IN took $((SECONDS - start)) s" >&2
