#!/usr/bin/env bash
# Writes the parity fixtures that tests/cpp/parity_test.cc reads, from the independent PyTorch
# reference (scripts/reference/reference_bert.py), for two random-weight models:
#   OUT/tiny.attn, OUT/tiny_hf/   2 layers, hidden 32 (model file written directly; safetensors)
#   OUT/mini.attn, OUT/mini_hf/   the bert-mini shape (model file converted from the Hugging Face
#                                 folder by scripts/model/convert_model.py, so the converter is
#                                 on the parity path; pytorch_model.bin)
#   OUT/<model>/<k>/              case k = 0, 1, ...: ids.txt, meta.txt, attention.f32,
#                                 hidden.f32, rollout.f32 (layout in reference_bert.py)
# Skips the work when OUT already holds fixtures made by the same scripts and vocabulary.
# Usage: scripts/reference/make_test_fixtures.sh OUT_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../env.sh"
OUT="${1:?usage: make_test_fixtures.sh OUT_DIR}"

inputs=("$ROOT/scripts/reference/make_test_fixtures.sh"
        "$ROOT/scripts/reference/make_random_model.py" "$ROOT/scripts/model/modelfile.py"
        "$ROOT/scripts/model/rans.py" "$ROOT/scripts/model/safetensors_io.py"
        "$ROOT/scripts/model/convert_model.py" "$ROOT/scripts/reference/reference_bert.py"
        "$ROOT/model_data/vocab.txt")
stamp_value="$(cat "${inputs[@]}" | sha256sum | cut -d' ' -f1)"
if [[ -f "$OUT/.stamp" && "$(cat "$OUT/.stamp")" == "$stamp_value" ]]; then
  echo "fixtures: up to date in $OUT"
  exit 0
fi

rm -rf "$OUT"
mkdir -p "$OUT"
"$PY" -m scripts.reference.make_random_model --preset tiny --seed 1 --attn "$OUT/tiny.attn" \
  --hf "$OUT/tiny_hf" --safetensors
"$PY" -m scripts.reference.make_random_model --preset mini --seed 2 --hf "$OUT/mini_hf"
"$PY" -m scripts.model.convert_model to-attn "$OUT/mini_hf" "$OUT/mini.attn"
"$PY" -m scripts.reference.reference_bert "$OUT/tiny_hf" --fixtures "$OUT/tiny" \
  --lengths 17,2,5,64 --seed 11 --ablations "1.2,2.*,all"
"$PY" -m scripts.reference.reference_bert "$OUT/mini_hf" --fixtures "$OUT/mini" \
  --lengths 33,2,9,128,512 --seed 12 --ablations "2.3,1.*,1.1+3.4+4.2,all"
# Written last, so an interrupted run is redone next time.
echo "$stamp_value" > "$OUT/.stamp"
echo "fixtures: written to $OUT"
