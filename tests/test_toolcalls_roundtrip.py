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
