"""Schemas and structural tags given as Python objects meet the same limit as
JSON text: the engine's JSON reader refuses more than 512 levels, and a dict
nested deeper must be a LimitError naming the limit and the place, not a
RecursionError from json.dumps."""

from __future__ import annotations

import json

import pytest

import formcast as fc
from formcast import structural_tag as st
from formcast._depth import MAX_JSON_DEPTH, NestingError, check_nesting, loads, text_nesting


def _items(levels: int) -> dict:
    """A schema of exactly ``levels`` nested dicts."""
    s: dict = {"type": "array"}
    for _ in range(levels - 1):
        s = {"items": s}
    return s


def test_schema_dicts_have_the_engines_depth_limit():
    fc.Grammar.from_json_schema(_items(MAX_JSON_DEPTH))
    fc.Grammar.from_json_schema(json.dumps(_items(MAX_JSON_DEPTH)))
    with pytest.raises(fc.LimitError, match=r"nests deeper than 512 levels at /items/items/.*items"):
        fc.Grammar.from_json_schema(_items(MAX_JSON_DEPTH + 1))
    with pytest.raises(fc.LimitError, match="nested deeper than 512 levels"):  # the same schema as text: the engine says so
        fc.Grammar.from_json_schema(json.dumps(_items(MAX_JSON_DEPTH + 1)))
    # The reproducer: a few thousand levels, as a dict.
    deep: dict = {"type": "string"}
    for _ in range(5_000):
        deep = {"anyOf": [deep]}
    with pytest.raises(fc.LimitError, match="512"):
        fc.Grammar.from_json_schema(deep)
    with pytest.raises(fc.LimitError, match="512"):
        fc.GrammarCompiler(fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])).compile_json_schema({"const": _items(5_000)})


def test_self_containing_and_exploding_dicts():
    loop: dict = {"type": "object"}
    loop["properties"] = {"me": loop}
    with pytest.raises(fc.GrammarError, match="contains itself at /properties/me"):
        fc.Grammar.from_json_schema(loop)
    shared: list = [1]
    for _ in range(40):  # 2**40 values once written out
        shared = [shared, shared]
    with pytest.raises(fc.LimitError, match="expands to more than"):
        fc.Grammar.from_json_schema({"const": shared})


def test_structural_tag_dicts_and_models():
    fmt: dict = {"type": "any_text"}
    for _ in range(5_000):
        fmt = {"type": "optional", "content": fmt}
    with pytest.raises(fc.LimitError, match="512"):
        fc.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    model: st.Format = st.AnyTextFormat()
    for _ in range(300):
        model = st.OptionalFormat(content=model)
    with pytest.raises(fc.LimitError, match="nested more than 48 levels"):
        fc.Grammar.from_structural_tag(st.StructuralTag(format=model))
    deep_schema = {"type": "string"}
    for _ in range(400):
        deep_schema = {"items": deep_schema}
    with pytest.raises(fc.LimitError):  # pydantic's serializer stops at ~250 levels: a LimitError too
        st.structural_tag_json(st.StructuralTag(format=st.JSONSchemaFormat(json_schema=deep_schema)))


def test_depth_helpers():
    assert check_nesting({"a": [1, {"b": []}]}, 4) == (4, 5)
    with pytest.raises(NestingError) as e:
        check_nesting({"a": [[1]]}, 2)
    assert e.value.pointer == "/a/0" and e.value.reason == "depth"
    assert text_nesting('["[[[[", [[]]]', 3) is None
    assert text_nesting('["\\"[[", [[[]]]]', 3) == 11
    assert loads("[[1]]", 2) == [[1]]
    with pytest.raises(NestingError):
        loads("[" * 100_000, 512)
