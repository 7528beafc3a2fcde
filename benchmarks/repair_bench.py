"""Defensive parsing benchmark: how often each parser is right, flags its guess,
is silently wrong, or fails, on two corpora of malformed model output; and
formcast's overhead over ``json.loads`` on valid input (its fast path).

    bash benchmarks/repair_bench.sh      # peers (json-repair, dirtyjson) in a throwaway venv
    PYTHONPATH=python python benchmarks/repair_bench.py [--quick] [--cases] [--json out.json]

Corpora: ``shared/data/repair/malformed-llm-outputs.jsonl`` (34 cases, whole) and
formcast's own ``tests/data/repair/corpus.jsonl`` (written by
``tests/data/repair/make_corpus.py``: hand-written cases plus generated ones).
A case has one expected reading, or is *ambiguous* with a list of acceptable
readings. Each parser's result on each case is exactly one of:

* **right**: it returned the expected value (unambiguous case); or, on an
  ambiguous case, one of the acceptable readings *and* marked it as a guess.
* **flagged**: it returned something else but marked the result (formcast:
  ``report.guessed`` or ``report.truncated``; a caller can refuse it with
  ``guesses="reject"`` / ``allow_truncated=False``).
* **silently wrong**: it returned a value that is not right, with no mark: a
  different value on an unambiguous case, or any unmarked pick on an ambiguous
  one (the "ambiguous, unmarked" count says how many of those picks were one of
  the acceptable readings). Peers cannot mark a result, so every value of theirs
  that is not the expected one lands here.
* **error**: it raised (json-repair's empty-string answer for "nothing found"
  counts as an error too).

Timings are the minimum over interleaved rounds (the machine is shared), per call.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "repair" / "malformed-llm-outputs.jsonl"
OWN_CORPUS = ROOT / "tests" / "data" / "repair" / "corpus.jsonl"

try:
    import formcast.repair as fr
except ImportError:  # formcast/__init__ needs the Rust engine; the repair subpackage does not
    import importlib
    import importlib.util
    import types

    sys.path.insert(0, str(ROOT / "python"))
    _spec = importlib.util.find_spec("formcast")
    if _spec is None:
        raise SystemExit("formcast not importable: run with PYTHONPATH=python from the repo root") from None
    _stub = types.ModuleType("formcast")
    _stub.__path__ = list(_spec.submodule_search_locations)
    sys.modules["formcast"] = _stub
    fr = importlib.import_module("formcast.repair")


def naive_regex(s: str) -> Any:
    """The spec's two-stage example: strip fences, first '{' to last '}', drop trailing commas."""
    s = re.sub(r"```[a-zA-Z]*", "", s).replace("```", "")
    a, b = s.find("{"), s.rfind("}")
    if a < 0 or b <= a:
        raise ValueError("no object")
    return json.loads(re.sub(r",\s*([}\]])", r"\1", s[a : b + 1]))


def parsers() -> dict[str, tuple[Callable[[str], Any], str]]:
    out: dict[str, tuple[Callable[[str], Any], str]] = {"formcast.repair": (lambda s: fr.parse(s), "local")}
    try:
        import json_repair

        out["json-repair"] = (json_repair.loads, getattr(json_repair, "__version__", None) or _dist_version("json-repair"))
    except ImportError:
        print("note: json-repair not installed; skipped (benchmarks/repair_bench.sh installs it)", file=sys.stderr)
    try:
        import dirtyjson

        out["dirtyjson"] = (dirtyjson.loads, _dist_version("dirtyjson"))
    except ImportError:
        print("note: dirtyjson not installed; skipped (benchmarks/repair_bench.sh installs it)", file=sys.stderr)
    out["json (stdlib)"] = (json.loads, platform.python_version())
    out["naive regex (spec)"] = (naive_regex, "-")
    return out


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


def _plain(v: Any) -> Any:
    """dirtyjson returns AttributedDict/List subclasses; compare as plain values."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def load_corpus(path: Path) -> list[dict[str, Any]]:
    """Cases in one shape: ``readings`` (acceptable values) and ``ambiguous``."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            c = json.loads(line)
            c.setdefault("shape", c.get("category", ""))
            c["readings"] = c["readings"] if c["ambiguous"] and "readings" in c else [c["expected"]]
            cases.append(c)
    return cases


VERDICTS = ("right", "flagged", "silently wrong", "error")


def verdict(res: Any, marked: bool, case: dict[str, Any]) -> str:
    """One of VERDICTS for a returned value (see the module docstring)."""
    res = _plain(res)
    if not case["ambiguous"]:
        if res == case["readings"][0]:
            return "right"
    elif marked and res in case["readings"]:
        return "right"
    return "flagged" if marked else "silently wrong"


def score(name: str, fn: Callable[[str], Any], cases: list[dict[str, Any]]) -> dict[str, Any]:
    per_case: dict[int, tuple[str, str]] = {}
    unmarked_acceptable = 0
    needless_flags = 0
    for c in cases:
        try:
            res = fn(c["input"])
        except Exception as e:  # peers raise anything; all of it counts as a loud failure
            per_case[c["id"]] = ("error", type(e).__name__)
            continue
        marked = False
        if isinstance(res, fr.ParseResult):
            marked = res.report.guessed or res.report.truncated
            needless_flags += res.report.guessed and not c["ambiguous"] and _plain(res.data) == c["readings"][0]
            res = res.data
        elif name.startswith("json-repair") and res == "" and c["input"].strip() not in ('""', "''"):
            per_case[c["id"]] = ("error", "nothing found")
            continue
        v = verdict(res, marked, c)
        unmarked_acceptable += v == "silently wrong" and c["ambiguous"] and _plain(res) in c["readings"]
        per_case[c["id"]] = (v, json.dumps(_plain(res), ensure_ascii=False, default=str)[:60])
    counts = {v: sum(x[0] == v for x in per_case.values()) for v in VERDICTS}
    return {
        "name": name,
        "total": len(cases),
        **counts,
        "ambiguous_unmarked": unmarked_acceptable,
        "needless_flags": needless_flags,
        "cases": per_case,
    }


def _time_corpus(fn: Callable[[str], Any], inputs: list[str], loops: int) -> float:
    t0 = time.perf_counter()
    for _ in range(loops):
        for s in inputs:
            try:
                fn(s)
            except Exception:
                pass
    return (time.perf_counter() - t0) / (loops * len(inputs))


def speed_corpus(ps: dict[str, tuple[Callable[[str], Any], str]], cases: list[dict[str, Any]], rounds: int, loops: int) -> dict[str, float]:
    inputs = [c["input"] for c in cases]
    best = {name: float("inf") for name in ps}
    for _ in range(rounds):  # interleaved, so load on the shared machine hits everyone alike
        for name, (fn, _v) in ps.items():
            best[name] = min(best[name], _time_corpus(fn, inputs, loops))
    return best


def valid_documents(seed: int = 0) -> dict[str, str]:
    rnd = random.Random(seed)

    def record(i: int) -> dict[str, Any]:
        return {
            "id": i,
            "name": f"user {i}",
            "score": round(rnd.random(), 6),
            "active": rnd.random() < 0.5,
            "tags": rnd.sample(["alpha", "beta", "gamma", "delta", "eps"], 2),
            "bio": 'Loves hiking and \u00e9t\u00e9 "quotes"; ' * 2,
            "address": {"city": "Z\u00fcrich", "zip": f"{8000 + i}", "geo": [47.37, 8.54]},
        }

    corpus_valid = json.loads(CORPUS.read_text(encoding="utf-8").splitlines()[0])["input"] if CORPUS.exists() else '{"a": 1}'
    docs = {"corpus valid_control": corpus_valid}
    for n, label in ((1, "~300 B"), (4, "~1 KB"), (40, "~10 KB"), (400, "~100 KB")):
        docs[f"{label} ({n} records)"] = json.dumps({"results": [record(i) for i in range(n)], "total": n})
    return docs


def overhead(samples: int, sample_seconds: float) -> list[dict[str, Any]]:
    """Many short interleaved samples, minimum kept: on a shared machine the minimum of
    short samples is the run least disturbed by other work, for every contender alike."""
    rows = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for label, text in valid_documents().items():
            assert fr.parse(text).report.clean
            calls = {
                "json.loads": lambda t=text: json.loads(t),
                "fr.parse": lambda t=text: fr.parse(t),
                "fr.loads": lambda t=text: fr.loads(t),
                "fr.parse+report": lambda t=text: fr.parse(t).report,
            }
            t0 = time.perf_counter()
            for _ in range(10):
                json.loads(text)
            one = max((time.perf_counter() - t0) / 10, 1e-7)
            loops = max(3, int(sample_seconds / one))
            best = {k: float("inf") for k in calls}
            for _ in range(samples):
                for k, f in calls.items():
                    t0 = time.perf_counter()
                    for _ in range(loops):
                        f()
                    best[k] = min(best[k], (time.perf_counter() - t0) / loops)
            base = best["json.loads"]
            rows.append(
                {
                    "document": label,
                    "bytes": len(text.encode()),
                    "json.loads_us": base * 1e6,
                    "parse_us": best["fr.parse"] * 1e6,
                    "loads_us": best["fr.loads"] * 1e6,
                    "parse_overhead_pct": 100 * (best["fr.parse"] - base) / base,
                    "loads_overhead_pct": 100 * (best["fr.loads"] - base) / base,
                    "report_us": best["fr.parse+report"] * 1e6,
                    "report_overhead_pct": 100 * (best["fr.parse+report"] - base) / base,
                }
            )
    finally:
        if gc_was:
            gc.enable()
    return rows


def print_table(title: str, cases: list[dict[str, Any]], ps: dict[str, tuple[Callable[[str], Any], str]], rounds: int, loops: int, show_cases: bool) -> list[dict[str, Any]]:
    amb = sum(c["ambiguous"] for c in cases)
    print(f"# {title}: {len(cases)} cases ({len(cases) - amb} with one reading, {amb} ambiguous)")
    results = [score(name, fn, cases) for name, (fn, _v) in ps.items()]
    speeds = speed_corpus(ps, cases, rounds, loops)
    hdr = f"{'parser':<20} {'version':<9} {'right':>7} {'flagged':>8} {'silently wrong':>15} {'error':>6}   {'ambiguous, unmarked':>19} {'us/case':>9}"
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        name = r["name"]
        print(
            f"{name:<20} {ps[name][1]:<9} {r['right']:>7} {r['flagged']:>8} {r['silently wrong']:>15} {r['error']:>6}   {r['ambiguous_unmarked']:>19} {speeds[name] * 1e6:>9.1f}"
        )
        r["us_per_case"] = speeds[name] * 1e6
        r["version"] = ps[name][1]
    fc = results[0]
    print(f"formcast: {fc['needless_flags']} right answers on unambiguous cases carried a guess flag they did not need")
    if show_cases:
        print("\n# Per case")
        for c in cases:
            verdicts = "  ".join(f"{r['name'].split()[0]}={r['cases'][c['id']][0]}" for r in results)
            print(f"{c['id']:>3} {c['shape']:<26}{'(amb) ' if c['ambiguous'] else '      '}{verdicts}")
    print()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--cases", action="store_true", help="print the verdict of every parser on every case")
    args = ap.parse_args(argv)
    for path in (CORPUS, OWN_CORPUS):
        if not path.exists():
            print(f"corpus not found: {path}", file=sys.stderr)
            return 2
    ps = parsers()
    rounds, loops = (3, 2) if args.quick else (7, 5)
    samples, sample_seconds = (20, 0.002) if args.quick else (150, 0.002)

    print(f"# Python {platform.python_version()} on {platform.machine()}; timings: min of {rounds} interleaved rounds\n")
    shared = print_table(f"shared corpus {CORPUS.name}", load_corpus(CORPUS), ps, rounds, loops, args.cases)
    own = print_table(f"formcast corpus {OWN_CORPUS.relative_to(ROOT)}", load_corpus(OWN_CORPUS), ps, rounds, loops, args.cases)

    rows = overhead(samples, sample_seconds)
    print(f"# Valid input: formcast.repair fast path vs json.loads (same text; min of {samples} interleaved ~{sample_seconds * 1e3:.0f} ms samples)")
    print("# fr.parse+report also reads the report (its first read checks for duplicate keys, which json.loads collapses silently)")
    print(f"{'document':<26} {'bytes':>8} {'json.loads':>11} {'fr.parse':>10} {'overhead':>9} {'fr.loads':>10} {'overhead':>9} {'parse+report':>13} {'overhead':>9}")
    for row in rows:
        print(
            f"{row['document']:<26} {row['bytes']:>8} {row['json.loads_us']:>9.2f}us {row['parse_us']:>8.2f}us {row['parse_overhead_pct']:>+8.1f}%"
            f" {row['loads_us']:>8.2f}us {row['loads_overhead_pct']:>+8.1f}% {row['report_us']:>11.2f}us {row['report_overhead_pct']:>+8.1f}%"
        )
    med = statistics.median(r["parse_overhead_pct"] for r in rows[1:])
    print(f"\nmedian fr.parse overhead on documents of 300 B and up: {med:+.1f}% (target: under 10%)")
    if args.json:
        args.json.write_text(json.dumps({"shared_corpus": shared, "own_corpus": own, "valid_overhead": rows}, indent=2, ensure_ascii=False, default=str))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
