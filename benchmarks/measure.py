"""The measurement a worker performs for one (engine, workload) pair.

Protocol (shared/spec/anchors.md): the engine's tokenizer is built once,
untimed; compile is timed from grammar source to compiled grammar; then a
matcher is driven along the document's token ids, timing only the mask fill
of each step. A cold pass uses a fresh compile and matcher; warm passes use
new matchers on the same compiled grammar, so lazily built state is reused.

Correctness, checked outside the timed region:
  - the next document token must be allowed by the mask, and accepted;
  - a stop token must be allowed once the document is complete;
  - every warm pass must produce, step for step, the same masks as the cold
    pass (a cache that returns a stale mask would otherwise go unnoticed,
    since a too-permissive mask still allows the document's tokens);
  - per-step digests are returned so the driver can compare engines.
"""

import gc
import json
import resource
import time

import llama3_vocab
from engines.bitmask import bit_is_set, digest, popcount

MAX_FAILURES = 5  # a few are enough to diagnose; the rest is noise


def drive(eng, matcher, mask, words, token_ids, decode, n_text):
    """One pass along the document: per-step mask times (ns), mask digests and
    allowed counts over the text tokens, and the correctness failures."""
    times, digests, counts, failures = [], [], [], []
    fill = eng.fill
    clock = time.perf_counter_ns

    def step(i):
        t0 = clock()
        fill(matcher, mask)
        times.append(clock() - t0)
        digests.append(digest(words, n_text))
        counts.append(popcount(words, n_text))

    def result(completed, stop_allowed):
        return dict(mask_ns=times, digests=digests, allowed=counts,
                    failures=failures[:MAX_FAILURES], completed=completed,
                    stop_allowed=stop_allowed)

    for i, tok in enumerate(token_ids):
        step(i)
        if not bit_is_set(words, tok):
            failures.append(dict(step=i, token=tok, text=decode(tok),
                                 what="doc token masked out", allowed=counts[-1]))
        if not eng.accept(matcher, tok):
            failures.append(dict(step=i, token=tok, text=decode(tok),
                                 what="accept refused", error=eng.error(matcher)))
            # The matcher is in an error state now: the rest would mean nothing.
            return result(False, None)
    # The last step: the document is complete, so a stop token must be allowed.
    step(len(token_ids))
    stop_allowed = bit_is_set(words, llama3_vocab.EOT_ID) or bit_is_set(words, llama3_vocab.EOS_ID)
    if not stop_allowed:
        failures.append(dict(step=len(token_ids), what="no stop token allowed at the end",
                             allowed=counts[-1]))
    return result(True, stop_allowed)


def current_rss_bytes():
    """The process's resident set now (Linux), else None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return None


def check_warm_against_cold(cold, warm):
    """Masks must not depend on what was cached before."""
    for i, (a, b) in enumerate(zip(cold["digests"], warm["digests"])):
        if a != b:
            warm["failures"].append(dict(step=i, what="warm mask differs from cold mask",
                                         allowed=warm["allowed"][i], cold_allowed=cold["allowed"][i]))
            return


def run(Engine, workload, token_ids, tokenizer_path, warm_passes=1, warm_budget_s=20.0):
    """Everything for one (engine, workload); returns a JSON-able dict.
    The first warm pass runs whenever warm_passes > 0 (0: the later rounds
    of engine_bench.py, which measure cold only); more only while the warm
    passes have taken under warm_budget_s, so a slow engine cannot run
    into its timeout."""
    t0 = time.perf_counter_ns()
    eng = Engine(tokenizer_path)
    out = dict(engine=eng.name, workload=workload["name"],
               tokenizer_ms=(time.perf_counter_ns() - t0) / 1e6)

    why = eng.unsupported(workload)
    if why:
        return dict(out, status="n/a", reason=why)

    w = dict(workload)
    if w.get("schema") is not None:
        # Every engine gets the schema as text, serialized outside the timing.
        w["schema_text"] = json.dumps(w["schema"])

    ranks = llama3_vocab.load_ranks(tokenizer_path)
    n_text = len(ranks)  # 128,000: the ids every engine treats as text

    def decode(tok):
        return ranks[tok].decode("utf-8", "backslashreplace") if tok < n_text else f"<special {tok}>"

    # GC pauses would land at random in someone's p99; keep them out.
    gc.collect()
    gc.disable()
    rss_before = current_rss_bytes()
    try:
        t0 = time.perf_counter_ns()
        try:
            compiled = eng.compile(w)
        except Exception as e:  # a peer refusing a grammar is a result, not a crash
            return dict(out, status="compile_error", reason=f"{type(e).__name__}: {e}")
        out["compile_ms"] = (time.perf_counter_ns() - t0) / 1e6

        mask, words = eng.new_bitmask()
        matcher = eng.new_matcher(compiled)
        cold = drive(eng, matcher, mask, words, token_ids, decode, n_text)
        warm = []
        t_warm = time.monotonic()
        for k in range(warm_passes):
            if k and time.monotonic() - t_warm > warm_budget_s:
                break
            matcher = eng.new_matcher(compiled, previous=matcher)
            warm.append(drive(eng, matcher, mask, words, token_ids, decode, n_text))
            check_warm_against_cold(cold, warm[-1])
    finally:
        gc.enable()

    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # whole process
    # Memory per compiled grammar, once its document's masks are done (its
    # lazily built parts included): what the engine counts, where it
    # counts (formcast, xgrammar), and for every engine how much the
    # process grew from before the compile (allocator caching included).
    if hasattr(eng, "grammar_bytes"):
        out["grammar_bytes"] = eng.grammar_bytes(compiled)
    if rss_before is not None:
        out["rss_growth_bytes"] = max(0, current_rss_bytes() - rss_before)
    failures = cold["failures"] + [f for p in warm for f in p["failures"]]
    if failures:
        f = failures[0]
        out["reason"] = f"{f['what']} at step {f['step']} of {len(token_ids)}"
    out.update(status="ok" if not failures else "incorrect", n_tokens=len(token_ids),
               cold=cold, warm=warm)
    return out
