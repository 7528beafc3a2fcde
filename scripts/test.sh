#!/usr/bin/env bash
# All tests: the Rust crates (cargo test), the Python package (pytest), the
# engine integrations (pytest in .engines-venv) and a short fuzzing run
# (scripts/fuzz.sh: the grammar parsers, generated JSON Schemas and structural
# tags, generated tool requests for every style).
set -euo pipefail
cd "$(dirname "$0")/.."

# The PyO3 crate is an extension module: it is tested through pytest.
cargo test --workspace --exclude formcast-py --locked
.venv/bin/python -m pytest -q
# formcast inside SGLang, vLLM and transformers, driven through their own code
# (the main environment has no torch, so these skip there).
.engines-venv/bin/python -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
    tests/test_integration_sglang.py tests/test_integration_vllm.py \
    tests/test_integration_transformers.py tests/test_integration_transformers_e2e.py
# A short fuzzing run of every target (no crash, hang or failed check allowed).
bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
