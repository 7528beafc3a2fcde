"""Tool definitions that would make the style builder recurse without bound
are StyleErrors naming the field."""

from __future__ import annotations

import pytest

from formcast.styles import StyleError, structural_tag_for
from formcast.styles.formats import MAX_FORMAT_DEPTH, walk


def _tool(parameters: dict) -> list:
    return [{"type": "function", "function": {"name": "f", "parameters": parameters}}]


def test_deep_or_self_containing_parameters():
    deep: dict = {"type": "string"}
    for _ in range(2_000):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(StyleError, match=r"tools\[0\]\.function\.parameters nests deeper than 128 levels at /properties/a"):
        structural_tag_for("qwen_3", _tool(deep))
    loop: dict = {"type": "object"}
    loop["properties"] = {"x": loop}
    with pytest.raises(StyleError, match="contains itself at /properties/x"):
        structural_tag_for("qwen_3", _tool(loop))
    nested_groups = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(" * 1000 + ")" * 1000}}}
    with pytest.raises(StyleError, match="too deeply nested to check"):
        structural_tag_for("qwen_3", _tool(nested_groups))


def test_walk_is_iterative_and_skips_schemas():
    fmt: dict = {"type": "any_text"}
    for _ in range(5_000):
        fmt = {"type": "optional", "content": fmt}
    paths = [p for p, _ in walk({"type": "structural_tag", "format": fmt})]
    assert len(paths) == MAX_FORMAT_DEPTH + 1  # the root, then formats down to the limit
    tag = structural_tag_for("qwen_3", _tool({"type": "object", "properties": {"t": {"type": "string", "const": "tag"}}}))
    kinds = {n.get("type") for _, n in walk(tag)}
    assert "string" not in kinds and "object" not in kinds  # schemas are not formats


@pytest.mark.parametrize("style", ["cohere", "minimax_m3"])
def test_free_form_keys_are_refused_not_narrowed(style):
    # These styles cannot write keys that are not declared; a tool that
    # asks for them explicitly used to be constrained to no arguments.
    for params in ({"type": "object", "additionalProperties": {"type": "string"}}, {"type": "object", "additionalProperties": True}):
        with pytest.raises(StyleError, match="free-form keys"):
            structural_tag_for(style, _tool(params))
    # No parameters: a call without arguments.
    no_args = [n for _, n in walk(structural_tag_for(style, _tool({"type": "object"}))) if n.get("type") == "json_schema"]
    assert no_args[0]["json_schema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    # Pattern properties are left to the engine, which says what it cannot do.
    pattern = {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
    kept = [n for _, n in walk(structural_tag_for(style, _tool(pattern))) if n.get("type") == "json_schema"]
    assert kept[0]["json_schema"] == pattern
