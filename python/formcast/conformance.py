"""Conformance of :meth:`formcast.Grammar.from_json_schema`.

Every schema of a corpus is compiled; every instance is fed to a matcher and
must be accepted exactly when it is valid::

    python -m formcast.conformance json-schema-test-suite [DIR] [-v]
    python -m formcast.conformance maskbench [DIR] [-v]

Corpora: the official JSON-Schema-Test-Suite (draft 2020-12, required and
optional files) and maskbench-dev (real-world schemas with valid and invalid
instances).

How an instance is fed. The grammar accepts a JSON *value* if it accepts
some serialization of it, so the instance is written in compact JSON with
strings as ``json.dumps(ensure_ascii=False)`` writes them and numbers in
plain decimal (``1.0`` is ``1``, ``1e-7`` is ``0.0000001``; numbers are read
as exact decimals, never floats), and object keys are tried in every order
the matcher allows (depth first, with rollback). When that search gets too
long, a *committed* search follows where a nested value, once complete, is
not re-entered in another key order (a rejection then assumes a completed
value's internal key order does not change what may follow, true of the
grammars formcast generates); then a *pruned* search, where a key whose
value was rejected once in an object is not retried at other positions of
that object, and a path is abandoned once a key that was acceptable earlier
is not anymore (skipped for good, as in schema-ordered objects). An
acceptance found by any stage is real; the counts of instances decided by
the second and third stages are reported.

Outcomes per case: *right*; *refused* (the schema does not compile: a
keyword that cannot be enforced exactly, a remote ``$ref``...; never a wrong
answer); *wrong* (a valid instance rejected, or an invalid one accepted). A
schema that matches nothing (``false``) compiles to "unsatisfiable", which
rejects every instance.

Settings: compact whitespace, ``strict=False`` (JSON Schema's own defaults
for ``additionalProperties``), formats asserted except in the suite's
required ``format.json`` (2020-12 makes ``format`` an annotation by default;
the ``optional/format`` files assert it).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import decimal
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .compiler import GrammarCompiler
from .grammar import Grammar
from .tokenizer import TokenizerInfo
from . import _engine

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SUITE_DIR = SHARED / "json-schema-test-suite" / "tests" / "draft2020-12"
MASKBENCH_DIR = SHARED / "maskbench-dev"

#: Matcher steps of the exhaustive key-order search before falling back to
#: the committed search.
MAX_STEPS = 20_000


# ----------------------------------------------------------- JSON text --


def load_exact(path: Path) -> Any:
    """JSON with numbers as exact decimals (floats would round bounds like
    972783798187987123879878123.18878137)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f, parse_float=decimal.Decimal)


def number_text(x: int | float | decimal.Decimal) -> str:
    """Plain decimal text: no exponent, no trailing fractional zeros."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        return str(x)
    d = x if isinstance(x, decimal.Decimal) else decimal.Decimal(repr(x))
    if d == d.to_integral_value():
        return str(int(d))
    text = format(d.normalize(), "f")
    return text


def to_json(v: Any) -> str:
    """Compact JSON text, keys in stored order, numbers exact."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float, decimal.Decimal)):
        return number_text(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(to_json(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + to_json(x) for k, x in v.items()) + "}"
    raise TypeError(f"not JSON: {type(v).__name__}")


# --------------------------------------------------------------- feeding --


class _Feeder:
    """Feeds a value to a matcher, searching key orders with rollback."""

    def __init__(self, matcher: Any, max_steps: int, committed: bool, pruned: bool = False) -> None:
        self.m = matcher
        self.steps = 0
        self.max_steps = max_steps
        self.committed = committed
        self.pruned = pruned
        # (id of the object, key) whose value was rejected once (pruned search).
        self.failed: set[tuple[int, str]] = set()

    def accept(self, text: str) -> bool:
        self.steps += 1
        return self.m.accept_string(text)

    def feed(self, v: Any, k: Callable[[], bool]) -> bool:
        if self.steps > self.max_steps:
            return False
        if self.committed and isinstance(v, (dict, list)):
            before = self.m.num_rollbackable
            if not self._feed(v, lambda: True):
                return False
            if k():
                return True
            self.m.rollback(self.m.num_rollbackable - before)
            return False
        return self._feed(v, k)

    def _feed(self, v: Any, k: Callable[[], bool]) -> bool:
        if isinstance(v, list):
            if not self.accept("["):
                return False
            if self._items(v, 0, k):
                return True
            self.m.rollback(1)
            return False
        if isinstance(v, dict):
            if not self.accept("{"):
                return False
            if self._members(v, list(v), True, k):
                return True
            self.m.rollback(1)
            return False
        if not self.accept(to_json(v)):
            return False
        if k():
            return True
        self.m.rollback(1)
        return False

    def _items(self, items: list, i: int, k: Callable[[], bool]) -> bool:
        if i == len(items):
            if not self.accept("]"):
                return False
            if k():
                return True
            self.m.rollback(1)
            return False
        if i > 0 and not self.accept(","):
            return False
        if self.feed(items[i], lambda: self._items(items, i + 1, k)):
            return True
        if i > 0:
            self.m.rollback(1)
        return False

    def _members(self, obj: dict, left: list, first: bool, k: Callable[[], bool], seen: frozenset = frozenset()) -> bool:
        # Pruned search: a key acceptable earlier on this path and no longer
        # now was skipped for good (as in every schema-ordered object).
        if self.pruned and left:
            acceptable = set()
            for key in left:
                self.steps += 1
                if self.m.accept_string(("" if first else ",") + json.dumps(key, ensure_ascii=False) + ":"):
                    self.m.rollback(1)
                    acceptable.add(key)
            if any(key in seen and key not in acceptable for key in left):
                return False
            seen = seen | acceptable
        if not left:
            if not self.accept("}"):
                return False
            if k():
                return True
            self.m.rollback(1)
            return False
        for pos, key in enumerate(left):
            if self.steps > self.max_steps:
                return False
            if self.pruned and (id(obj), key) in self.failed:
                continue
            head = ("" if first else ",") + json.dumps(key, ensure_ascii=False) + ":"
            if not self.accept(head):
                continue
            rest = left[:pos] + left[pos + 1 :]
            done = []

            def cont(rest=rest, seen=seen):
                done.append(True)
                return self._members(obj, rest, False, k, seen)

            if self.feed(obj[key], cont):
                return True
            if not done and self.steps <= self.max_steps:
                self.failed.add((id(obj), key))
            self.m.rollback(1)
        return False


#: Search stages: exhaustive, committed, pruned (see the module docstring).
STAGES = ((False, False, MAX_STEPS), (True, False, 5 * MAX_STEPS), (True, True, 10 * MAX_STEPS))


def accepts(compiled: Any, value: Any) -> tuple[bool | None, int]:
    """Whether the grammar accepts ``value`` in some key order, and the
    search stage that decided (0 exhaustive, 1 committed, 2 pruned).
    ``None``: undecided (every budget spent)."""
    for stage, (committed, pruned, budget) in enumerate(STAGES):
        m = _engine.GrammarMatcher(compiled)
        f = _Feeder(m, budget, committed=committed, pruned=pruned)
        ok = f.feed(value, m.can_terminate)
        if ok or f.steps <= budget:
            return ok, stage
    return None, len(STAGES) - 1


# ------------------------------------------------------------- running --


@dataclasses.dataclass
class Tally:
    right: int = 0
    refused: int = 0
    valid_rejected: int = 0
    invalid_accepted: int = 0
    undecided: int = 0
    committed: int = 0
    pruned: int = 0
    schemas: int = 0
    compiled: int = 0

    @property
    def wrong(self) -> int:
        return self.valid_rejected + self.invalid_accepted

    @property
    def cases(self) -> int:
        return self.right + self.refused + self.wrong + self.undecided

    def add(self, other: "Tally") -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclasses.dataclass
class Report:
    files: dict[str, Tally]
    totals: dict[str, Tally]
    reasons: collections.Counter
    wrong: list[str]

    def print(self, out=sys.stdout, per_file: bool = True) -> None:
        if per_file:
            for name, t in self.files.items():
                print(
                    f"{name:<46} right {t.right:>4}  refused {t.refused:>4}  wrong {t.wrong:>3} "
                    f"(valid rejected {t.valid_rejected}, invalid accepted {t.invalid_accepted})",
                    file=out,
                )
        print("\nrefusal reasons (cases):", file=out)
        for reason, n in self.reasons.most_common(25):
            print(f"  {n:>5}  {reason}", file=out)
        for w in self.wrong:
            print("WRONG", w, file=out)
        for cat, t in self.totals.items():
            pct = 100.0 * t.right / max(t.cases, 1)
            print(
                f"TOTAL {cat}: cases {t.cases}, right {t.right} ({pct:.1f}%), refused {t.refused}, "
                f"valid rejected {t.valid_rejected}, invalid accepted {t.invalid_accepted}, undecided {t.undecided}, "
                f"decided by committed / pruned search {t.committed} / {t.pruned}; schemas {t.schemas}, compiled {t.compiled}",
                file=out,
            )


def _reason(e: Exception) -> str:
    msg = str(e)
    if "unresolvable reference" in msg:
        return "unresolvable $ref (remote or meta-schema)"
    if msg.startswith("unsupported keyword"):
        kw = msg.split("'")[1]
        tail = msg.split(": ", 1)[-1]
        return f"unsupported '{kw}': {tail[:70]}"
    return msg[:90]


def _byte_compiler() -> GrammarCompiler:
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    tok = TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256])
    return GrammarCompiler(tok, cache_limit_bytes=64 << 20)


#: Python frames the key-order search may use (continuations nest one
#: level per array item and object member), and the stack of the thread it
#: runs on: raising the limit on the default 8 MiB stack could crash the
#: process instead of raising RecursionError.
_SEARCH_RECURSION_LIMIT = 50_000
_SEARCH_STACK_BYTES = 512 << 20


def _on_big_stack(fn: Callable[[], Any]) -> Any:
    """Runs ``fn`` on a thread with a large stack and a raised recursion
    limit, both restored afterwards."""
    result: list[Any] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(fn())
        except BaseException as e:  # re-raised in the caller
            error.append(e)

    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    try:
        threading.stack_size(_SEARCH_STACK_BYTES)
        t = threading.Thread(target=target, name="formcast-conformance")
        threading.stack_size(old_stack)
        sys.setrecursionlimit(max(old_limit, _SEARCH_RECURSION_LIMIT))
        t.start()
        t.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


def run_groups(
    groups: Iterable[tuple[str, str, Any, list[tuple[Any, bool, str]], dict]],
    *,
    category: Callable[[str], str],
    verbose: bool = False,
    compile_timeout_s: float = 30.0,
    time_budget_ms: int = 10_000,
) -> Report:
    """Runs ``(file, description, schema, [(data, valid, description)], options)``
    groups. The search runs on a thread of its own (see :func:`_on_big_stack`)."""
    return _on_big_stack(
        lambda: _run_groups(groups, category=category, verbose=verbose, compile_timeout_s=compile_timeout_s, time_budget_ms=time_budget_ms)
    )


def _run_groups(
    groups: Iterable[tuple[str, str, Any, list[tuple[Any, bool, str]], dict]],
    *,
    category: Callable[[str], str],
    verbose: bool = False,
    compile_timeout_s: float = 30.0,
    time_budget_ms: int = 10_000,
) -> Report:
    """Runs ``(file, description, schema, [(data, valid, description)], options)``
    groups."""
    compiler = _byte_compiler()
    files: dict[str, Tally] = {}
    totals: dict[str, Tally] = {}
    reasons: collections.Counter = collections.Counter()
    wrong: list[str] = []
    for fname, desc, schema, tests, options in groups:
        t = files.setdefault(fname, Tally())
        t.schemas += 1
        try:
            grammar = Grammar.from_json_schema(
                to_json(schema), whitespace="compact", strict=False, time_budget_ms=time_budget_ms, **options
            )
            compiled = compiler.compile(grammar, timeout_s=compile_timeout_s)
        except Exception as e:  # noqa: BLE001 - every refusal is tallied
            if "unsatisfiable" in str(e):
                t.compiled += 1
                for data, valid, tdesc in tests:
                    if valid:
                        t.valid_rejected += 1
                        wrong.append(f"(valid rejected, unsatisfiable) {fname} :: {desc} :: {tdesc}")
                    else:
                        t.right += 1
                continue
            reasons[_reason(e)] += len(tests)
            t.refused += len(tests)
            if verbose:
                print(f"REFUSED {fname} :: {desc} :: {e}")
            continue
        t.compiled += 1
        for data, valid, tdesc in tests:
            got, stage = accepts(compiled, data)
            t.committed += stage == 1
            t.pruned += stage == 2
            if got is None:
                t.undecided += 1
                if verbose:
                    print(f"UNDECIDED {fname} :: {desc} :: {tdesc}")
            elif got == valid:
                t.right += 1
            else:
                if valid:
                    t.valid_rejected += 1
                else:
                    t.invalid_accepted += 1
                what = "invalid accepted" if got else "valid rejected"
                wrong.append(f"({what}) {fname} :: {desc} :: {tdesc} :: {to_json(data)[:200]}")
    for fname, t in files.items():
        totals.setdefault(category(fname), Tally()).add(t)
    return Report(files=files, totals=totals, reasons=reasons, wrong=wrong)


def suite_groups(root: Path = SUITE_DIR, *, only: Iterable[str] | None = None) -> Iterator[tuple]:
    """Groups of the JSON-Schema-Test-Suite (relative file names)."""
    only = set(only) if only is not None else None
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root).as_posix()
        if only is not None and rel not in only:
            continue
        # The required format.json checks that format is an annotation; the
        # optional/format files check assertion.
        formats = "assert" if rel.startswith("optional/format/") else "annotate"
        for g in load_exact(path):
            tests = [(t["data"], bool(t["valid"]), t["description"]) for t in g["tests"]]
            yield rel, g["description"], g["schema"], tests, {"formats": formats}


def maskbench_groups(root: Path = MASKBENCH_DIR, *, every: int = 1) -> Iterator[tuple]:
    """Schemas of maskbench-dev (every ``every``-th file)."""
    for i, path in enumerate(sorted(root.glob("*.json"))):
        if i % every:
            continue
        d = load_exact(path)
        tests = [(t["data"], bool(t["valid"]), t.get("description", "")) for t in d.get("tests", [])]
        yield path.name, path.name, d["schema"], tests, {"formats": "assert"}


def run_suite(root: Path = SUITE_DIR, verbose: bool = False) -> Report:
    return run_groups(
        suite_groups(root),
        category=lambda f: "optional" if f.startswith("optional/") else "required",
        verbose=verbose,
    )


def run_maskbench(root: Path = MASKBENCH_DIR, verbose: bool = False, every: int = 1, **kw) -> Report:
    return run_groups(maskbench_groups(root, every=every), category=lambda f: "maskbench", verbose=verbose, **kw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m formcast.conformance", description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", choices=["json-schema-test-suite", "maskbench"])
    ap.add_argument("dir", nargs="?", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every refusal")
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.corpus == "json-schema-test-suite":
        report = run_suite(args.dir or SUITE_DIR, verbose=args.verbose)
        report.print()
    else:
        report = run_maskbench(args.dir or MASKBENCH_DIR, verbose=args.verbose)
        report.print(per_file=False)
    print(f"({time.time() - t0:.1f} s)")
    return 1 if any(t.wrong for t in report.totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
