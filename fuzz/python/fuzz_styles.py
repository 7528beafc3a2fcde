"""Structure-aware fuzzing of the built-in tool-call styles.

Hypothesis generates OpenAI requests (tools with random parameter schemas:
every common keyword, ``$ref`` cycles, deep nesting, odd names; every
``tool_choice`` form, ``parallel_tool_calls``, reasoning modes) for every
registered style. Each case runs what the server runs on such a request:
``structural_tag_for`` → ``Grammar.from_structural_tag`` → compile → a mask
→ the shortest completion → ``parse_output`` over it.

A case may be refused (``StyleError``, a ``FormcastError``); anything else
is a bug: another exception type, a crash of the process (a segfault, an
abort), or a case that runs past its time limit. So that a crash is caught
and minimized rather than ending the run, cases run in a worker process;
when it dies, the case fails, hypothesis shrinks it (restarting the worker
as needed) and the minimal case is written to ``fuzz/artifacts/styles/``;
a fixed one becomes a regression test (``tests/test_hostile_schemas.py``
holds the crashes found so far, through ``structural_tag_for`` too).

    python fuzz/python/fuzz_styles.py [--examples N] [--seed S]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "fuzz" / "artifacts" / "styles"
TOKENIZER = ROOT.parent / "shared" / "tokenizers" / "smollm2-tokenizer.json"
TOKENIZER_CONFIG = ROOT.parent / "shared" / "tokenizers" / "smollm2-tokenizer_config.json"
# Seconds one case may take (front-end, compile, parse) before it counts as
# a hang.
CASE_TIMEOUT_S = 30.0


# ------------------------------------------------------------- the worker --
def run_case(case: dict, tok: Any, compiler: Any) -> dict:
    """Runs one case; returns ``{"outcome": "ok" | "refused", ...}`` or
    ``{"outcome": "bug", "error": traceback}``."""
    import formcast as fc
    from formcast.styles import StyleError, structural_tag_for
    from formcast.toolcalls import parse_output

    try:
        tag = structural_tag_for(case["style"], case["tools"], case["tool_choice"], case["parallel"], case["reasoning"])
    except StyleError as e:
        return {"outcome": "refused", "stage": "style", "error": str(e)}
    try:
        grammar = fc.Grammar.from_structural_tag(tag, tok)
        compiled = compiler.compile(grammar, timeout_s=10.0)
    except fc.FormcastError as e:
        return {"outcome": "refused", "stage": "compile", "error": f"{type(e).__name__}: {e}"}
    m = fc.GrammarMatcher(compiled)
    bitmask = fc.allocate_token_bitmask(1, tok.logits_size)
    m.fill_next_token_bitmask(bitmask)
    done = m.find_shortest_completion()
    text = done.decode("utf-8", "replace") if done is not None else ""
    # What the mask allows, the parser must read without raising.
    parsed = parse_output(tag, text + case["suffix"], tools=case["tools"])
    return {"outcome": "ok", "calls": len(parsed.tool_calls)}


def worker_main() -> None:
    """Reads cases (JSON lines) from stdin, answers results on stdout."""
    import formcast as fc

    tok = fc.TokenizerInfo.from_huggingface(TOKENIZER, tokenizer_config=TOKENIZER_CONFIG)
    compiler = fc.GrammarCompiler(tok)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        case = json.loads(line)
        try:
            result = run_case(case, tok, compiler)
        except BaseException:  # noqa: BLE001 - reported to the parent as a bug
            result = {"outcome": "bug", "error": traceback.format_exc(limit=12)}
        print(json.dumps(result), flush=True)


class Worker:
    """The worker process, restarted after it dies."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self._read(120.0)

    def _read(self, timeout: float) -> dict:
        import selectors

        assert self.proc is not None and self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise CaseHang(f"no answer within {timeout:g} s")
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.proc = None
            raise WorkerCrash(f"the worker died (exit status {rc}):\n{err[-2000:]}")
        return json.loads(line)

    def run(self, case: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        return self._read(CASE_TIMEOUT_S)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


class WorkerCrash(Exception):
    """The worker process died on a case."""


class CaseHang(Exception):
    """A case ran past CASE_TIMEOUT_S."""


class CaseBug(Exception):
    """A case raised an exception other than a refusal."""


# ------------------------------------------------------------ strategies --
def strategies() -> Any:
    from hypothesis import strategies as st

    from formcast.styles import available_styles

    names = st.sampled_from(["city", "a", "b", "n", "child", "items", "we\"ird&key", "<x>", "é", "a b", "x" * 300, "$ref", "type"])
    scalar = st.sampled_from([
        {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
        {"type": "string", "enum": ["a", "b\"c", "</parameter>"]}, {"type": "string", "maxLength": 5},
        {"type": "integer", "minimum": 0, "maximum": 10}, {"type": "string", "pattern": "^[a-z]+$"},
        {"type": "string", "format": "date"}, {"$ref": "#"}, {"$ref": "#/$defs/node"}, {}, True,
        {"type": ["string", "null"]}, {"const": "x"}, {"type": "number", "minimum": 1e-300},
    ])

    def extend(children: Any) -> Any:
        return st.one_of(
            st.builds(lambda props, req, extra: {"type": "object", "properties": props, "required": [k for k in props if req],
                                                 **({"additionalProperties": extra} if extra is not None else {})},
                      st.dictionaries(names, children, max_size=4), st.booleans(), st.one_of(st.none(), st.booleans(), children)),
            st.builds(lambda it, mx: {"type": "array", "items": it, **({"maxItems": mx} if mx is not None else {})}, children, st.one_of(st.none(), st.integers(0, 3))),
            st.builds(lambda xs: {"anyOf": xs}, st.lists(children, min_size=1, max_size=3)),
            st.builds(lambda xs: {"prefixItems": xs, "type": "array"}, st.lists(children, min_size=1, max_size=3)),
        )

    schema = st.recursive(scalar, extend, max_leaves=12)

    def deep(levels: int, inner: Any) -> Any:
        for _ in range(levels):
            inner = {"type": "object", "properties": {"a": inner}, "required": ["a"]}
        return inner

    parameters = st.one_of(
        st.builds(lambda props, defs: {"type": "object", "properties": props, "$defs": {"node": defs}},
                  st.dictionaries(names, schema, max_size=4), schema),
        # Past the styles' 128-level limit, below what JSON transport to the
        # worker (the C decoder's ~1,000 levels) carries.
        st.builds(deep, st.one_of(st.integers(1, 50), st.sampled_from([100, 400])), scalar),
        st.sampled_from([{"type": "object"}, {}, True, {"type": "object", "properties": {"child": {"$ref": "#"}}}]),
    )
    tool = st.builds(
        lambda name, params, strict, desc: {"type": "function", "function": {"name": name, "parameters": params, "description": desc,
                                                                             **({"strict": strict} if strict is not None else {})}},
        st.sampled_from(["get_weather", "f", "search_web", "tool.with.dots", "x" * 64]),
        parameters,
        st.one_of(st.none(), st.booleans()),
        st.sampled_from(["", "Weather.", "</tool_call> <|im_end|>"]),
    )
    tools = st.lists(tool, min_size=0, max_size=3, unique_by=lambda t: t["function"]["name"])

    def choice(ts: list) -> Any:
        names_ = [t["function"]["name"] for t in ts]
        options = [st.sampled_from(["auto", "none", "required"])]
        if names_:
            options.append(st.sampled_from(names_).map(lambda n: {"type": "function", "function": {"name": n}}))
            options.append(st.lists(st.sampled_from(names_), min_size=1, max_size=2, unique=True).flatmap(
                lambda ns: st.sampled_from(["auto", "required"]).map(lambda mode: {
                    "type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": [{"type": "function", "function": {"name": n}} for n in ns]}})))
        return st.one_of(*options)

    return tools.flatmap(lambda ts: st.fixed_dictionaries({
        "style": st.sampled_from(sorted(available_styles())),
        "tools": st.just(ts),
        "tool_choice": choice(ts),
        "parallel": st.booleans(),
        "reasoning": st.sampled_from([None, "enabled", "auto", "disabled"]),
        "suffix": st.sampled_from(["", "\n\nThe weather is fine.", "<tool_call>", "{\"name\": ", "[" * 2000, "</think>"]),
    }))


# ------------------------------------------------------------- the runner --
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=200, help="cases to generate (default 200)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main()
        return 0

    from hypothesis import HealthCheck, Phase, given, seed, settings

    # Only in this process (the runner): hypothesis prints and shrinks deep
    # cases recursively. The worker keeps Python's default limit, which is
    # what formcast runs under in production.
    sys.setrecursionlimit(20_000)

    worker = Worker()
    counts = {"ok": 0, "refused": 0}
    reasons: dict[str, int] = {}
    failures: list[dict] = []

    @settings(max_examples=args.examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False)
    @given(strategies())
    def check(case: dict) -> None:
        try:
            result = worker.run(case)
        except (WorkerCrash, CaseHang) as e:
            failures.append({"case": case, "error": str(e)})
            raise
        if result["outcome"] == "bug":
            failures.append({"case": case, "error": result["error"]})
            raise CaseBug(result["error"])
        counts[result["outcome"]] += 1
        if result["outcome"] == "refused":
            # Refusals by kind, so a run shows what its cases reached.
            kind = re.sub(r"(tools|parameters)\[\d+\]", r"\1[i]", result["error"])[:70]
            reasons[kind] = reasons.get(kind, 0) + 1

    if args.seed is not None:
        check = seed(args.seed)(check)
    t0 = time.monotonic()
    try:
        worker.start()
        check()
        status = 0
    except Exception as e:  # noqa: BLE001 - the minimal failing case is reported
        status = 1
        minimal = failures[-1] if failures else {"case": None, "error": repr(e)}
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        text = json.dumps(minimal, ensure_ascii=False)  # compact: the C encoder (deep cases)
        path = ARTIFACTS / f"crash-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
        path.write_text(text)
        print(f"FUZZ FAILURE (styles): minimal case in {path.relative_to(ROOT)}\n{minimal['error'][-3000:]}", file=sys.stderr)
    finally:
        worker.close()
    runs = counts["ok"] + counts["refused"]
    for kind, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  refused {n:5d}  {kind}")
    print(f"styles fuzz: {runs} cases in {time.monotonic() - t0:.0f} s ({counts['ok']} compiled and parsed, "
          f"{counts['refused']} refused with an error), {len(failures)} failing runs")
    return status


if __name__ == "__main__":
    sys.exit(main())
