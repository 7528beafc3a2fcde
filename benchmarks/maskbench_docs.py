#!/usr/bin/env python3
"""Documents for the maskbench-dev benchmark, prepared once under the
project's venv (formcast needed): for every schema, its first valid instance
written as JSON text that formcast's grammar accepts — compact, numbers in
plain decimal, object keys in an order the grammar allows (found by the
conformance runner's key-order search). When formcast refuses the schema,
the instance in its own key order. Every engine is then driven with the
same text (see maskbench_bench.py).

Usage: .venv/bin/python benchmarks/maskbench_docs.py OUT.json [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from formcast import conformance
from formcast.grammar import Grammar


class _Recorder:
    """A matcher proxy that keeps the accepted strings, so the search's
    successful path can be read back as text."""

    def __init__(self, m):
        self.m = m
        self.parts: list[str] = []

    def accept_string(self, s: str) -> bool:
        ok = self.m.accept_string(s)
        if ok:
            self.parts.append(s)
        return ok

    def rollback(self, n: int) -> None:
        self.m.rollback(n)
        del self.parts[len(self.parts) - n :]

    @property
    def num_rollbackable(self) -> int:
        return self.m.num_rollbackable

    def can_terminate(self) -> bool:
        return self.m.can_terminate()


def accepted_text(compiled, value) -> str | None:
    for committed, pruned, budget in conformance.STAGES:
        rec = _Recorder(conformance._engine.GrammarMatcher(compiled))
        f = conformance._Feeder(rec, budget, committed=committed, pruned=pruned)
        if f.feed(value, rec.can_terminate):
            return "".join(rec.parts)
        if f.steps <= budget:
            return None
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--dir", type=Path, default=conformance.MASKBENCH_DIR)
    args = ap.parse_args()
    compiler = conformance._byte_compiler()
    docs = []
    for path in sorted(args.dir.glob("*.json")):
        d = conformance.load_exact(path)
        valid = [t["data"] for t in d.get("tests", []) if t.get("valid")]
        if not valid:
            continue
        schema_text = conformance.to_json(d["schema"])
        text = None
        try:
            g = Grammar.from_json_schema(schema_text, strict=False, time_budget_ms=5000)
            text = accepted_text(compiler.compile(g, timeout_s=10), valid[0])
        except Exception:  # noqa: BLE001 - refused schemas keep the instance's own order
            pass
        docs.append(dict(name=path.stem, schema_text=schema_text, doc=text or conformance.to_json(valid[0]),
                         formcast_accepts=text is not None))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(docs))
    print(f"{len(docs)} documents ({sum(d['formcast_accepts'] for d in docs)} in a form formcast accepts) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
