#!/usr/bin/env bash
# Serves web/ on localhost with a real static server (application/wasm for .wasm, CORS on so
# that other origins can embed the widgets). Usage: scripts/serve.sh [PORT]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PORT="${1:-${PORT:-8000}}"
echo "serve: the article is at http://localhost:${PORT}/ (Ctrl-C stops the server)"
exec "$ROOT/node_modules/.bin/http-server" "$ROOT/web" -a 127.0.0.1 -p "$PORT" -c-1 --cors -s
