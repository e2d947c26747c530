#!/usr/bin/env bash
# Installs whatever this project needs and the machine lacks; safe to run again and again.
# Usage: scripts/setup.sh [--train]   (--train adds the corpus packages used to train the default model)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(cmake g++ make pkg-config libeigen3-dev googletest libgtest-dev emscripten unicode-data
          python3 python3-numpy python3-torch libopenblas0-pthread chromium
          clang libclang-rt-14-dev
          hugo jekyll mkdocs)  # the integrations' tests build real sites (tests/browser/generators.test.mjs)
if [[ "${1:-}" == "--train" ]]; then
  packages+=(dict-gcide wordnet-base fortunes bible-kjv bible-kjv-text debian-reference-en)
fi
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages (test and build tooling only; the page itself needs none).
stamp="$ROOT/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$ROOT/package-lock.json" -nt "$stamp" ]]; then
  echo "setup: npm ci"
  (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The vocabulary is committed; this only checks that it is the exact bert-base-uncased file.
if [[ ! -f "$ROOT/model_data/vocab.txt" ]]; then
  node "$ROOT/scripts/vocab/build_vocab.mjs"
fi
