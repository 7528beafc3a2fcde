#!/usr/bin/env bash
# Fuzzes the grammar front-ends (fuzz/fuzz_targets/*) with cargo fuzz
# (libFuzzer) for N seconds per target; exits non-zero if any target crashes.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 20)
#
# Works on stable Rust: cargo fuzz passes nightly-only flags, which
# RUSTC_BOOTSTRAP=1 enables. Installs cargo-fuzz if it is missing. Builds
# without a sanitizer (the code under test is safe Rust) but with debug
# assertions and overflow checks. The build goes to $CARGO_TARGET_DIR if set,
# else fuzz/target. Crash inputs land in fuzz/artifacts/<target>/.
set -uo pipefail

seconds="${1:-20}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz" || exit 1
export RUSTC_BOOTSTRAP=1
target_dir="${CARGO_TARGET_DIR:-$root/fuzz/target}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked --version 0.13.2 || exit 1
fi

echo "== building fuzz targets"
cargo fuzz build --sanitizer none --debug-assertions --target-dir "$target_dir" || exit 1

failed=()
for target in $(cargo fuzz list); do
    echo "== fuzzing '$target' for ${seconds}s"
    mkdir -p "corpus/$target"
    seeds=()
    case "$target" in
        ebnf) seeds=("$root/tests/data/gbnf") ;;
        regex) seeds=("seeds/regex") ;;
    esac
    dict=()
    [ -f "dicts/$target.dict" ] && dict=("-dict=dicts/$target.dict")
    if ! cargo fuzz run --sanitizer none --debug-assertions --target-dir "$target_dir" \
        "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${dict[@]}"; then
        failed+=("$target")
    fi
done

if [ "${#failed[@]}" -ne 0 ]; then
    echo "FUZZ FAILURE in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzzing passed: no crash in $(cargo fuzz list | wc -l) targets"
