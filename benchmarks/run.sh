#!/usr/bin/env bash
# One command for the engine benchmark: install the peers into .bench-venv
# (idempotent, first run downloads several GB), then run the harness.
# formcast runs under the project's venv (.venv, from the project's set-up);
# override with FORMCAST_PYTHON=... . Extra arguments go to engine_bench.py,
# e.g.  bash benchmarks/run.sh --workloads W0,E1 --engines formcast,llguidance
#       bash benchmarks/run.sh --maskbench [--every 10] [--engines ...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FORMCAST_PYTHON="${FORMCAST_PYTHON:-$ROOT/.venv/bin/python}"

bash "$ROOT/benchmarks/setup_peers.sh"

if [[ ! -x "$FORMCAST_PYTHON" ]]; then
    echo "[run] warning: $FORMCAST_PYTHON not found: formcast will be reported as an error" >&2
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

# The driver needs tiktoken, so it runs from .bench-venv like the peers.
exec "$ROOT/.bench-venv/bin/python" "$ROOT/benchmarks/engine_bench.py" \
    --formcast-python "$FORMCAST_PYTHON" "$@"
