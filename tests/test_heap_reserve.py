"""A compile takes its new pages from a reserve that was touched beforehand
(crates/formcast-py/src/heap.rs).

Compiled grammars are kept, so each new schema grows the heap, and on a VM
every fresh 4 KiB page is a fault of a few microseconds inside the compile.
Read from the kernel's count of the compiling thread's page faults, not from
time: the count does not depend on the machine's speed or load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SHARED, TOKENIZERS

MASKBENCH = SHARED / "data" / "maskbench-dev"

SCRIPT = r"""
import json, resource, sys, time
import formcast as fc
tok_path, *paths = sys.argv[1:]
compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_tiktoken(tok_path))
faults = 0
for p in paths:
    try:
        grammar = fc.Grammar.from_json_schema(json.load(open(p))["schema"], strict=False)
    except fc.GrammarError:
        continue
    time.sleep(0.02)  # quiet: the reserve is refilled
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    compiler.compile(grammar)
    faults += resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
print(faults)
"""


def compile_faults(reserve_mb: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "FORMCAST_HEAP_RESERVE_MB"}
    if reserve_mb is not None:
        env["FORMCAST_HEAP_RESERVE_MB"] = reserve_mb
    # Forty real schemas of some size, each compiled once: the heap grows
    # with every grammar the compiler keeps.
    schemas = sorted(MASKBENCH.glob("Github_hard*.json"))[:40]
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(TOKENIZERS / "llama3-tokenizer.model")] + [str(p) for p in schemas],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


def test_compiles_take_their_new_pages_from_the_touched_reserve():
    without = compile_faults("0")
    default = compile_faults(None)
    # Without a reserve the compiles fault in what they keep: the
    # comparison shows the reserve is what makes the difference.
    assert without >= 1000, f"only {without} page faults without the reserve; the test measures nothing"
    assert default * 4 <= without, f"{default} page faults with the reserve, {without} without"
