#!/usr/bin/env bash
# Defensive-parsing benchmark: formcast.repair vs json-repair and dirtyjson on the
# shared corpus and on tests/data/repair/corpus.jsonl (right / flagged / silently
# wrong / error, defined in repair_bench.py), plus the valid-JSON fast path.
# The peers go in a throwaway venv, so they need not be project dependencies.
#   bash benchmarks/repair_bench.sh [--quick] [--cases] [--json out.json]
# VENV=... to reuse a venv elsewhere; PYTHON=... to pick the interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv="${VENV:-${TMPDIR:-/tmp}/formcast-repair-bench-venv}"
python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
# jsonschema/pydantic: formcast.repair's own needs; json-repair/dirtyjson: the peers.
"$venv/bin/python" -m pip install -q --disable-pip-version-check jsonschema pydantic json-repair dirtyjson
cd "$root"
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" exec "$venv/bin/python" benchmarks/repair_bench.py "$@"
