#!/usr/bin/env bash
# Serves the embedding demo across two origins: web/ on PORT (the widgets' site, with CORS, as
# scripts/serve.sh does) and web/ again on PORT+1, whose embed-demo.html loads the bundle, the
# wasm engine and the model cross-origin from the first. Usage: scripts/serve_demo.sh [PORT]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PORT="${1:-${PORT:-8000}}"
HOST_PORT=$((PORT + 1))
SERVER="$ROOT/node_modules/.bin/http-server"
"$SERVER" "$ROOT/web" -a 127.0.0.1 -p "$PORT" -c-1 --cors -s &
site=$!
"$SERVER" "$ROOT/web" -a 127.0.0.1 -p "$HOST_PORT" -c-1 -s &
host=$!
trap 'kill "$site" "$host" 2>/dev/null' EXIT INT TERM
echo "serve_demo: the widgets' site is http://127.0.0.1:${PORT}/"
echo "serve_demo: the host page is http://127.0.0.1:${HOST_PORT}/embed-demo.html?from=http://127.0.0.1:${PORT}/ (Ctrl-C stops both)"
wait
