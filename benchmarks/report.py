"""Turning worker results into tables, ratios and the JSON record."""


def percentile(sorted_vals, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_vals:
        return None
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def mask_stats(samples_ns):
    """p50/p99/max/mean in µs."""
    if not samples_ns:
        return None
    s = sorted(samples_ns)
    us = lambda ns: round(ns / 1000, 2)  # noqa: E731
    return dict(n=len(s), p50=us(percentile(s, 0.5)), p99=us(percentile(s, 0.99)),
                max=us(s[-1]), mean=us(sum(s) / len(s)))


def per_step_min(passes):
    """With several warm passes, keep each step's fastest time: the passes do
    identical work, so the spread is other processes preempting us (this is
    a shared 2-core machine), not the engine."""
    if not passes:
        return []
    n = min(len(p["mask_ns"]) for p in passes)
    return [min(p["mask_ns"][i] for p in passes) for i in range(n)]


def median(vals):
    s = sorted(vals)
    return percentile(s, 0.5)


def merge_rounds(runs):
    """One engine's results on one workload over several rounds (fresh
    processes): compile time, time to first mask and each cold step's mask
    time are the medians over the rounds, so that a stall of the shared
    machine, which lands in one round, does not become a step's time (a
    single cold pass made a step's time, and so a maximum, one sample).
    Warm passes and memory are the first round's. The rounds' masks must
    agree step for step; a failed round is the result."""
    first = runs[0]
    if len(runs) == 1 or any(r["status"] != "ok" for r in runs):
        return dict(next((r for r in runs if r["status"] != "ok"), first), rounds=len(runs))
    out = dict(first, rounds=len(runs))
    out["compile_ms_rounds"] = [r["compile_ms"] for r in runs]
    out["compile_ms"] = median(out["compile_ms_rounds"])
    out["first_mask_ms"] = median([r["compile_ms"] + r["cold"]["mask_ns"][0] / 1e6 for r in runs])
    out["tokenizer_ms"] = median([r["tokenizer_ms"] for r in runs])
    out["peak_rss_mb"] = max(r.get("peak_rss_mb", 0) for r in runs)
    out["wall_s"] = round(sum(r.get("wall_s", 0) for r in runs), 2)
    n = len(first["cold"]["mask_ns"])
    cold = dict(first["cold"])
    cold["mask_ns_rounds"] = [r["cold"]["mask_ns"] for r in runs]
    cold["mask_ns"] = [median([r["cold"]["mask_ns"][i] for r in runs]) for i in range(n)]
    out["cold"] = cold
    for k, r in enumerate(runs[1:], 2):
        differ = next((i for i, (a, b) in enumerate(zip(first["cold"]["digests"], r["cold"]["digests"])) if a != b), None)
        if differ is not None or len(r["cold"]["digests"]) != n:
            out["status"] = "incorrect"
            out["reason"] = f"round {k}'s cold mask differs from round 1's at step {differ}"
            break
    return out


def with_stats(r):
    """The result with cold/warm summaries added (raw samples kept)."""
    r = dict(r)
    if "cold" in r:
        # Time to first mask: what a request waits for before its first
        # token; it puts lazy (tiny compile, slow first masks) and eager
        # designs on one scale.
        if "first_mask_ms" not in r:  # (a merge of rounds gives its median)
            r["first_mask_ms"] = r["compile_ms"] + r["cold"]["mask_ns"][0] / 1e6
        r["cold_stats"] = mask_stats(r["cold"]["mask_ns"])
        r["warm_stats"] = mask_stats(per_step_min(r["warm"]))
    return r


def agreement(results):
    """How often engines computed the very same mask (over the 128,000 text
    tokens) at the same step of the cold pass. The reference is formcast when
    it ran, else the first engine that did. Grammars that are equivalent give
    equal masks except where the peers' grammars differ on purpose (e.g.
    whitespace rules of the built-in JSON grammars)."""
    measured = [r for r in results if r.get("cold")]
    if len(measured) < 2:
        return None
    ref = next((r for r in measured if r["engine"] == "formcast"), measured[0])
    cells = []
    for r in measured:
        if r is ref:
            continue
        a, b = ref["cold"]["digests"], r["cold"]["digests"]
        n = min(len(a), len(b))
        same = sum(a[i] == b[i] for i in range(n))
        cell = f"{r['engine']} {same}/{n}"
        diff = next((i for i in range(n) if a[i] != b[i]), None)
        if diff is not None:
            cell += (f" (first diff: step {diff}, {ref['cold']['allowed'][diff]} vs "
                     f"{r['cold']['allowed'][diff]} allowed)")
        cells.append(cell)
    return f"identical masks per step vs {ref['engine']} (cold, text tokens): " + "; ".join(cells)


def _fmt(x, width=9):
    if x is None:
        return "—".rjust(width)
    if x >= 100:
        return f"{x:,.0f}".rjust(width)
    return f"{x:.1f}".rjust(width) if x >= 10 else f"{x:.2f}".rjust(width)


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return "—".rjust(9)
    return f"{a / b:.2f}".rjust(9)


def workload_table(workload, n_tokens, results):
    rs = [with_stats(r) for r in results]
    rounds = max((r.get("rounds", 1) for r in rs), default=1)
    lines = [
        "",
        f"== {workload['name']}  ({workload['kind']}, {n_tokens} doc tokens; "
        f"ms: compile, 1st mask = compile + first mask; µs: masks"
        + (f"; compile, 1st mask and each cold step: median of {rounds} rounds" if rounds > 1 else "")
        + ") ==",
        f"{'engine':<14}{'compile ms':>11}{'1st mask':>9}{'cold p50':>9}{'p99':>9}{'max':>9}"
        f"{'warm p50':>10}{'p99':>9}{'max':>9}  status",
    ]
    for r in rs:
        cold, warm = r.get("cold_stats") or {}, r.get("warm_stats") or {}
        status = r["status"]
        if r.get("reason"):
            status += f": {r['reason']}"
        lines.append(
            f"{r['engine']:<14}{_fmt(r.get('compile_ms'), 11)}{_fmt(r.get('first_mask_ms'))}"
            f"{_fmt(cold.get('p50'))}{_fmt(cold.get('p99'))}{_fmt(cold.get('max'))}"
            f" {_fmt(warm.get('p50'))}{_fmt(warm.get('p99'))}{_fmt(warm.get('max'))}  {status}"
        )
        for p_name, p in [("cold", r.get("cold"))] + [("warm", w) for w in r.get("warm", [])]:
            for f in (p or {}).get("failures", []):
                where = f"token {f['token']} {f['text']!r}, " if "token" in f else ""
                lines.append(f"    !! {r['engine']} {p_name} pass, step {f.get('step')}: {f['what']}"
                             f" ({where}{f.get('allowed', '?')} allowed"
                             f"{', ' + f['error'] if f.get('error') else ''})")

    agree = agreement(rs)
    if agree:
        lines.append(agree)
    mem = [(r["engine"], r.get("grammar_bytes"), r.get("rss_growth_bytes")) for r in rs
           if r.get("grammar_bytes") is not None or r.get("rss_growth_bytes") is not None]
    if mem:
        def kib(b):
            return "—" if b is None else f"{b / 1024:,.0f} KiB"
        lines.append("memory per compiled grammar after its document (engine's count / process growth): "
                     + "; ".join(f"{e} {kib(g)} / {kib(rss)}" for e, g, rss in mem)
                     + ("  [formcast's growth includes its touched heap reserve, 32 MiB once per process]"
                        if any(e == "formcast" for e, _, _ in mem) else ""))

    fc = next((r for r in rs if r["engine"] == "formcast" and r["status"] in ("ok", "incorrect")), None)
    peers = [r for r in rs if r["engine"] != "formcast"]
    if peers and any(r["engine"] == "formcast" for r in rs):
        # Cold ratios too: a warm pass replays the very same document, which
        # flatters engines that memoize masks per state.
        lines.append(f"formcast ÷ peer (< 1: formcast faster){'compile':>10}{'1st mask':>10}{'warm p50':>10}"
                     f"{'warm p99':>10}{'cold p50':>10}{'cold p99':>10}{'cold max':>10}")
        for r in peers:
            if fc is None or r["status"] not in ("ok", "incorrect"):
                cells = ["—".rjust(9)] * 7
            else:
                fw, pw = fc["warm_stats"] or {}, r["warm_stats"] or {}
                fcold, pcold = fc["cold_stats"] or {}, r["cold_stats"] or {}
                cells = [_ratio(fc.get("compile_ms"), r.get("compile_ms")),
                         _ratio(fc.get("first_mask_ms"), r.get("first_mask_ms")),
                         _ratio(fw.get("p50"), pw.get("p50")),
                         _ratio(fw.get("p99"), pw.get("p99")),
                         _ratio(fcold.get("p50"), pcold.get("p50")),
                         _ratio(fcold.get("p99"), pcold.get("p99")),
                         _ratio(fcold.get("max"), pcold.get("max"))]
            lines.append(f"  vs {r['engine']:<34}" + " ".join(cells))
    return "\n".join(lines)


def summary(results):
    """Anything that is not a clean measurement, listed once at the end."""
    bad = [r for r in results if r["status"] != "ok"]
    lines = ["", "== summary =="]
    ok = sum(r["status"] == "ok" for r in results)
    lines.append(f"{ok} of {len(results)} engine×workload runs measured cleanly")
    for r in bad:
        loud = "!! " if r["status"] in ("incorrect", "crash", "error") else "   "
        lines.append(f"{loud}{r['workload']:<28} {r['engine']:<14} {r['status']}"
                     f"{': ' + r['reason'] if r.get('reason') else ''}")
    return "\n".join(lines)
