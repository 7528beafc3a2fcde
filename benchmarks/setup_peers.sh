#!/usr/bin/env bash
# Creates /work/main/.bench-venv holding the peer engines (pinned), kept apart
# from the project's own .venv so peers never leak into formcast's environment.
# Idempotent: a second run only checks the pins and exits.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${BENCH_VENV:-$ROOT/.bench-venv}"
PY="$VENV/bin/python"

# The pins the anchors were measured with (shared/spec/anchors.md).
PEERS=(llguidance==1.9.1 xgrammar==0.2.8 outlines-core==0.2.14)
HELPERS=(tiktoken numpy)

if [[ ! -x "$PY" ]]; then
    echo "[setup_peers] creating $VENV"
    python3 -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
fi

# Exit early when every pin is already satisfied (pip would otherwise spend
# seconds resolving torch's dependency tree on each run).
if "$PY" - "${PEERS[@]}" "${HELPERS[@]}" torch <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for req in sys.argv[1:]:
    name, _, want = req.partition("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        sys.exit(1)
    if want and have != want:
        sys.exit(1)
PYEOF
then
    echo "[setup_peers] peers already installed in $VENV"
    exit 0
fi

# xgrammar needs torch; only PyPI is reachable so this is the default (CUDA)
# wheel, several GB, but it is only used on the CPU here.
echo "[setup_peers] installing ${PEERS[*]} ${HELPERS[*]} (torch comes with xgrammar)"
"$PY" -m pip install --quiet "${HELPERS[@]}" torch
"$PY" -m pip install --quiet "${PEERS[@]}"

"$PY" -c 'import llguidance, xgrammar, outlines_core, tiktoken, numpy; print("[setup_peers] peers import OK")'
