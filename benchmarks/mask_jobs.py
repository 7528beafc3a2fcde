#!/usr/bin/env python3
"""Job files for the engine's masks example (crates/formcast-jsonschema/
examples/masks.rs), which times every cold mask of a document in Rust alone —
the profiling view behind the benchmarks' cold figures.

Writes OUT.json, a list of {name, schema_text | tag_text | builtin_json, ids}:
the same documents the benchmarks drive, tokenized with Llama-3.

  .bench-venv/bin/python benchmarks/mask_jobs.py OUT.json [--workloads]
      [--structural] [--maskbench DOCS.json --every N]

--workloads: W0..W5 (W0 as the built-in JSON grammar); --structural: the four
structural-tag workloads (their tags come from the project venv, as in
structural_bench.py); --maskbench: the documents maskbench_docs.py wrote.
Then, for example:
  cargo build --release -q -p formcast-jsonschema --example masks
  MIMALLOC_ALLOW_THP=0 MIMALLOC_PURGE_DELAY=-1 TOP=5 \\
      ./target/release/examples/masks OUT.json W2_medium_github_o8776
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import llama3_vocab  # noqa: E402
import structural_bench  # noqa: E402
import workloads as wl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--workloads", action="store_true")
    ap.add_argument("--structural", action="store_true")
    ap.add_argument("--maskbench", metavar="DOCS.json")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--formcast-python", default=os.path.join(ROOT, ".venv/bin/python"))
    args = ap.parse_args()
    enc = llama3_vocab.tiktoken_encoding()

    def ids(doc: str) -> list[int]:
        toks = enc.encode(doc, disallowed_special=())
        assert enc.decode(toks) == doc, "tokenization does not round-trip"
        return toks

    jobs = []
    if args.workloads:
        for w in wl.load_shared_workloads():
            job = dict(name=w["name"], ids=ids(w["doc"]))
            if w["kind"] == "generic_json":
                job["builtin_json"] = True
            else:
                job["schema_text"] = json.dumps(w["schema"])
            jobs.append(job)
    if args.structural:
        tags = json.loads(subprocess.run([args.formcast_python, structural_bench.__file__, "--emit-tags"],
                                         check=True, capture_output=True, text=True).stdout)
        for w in structural_bench.workloads(tags):
            jobs.append(dict(name=w["name"], tag_text=w["tag_text"], ids=ids(w["doc"])))
    if args.maskbench:
        for d in json.load(open(args.maskbench))[:: args.every]:
            jobs.append(dict(name=d["name"], schema_text=d["schema_text"], ids=ids(d["doc"])))
    with open(args.out, "w") as f:
        json.dump(jobs, f)
    print(f"{len(jobs)} jobs, {sum(len(j['ids']) for j in jobs)} tokens -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
