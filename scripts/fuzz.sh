#!/usr/bin/env bash
# Fuzzes formcast's inputs for N seconds per target; exits non-zero if any
# target crashes, hangs or fails a check.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 20)
#
# cargo-fuzz (libFuzzer) targets, fuzz/fuzz_targets/*:
#   ebnf, regex        the grammar parsers, on raw bytes (seeds and dicts)
#   json_schema        generated JSON Schemas (every keyword, $ref cycles,
#                      deep nesting, huge bounds) x every output style and
#                      option, compiled and matched
#   structural_tag     generated structural tags (every format type, nested),
#                      compiled and matched
#   lark               Lark text on raw bytes (seeds and dict), both readings,
#                      compiled and matched; llguidance's reading's masks
#                      checked token by token against acceptance
# The structure-aware targets run their inputs on a 2 MiB stack. Then the
# Python target, fuzz/python/fuzz_styles.py: hypothesis-generated tool
# requests for every built-in style, through structural_tag_for, compile and
# the output parser, in a worker process so a crash is caught and minimized
# (FUZZ_STYLE_EXAMPLES cases, default 1000).
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
summary=()
for target in $(cargo fuzz list); do
    echo "== fuzzing '$target' for ${seconds}s"
    mkdir -p "corpus/$target"
    seeds=()
    extra=()
    case "$target" in
        ebnf) seeds=("$root/tests/data/gbnf") ;;
        regex) seeds=("seeds/regex") ;;
        lark) seeds=("seeds/lark") ;;
        # Generated documents grow with the input: full length from the start.
        json_schema | structural_tag) extra=("-len_control=0") ;;
    esac
    dict=()
    [ -f "dicts/$target.dict" ] && dict=("-dict=dicts/$target.dict")
    log="$(mktemp)"
    cargo fuzz run --sanitizer none --debug-assertions --target-dir "$target_dir" \
        "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${extra[@]}" "${dict[@]}" 2>&1 | tee "$log" | grep -v -e '^#' -e '# Uses:' -e '^INFO:'
    status="${PIPESTATUS[0]}"
    execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')"
    rm -f "$log"
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        summary+=("$target: CRASH after ${execs:-?} executions (input in fuzz/artifacts/$target/)")
    else
        summary+=("$target: ${execs:-?} executions in ${seconds}s, 0 crashes")
    fi
done

echo "== fuzzing 'styles' (python, ${FUZZ_STYLE_EXAMPLES:-1000} cases)"
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
styles_log="$(mktemp)"
"$py" "$root/fuzz/python/fuzz_styles.py" --examples "${FUZZ_STYLE_EXAMPLES:-1000}" 2>&1 | tee "$styles_log"
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    failed+=("styles")
fi
summary+=("$(grep '^styles fuzz:' "$styles_log" || echo 'styles: no summary (see above)')")
rm -f "$styles_log"

echo "== fuzzing summary"
printf '  %s\n' "${summary[@]}"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "FUZZ FAILURE in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzzing passed: no crash in $(( $(cargo fuzz list | wc -l) + 1 )) targets"
