"""What the formatter's decoding controls cost: tokens/s of each variant on the
same inputs, one after the other in one process (one model load, 4 slots).

    .venv/bin/python benchmarks/formatter_decoding_bench.py [--n 12] [--lora ADAPTER.gguf]

Variants: constrained; + no-repeat 3-gram guard + loop guard; grounded + loop
guard; grounded + 3-gram guard + loop guard; and, with --lora (the shipped
adapter: python/formcast/formatter/adapters/smollm2-135m-formatter-lora.gguf),
the fine-tuned adapter constrained, + loop guard, + 4-gram guard (the default). Inputs: the first N examples of
each dev set in ../shared/data/slot. Prints completion tokens, wall seconds,
tokens/s and the ratio to the constrained variant's tokens/s (the runs share a
noisy machine: compare within one run).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "data" / "slot"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=12, help="examples per dev set")
    ap.add_argument("--lora", type=Path, help="a fine-tuned adapter GGUF to add as variants")
    ap.add_argument("--max-tokens", type=int, default=512)
    args = ap.parse_args()

    from formcast.formatter import Formatter
    from formcast.formatter.local import LocalBackend
    from formcast.runtime import load_runtime

    rows = []
    for name in ("e2e-dev.jsonl", "webnlg-dev.jsonl"):
        rows += [json.loads(line) for line in (DEV / name).read_text(encoding="utf-8").splitlines()[: args.n]]
    texts = [r["input_text"] for r in rows]
    schemas = [r["json_schema"] for r in rows]
    off = {"no_repeat_ngram_size": 0, "loop_guard": False}
    variants = [
        ("constrained", off, None),
        ("+ 3-gram guard + loop guard", {"no_repeat_ngram_size": 3, "loop_guard": True}, None),
        ("grounded + loop guard", {**off, "grounded": True, "loop_guard": True}, None),
        ("grounded + 3-gram guard + loop guard", {"grounded": True, "no_repeat_ngram_size": 3, "loop_guard": True}, None),
    ]
    if args.lora:
        variants += [
            ("SFT constrained", off, args.lora),
            ("SFT + loop guard", {**off, "loop_guard": True}, args.lora),
            ("SFT + 4-gram guard + loop guard (default)", {"no_repeat_ngram_size": 4, "loop_guard": True}, args.lora),
        ]
    runtimes = {}
    results = []
    for label, options, lora in variants:
        if lora not in runtimes:
            runtimes[lora] = load_runtime(None, n_ctx=4096, num_slots=4, lora=lora)
        backend = LocalBackend(runtime=runtimes[lora])
        fmt = Formatter(backend=backend, max_workers=4, max_tokens=args.max_tokens, **options)
        t0 = time.perf_counter()
        out = fmt.generate_batch(texts, schemas, progress=False)
        seconds = time.perf_counter() - t0
        tokens = sum(c.usage.get("completion_tokens", 0) for c in out)
        backend.close()
        results.append((label, tokens, seconds))
        print(f"{label:40s} {tokens:6d} tokens {seconds:7.1f} s {tokens / seconds:6.1f} tok/s", flush=True)
    base = results[0][1] / results[0][2]
    print(f"\n{len(texts)} inputs ({args.n} per dev set), 4 slots, max_tokens {args.max_tokens}\n")
    print("| Variant | Tokens | Tokens/answer | Seconds | Tokens/s | ÷ constrained |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, tokens, seconds in results:
        rate = tokens / seconds
        print(f"| {label} | {tokens} | {tokens / len(texts):.1f} | {seconds:.1f} | {rate:.1f} | {rate / base:.2f} |")
    for rt in runtimes.values():
        rt.close()


if __name__ == "__main__":
    main()
