"""Streaming behaviour users rely on: text released as soon as it cannot
start a tag, calls announced once, truncated and malformed output."""

from __future__ import annotations

from formcast.styles import structural_tag_for
from formcast.toolcalls import ContentDelta, OutputStreamParser, ReasoningDelta, ToolCallDelta, parse_output
from styles_wire import TOOLS


def ids(i: int) -> str:
    return f"call_{i}"


def test_text_waits_only_while_it_may_start_a_tag():
    p = OutputStreamParser(structural_tag_for("qwen_3", TOOLS), call_id=ids)
    assert p.feed("thinking") == [ReasoningDelta("thinking")]
    assert p.feed("</th") == []  # may be the end of the reasoning
    assert p.feed("ink>\n\nHello <") == [ContentDelta("Hello ")]
    assert p.feed("b> and <tool") == [ContentDelta("<b> and ")]
    assert p.feed('_call>\n{"name": "') == []  # get_weather or search?
    assert p.feed('s') == [ToolCallDelta(0, "", "call_0", "search")]  # only search starts so
    assert p.feed('earch", "arguments": {"query"') == [ToolCallDelta(0, '{"query"')]
    assert p.feed(': "x"}}\n</tool_call>') == [ToolCallDelta(0, ': "x"}')]
    assert p.finish() == []
    assert p.result().tool_calls[0].complete


def test_a_partial_tag_at_the_end_is_text_where_text_is_allowed():
    out = parse_output("qwen_3", "r</think>\n\nsee <tool_ca", tools=TOOLS)
    assert out.well_formed and out.content == "see <tool_ca"


def test_truncated_call_is_reported_incomplete():
    out = parse_output("qwen_3_5", "r</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=da", tools=TOOLS)
    assert not out.well_formed
    assert [(c.name, c.arguments, c.complete) for c in out.tool_calls] == [("get_weather", '{"city": "Oslo"', False)]


def test_xml_arguments_stream_one_parameter_at_a_time():
    p = OutputStreamParser("deepseek_v3_2", tools=TOOLS, reasoning="disabled", call_id=ids)
    text = '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Lima</｜DSML｜parameter>\n<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
    args = [d.arguments for ch in text for d in p.feed(ch) if isinstance(d, ToolCallDelta)]
    assert args == ["", "{", '"city": "Lima"', ', "days": 3', "}"]


def test_text_that_leaves_the_format_becomes_content():
    out = parse_output("kimi", 'r</think>ok<|tool_calls_section_begin|><|tool_call_begin|>functions.nope:0 {"a": 1}', tools=TOOLS)
    assert not out.well_formed and out.reasoning == "r" and out.tool_calls == []
    assert out.content == 'ok<|tool_calls_section_begin|><|tool_call_begin|>functions.nope:0 {"a": 1}'


def test_parallel_off_and_forced():
    one = '<tool_call>\n{"name": "search", "arguments": {"query": "a"}}\n</tool_call>'
    tag = structural_tag_for("qwen_3", TOOLS, parallel_tool_calls=False, reasoning="disabled")
    assert parse_output(tag, "x" + one).well_formed
    assert not parse_output(tag, one + one).well_formed
    forced = structural_tag_for("qwen_3", TOOLS, {"type": "function", "function": {"name": "search"}}, reasoning="disabled")
    assert [c.name for c in parse_output(forced, one).tool_calls] == ["search"]
    assert not parse_output(forced, "text" + one).well_formed


def test_minimax_m3_empty_array_and_object_arguments():
    # An array or object with no elements is written as an empty element; it
    # was read back as the string "".
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object", "properties": {"a": {"type": "integer"}}},
    }, "required": ["tags", "opts"]}}}]
    m3 = "]<]minimax[>["
    text = f'r</mm:think>{m3}<tool_call>\n{m3}<invoke name="f">{m3}<tags>{m3}</tags>{m3}<opts>{m3}</opts>{m3}</invoke>\n{m3}</tool_call>'
    out = parse_output("minimax_m3", text, tools=tools, reasoning="enabled")
    assert out.well_formed and out.tool_calls[0].arguments == '{"tags": [], "opts": {}}'
