"""The formatter's parsing and dataset readers on hostile text: deep JSON and
self-referencing schemas give the module's own errors."""

from __future__ import annotations

import pytest

from formcast.formatter.convert import webnlg_record
from formcast.formatter.core import FormatError, Formatter, as_schema
from formcast.formatter.data import DatasetError, iter_jsonl
from formcast.formatter.synth import parse_generation, stage1_problems


class Never:
    def generate(self, request):  # pragma: no cover - not called
        raise AssertionError


def test_deep_outputs_are_format_errors():
    f = Formatter(backend=Never())
    with pytest.raises(FormatError, match="levels deep"):
        f.parse("[" * 100_000 + "]" * 100_000, {"type": "array"})
    with pytest.raises(FormatError, match="levels deep"):
        f.parse("[" * 200 + "]" * 200, {"type": "array"})
    with pytest.raises(ValueError, match="deeper than 512"):
        as_schema({"items": _deep(600)})


def _deep(n: int) -> dict:
    s: dict = {"type": "string"}
    for _ in range(n):
        s = {"items": s}
    return s


def test_generated_records_with_hostile_schemas_are_rejected_not_raised():
    text = "<JSONL>" + '{"a": ' + "[" * 100_000 + "</JSONL>"
    assert parse_generation(text)[0].record is None
    record = {"input_text": "x", "json_schema": {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}, "gold": {"a": 1}}
    assert any("circular" in p for p in stage1_problems(record))
    record = {"input_text": "x", "json_schema": {"type": "object", "properties": {"a": _deep(300)}}, "gold": {"a": []}}
    assert any("deeper than" in p for p in stage1_problems(record))


def test_dataset_lines_too_deep_are_dataset_errors(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"input_text": "x", "json_schema": {}, "gold": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DatasetError, match=r"d.jsonl:1: .*levels deep"):
        list(iter_jsonl(path))


def test_webnlg_triple_sets_are_bounded():
    # A diamond per level: every path expands the shared objects again.
    triples = []
    for i in range(30):
        triples += [f"s{i} | p | a{i}", f"s{i} | q | b{i}", f"a{i} | r | s{i + 1}", f"b{i} | r | s{i + 1}"]
    with pytest.raises(ValueError, match="expands to more than"):
        webnlg_record("Cat", triples)
