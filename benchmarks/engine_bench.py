#!/usr/bin/env python3
"""formcast vs llguidance / xgrammar / outlines-core: compile time and
per-token mask time on the same workloads, vocabulary and token ids.

Driver (default): tokenizes every workload's document once with the Llama-3
tokenizer, then runs one worker subprocess per (engine, workload), one at a
time so the engines never compete for the 2 cores. formcast's worker runs
under the project's venv, the peers' under .bench-venv, so the peers are
never installed into the project's environment. Each worker gets a timeout
and an address-space cap, so a peer that blows up (outlines-core on big
schemas) is reported as "timeout"/"oom" instead of taking the run down.

Worker (--worker ENGINE --workload NAME): reads {workload, token_ids, ...}
as JSON on stdin, measures (measure.py), prints one result line on stdout.

Usage: bash benchmarks/run.sh   (sets up the peers, then runs this)
       python benchmarks/engine_bench.py --engines llguidance,xgrammar --workloads W0,E1
"""

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULT_TAG = "@@FORMCAST_BENCH_RESULT "  # marks our line among library chatter

import llama3_vocab  # noqa: E402  (stdlib-only; fine in every venv)
import report  # noqa: E402
from engines import ENGINES  # noqa: E402


# ---------------------------------------------------------------- worker side

def worker_main(engine, workload_name):
    payload = json.load(sys.stdin)
    assert payload["workload"]["name"] == workload_name
    try:
        from engines import load
        import measure

        result = measure.run(
            load(engine),
            payload["workload"],
            payload["token_ids"],
            payload["tokenizer"],
            warm_passes=payload["warm_passes"],
            warm_budget_s=payload["warm_budget_s"],
        )
    except MemoryError:
        result = dict(engine=engine, workload=workload_name, status="oom", reason="MemoryError")
    except Exception as e:
        result = dict(engine=engine, workload=workload_name, status="error",
                      reason=f"{type(e).__name__}: {e}")
    sys.stdout.write(RESULT_TAG + json.dumps(result) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------- driver side

def tokenize_all(workloads, tokenizer_path):
    """Token ids for every document, computed once and shared by all engines."""
    try:
        enc = llama3_vocab.tiktoken_encoding(tokenizer_path)
    except ImportError:
        sys.exit("the driver needs tiktoken: run it with .bench-venv/bin/python (see run.sh)")
    ids = {}
    for w in workloads:
        toks = enc.encode(w["doc"], disallowed_special=())
        assert enc.decode(toks) == w["doc"], f"{w['name']}: tokenization does not round-trip"
        ids[w["name"]] = toks
    return ids


def classify_crash(proc_rc, stderr):
    """Name a worker death: an allocation failure under the cap is 'oom'."""
    s = stderr.lower()
    if ("memory allocation of" in s or "bad_alloc" in s or "memoryerror" in s
            or "cannot allocate memory" in s or "out of memory" in s):
        return "oom"
    if proc_rc == -9:
        return "oom"  # SIGKILL: the kernel's OOM killer, most likely
    return "crash"


def peak_rss_gib(pid):
    """VmHWM of a live process, in GiB (None if unreadable)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / (1 << 20)
    except OSError:
        pass
    return None


def run_worker(python, engine, workload, token_ids, args, warm_passes=None):
    warm_passes = args.warm_passes if warm_passes is None else warm_passes
    payload = json.dumps(dict(workload=workload, token_ids=token_ids,
                              tokenizer=args.tokenizer, warm_passes=warm_passes,
                              warm_budget_s=args.warm_budget))
    cap = int(args.mem_gb * (1 << 30))

    def limit_memory():  # runs in the child before exec
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    cmd = [python, os.path.join(HERE, "engine_bench.py"), "--worker", engine,
           "--workload", workload["name"]]
    base = dict(engine=engine, workload=workload["name"])
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=limit_memory, cwd=HERE)
    except OSError as e:
        return dict(base, status="error", reason=f"cannot start {python}: {e}")
    try:
        stdout, stderr = proc.communicate(payload, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        rss = peak_rss_gib(proc.pid)  # how far it got, read before the kill
        proc.kill()
        proc.communicate()
        return dict(base, status="timeout",
                    reason=f"> {args.timeout:.0f} s" + (f", peak RSS {rss:.1f} GiB" if rss else ""))
    wall = time.monotonic() - t0
    for line in stdout.splitlines():
        if line.startswith(RESULT_TAG):
            result = json.loads(line[len(RESULT_TAG):])
            result["wall_s"] = round(wall, 2)
            return result
    tail = " | ".join(stderr.strip().splitlines()[-3:])
    status = classify_crash(proc.returncode, stderr)
    return dict(base, status=status, reason=f"rc={proc.returncode}: {tail[-300:]}", wall_s=round(wall, 2))


def select_workloads(all_w, spec):
    if not spec:
        return all_w
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    return [w for w in all_w if any(w["name"] == s or w["name"].startswith(s + "_") for s in wanted)]


def driver_main(args, all_workloads=None, prefix="engine_bench"):
    """Runs every (workload, engine) pair; structural_bench.py passes its
    own workloads and result-file prefix."""
    if all_workloads is None:
        import workloads as wl

        all_workloads = wl.all_workloads()
    engines = [e.strip() for e in args.engines.split(",")]
    for e in engines:
        if e not in ENGINES:
            sys.exit(f"unknown engine {e}; choose from {ENGINES}")
    engines.sort(key=ENGINES.index)  # formcast first, always the same order
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")
    chosen = select_workloads(all_workloads, args.workloads)
    if not chosen:
        sys.exit(f"no workload matches {args.workloads!r}")
    token_ids = tokenize_all(chosen, args.tokenizer)

    # Workers run with benchmarks/ as their directory: a relative interpreter
    # path (".bench-venv/bin/python", as the README writes it) is resolved here.
    def interpreter(path):
        return os.path.abspath(path) if os.sep in path else path

    python_for = {e: interpreter(args.formcast_python if e == "formcast" else args.peer_python) for e in engines}
    print(f"engines: {', '.join(engines)}   workloads: {', '.join(w['name'] for w in chosen)}")
    print(f"formcast python: {args.formcast_python}   peer python: {args.peer_python}")
    print(f"per worker: timeout {args.timeout:.0f} s, address space {args.mem_gb:g} GiB; "
          f"warm passes: {args.warm_passes}; rounds: {args.rounds} (compile and each cold step: "
          f"the median over the rounds' fresh processes)")
    # Other jobs on this 2-core machine skew timings: record how busy it was.
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    load_start = os.getloadavg()

    results = []
    t_start = time.monotonic()
    for w in chosen:
        # Rounds interleave the engines, so that a busy spell of the
        # machine falls on all of them alike. Each round is a fresh
        # process: a second compile in the same process would find the
        # engines' per-tokenizer caches warm. Warm passes run in the
        # first round only.
        runs = {e: [] for e in engines}
        for k in range(args.rounds):
            for e in engines:
                if k and runs[e][0]["status"] != "ok":
                    continue  # a failure is the result; a timeout is not tried again
                r = run_worker(python_for[e], e, w, token_ids[w["name"]], args,
                               warm_passes=None if k == 0 else 0)
                runs[e].append(r)
                print(f"  {w['name']:<28} {e:<14} {r['status']:<14} "
                      f"{r.get('wall_s', '-')} s" + (f"  (round {k + 1}/{args.rounds})" if args.rounds > 1 else ""),
                      file=sys.stderr, flush=True)
        per_engine = [report.merge_rounds(runs[e]) for e in engines]
        results.extend(per_engine)
        print(report.workload_table(w, len(token_ids[w["name"]]), per_engine), flush=True)

    print(report.summary(results))
    elapsed = time.monotonic() - t_start
    load_end = os.getloadavg()
    print(f"total harness time: {elapsed:.0f} s; load average at end: "
          f"{' '.join(f'{x:.2f}' for x in load_end)}")

    os.makedirs(args.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(args.out_dir, f"{prefix}-{stamp}.json")
    doc = dict(
        created=stamp,
        tokenizer=args.tokenizer,
        warm_passes=args.warm_passes,
        rounds=args.rounds,
        timeout_s=args.timeout,
        mem_gb=args.mem_gb,
        harness_s=round(elapsed, 1),
        load_avg_start=load_start,
        load_avg_end=load_end,
        token_counts={k: len(v) for k, v in token_ids.items()},
        results=[report.with_stats(r) for r in results],
    )
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"results: {os.path.relpath(path, ROOT)}")
    # formcast computing a wrong mask must not look like a green run; a peer's
    # failures are findings about the peer, reported above but not fatal.
    return 1 if any(r["engine"] == "formcast" and r["status"] == "incorrect" for r in results) else 0


def arg_parser(doc=__doc__):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", metavar="ENGINE", help=argparse.SUPPRESS)
    p.add_argument("--workload", help=argparse.SUPPRESS)
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--workloads", default="", help="comma list of names or prefixes (W0,E2,...); default all")
    p.add_argument("--formcast-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--peer-python", default=os.path.join(ROOT, ".bench-venv", "bin", "python"))
    p.add_argument("--tokenizer", default=llama3_vocab.TOKENIZER_PATH)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per worker")
    p.add_argument("--mem-gb", type=float, default=8.0, help="address-space cap per worker")
    p.add_argument("--warm-passes", type=int, default=3,
                   help="warm stats take each step's minimum over these passes")
    p.add_argument("--warm-budget", type=float, default=20.0,
                   help="seconds of warm passes after which no further pass starts")
    p.add_argument("--rounds", type=int, default=3,
                   help="fresh worker processes per (engine, workload): compile time and each cold "
                        "step's mask time are their medians (a shared machine's stalls fall in one "
                        "round, not in the result)")
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    return p


def main():
    args = arg_parser().parse_args()
    if args.worker:
        worker_main(args.worker, args.workload)
        return 0
    return driver_main(args)


if __name__ == "__main__":
    sys.exit(main())
