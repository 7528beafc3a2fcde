"""Outputs written in each family's wire format parse back to the same
reasoning, content and calls — whole, and streamed in random pieces; random
text never makes the parser raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formcast.styles import structural_tag_for
from formcast.toolcalls import OutputStreamParser, ToolCallDelta, parse_output
from styles_wire import ALL_STYLES, TOOLS, render

# Free text that cannot spell any family's special strings.
TEXT = st.text(alphabet="ab <>/.,!?\n\t12é中", max_size=30)
CALL = st.one_of(
    st.builds(
        lambda c, d: ("get_weather", {"city": c} if d is None else {"city": c, "days": d}),
        TEXT,
        st.one_of(st.none(), st.integers(-10**6, 10**6)),
    ),
    st.builds(lambda q, e: ("search", {"query": q, "exact": e}), TEXT, st.booleans()),
)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TAGS = {s: structural_tag_for(s, TOOLS) for s in ALL_STYLES}


def ids(i: int) -> str:
    return f"call_{i}"


def expected_content(style: str, content: str) -> str:
    return content


@pytest.mark.parametrize("style", ALL_STYLES)
@SETTINGS
@given(reasoning=TEXT, content=TEXT, calls=st.lists(CALL, max_size=3), data=st.data())
def test_round_trip_whole_and_streamed(style, reasoning, content, calls, data):
    text = render(style, reasoning, content, calls)
    whole = parse_output(TAGS[style], text, call_id=ids)
    assert whole.well_formed, text
    assert whole.reasoning == (reasoning if style != "llama" else "")
    assert whole.content == content
    assert [(c.name, json.loads(c.arguments)) for c in whole.tool_calls] == calls
    assert all(c.complete for c in whole.tool_calls)

    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    parser = OutputStreamParser(TAGS[style], call_id=ids)
    deltas = []
    for a, b in zip([0, *cuts], [*cuts, len(text)]):
        deltas += parser.feed(text[a:b])
    deltas += parser.finish()
    assert parser.result() == whole
    # OpenAI streaming rules: id and name once, first; then argument fragments.
    for i, call in enumerate(whole.tool_calls):
        mine = [d for d in deltas if isinstance(d, ToolCallDelta) and d.index == i]
        assert (mine[0].id, mine[0].name) == (call.id, call.name)
        assert all(d.id is None and d.name is None for d in mine[1:])
        assert "".join(d.arguments for d in mine) == call.arguments


FRAGMENTS = st.sampled_from(
    ["<think>", "</think>", "<tool_call>", "</tool_call>", "{\"name\": ", "\"get_weather\"", "<function=", "<parameter=city>",
     "</parameter>", "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "functions.search:1", "<|channel|>", "<|start|>assistant",
     "<|message|>", "<|call|>", "]<]minimax[>[", "<｜DSML｜", "<cofl:value name=\"x\" type=\"dict\">", "<|open|>", "<|close|>",
     "<|sep|>", "{", "}", "\"", "\n", "<arg_key>", "<arg_value>", "0", "true"]
)


@pytest.mark.parametrize("style", ALL_STYLES)
@settings(max_examples=40, deadline=None)
@given(pieces=st.lists(st.one_of(FRAGMENTS, st.text(max_size=6)), max_size=20), cut=st.integers(0, 200))
def test_random_text_never_raises(style, pieces, cut):
    text = "".join(pieces)
    out = parse_output(TAGS[style], text, call_id=ids)
    p = OutputStreamParser(TAGS[style], call_id=ids)
    p.feed(text[:cut])
    p.feed(text[cut:])
    p.finish()
    assert isinstance(out.content, str) and isinstance(out.reasoning, str)
    for c in out.tool_calls:
        assert c.name in ("get_weather", "search")
        if c.complete:
            json.loads(c.arguments)  # complete calls always carry JSON
    if out.well_formed:  # a valid output is read the same way in pieces
        assert p.result() == out


# ---------------------------------------------------------------- property --
# Random tool schemas (objects of string / integer / number / boolean / enum
# / array / nested-object properties, a random required subset) and random
# arguments conforming to them, written in each style's wire format: the
# compiled tag accepts the output, and the parser reads back exactly the
# calls' names and arguments.

import formcast as fc

PROP_NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,7}", fullmatch=True)
# String values: no family's special strings can be spelled with these, and
# JSON needs escapes for some of them.
STRING = st.text(alphabet='ab <>/.,!?\n\t12é中"\\{}', max_size=12)
SCALAR_SCHEMAS = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.lists(st.text(alphabet="abcxyz é-", min_size=1, max_size=6), min_size=1, max_size=4, unique=True).map(
        lambda vs: {"type": "string", "enum": vs}
    ),
)


def _object_schemas(values):
    return st.dictionaries(PROP_NAME, values, min_size=1, max_size=4).flatmap(
        lambda props: st.lists(st.sampled_from(sorted(props)), unique=True).map(
            lambda req: {"type": "object", "properties": props, "required": [k for k in props if k in req]}
        )
    )


INNER_SCHEMAS = st.one_of(SCALAR_SCHEMAS, SCALAR_SCHEMAS.map(lambda s: {"type": "array", "items": s}))
PARAMETER_SCHEMAS = _object_schemas(st.one_of(INNER_SCHEMAS, _object_schemas(INNER_SCHEMAS)))


def instances(schema):
    """Values conforming to ``schema`` (the subset generated above)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    t = schema["type"]
    if t == "string":
        return STRING
    if t == "integer":
        return st.integers(-10**9, 10**9)
    if t == "number":
        return st.one_of(st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
    if t == "boolean":
        return st.booleans()
    if t == "array":
        return st.lists(instances(schema["items"]), max_size=3)
    props, req = schema["properties"], set(schema["required"])

    def build(present):
        names = [k for k in props if k in req or k in present]
        # (in declared order: properties are generated in the schema's order)
        return st.fixed_dictionaries({k: instances(props[k]) for k in names}).map(lambda d: {k: d[k] for k in names})

    return st.sets(st.sampled_from(sorted(props))).flatmap(build) if props else st.just({})


@st.composite
def tools_and_calls(draw):
    schemas = draw(st.lists(PARAMETER_SCHEMAS, min_size=1, max_size=2))
    tools = [{"type": "function", "function": {"name": f"fn_{i}", "parameters": s}} for i, s in enumerate(schemas)]
    picks = draw(st.lists(st.integers(0, len(schemas) - 1), min_size=1, max_size=2))
    calls = [(f"fn_{i}", draw(instances(schemas[i]))) for i in picks]
    return tools, calls


@pytest.fixture(scope="module")
def byte_compiler() -> fc.GrammarCompiler:
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    return fc.GrammarCompiler(fc.TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256]))


@pytest.mark.parametrize("style", ALL_STYLES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(tc=tools_and_calls(), content=TEXT, data=st.data())
def test_random_schemas_accepted_and_parsed_back(style, tc, content, byte_compiler, data):
    tools, calls = tc
    tag = structural_tag_for(style, tools)
    enums = frozenset(k for t in tools for k, p in t["function"]["parameters"]["properties"].items() if "enum" in p)
    text = render(style, "thinking", content, calls, exact=enums)
    m = fc.GrammarMatcher(byte_compiler.compile_structural_tag(tag))
    assert m.accept_string(text) and m.can_terminate(), text
    out = parse_output(tag, text, call_id=ids)
    assert out.well_formed, text
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == calls, text
    assert out.content == content
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    parser = OutputStreamParser(tag, call_id=ids)
    for a, b in zip([0, *cuts], [*cuts, len(text)]):
        parser.feed(text[a:b])
    parser.finish()
    assert parser.result() == out
