#!/usr/bin/env bash
# The main job: set up what is missing, build, and run the engine on an example sentence.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" native
"$ROOT/build/native/attention-cli" tokenize --vocab "$ROOT/model_data/vocab.txt" \
  "The cat sat on the mat because it was tired."
