#!/usr/bin/env bash
# One command for the engine benchmark: install the peers into .bench-venv
# (idempotent, first run downloads several GB), then run the harness.
# formcast runs under the project's venv (.venv, from the project's set-up);
# override with FORMCAST_PYTHON=... . With no arguments it runs every part
# (below); arguments choose one part and go to its script, e.g.
#       bash benchmarks/run.sh --workloads W0,E1 --engines formcast,llguidance --rounds 1
#       bash benchmarks/run.sh --structural [--rounds 5]
#       bash benchmarks/run.sh --maskbench [--every 10] [--engines ...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FORMCAST_PYTHON="${FORMCAST_PYTHON:-$ROOT/.venv/bin/python}"

bash "$ROOT/benchmarks/setup_peers.sh"

if [[ ! -x "$FORMCAST_PYTHON" ]]; then
    echo "[run] warning: $FORMCAST_PYTHON not found: formcast will be reported as an error" >&2
fi

# No arguments: everything the engines are compared on, one part after the
# other: the workloads (W0-W5, E1-E4, L1), the structural tags, and every
# 4th schema of maskbench-dev. A part that finds a wrong formcast mask
# fails the run, after the others have run.
if [[ $# -eq 0 ]]; then
    status=0
    "$ROOT/.bench-venv/bin/python" "$ROOT/benchmarks/engine_bench.py" \
        --formcast-python "$FORMCAST_PYTHON" || status=1
    "$ROOT/.bench-venv/bin/python" "$ROOT/benchmarks/structural_bench.py" \
        --formcast-python "$FORMCAST_PYTHON" --peer-python "$ROOT/.bench-venv/bin/python" || status=1
    bash "$ROOT/benchmarks/run.sh" --maskbench --every 4 || status=1
    exit $status
fi

# maskbench-dev: documents prepared by formcast (the key order its grammar
# accepts, numbers in plain decimal), then every engine over every schema.
if [[ "${1:-}" == "--maskbench" ]]; then
    shift
    DOCS="$ROOT/benchmarks/results/maskbench-docs.json"
    "$FORMCAST_PYTHON" "$ROOT/benchmarks/maskbench_docs.py" "$DOCS"
    exec "$ROOT/.bench-venv/bin/python" "$ROOT/benchmarks/maskbench_bench.py" "$DOCS" \
        --formcast-python "$FORMCAST_PYTHON" "$@"
fi

if [[ "${1:-}" == "--structural" ]]; then
    shift
    exec "$ROOT/.bench-venv/bin/python" "$ROOT/benchmarks/structural_bench.py" \
        --formcast-python "$FORMCAST_PYTHON" --peer-python "$ROOT/.bench-venv/bin/python" "$@"
fi

# The driver needs tiktoken, so it runs from .bench-venv like the peers.
exec "$ROOT/.bench-venv/bin/python" "$ROOT/benchmarks/engine_bench.py" \
    --formcast-python "$FORMCAST_PYTHON" "$@"
