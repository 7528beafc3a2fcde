#!/usr/bin/env bash
# The GPU check of formcast's masks in a decode loop (benchmarks/gpu_check.py):
# a random 1.3B Llama-shaped model with a 128k vocabulary, batches 1/16/64,
# mask fill + apply time per step against the forward pass, outputs that
# parse, then generate() with FormcastLogitsProcessor. Needs a CUDA GPU with
# PyTorch and transformers installed (nothing is fetched); about a minute.
#   bash scripts/gpu_check.sh [--tokenizer PATH] [--steps N] [--batches 1,16,64]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" benchmarks/gpu_check.py "$@"
