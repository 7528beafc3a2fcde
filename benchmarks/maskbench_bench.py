#!/usr/bin/env python3
"""maskbench-dev: every real-world schema, compiled fresh by each engine, and
its valid instance fed token by token — time to first mask (compile + first
mask) and every per-token mask time, as MaskBench reports them.

Driver (default, run from .bench-venv for tiktoken): reads the documents that
maskbench_docs.py prepared (the same JSON text for every engine), tokenizes
them with the Llama-3 tokenizer, then runs one long-lived worker per engine
that compiles the schemas one after another in a single process (as a
server would: the tokenizer and whatever an engine keeps per tokenizer are
built once, untimed). Each schema gets a time limit (--timeout); a worker
that exceeds it is killed, the schema is counted as a timeout, and a new
worker resumes at the next schema. The address space of a worker is capped
(--mem-gb).

Semantics are matched: JSON Schema's defaults (additionalProperties true
unless stated) for formcast, llguidance and xgrammar (strict_mode=False);
outlines-core has no such switch (it allows only declared properties).

Usage: bash benchmarks/run.sh --maskbench   (prepares documents, then this)
       .bench-venv/bin/python benchmarks/maskbench_bench.py DOCS.json [--engines ...] [--every N]
"""

import argparse
import datetime
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TAG = "@@MASKBENCH "

import llama3_vocab  # noqa: E402
from engines import ENGINES  # noqa: E402


# ---------------------------------------------------------------- worker side

def worker_main(engine, jobs_path, start):
    import gc

    from engines import load
    from engines.bitmask import bit_is_set

    with open(jobs_path) as f:
        jobs = json.load(f)
    eng = load(engine)(llama3_vocab.TOKENIZER_PATH)
    mask, words = eng.new_bitmask()
    clock = time.perf_counter_ns
    for k in range(start, len(jobs)):
        job = jobs[k]
        out = dict(index=k, name=job["name"])
        w = dict(kind="schema", name=job["name"], schema_text=job["schema_text"])
        why = eng.unsupported(w)
        if why:
            out.update(status="n/a", reason=why)
        else:
            gc.collect()
            gc.disable()
            try:
                t0 = clock()
                compiled = eng.compile(w)
                m = eng.new_matcher(compiled)
                t1 = clock()
                eng.fill(m, mask)
                t2 = clock()
                out.update(compile_ms=(t1 - t0) / 1e6, ttfm_ms=(t2 - t0) / 1e6)
                masks = [(t2 - t1) / 1e3]
                status = "ok"
                for i, tok in enumerate(job["ids"]):
                    if i:
                        t0 = clock()
                        eng.fill(m, mask)
                        masks.append((clock() - t0) / 1e3)
                    if not bit_is_set(words, tok) or not eng.accept(m, tok):
                        status = "doc_rejected"
                        out["rejected_at"] = i
                        break
                out.update(status=status, mask_us=[round(x, 2) for x in masks])
            except MemoryError:
                out.update(status="oom")
            except Exception as e:  # noqa: BLE001 - a refusal is a result
                out.update(status="compile_error", reason=f"{type(e).__name__}: {str(e)[:200]}")
            finally:
                gc.enable()
        sys.stdout.write(TAG + json.dumps(out) + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------- driver side

def run_engine(python, engine, jobs_path, n_jobs, args):
    """All jobs for one engine; restarts the worker after a timeout/crash."""
    results = {}
    cap = int(args.mem_gb * (1 << 30))

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = 0
    t_engine = time.monotonic()
    while start < n_jobs:
        proc = subprocess.Popen(
            [python, os.path.join(HERE, "maskbench_bench.py"), "--worker", engine, "--jobs", jobs_path, "--start", str(start)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=limit_memory, cwd=HERE,
        )
        lines = queue.Queue()

        def pump():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        # The first schema also pays the worker's start-up (imports, tokenizer).
        deadline = time.monotonic() + args.timeout + 120
        current = start
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                proc.kill()
                proc.wait()
                results[current] = dict(index=current, status="timeout")
                start = current + 1
                break
            if line is None:  # the worker died (crash, out of memory) or finished
                proc.wait()
                if current < n_jobs:
                    results[current] = dict(index=current, status="oom" if proc.returncode == -9 else "crash")
                start = current + 1
                break
            if not line.startswith(TAG):
                continue
            r = json.loads(line[len(TAG):])
            results[r["index"]] = r
            current = r["index"] + 1
            deadline = time.monotonic() + args.timeout
            if current >= n_jobs:
                proc.wait()
                start = n_jobs
                break
        done = len(results)
        print(f"  {engine:<14} {done}/{n_jobs} schemas, {time.monotonic() - t_engine:.0f} s", file=sys.stderr, flush=True)
    return [results[k] for k in range(n_jobs)]


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summarize(engine, rs):
    ok = [r for r in rs if r.get("status") in ("ok", "doc_rejected")]
    masks = [x for r in ok for x in r.get("mask_us", [])]
    ttfm = [r["ttfm_ms"] for r in ok]
    count = lambda s: sum(r.get("status") == s for r in rs)  # noqa: E731
    return dict(
        engine=engine, schemas=len(rs), compiled=len(ok), doc_rejected=count("doc_rejected"),
        compile_error=count("compile_error"), timeout=count("timeout"), oom=count("oom") + count("crash"),
        masks=len(masks),
        mask_mean=statistics.fmean(masks) if masks else float("nan"),
        mask_p50=pct(masks, 0.5), mask_p99=pct(masks, 0.99), mask_p999=pct(masks, 0.999),
        ttfm_mean=statistics.fmean(ttfm) if ttfm else float("nan"), ttfm_p50=pct(ttfm, 0.5), ttfm_p99=pct(ttfm, 0.99),
    )


def table(summaries, common_note):
    head = (f"{'engine':<14}{'compiled':>10}{'doc rej':>9}{'errors':>8}{'t/o':>6}{'oom':>5}"
            f"{'masks':>9}{'mean µs':>10}{'p50':>8}{'p99':>9}{'p99.9':>9}{'TTFM mean ms':>14}{'p50':>8}{'p99':>9}")
    lines = [head]
    for s in summaries:
        lines.append(
            f"{s['engine']:<14}{s['compiled']:>6}/{s['schemas']:<4}{s['doc_rejected']:>8}{s['compile_error']:>8}{s['timeout']:>6}{s['oom']:>5}"
            f"{s['masks']:>9}{s['mask_mean']:>10.1f}{s['mask_p50']:>8.1f}{s['mask_p99']:>9.1f}{s['mask_p999']:>9.1f}"
            f"{s['ttfm_mean']:>14.2f}{s['ttfm_p50']:>8.2f}{s['ttfm_p99']:>9.2f}"
        )
    lines.append(common_note)
    return "\n".join(lines)


def driver_main(args):
    engines = sorted((e.strip() for e in args.engines.split(",")), key=ENGINES.index)
    docs = json.load(open(args.docs))[:: args.every]
    enc = llama3_vocab.tiktoken_encoding(args.tokenizer)
    jobs = []
    for d in docs:
        ids = enc.encode(d["doc"], disallowed_special=())
        jobs.append(dict(name=d["name"], schema_text=d["schema_text"], ids=ids))
    os.makedirs(args.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    jobs_path = os.path.join(args.out_dir, f"maskbench-jobs-{stamp}.json")
    with open(jobs_path, "w") as f:
        json.dump(jobs, f)
    print(f"maskbench-dev: {len(jobs)} schemas with a valid instance (every {args.every}), "
          f"{sum(len(j['ids']) for j in jobs)} document tokens; engines: {', '.join(engines)}")
    print(f"per schema: timeout {args.timeout:.0f} s; address space {args.mem_gb:g} GiB; "
          f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per_engine = {}
    for e in engines:
        python = args.formcast_python if e == "formcast" else args.peer_python
        per_engine[e] = run_engine(python, e, jobs_path, len(jobs), args)
    os.remove(jobs_path)

    # All schemas, each engine's own successes; then the schemas every engine
    # compiled and accepted the document of (like for like).
    summaries = [summarize(e, per_engine[e]) for e in engines]
    print("\n== all schemas (each engine over the schemas it compiled; masks up to a rejected token) ==")
    print(table(summaries, "mask times in µs over every step; TTFM = compile + first mask"))
    both = [k for k in range(len(jobs)) if all(per_engine[e][k].get("status") == "ok" for e in engines)]
    common = [summarize(e, [per_engine[e][k] for k in both]) for e in engines]
    print(f"\n== the {len(both)} schemas every engine compiled and whose document every engine accepted ==")
    print(table(common, ""))
    if "formcast" in engines and len(engines) > 1:
        f = next(s for s in common if s["engine"] == "formcast")
        print("formcast ÷ peer on the common schemas (< 1: formcast faster)   mask mean   mask p99   TTFM mean   TTFM p99")
        for s in common:
            if s["engine"] == "formcast":
                continue
            r = lambda k: f[k] / s[k] if s[k] else float("nan")  # noqa: E731
            print(f"  vs {s['engine']:<58}{r('mask_mean'):>9.2f}{r('mask_p99'):>11.2f}{r('ttfm_mean'):>12.2f}{r('ttfm_p99'):>11.2f}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    path = os.path.join(args.out_dir, f"maskbench-{stamp}.json")
    with open(path, "w") as f:
        json.dump(dict(created=stamp, every=args.every, timeout_s=args.timeout, summaries=summaries,
                       common=common, results=per_engine), f)
    print(f"results: {os.path.relpath(path, ROOT)}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("docs", nargs="?", help="documents from maskbench_docs.py")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--jobs", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--every", type=int, default=1, help="every N-th schema (default all)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per schema")
    p.add_argument("--mem-gb", type=float, default=8.0)
    p.add_argument("--formcast-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--peer-python", default=os.path.join(ROOT, ".bench-venv", "bin", "python"))
    p.add_argument("--tokenizer", default=llama3_vocab.TOKENIZER_PATH)
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    if args.worker:
        worker_main(args.worker, args.jobs, args.start)
        return 0
    if not args.docs:
        p.error("DOCS is required (see maskbench_docs.py)")
    return driver_main(args)


if __name__ == "__main__":
    sys.exit(main())
