"""The first request of a fresh process: does start-up background work delay it?

    .venv/bin/python benchmarks/first_request.py          # W1,W3; all modes; pauses 0, 0.1, 1 s
    .venv/bin/python benchmarks/first_request.py --workloads W3 --reps 9 --modes asis --pauses 0,0.02,0.05,0.1,0.2,1

Each sample is a fresh process that builds the Llama-3 TokenizerInfo (what
`llama3_vocab.py` reads) and then, at once, compiles one workload and fills
its first mask, after a pause (`--pauses`, seconds: 0 is at once, 1 is once
the warm-up is over; in between, the request meets the warm-up at work;
`ranks` reads the Llama-3 ranks in Python first, as engine_bench.py's worker
does before its timed compile).
Times are from the end of the pause. The modes:

- asis:      nothing changed
- noheap:    no touched reserve (FORMCAST_HEAP_RESERVE_MB=0)
- noprewarm: no format/partition warm-up (FORMCAST_PREWARM=0)
- none:      neither background job

Processes of the modes are interleaved, so drift on a noisy machine hits all
modes alike; medians (and min/max) are printed. The machine's cores are
shared: compare modes of one run, not runs of different days.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODES = {
    "asis": {},
    "noheap": {"FORMCAST_HEAP_RESERVE_MB": "0"},
    "noprewarm": {"FORMCAST_PREWARM": "0"},
    "none": {"FORMCAST_HEAP_RESERVE_MB": "0", "FORMCAST_PREWARM": "0"},
}


def workload(name):
    import workloads

    for w in workloads.all_workloads():
        if w["name"].split("_")[0] == name or w["name"] == name:
            return w
    raise SystemExit(f"no workload {name}")


def child(name, pause):
    import formcast as fc
    from llama3_vocab import TOKENIZER_PATH

    w = workload(name)
    schema_text = json.dumps(w["schema"]) if w["kind"] == "schema" else None
    tok = fc.TokenizerInfo.from_tiktoken(TOKENIZER_PATH)
    compiler = fc.GrammarCompiler(tok)
    mask = fc.allocate_token_bitmask(1, tok.logits_size)
    if pause == "ranks":
        # What engine_bench.py's worker does between the tokenizer and the
        # compile: read the ranks in Python (~0.1-0.2 s, holding the GIL).
        from llama3_vocab import load_ranks

        load_ranks(TOKENIZER_PATH)
    elif float(pause):
        time.sleep(float(pause))
    t0 = time.perf_counter()
    if w["kind"] == "generic_json":
        g = fc.Grammar.builtin_json()
    elif w["kind"] == "schema":
        g = fc.Grammar.from_json_schema(schema_text, strict=False)
    elif w["kind"] == "lark":
        g = fc.Grammar.from_lark(w["lark"], tok)
    else:
        g = fc.Grammar.from_ebnf(w["gbnf"], root="root")
    cg = compiler.compile(g)
    t1 = time.perf_counter()
    m = fc.GrammarMatcher(cg)
    m.fill_next_token_bitmask(mask, 0)
    t2 = time.perf_counter()
    print(json.dumps({"compile_ms": (t1 - t0) * 1e3, "first_mask_ms": (t2 - t0) * 1e3}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="W1,W3")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--pauses", default="0,0.1,1")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--pause", default="0", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.pause)
    names = a.workloads.split(",")
    modes = a.modes.split(",")
    pauses = a.pauses.split(",")
    cells = [(n, p, m) for n in names for p in pauses for m in modes]
    samples = {c: [] for c in cells}
    for _ in range(a.reps):
        for n, p, m in cells:
            out = subprocess.run(
                [a.python, __file__, "--child", n, "--pause", str(p)],
                env={**os.environ, **MODES[m]}, capture_output=True, text=True, check=True,
            )
            samples[(n, p, m)].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"fresh processes, {a.reps} per cell; ms after the pause that follows the tokenizer; median [min–max]")
    print(f"{'workload':9} {'pause s':>7} {'mode':10} {'compile':>22} {'first mask':>22}")
    for n, p, m in cells:
        out = []
        for key in ("compile_ms", "first_mask_ms"):
            v = [s[key] for s in samples[(n, p, m)]]
            out.append(f"{statistics.median(v):7.2f} [{min(v):6.2f}–{max(v):6.2f}]")
        print(f"{n:9} {p:>7} {m:10} {out[0]:>22} {out[1]:>22}")


if __name__ == "__main__":
    main()
