#!/usr/bin/env bash
# All tests: the Rust crates (cargo test), the Python package (pytest) and a
# short fuzzing run over the grammar parsers.
set -euo pipefail
cd "$(dirname "$0")/.."

# The PyO3 crate is an extension module: it is tested through pytest.
cargo test --workspace --exclude formcast-py --locked
.venv/bin/python -m pytest -q
# A short fuzzing run over the EBNF and regex parsers (no panic allowed).
bash scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
