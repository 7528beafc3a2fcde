"""How formcast.toolcalls.parse_output scales with the output's length.

Prints n (characters) against seconds for hostile and ordinary outputs, whole
(`parse_output`) and streamed in 4-character deltas (as a server feeds
tokens). Linear parsing shows as a constant seconds-per-MiB column.

    .venv/bin/python benchmarks/toolcalls_scaling.py            # 64 KiB .. 1 MiB
    .venv/bin/python benchmarks/toolcalls_scaling.py --max-kib 256 --only brackets
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from formcast.styles import structural_tag_for
from formcast.toolcalls import OutputStreamParser, parse_output

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}]


def _cases() -> dict[str, tuple[str, Callable[[int], str]]]:
    return {
        # The reproducer: a call whose arguments open n brackets.
        "brackets": ("qwen_3", lambda n: '<tool_call>\n{"name": "f", "arguments": ' + "[" * n),
        # Closed nesting: n/2 brackets opened, then closed.
        "nested": ("qwen_3", lambda n: '<tool_call>\n{"name": "f", "arguments": {"a": ' + "[" * (n // 2) + "]" * (n // 2) + "}}\n</tool_call>"),
        # One long string argument.
        "long_string": ("qwen_3", lambda n: '<tool_call>\n{"name": "f", "arguments": {"a": "' + "x" * n + '"}}\n</tool_call>'),
        # Plain prose, no call.
        "prose": ("qwen_3", lambda n: ("The weather is fine. " * (n // 21 + 1))[:n]),
        # XML parameters: one long raw string.
        "xml_string": ("qwen_3_5", lambda n: "<tool_call>\n<function=f>\n<parameter=a>\n" + "y" * n + "\n</parameter>\n</function>\n</tool_call>"),
        # A call index of n digits (kimi's `\d+`).
        "digits": ("kimi", lambda n: "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:" + "7" * n),
    }


def _time(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-kib", type=int, default=64)
    ap.add_argument("--max-kib", type=int, default=1024)
    ap.add_argument("--only", choices=sorted(_cases()), action="append")
    ap.add_argument("--no-stream", action="store_true", help="skip the streamed (4-character deltas) column")
    args = ap.parse_args()
    for name, (style, make) in _cases().items():
        if args.only and name not in args.only:
            continue
        tag = structural_tag_for(style, TOOLS, reasoning="disabled")
        print(f"{name} ({style})")
        print(f"  {'n':>9}  {'whole s':>8}  {'s/MiB':>7}" + ("" if args.no_stream else f"  {'stream s':>8}  {'s/MiB':>7}"))
        kib = args.min_kib
        while kib <= args.max_kib:
            n = kib * 1024
            text = make(n)
            whole = _time(lambda: parse_output(tag, text))
            line = f"  {len(text):>9}  {whole:>8.2f}  {whole / len(text) * 2**20:>7.2f}"
            if not args.no_stream:

                def stream() -> None:
                    p = OutputStreamParser(tag)
                    for i in range(0, len(text), 4):
                        p.feed(text[i : i + 4])
                    p.finish()

                s = _time(stream)
                line += f"  {s:>8.2f}  {s / len(text) * 2**20:>7.2f}"
            print(line, flush=True)
            kib *= 2


if __name__ == "__main__":
    main()
