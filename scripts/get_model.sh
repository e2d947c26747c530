#!/usr/bin/env bash
# Downloads a BERT checkpoint from the Hugging Face hub and converts it to a model file.
# Usage: scripts/get_model.sh MODEL_ID [OUT.attn]
#   scripts/get_model.sh prajjwal1/bert-mini      -> model_data/bert-mini.attn
# Fetches config.json, vocab.txt and model.safetensors (or pytorch_model.bin) into
# build/hub/MODEL_ID/, then runs scripts.model.convert_model to-attn. Needs internet; without it,
# it stops within seconds and says so. HF_ENDPOINT and HF_REVISION override the hub address
# (default https://huggingface.co) and revision (default main).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

id="${1:?usage: get_model.sh MODEL_ID [OUT.attn]   (for example prajjwal1/bert-mini)}"
if [[ ! "$id" =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$ ]]; then
  echo "get_model: '$id' is not a Hugging Face model id such as prajjwal1/bert-mini" >&2
  exit 2
fi
out="${2:-$ROOT/model_data/${id##*/}.attn}"
endpoint="${HF_ENDPOINT:-https://huggingface.co}"
revision="${HF_REVISION:-main}"
base="$endpoint/$id/resolve/$revision"
dir="$ROOT/build/hub/$id"
mkdir -p "$dir"

# fetch FILE: downloads FILE into $dir. Returns 0, or 1 when the hub has no such file; stops the
# script when the hub cannot be reached at all.
fetch() {
  local file="$1" code rc=0
  code="$(curl -sSL --connect-timeout 10 --max-time 600 -o "$dir/$file.part" \
          -w '%{http_code}' "$base/$file" 2>"$dir/curl.err")" || rc=$?
  if [[ $rc -ne 0 ]]; then
    rm -f "$dir/$file.part"
    case $rc in
      5|6|7|28|35|60)
        echo "get_model: no internet: cannot reach $endpoint ($(head -c 200 "$dir/curl.err"))." >&2
        echo "get_model: on a machine with internet, run: scripts/get_model.sh $id" >&2
        exit 3 ;;
      37) return 1 ;;  # file:// endpoint without the file
      *) echo "get_model: downloading $base/$file failed: $(head -c 200 "$dir/curl.err")" >&2
         exit 3 ;;
    esac
  fi
  if [[ "$code" == "404" ]]; then
    rm -f "$dir/$file.part"
    return 1
  fi
  if [[ "$code" != "200" && "$code" != "000" ]]; then
    rm -f "$dir/$file.part"
    echo "get_model: $base/$file answered HTTP $code (a private or gated model needs a login" \
         "this script does not do)" >&2
    exit 3
  fi
  mv "$dir/$file.part" "$dir/$file"
}

for file in config.json vocab.txt; do
  if ! fetch "$file"; then
    echo "get_model: $id has no $file at $base; is it a BERT model id?" >&2
    exit 3
  fi
done
rm -f "$dir/model.safetensors" "$dir/pytorch_model.bin" "$dir/tokenizer_config.json"
if ! fetch model.safetensors && ! fetch pytorch_model.bin; then
  echo "get_model: $id has neither model.safetensors nor pytorch_model.bin at $base" >&2
  exit 3
fi
fetch tokenizer_config.json || true  # optional; tells whether the vocabulary is cased
rm -f "$dir/curl.err"

"$PY" -m scripts.model.convert_model to-attn "$dir" "$out" --name "$id" \
  --source "$endpoint/$id (revision $revision)"
