"""What each engine's structured-output backend does with JSON-Schema keywords.

For every case, a schema, a document it allows and one it forbids (that
keyword is the only reason) are run through:

- **SGLang's default**: SGLang's own ``validate_xgrammar_json_schema`` (it
  refuses keywords xgrammar would drop), then xgrammar;
- **vLLM's xgrammar**: vLLM's own ``has_xgrammar_unsupported_json_features``
  (under ``backend="auto"`` such a schema goes to llguidance; with
  ``backend="xgrammar"`` it is refused), then xgrammar;
- **llguidance**: vLLM's ``auto`` fallback;
- **formcast**.

Each engine gets the document's tokens one by one (SmolLM2 vocabulary), then
EOS. A cell reads ``exact`` (the allowed document passes and the forbidden one
is stopped), ``refused`` (the schema is rejected with an error), ``drops``
(the forbidden document gets through: the keyword was silently ignored) or
``wrong`` (the allowed document is stopped).

Run in the engines environment::

    .engines-venv/bin/python benchmarks/engine_backends.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Callable, Optional

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "tokenizers"
EOS = 2

# (keyword, schema, allowed document, forbidden document)
CASES = [
    ("multipleOf", {"type": "integer", "multipleOf": 5}, "15", "16"),
    ("uniqueItems", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "[1, 2]", "[1, 1]"),
    ("contains", {"type": "array", "items": {"type": "integer"}, "contains": {"const": 3}}, "[1, 3]", "[1, 2]"),
    ("minContains", {"type": "array", "items": {"type": "integer"}, "contains": {"const": 3}, "minContains": 2}, "[3, 3]", "[3, 1]"),
    ("not", {"type": "integer", "not": {"const": 0}}, "1", "0"),
    ("if / then / else", {"type": "object", "properties": {"k": {"enum": ["a", "b"]}, "v": {}}, "required": ["k", "v"], "if": {"properties": {"k": {"const": "a"}}}, "then": {"properties": {"v": {"type": "integer"}}}, "else": {"properties": {"v": {"type": "string"}}}}, '{"k": "a", "v": 1}', '{"k": "a", "v": "x"}'),
    ("dependentRequired", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "dependentRequired": {"a": ["b"]}}, '{"a": 1, "b": 2}', '{"a": 1}'),
    ("pattern + minLength", {"type": "string", "pattern": "^[a-z]+$", "minLength": 3}, '"abc"', '"ab"'),
    ("format: email", {"type": "string", "format": "email"}, '"ada@example.com"', '"not an email"'),
    ("format: ipv4", {"type": "string", "format": "ipv4"}, '"10.0.0.1"', '"10.0.0.300"'),
    ("format: date-time", {"type": "string", "format": "date-time"}, '"2026-11-26T10:00:00Z"', '"yesterday"'),
    ("minProperties", {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2}, '{"a": 1, "b": 2}', '{"a": 1}'),
    ("propertyNames", {"type": "object", "propertyNames": {"pattern": "^x"}, "additionalProperties": {"type": "integer"}}, '{"xa": 1}', '{"a": 1}'),
    ("exclusiveMinimum", {"type": "number", "exclusiveMinimum": 0}, "0.5", "0"),
    ("patternProperties", {"type": "object", "patternProperties": {"^n_": {"type": "integer"}}, "additionalProperties": False}, '{"n_a": 1}', '{"n_a": "x"}'),
    ("unevaluatedProperties", {"type": "object", "properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False}, '{"a": 1}', '{"a": 1, "b": 2}'),
    ("prefixItems + items: false", {"type": "array", "prefixItems": [{"type": "integer"}], "items": False}, "[1]", "[1, 2]"),
    ("oneOf (exclusive)", {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 10}]}, "20", "5"),
]


def _verdict(ok_valid: bool, ok_invalid: bool) -> str:
    if not ok_valid:
        return "wrong"
    return "drops" if ok_invalid else "exact"


class Engines:
    def __init__(self) -> None:
        from transformers import PreTrainedTokenizerFast

        self.tok = PreTrainedTokenizerFast(tokenizer_file=str(SHARED / "smollm2-tokenizer.json"))
        self.vocab = 49152

    def ids(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    # -- xgrammar, behind SGLang's and vLLM's own checks ------------------------------
    def xgrammar_runs(self, schema: dict) -> Callable[[str], bool]:
        import xgrammar as xgr

        if not hasattr(self, "_xgr"):
            info = xgr.TokenizerInfo.from_huggingface(self.tok, vocab_size=self.vocab, stop_token_ids=[EOS])
            self._xgr = xgr.GrammarCompiler(info)
        ctx = self._xgr.compile_json_schema(json.dumps(schema), any_whitespace=True)

        def run(doc: str) -> bool:
            m = xgr.GrammarMatcher(ctx)
            return all(m.accept_token(t) for t in self.ids(doc)) and m.accept_token(EOS) and m.is_terminated()

        return run

    def sglang_default(self, schema: dict) -> Optional[Callable[[str], bool]]:
        from sglang.srt.constrained.json_schema_validation import UnsupportedJSONSchemaFeature, validate_xgrammar_json_schema

        try:
            validate_xgrammar_json_schema(schema)
        except UnsupportedJSONSchemaFeature:
            return None
        return self.xgrammar_runs(schema)

    def vllm_xgrammar(self, schema: dict) -> Optional[Callable[[str], bool]]:
        from vllm.v1.structured_output.backend_xgrammar import has_xgrammar_unsupported_json_features

        if has_xgrammar_unsupported_json_features(schema):
            return None
        return self.xgrammar_runs(schema)

    # -- llguidance -------------------------------------------------------------------------
    def llguidance(self, schema: dict) -> Optional[Callable[[str], bool]]:
        import llguidance
        import llguidance.hf

        if not hasattr(self, "_llg"):
            self._llg = llguidance.hf.from_tokenizer(self.tok, n_vocab=self.vocab, eos_token=EOS)
        grammar = llguidance.grammar_from("json_schema", json.dumps(schema))
        m0 = llguidance.LLMatcher(self._llg, grammar)
        if m0.is_error():
            return None

        def run(doc: str) -> bool:
            m = llguidance.LLMatcher(self._llg, grammar)
            for t in self.ids(doc):
                if not m.consume_token(t):
                    return False
            return m.consume_token(EOS) and not m.is_error() and (m.is_stopped() or m.is_accepting())

        return run

    # -- formcast -----------------------------------------------------------------------------
    def formcast(self, schema: dict) -> Optional[Callable[[str], bool]]:
        import formcast as fc

        if not hasattr(self, "_fc"):
            info = fc.TokenizerInfo.from_huggingface(self.tok.backend_tokenizer, stop_token_ids=[EOS], logits_size=self.vocab)
            self._fc = fc.GrammarCompiler(info)
        try:
            compiled = self._fc.compile_json_schema(schema)
        except fc.FormcastError:
            return None

        def run(doc: str) -> bool:
            m = fc.GrammarMatcher(compiled)
            return all(m.accept_token(t) for t in self.ids(doc)) and m.accept_token(EOS) and m.is_terminated()

        return run


COLUMNS = [
    ("SGLang default (xgrammar)", "sglang_default"),
    ("vLLM xgrammar", "vllm_xgrammar"),
    ("llguidance (vLLM auto fallback)", "llguidance"),
    ("formcast", "formcast"),
]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the table as JSON here")
    args = parser.parse_args(argv)
    engines = Engines()
    rows = []
    for keyword, schema, good, bad in CASES:
        row = {"keyword": keyword}
        for title, attr in COLUMNS:
            try:
                run = getattr(engines, attr)(schema)
            except Exception as e:  # an engine that raises on compile refuses the schema
                run = None
                row[title + " error"] = f"{type(e).__name__}: {e}"[:200]
            row[title] = "refused" if run is None else _verdict(run(good), run(bad))
        rows.append(row)
    print("| keyword | " + " | ".join(t for t, _ in COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for r in rows:
        print(f"| {r['keyword']} | " + " | ".join(r[t] for t, _ in COLUMNS) + " |")
    totals = {t: {v: sum(r[t] == v for r in rows) for v in ("exact", "refused", "drops", "wrong")} for t, _ in COLUMNS}
    print()
    for t, counts in totals.items():
        print(f"{t}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "totals": totals}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
