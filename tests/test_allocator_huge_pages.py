"""The extension's heap takes no transparent huge pages (crates/formcast-py/src/lib.rs).

Faulting in a 2 MiB page zeroes all of it (and may compact memory) in the
middle of a compile, and a server's heap grows with every new schema it
keeps. Read from the kernel's own count, not from time: the count does not
depend on the machine's speed or load.
"""

from __future__ import annotations

import json

import pytest

from conftest import SHARED, run_with_llama3

WORKLOADS = SHARED / "data" / "bench-workloads"


SCRIPT = r"""
import json, sys
import formcast as fc
tok_path, *paths = sys.argv[1:]
compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_tiktoken(tok_path))
for p in paths:
    compiler.compile_json_schema(json.load(open(p))["schema"], strict=False)
for line in open("/proc/self/smaps_rollup"):
    if line.startswith("AnonHugePages:"):
        print(int(line.split()[1]))
"""


def thp_mode() -> str:
    try:
        text = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return ""
    return text[text.find("[") + 1 : text.find("]")]


def huge_page_kib(env: dict[str, str | None]) -> int:
    schemas = [p for p in sorted(WORKLOADS.glob("W*.json")) if json.loads(p.read_text()).get("schema")]
    return int(run_with_llama3(SCRIPT, schemas, {"MIMALLOC_ALLOW_THP": None, **env}).strip().splitlines()[-1])


@pytest.mark.skipif(thp_mode() != "madvise", reason="huge pages only on request (madvise) shows what the setting changes")
def test_the_heap_takes_no_transparent_huge_pages():
    # mimalloc asks for huge pages unless told not to. With its own default
    # restored, the same compiles do take them:
    # the comparison shows the setting is what makes the difference.
    default = huge_page_kib({"MIMALLOC_ALLOW_THP": "1"})
    tuned = huge_page_kib({})
    assert default >= 2048, f"mimalloc's default no longer takes huge pages ({default} KiB); the test measures nothing"
    assert tuned == 0, f"{tuned} KiB of transparent huge pages after compiling the workloads"
