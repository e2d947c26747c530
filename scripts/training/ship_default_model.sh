#!/usr/bin/env bash
# Turns a finished training run into the shipped default model, the way the committed one was made:
#   1. model_data/explainer-mini.attn from RUN/final (convert_model.py to-attn), its provenance
#      = the run's training.json (with the runs it continued) + the corpus manifest's sources
#   2. the evaluation (eval_model.py): held-out top-1 vs the baselines, head profiles, as
#      markdown and JSON under build/eval/
#   3. the compact file the page loads (make_compact_model.sh: the precision study)
# Then model_data/README.md is updated by hand from build/eval/ and the study's table.
# Usage: scripts/training/ship_default_model.sh train_runs/NAME   (needs scripts/build.sh native)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../env.sh"
RUN="$(cd "${1:?usage: ship_default_model.sh train_runs/NAME}" && pwd)"
FINAL="$RUN/final"
CORPUS="${CORPUS:-$ROOT/corpus}"
OUT="${OUT:-$ROOT/model_data/explainer-mini.attn}"
EVAL="${EVAL:-$ROOT/build/eval}"
mkdir -p "$EVAL"
[[ -f "$FINAL/training.json" ]] || { echo "ship_default_model: $FINAL/training.json is missing (has the run finished?)" >&2; exit 1; }
[[ -f "$CORPUS/manifest.json" ]] || { echo "ship_default_model: $CORPUS/manifest.json is missing (python3 -m scripts.training.build_corpus)" >&2; exit 1; }

"$PY" - "$FINAL/training.json" "$CORPUS/manifest.json" "$EVAL/provenance.json" <<'EOF'
import json, sys
training, manifest = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:3])
provenance = {
    "kind": "trained for this project",
    "not": "This is not Google's or prajjwal1's bert-mini; it has the same shape and vocabulary.",
    "script": "scripts/training/train_default_model.py",
    "training": training,
    "corpus": {
        "details": "model_data/CORPUS.md",
        "train_tokens": manifest["train"]["tokens"] if isinstance(manifest.get("train"), dict) else training["corpus_train_tokens"],
        "heldout_tokens": manifest["heldout"]["tokens"] if isinstance(manifest.get("heldout"), dict) else None,
        "sources": [{k: s[k] for k in ("package", "version", "licence", "words", "tokens")} for s in manifest["sources"]],
    },
}
# The weights' terms (model_data/README.md, "Licence"): GPL-2.0-or-later when any training text
# is; otherwise MODEL_LICENSE (an SPDX id), by default the project's Apache-2.0.
import os
gpl = [s["package"] for s in manifest["sources"] if s["licence"].startswith("GPL")]
licence = os.environ.get("MODEL_LICENSE") or ("GPL-2.0-or-later" if gpl else "Apache-2.0")
if gpl and licence != "GPL-2.0-or-later":
    sys.exit(f"ship_default_model: the corpus has GPL text ({', '.join(gpl)}), so the weights are "
             f"GPL-2.0-or-later, not {licence}; build the corpus with --sources permissive")
provenance["license"] = licence
provenance["license_note"] = (
    f"The weights are offered under GPL-2.0-or-later because their training text includes GPL-2.0-or-later sources ({', '.join(gpl)}). "
    if gpl else f"Trained only on permissively licensed or public-domain text; offered under {licence}. ") + \
    "See model_data/README.md, section Licence, and the corpus sources' licences above."
json.dump(provenance, open(sys.argv[3], "w", encoding="utf-8"), indent=2)
EOF
NAME="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$FINAL/training.json")"
"$PY" -m scripts.model.convert_model to-attn "$FINAL" "$OUT" --name "$NAME" \
  --source "scripts/training/train_default_model.py run '$(basename "$RUN")'" \
  --provenance "$EVAL/provenance.json"
"$PY" -m scripts.training.eval_model "$FINAL" --threads "${EVAL_THREADS:-2}" --out "$EVAL/eval.md" --json "$EVAL/eval.json"
"$ROOT/scripts/training/make_compact_model.sh" "$OUT" "$ROOT/model_data/explainer-mini.compact.attn" | tee "$EVAL/precision.md"
sha256sum "$OUT" "$ROOT/model_data/explainer-mini.compact.attn"
