# Sourced by the other scripts: shared paths and tool settings.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Debian's Emscripten needs acorn from /usr/share/nodejs (FACTS.md).
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
# Debian's numpy and torch live under the system interpreter, not the pyenv one first on PATH.
PY=/usr/bin/python3
JOBS="$(nproc)"
