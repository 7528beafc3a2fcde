"""OpenAI custom tools (``{"type": "custom", "custom": {...}}``) in the tool
styles and the output reader: the input is raw text where a function's
arguments go, free or following a regex / Lark grammar, and reads back as a
call of ``type`` ``"custom"`` whose ``arguments`` are the input as written."""

from __future__ import annotations

import re

import pytest

import formcast as fc
from formcast.styles import StyleError, structural_tag_for
from formcast.toolcalls import OutputStreamParser, ToolCallDelta, parse_output

PHONE = {"type": "custom", "custom": {"name": "phone", "description": "A phone number.",
                                      "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": r"\d{3}-\d{4}"}}}}
NOTE = {"type": "custom", "custom": {"name": "note"}}
SUM = {"type": "custom", "custom": {"name": "sum", "format": {"type": "grammar", "grammar": {
    "syntax": "lark", "definition": 'start: NUM "+" NUM\nNUM: /[0-9]{1,3}/'}}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

BYTES = fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])
COMPILER = fc.GrammarCompiler(BYTES)

needs_lark = pytest.mark.skipif(not hasattr(fc.Grammar, "from_lark"), reason="Grammar.from_lark is not in this build yet")


def allowed(tag, text: str) -> bool:
    m = fc.GrammarMatcher(COMPILER.compile_structural_tag(tag))
    return m.accept_string(text) and m.can_terminate()


# Per style: the text of a custom call of `phone` with input 555-1234.
CALLS = {
    "qwen_3": '<tool_call>\n{"name": "phone", "arguments": 555-1234}\n</tool_call>',
    "qwen_3_5": "<tool_call>\n<function=phone>\n555-1234</function>\n</tool_call>",
    "exaone": '<tool_call>{"name": "phone", "arguments": 555-1234}</tool_call>',
    "llama": '{"name": "phone", "parameters": 555-1234}',
    "glm_4_7": "<tool_call>phone555-1234</tool_call>",
    "deepseek_v3_1": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>phone<｜tool▁sep｜>555-1234<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "kimi": ("<|tool_calls_section_begin|><|tool_call_begin|>functions.phone:0<|tool_call_argument_begin|>555-1234"
             "<|tool_call_end|><|tool_calls_section_end|>"),
    "harmony": "<|channel|>commentary to=functions.phone<|message|>555-1234<|call|>",
    "kimi_k3": ('<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="phone" index="0"<|sep|>'
                "555-1234<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"),
}


@pytest.mark.parametrize("style", sorted(CALLS))
def test_custom_call_round_trip(style):
    tag = structural_tag_for(style, [PHONE, WEATHER], {"type": "custom", "custom": {"name": "phone"}}, reasoning="disabled")
    text = CALLS[style]
    assert allowed(tag, text)
    assert not allowed(tag, text.replace("555-1234", "555-123"))
    out = parse_output(tag, text)
    assert out.well_formed and [(c.type, c.name, c.arguments, c.complete) for c in out.tool_calls] == [("custom", "phone", "555-1234", True)]
    # Streamed a character at a time: the same call, its id and type first.
    p = OutputStreamParser(tag)
    deltas = [d for ch in text for d in p.feed(ch)] + p.finish()
    calls = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert calls[0].type == "custom" and calls[0].name == "phone"
    assert "".join(d.arguments for d in calls) == "555-1234"


def test_text_custom_tools_and_functions_together():
    tag = structural_tag_for("qwen_3", [NOTE, WEATHER], "required", reasoning="disabled")
    text = ('<tool_call>\n{"name": "note", "arguments": buy milk, eggs}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
    assert allowed(tag, text)
    out = parse_output(tag, text)
    assert [(c.type, c.name, c.arguments) for c in out.tool_calls] == [
        ("custom", "note", "buy milk, eggs"), ("function", "get_weather", '{"city": "Paris"}')]


@needs_lark
def test_lark_custom_tool():
    tag = structural_tag_for("qwen_3_5", [SUM], "required", reasoning="disabled")
    text = "<tool_call>\n<function=sum>\n12+345</function>\n</tool_call>"
    assert allowed(tag, text) and not allowed(tag, text.replace("12+345", "12+3456"))
    assert [(c.type, c.arguments) for c in parse_output(tag, text).tool_calls] == [("custom", "12+345")]


@needs_lark
def test_lark_custom_tool_special_tokens_resolve_through_the_tokenizer(llama3):
    """A custom tool's Lark grammar may name the model's special tokens, as
    `Grammar.from_lark` reads them: by name through the tag's tokenizer, by
    id, and refused where the tag has no tokenizer."""
    eot = 128009  # Llama-3's <|eot_id|>
    lark = {"type": "lark", "grammar": 'start: "ok" <|eot_id|> | "id" <[128000]>'}
    compiler = fc.GrammarCompiler(llama3)
    for first, token in [("ok", eot), ("id", 128000)]:
        m = fc.GrammarMatcher(compiler.compile_structural_tag(lark))
        assert m.accept_string(first)
        mask = fc.allocate_token_bitmask(1, llama3.logits_size)
        m.fill_next_token_bitmask(mask, 0)
        allowed_ids = [t for t in (eot, 128000, 128001) if mask[0][t >> 5] >> (t & 31) & 1]
        assert allowed_ids == [token]
        assert m.accept_token(token) and m.can_terminate()
    with pytest.raises(fc.GrammarError, match="eot_id"):
        fc.Grammar.from_structural_tag(lark)
    # Through a custom tool of a style, as the server compiles it.
    tool = {"type": "custom", "custom": {"name": "stop", "format": {"type": "grammar", "grammar": {
        "syntax": "lark", "definition": 'start: "done" <|eot_id|>'}}}}
    tag = structural_tag_for("qwen_3_5", [tool], "required", reasoning="disabled")
    m = fc.GrammarMatcher(compiler.compile_structural_tag(tag))
    assert m.accept_string("<tool_call>\n<function=stop>\ndone") and m.accept_token(eot)


def test_malformed_custom_tools_are_style_errors():
    for tool, field in [
        ({"type": "custom", "custom": {"name": "bad name"}}, "tools[0].custom.name"),
        ({"type": "custom", "custom": {"name": "x", "format": {"type": "bnf"}}}, "tools[0].custom.format"),
        ({"type": "custom", "custom": {"name": "x", "format": {"type": "grammar", "grammar": {"syntax": "perl", "definition": "a"}}}},
         "tools[0].custom.format.grammar"),
    ]:
        with pytest.raises(StyleError, match=re.escape(field)):
            structural_tag_for("qwen_3", [tool])
    with pytest.raises(StyleError, match="duplicate tool name"):
        structural_tag_for("qwen_3", [NOTE, {"type": "function", "function": {"name": "note"}}])
    with pytest.raises(StyleError, match="unknown function 'nope'"):
        structural_tag_for("qwen_3", [NOTE], {"type": "custom", "custom": {"name": "nope"}})
