#!/usr/bin/env bash
# Serves web/ on localhost with a real static server (npm http-server, through
# scripts/site/serve.mjs): application/wasm for .wasm, CORS on so that other origins can embed
# the widgets, the Cache-Control policy of scripts/site/http_policy.mjs (no-store nowhere, so
# the pages can enter the back/forward cache) and a file's .br or .gz copy where one exists.
# Usage: scripts/serve.sh [PORT]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PORT="${1:-${PORT:-8000}}"
exec node "$ROOT/scripts/site/serve.mjs" "$PORT" "$ROOT/web"
