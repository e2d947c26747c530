# Sourced by the other scripts: shared paths and tool settings (docs/ARCHITECTURE.md, "Machine
# facts", says why each is needed).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Debian's Emscripten needs acorn from /usr/share/nodejs, where Node 20 does not look by itself.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
# Debian's numpy and torch live under the system interpreter, not the pyenv one first on PATH.
PY=/usr/bin/python3
# The Python tools are the package `scripts` (scripts/README.md), run as `"$PY" -m scripts.X.Y`:
# the repository root on the module path lets them run from any directory.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
JOBS="$(nproc)"
