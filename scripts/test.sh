#!/usr/bin/env bash
# All tests: the Rust crates (cargo test), the Python package (pytest) and a
# short fuzzing run (scripts/fuzz.sh: the grammar parsers, generated JSON
# Schemas and structural tags, generated tool requests for every style).
set -euo pipefail
cd "$(dirname "$0")/.."

# The PyO3 crate is an extension module: it is tested through pytest.
cargo test --workspace --exclude formcast-py --locked
.venv/bin/python -m pytest -q
# A short fuzzing run of every target (no crash, hang or failed check allowed).
bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
