"""The tool-call reader on hostile input: linear work in the text (checked by
counting operations, never by the clock), bounded memory for what it keeps,
no recursion on nested arguments or tags, and limits that end a call as
not well-formed instead of raising."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formcast as fc
from formcast.styles import structural_tag_for
from formcast.toolcalls import OutputStreamParser, ParserConfigError, parse_output
from formcast.toolcalls import jsonscan, machine, regexdfa, xmlargs

F = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}]
ANY = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _calls(fn: Callable[[], Any]) -> int:
    """Python-level calls (functions and builtins) made by ``fn``: a
    deterministic measure of work."""
    count = 0

    def prof(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def _parse(tag: Any, text: str, delta: int) -> Callable[[], Any]:
    def run() -> Any:
        if delta <= 0:
            return parse_output(tag, text)
        p = OutputStreamParser(tag)
        for i in range(0, len(text), delta):
            p.feed(text[i : i + delta])
        p.finish()
        return p.result()

    return run


# (style, tools, text of about n characters)
CASES: dict[str, tuple[str, list, Callable[[int], str]]] = {
    "open brackets": ("qwen_3", F, lambda n: '<tool_call>\n{"name": "f", "arguments": ' + "[" * n),
    "closed nesting": ("qwen_3", F, lambda n: '<tool_call>\n{"name": "f", "arguments": {"a": ' + "[" * (n // 2) + "]" * (n // 2) + "}}\n</tool_call>"),
    "long string": ("qwen_3", F, lambda n: '<tool_call>\n{"name": "f", "arguments": {"a": "' + "x" * n + '"}}\n</tool_call>'),
    "prose": ("qwen_3", F, lambda n: ("Some text <b>bold</b> & more. " * n)[:n]),
    "many calls": ("qwen_3", F, lambda n: ('<tool_call>\n{"name": "f", "arguments": {"a": "x"}}\n</tool_call>\n' * n)[:n]),
    "xml string": ("qwen_3_5", F, lambda n: "<tool_call>\n<function=f>\n<parameter=a>\n" + "y" * n + "\n</parameter>\n</function>\n</tool_call>"),
    "xml params": ("qwen_3_5", ANY, lambda n: "<tool_call>\n<function=f>\n" + "".join(f"<parameter=k{i}>\n{i}\n</parameter>\n" for i in range(n // 30)) + "</function>\n</tool_call>"),
    "digits": ("kimi", F, lambda n: "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:" + "7" * n),
    "cohere nesting": ("cohere", [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "array", "items": {}}}}}}],
                       lambda n: '<cofl:tool_calls><cofl:tool_call id="0" name="f"><cofl:value name="a" type="list">' + '<cofl:value type="json">1</cofl:value>' * (n // 40)),
}


@pytest.mark.parametrize("delta", [0, 3], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_work_is_linear_in_the_text(case, delta):
    # The issue's reproducer (1 MiB of brackets) took ~30 s and grew ~3x per
    # doubling: copying the text at every character, a string stack copied
    # and rehashed per bracket, XML arguments re-split at every delta, regex
    # leaves re-matched from their start. 4x the text must cost ~4x the work.
    style, tools, make = CASES[case]
    tag = structural_tag_for(style, tools, reasoning="disabled")
    small, large = _calls(_parse(tag, make(2_000), delta)), _calls(_parse(tag, make(8_000), delta))
    assert large <= 4.6 * small, (case, small, large)


def test_regex_leaves_step_instead_of_rematching():
    # Re-running fullmatch over a growing span (kimi's `\d+` call index) is
    # quadratic in C, where counting Python calls cannot see it.
    tag = structural_tag_for("kimi", F, reasoning="disabled")
    text = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:" + "7" * 4_000
    matches = 0

    def prof(frame: Any, event: str, arg: Any) -> None:
        nonlocal matches
        if event == "c_call" and getattr(arg, "__name__", "") in ("fullmatch", "match", "search"):
            matches += 1

    sys.setprofile(prof)
    try:
        parse_output(tag, text)
    finally:
        sys.setprofile(None)
    assert matches < 20, matches


def test_threads_and_kept_text_stay_bounded():
    # What the machine holds does not grow with the text: the live
    # interpretations, and the text kept for looking back.
    tag = structural_tag_for("qwen_3", F, reasoning="auto")
    call = '<tool_call>\n{"name": "f", "arguments": {"a": "' + "z" * 3000 + '"}}\n</tool_call>'
    text = "<think>" + "r" * 500 + "</think>\n\n" + ("Hi <b>x</b> <tool_cal " * 50 + call) * 3
    p = OutputStreamParser(tag)
    most_threads = most_window = 0
    for i in range(0, len(text), 5):
        p.feed(text[i : i + 5])
        m = p._machine
        most_threads = max(most_threads, len(m.threads))
        most_window = max(most_window, len(m.window))
    p.finish()
    assert p.result().well_formed and len(p.result().tool_calls) == 3
    assert most_threads <= 12, most_threads
    assert most_window <= 64, most_window


def test_json_stack_is_shared_not_copied():
    s = jsonscan.START
    states = []
    for ch in "[[{":
        s = jsonscan.step(s, ch)
        states.append(s)
    # Each push adds one cell above the previous stack (O(1), no copy).
    assert states[1][0].parent is states[0][0] and states[2][0].parent is states[1][0]
    assert jsonscan.depth(states[2]) == 3
    s = jsonscan.scan('{"a": [[1], 2]}')
    assert s is not None and jsonscan.is_complete(s)
    # Equal stacks built separately compare equal (threads merge).
    a, b = jsonscan.scan("[[[" * 100), jsonscan.scan("[[[" * 100)
    assert a == b and hash(a) == hash(b)


@pytest.mark.parametrize("n", [100_000])
def test_deep_json_arguments_do_not_recurse(n):
    tag = structural_tag_for("qwen_3", ANY, reasoning="disabled")
    text = '<tool_call>\n{"name": "f", "arguments": {"a": ' + "[" * n + "]" * n + "}}\n</tool_call>"
    out = parse_output(tag, text)
    assert out.well_formed
    assert out.tool_calls[0].arguments == '{"a": ' + "[" * n + "]" * n + "}"
    cut = parse_output(tag, text[: len(text) // 2])  # cut off at max_tokens
    assert not cut.well_formed and not cut.tool_calls[0].complete


def test_deep_json_inside_xml_parameters_is_copied_not_decoded():
    # json.loads / json.dumps of a 100k-deep parameter value raised
    # RecursionError out of parse_output.
    n = 100_000
    tag = structural_tag_for("qwen_3_5", ANY, reasoning="disabled")
    text = f"<tool_call>\n<function=f>\n<parameter=a>\n{'[' * n}{']' * n}\n</parameter>\n</function>\n</tool_call>"
    out = parse_output(tag, text)
    assert out.well_formed and out.tool_calls[0].arguments == '{"a": ' + "[" * n + "]" * n + "}"
    broken = text.replace("]" * n, "]" * (n - 1))  # not JSON: the raw text, as a string
    args = parse_output(tag, broken).tool_calls[0].arguments
    assert args.startswith('{"a": "\\n[[[') and json.loads(args)["a"].count("[") == n


@pytest.mark.parametrize("style", ["cohere", "minimax_m3"])
def test_nested_xml_values_past_the_limit_end_the_call(style):
    m3 = "]<]minimax[>["
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
              "$defs": {"t": {"type": "object", "properties": {"c": {"$ref": "#/$defs/t"}}}}}}}]
    tag = structural_tag_for(style, tools, reasoning="disabled")

    def call(depth: int) -> str:
        if style == "cohere":
            body = '<cofl:value name="c" type="dict">' * depth + "</cofl:value>" * depth
            return f'<cofl:tool_calls><cofl:tool_call id="0" name="f"><cofl:value name="a" type="dict">{body}</cofl:value></cofl:tool_call></cofl:tool_calls>'
        body = f"{m3}<c>" * depth + f"{m3}</c>" * depth
        return f'{m3}<tool_call>\n{m3}<invoke name="f">{m3}<a>{body}{m3}</a>{m3}</invoke>\n{m3}</tool_call>'

    ok = parse_output(tag, call(xmlargs.MAX_XML_NESTING - 1))
    assert ok.well_formed
    value = json.loads(ok.tool_calls[0].arguments)["a"]
    depth = 0
    while value:
        value, depth = value["c"], depth + 1
    assert depth == xmlargs.MAX_XML_NESTING - 1
    deep = parse_output(tag, call(5_000))
    assert not deep.well_formed and deep.tool_calls == []


def test_self_referencing_parameter_schemas_do_not_recurse():
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/properties/a"}]},
                                                 "b": {"allOf": [{"$ref": "#"}]}}}
    assert xmlargs.only_strings(schema["properties"]["a"], schema) is True
    assert xmlargs.only_strings(schema["properties"]["b"], schema) is False
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    out = parse_output(structural_tag_for("qwen_3_5", tools, reasoning="disabled"),
                       "<tool_call>\n<function=f>\n<parameter=a>\n12\n</parameter>\n</function>\n</tool_call>")
    assert out.tool_calls[0].arguments == '{"a": "12"}'


def test_kimi_k3_reads_escaped_keys_and_integer_types():
    # The engine writes a property name inside key="..." escaped (& < > ");
    # a free-form key may say type="integer".
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
             {"type": "function", "function": {"name": "g", "parameters": {"type": "object", "properties": {'a<b "c"&d': {"type": "string"}, "n": {"type": "integer"}}}}}]
    tag = structural_tag_for("kimi_k3", tools, reasoning="disabled")
    text = ('<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="f" index="0"<|sep|>'
            '<|open|>argument key="we&quot;ird&amp;key" type="integer"<|sep|>5<|close|>argument<|sep|>'
            '<|open|>argument key="x" type="string"<|sep|>a &amp; "b"<|close|>argument<|sep|><|close|>call<|sep|>'
            '<|open|>call tool="g" index="1"<|sep|><|open|>argument key="a&lt;b &quot;c&quot;&amp;d" type="string"<|sep|>v<|close|>argument<|sep|>'
            '<|open|>argument key="n" type="number"<|sep|>7<|close|>argument<|sep|><|close|>call<|sep|>'
            "<|close|>tools<|sep|><|close|>message<|sep|>")
    out = parse_output(tag, text)
    assert out.well_formed
    # Names are unescaped; values are raw text (string) or JSON, as written.
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == [
        ("f", {'we"ird&key': 5, "x": 'a &amp; "b"'}),
        ("g", {'a<b "c"&d': "v", "n": 7}),
    ]


def _engine_escapes_kimi_keys() -> bool:
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256]))
    m = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_json_schema({"type": "object", "properties": {"a&b": {"type": "string"}}}, style="kimi_k3_xml")))
    return m.accept_string('<|open|>argument key="a&amp;b" type="string"<|sep|>x<|close|>argument<|sep|>')


@pytest.mark.skipif(not _engine_escapes_kimi_keys(), reason="the installed engine predates kimi_k3 key escaping (rebuild the extension)")
def test_kimi_k3_escaped_keys_agree_with_the_engine():
    tools = [{"type": "function", "function": {"name": "g", "parameters": {"type": "object", "properties": {'a<b "c"&d': {"type": "string"}}, "required": ['a<b "c"&d']}}}]
    tag = structural_tag_for("kimi_k3", tools, reasoning="disabled")
    text = ('<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="g" index="0"<|sep|>'
            '<|open|>argument key="a&lt;b &quot;c&quot;&amp;d" type="string"<|sep|>v<|close|>argument<|sep|><|close|>call<|sep|>'
            "<|close|>tools<|sep|><|close|>message<|sep|>")
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256]))
    m = fc.GrammarMatcher(compiler.compile_structural_tag(tag))
    assert m.accept_string(text) and m.can_terminate()
    assert json.loads(parse_output(tag, text).tool_calls[0].arguments) == {'a<b "c"&d': "v"}


def _nest_triggered(k: int) -> dict:
    f: dict = {"type": "any_text"}
    for i in range(k):
        f = {"type": "triggered_tags", "triggers": [f"<t{i}"], "tags": [{"type": "tag", "begin": f"<t{i}>", "content": f, "end": f"</t{i}>"}]}
    return {"type": "structural_tag", "format": f}


def test_structural_tag_limits():
    # Nested triggered tags compiled each tag twice per level (2^k nodes).
    counts = []
    for k in (8, 16):
        c = machine.Compiler({})
        c.compile(_nest_triggered(k))
        counts.append(c._nodes)
    assert counts[1] <= 2.5 * counts[0]
    assert parse_output(_nest_triggered(20), "hi <t19>x</t19>").content == "hi x"  # (tags are syntax)
    # Deeper than the engine's MAX_FORMAT_DEPTH: refused, naming the limit.
    deep: dict = {"type": "any_text"}
    for _ in range(5_000):
        deep = {"type": "optional", "content": deep}
    with pytest.raises(ParserConfigError, match="nested more than 48 levels"):
        parse_output({"type": "structural_tag", "format": deep}, "x")
    # Long chains of formats that match nothing do not recurse.
    assert parse_output({"format": {"type": "repeat", "min": 5000, "max": 5000, "content": {"type": "any_text"}}}, "abc").content == "abc"
    assert parse_output({"format": {"type": "sequence", "elements": [{"type": "any_text"}] * 3000}}, "abc").content == "abc"


def test_regex_answers_are_content():
    # A regex (or choice) answer next to tool calls, as the server builds it:
    # its text is the content, it was dropped.
    union = {"type": "structural_tag", "format": {"type": "or", "elements": [
        {"type": "regex", "pattern": "(yes|no), [0-9]+"},
        structural_tag_for("qwen_3", F, "required", reasoning="disabled")["format"]]}}
    out = parse_output(union, "yes, 42", tools=F)
    assert out.well_formed and out.content == "yes, 42" and out.tool_calls == []


PATTERNS = [r"\d+", r"[a-c]*b", r"(ab|a)*c?", r"x{2,4}", r"^[^\n]+$", r"\w\s\W", r"(a|b)*a(a|b){3}", r".*", r"[^abc]{0,2}", r"(?:ab)+|c"]


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from(PATTERNS), text=st.text(alphabet="abcx1 -\n_é", max_size=10))
def test_regex_dfa_matches_python_re(pattern, text):
    dfa = regexdfa.compile_dfa(pattern)
    assert dfa is not None
    state = dfa.start
    for ch in text:
        state = dfa.step(state, ch)
    assert dfa.accepting(state) == (re.fullmatch(pattern, text) is not None)


def test_regex_outside_the_dfa_subset_is_bounded():
    assert regexdfa.compile_dfa(r"(a)\1") is None and regexdfa.compile_dfa(r"a(?=b)") is None
    # The reader takes the engine's reading of a pattern: what the engine
    # refuses is refused here too, and what it accepts is in the DFA subset
    # unless its automaton is too large (counted repeats are expanded).
    with pytest.raises(ParserConfigError, match="lookaround"):
        parse_output({"format": {"type": "regex", "pattern": r"(?:a|b)(?=\w)\w+"}}, "ab")
    tag = {"format": {"type": "regex", "pattern": r"(?:a|b){1,30000}"}}
    assert machine.Compiler({}).compile(tag).dfa is None
    assert parse_output(tag, "ab" * 100).well_formed
    # Past the span limit such a leaf stops matching: not well formed, all content, no raise.
    out = parse_output(tag, "ab" * machine.REGEX_SPAN_LIMIT)
    assert not out.well_formed and out.content == "ab" * machine.REGEX_SPAN_LIMIT


HOSTILE = st.sampled_from(["[", "]", "{", "}", '"', "\\", "<tool_call>", "</tool_call>", '{"name": "f", "arguments": ', "\n", "a", ":", ","])


@settings(max_examples=60, deadline=None)
@given(pieces=st.lists(HOSTILE, max_size=400), cuts=st.lists(st.integers(0, 2000), max_size=20))
def test_hostile_text_streams_like_it_parses(pieces, cuts):
    tag = structural_tag_for("qwen_3", ANY, reasoning="disabled")
    text = "".join(pieces)
    whole = parse_output(tag, text, call_id=str)
    p = OutputStreamParser(tag, call_id=str)
    bounds = sorted({min(c, len(text)) for c in cuts})
    for a, b in zip([0, *bounds], [*bounds, len(text)]):
        p.feed(text[a:b])
    p.finish()
    streamed = p.result()
    # (Text that leaves the tag keeps what was already released, which
    # depends on the chunking; a valid text reads the same in any pieces.)
    assert streamed.well_formed == whole.well_formed
    if whole.well_formed:
        assert streamed == whole


def test_options_and_fields_are_not_silently_ignored():
    tag = structural_tag_for("qwen_3", F, reasoning="disabled")
    with pytest.raises(TypeError, match="tool_choice"):
        parse_output(tag, "x", tool_choice="required")
    with pytest.raises(TypeError, match="reasoning"):
        OutputStreamParser(tag, reasoning="enabled")
    with pytest.raises(ParserConfigError, match="style 'qwen'"):
        parse_output({"format": {"type": "json_schema", "json_schema": {}, "style": "qwen"}}, "{}")
    with pytest.raises(ParserConfigError, match="separator: must be a string"):
        parse_output({"format": {"type": "tags_with_separator", "tags": [{"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}], "separator": 1}}, "")
    # Several ends, given as strings or as tokens by their text.
    ends = {"format": {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": [{"type": "token", "token": "<|end|>"}, "</a>"]}}
    assert parse_output(ends, "<a>x<|end|>").well_formed and parse_output(ends, "<a>y</a>").well_formed


def test_an_answer_or_calls_union_reads_the_answer_verbatim():
    # The server's "response_format or tool calls" union: the answer's own
    # tags are part of the answer. Built as a plain dict, a JSON-holding
    # answer tag that named no tool raised ParserConfigError (a 500 after
    # generation).
    from formcast.styles import answer_or_calls

    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    calls = structural_tag_for("qwen_3", tools, "required", reasoning="disabled")
    answer = {"type": "tag", "begin": "<answer>", "content": {"type": "json_schema", "json_schema": {"type": "object"}}, "end": "</answer>"}
    union = answer_or_calls(answer, calls)
    out = parse_output(union, '<answer>{"a": 1}</answer>')
    assert out.well_formed and out.content == '<answer>{"a": 1}</answer>' and out.tool_calls == []
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    out = parse_output(union, call)
    assert out.well_formed and out.content == "" and [(c.name, c.arguments) for c in out.tool_calls] == [("get_weather", '{"city": "Oslo"}')]
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256]))
    m = fc.GrammarMatcher(compiler.compile_structural_tag(union))
    assert m.accept_string(call) and m.can_terminate()
    # As a plain dict (roles guessed from the tools): no error; the answer tag is read as syntax.
    plain = {"type": "structural_tag", "format": {"type": "or", "elements": [answer, calls["format"]]}}
    assert parse_output(plain, '<answer>{"a": 1}</answer>', tools=tools).content == '{"a": 1}'
    with pytest.raises(ParserConfigError, match="pass tools="):
        parse_output(plain, "x")
