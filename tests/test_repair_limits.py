"""formcast.repair on hostile schemas and values: circular references are
InvalidSchema, deep values are a validation issue or a repair failure that
names the limit, and nothing ends in RecursionError or runs for ever."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formcast import repair
from formcast._depth import MAX_CHECK_DEPTH
from formcast.repair import fix
from formcast.repair.errors import InvalidSchema, UnrepairableError, ValidationFailed

TREE = {"type": "object", "properties": {"v": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["v"]}


def tree(depth: int) -> Any:
    node: Any = {"v": 0, "children": []}
    for i in range(1, depth):
        node = {"v": i, "children": [node]}
    return node


def tree_text(depth: int) -> str:
    """``json.dumps(tree(depth))``, built without recursion."""
    return "".join(f'{{"v": {i}, "children": [' for i in range(depth - 1, 0, -1)) + '{"v": 0, "children": []}' + "]}" * (depth - 1)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},  # the issue's reproducer
        {"$ref": "#"},
        {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
        {"type": "object", "not": {"if": {"$ref": "#"}}},
        {"$id": "https://example.com/s", "$defs": {"x": {"$anchor": "x", "oneOf": [{"$ref": "#x"}]}}, "$ref": "#x"},
    ],
)
def test_circular_references_are_invalid_schemas(schema):
    with pytest.raises(InvalidSchema, match="circular reference"):
        repair.parse('{"a": 1}', schema=schema)


def test_unresolvable_and_deep_schemas_are_invalid_schemas():
    with pytest.raises(InvalidSchema, match="points to nothing"):
        repair.parse("{}", schema={"$ref": "#/nope"})
    with pytest.raises(InvalidSchema, match="names no anchor"):
        repair.parse("{}", schema={"$ref": "#missing"})
    deep: dict = {"type": "string"}
    for _ in range(5_000):
        deep = {"items": deep}
    with pytest.raises(InvalidSchema, match=f"deeper than {MAX_CHECK_DEPTH} levels"):
        repair.parse("[]", schema=deep)
    with pytest.raises(InvalidSchema):  # re.compile recursion on a pattern's groups
        repair.parse('"x"', schema={"type": "string", "pattern": "(" * 2000 + ")" * 2000})


def test_recursive_schemas_validate_deep_but_reasonable_values():
    assert tree_text(60) == json.dumps(tree(60))
    ok = repair.parse(tree_text(60), schema=TREE)  # 120 levels of JSON
    assert ok.data == tree(60)
    with pytest.raises(ValidationFailed) as e:
        repair.parse(json.dumps(tree(60)).replace('"v": 7,', '"v": "7",'), schema=TREE)
    assert e.value.issues[0].keyword == "type"
    # Deeper than the limit (valid JSON, 400 levels): one issue naming it,
    # never RecursionError.
    with pytest.raises(ValidationFailed) as e:
        repair.parse(tree_text(200), schema=TREE)
    assert e.value.issues[0].keyword == "maxDepth" and str(MAX_CHECK_DEPTH) in e.value.issues[0].message
    with pytest.raises(ValidationFailed):
        repair.parse(tree_text(200), schema=TREE, coerce={"types"})
    # Deeper than json.loads goes: strict parsing fails, repair names its limit.
    with pytest.raises(UnrepairableError, match="levels deep"):
        repair.parse(tree_text(2_000), schema=TREE)


def test_exponential_schemas_stop_at_the_budget():
    # anyOf of two references to the level below, 40 levels: 2**40 paths
    # for jsonschema, which memoizes nothing.
    defs = {"d0": {"type": "string"}}
    for i in range(1, 41):
        defs[f"d{i}"] = {"anyOf": [{"$ref": f"#/$defs/d{i - 1}"}, {"$ref": f"#/$defs/d{i - 1}"}]}
    with pytest.raises(ValidationFailed) as e:
        repair.parse("1", schema={"$defs": defs, "$ref": "#/$defs/d40"})
    assert e.value.issues[0].keyword == "budget"


def test_repair_depth_is_an_explicit_limit():
    limit = fix.MAX_REPAIR_DEPTH
    assert repair.parse("[" * limit + "1,]" + "]" * (limit - 1)).data is not None
    with pytest.raises(UnrepairableError, match=f"more than {limit} levels deep"):
        repair.parse("[" * (limit + 1) + "1,]" + "]" * limit)
    with pytest.raises(UnrepairableError, match="levels deep"):
        repair.parse("[" * 100_000)
    # Valid JSON deeper than that still takes the strict path.
    assert repair.parse("[" * 300 + "]" * 300).data is not None


def _lines(fn: Any) -> int:
    """Python lines executed by ``fn`` (loops included): a deterministic
    measure of work."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def test_keys_full_of_quotes_are_read_in_linear_time():
    # Each quote in a key scanned the rest of its line: a line of quotes was
    # quadratic. Count executed lines instead of timing them.
    def run(n: int) -> Any:
        def go() -> None:
            try:
                repair.parse('{"a' + '"a' * n + '": 1}')
            except repair.RepairError:
                pass

        return go

    small, large = _lines(run(500)), _lines(run(2_000))
    assert large <= 5 * small, (small, large)


def test_deep_tags_are_content_and_reported():
    res = repair.parse_tags("<a>" * 2_000 + "x" + "</a>" * 2_000)
    assert any("nested more than" in f.message for f in res.report.fixes)
    res = repair.parse_tags("<a>" * 2_000 + "x" + "</a>" * 2_000, schema={"type": "object"})
    assert isinstance(res.data, dict)
    stream = repair.TagStream()
    stream.feed("<a>" * 5_000)  # (snapshot on every feed walks the tree: bounded depth)
    loop = {"type": "object", "properties": {"a": {"anyOf": [{"$ref": "#/properties/a"}, {"type": "null"}]}}}
    with pytest.raises(InvalidSchema):
        repair.parse_tags("<a>1</a>", schema=loop)


def test_the_live_stream_view_stops_at_the_depth_limit():
    s = repair.JsonStream()
    s.feed("[" * 100_000)
    assert s.error is not None and "levels deep" in s.error
    assert len(s.events) == 0


@settings(max_examples=40, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(max_size=3), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=2), c, max_size=3), max_leaves=30),
       st.integers(0, 400))
def test_any_nesting_ends_in_a_result_or_a_typed_error(value, extra):
    # Wrap a random value in `extra` more levels, valid and broken: parse
    # returns or raises a RepairError / InvalidSchema, never RecursionError.
    text = "[" * extra + json.dumps(value) + "]" * extra
    for t in (text, text[:-1] + ",]", text.replace(":", "=", 1)):
        for schema in (None, TREE, {"type": "array", "items": {"$ref": "#"}}):
            try:
                repair.parse(t, schema=schema)
            except (repair.RepairError, InvalidSchema):
                pass
