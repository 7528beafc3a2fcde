"""Built-in styles: the structural tags they build, the request validation,
the registry, and that XML arguments are what the engine's grammar accepts."""

from __future__ import annotations

import copy
import json

import pytest

import formcast as fc
from formcast.styles import Style, StyleError, StyleTag, available_styles, register_style, structural_tag_for
from formcast.styles.formats import CallRole, any_text
from formcast.toolcalls import parse_output
from styles_wire import ALL_STYLES, SEARCH, TOOLS, WEATHER, xml_params

SPEC_FAMILIES = {
    "llama", "kimi", "kimi_k3", "deepseek_r1", "deepseek_v3_1", "qwen_3", "qwen_3_5", "qwen_3_coder", "mimo", "harmony",
    "deepseek_v3_2", "deepseek_v4", "deepseek_v4_1", "minimax", "minimax_m3", "glm_4_7", "cohere", "exaone",
}


def test_every_family_of_the_spec_is_registered():
    assert SPEC_FAMILIES <= set(available_styles())
    for s in SPEC_FAMILIES:
        tag = structural_tag_for(s, TOOLS)
        assert tag["type"] == "structural_tag"
        assert json.loads(json.dumps(tag)) == tag  # a plain JSON dict
        assert {r.name for r in tag.roles.values() if isinstance(r, CallRole)} == {"get_weather", "search"}


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(style="gemma_4"), "unknown style 'gemma_4'"),
        (dict(tools=[WEATHER, SEARCH, {"type": "function", "function": {"name": "x", "parameters": {"type": 5}}}]), r"tools\[2\]\.function\.parameters\.type"),
        (dict(tools=[WEATHER, {"type": "function", "function": {"name": "bad name"}}]), r"tools\[1\]\.function\.name"),
        (dict(tools=[WEATHER, {"type": "function"}]), r"tools\[1\]\.name"),
        (dict(tools=[WEATHER, WEATHER]), r"tools\[1\]\.function\.name: duplicate"),
        (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]), r"tools\[0\]\.function\.parameters must describe an object"),
        (dict(tool_choice={"type": "function", "function": {"name": "nope"}}), r"tool_choice names unknown function 'nope'"),
        (dict(tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "search"}}, {"type": "function", "function": {"name": "zz"}}]}}), r"tool_choice\.allowed_tools\.tools\[1\]"),
        (dict(tool_choice="sometimes"), "tool_choice must be"),
        (dict(tools=[], tool_choice="required"), "required"),
        (dict(reasoning="maybe"), "reasoning must be"),
        (dict(builtin_tools=["python"]), "builtin_tools"),
    ],
)
def test_validation_errors_name_the_field(kwargs, field):
    args = {"style": "qwen_3", "tools": TOOLS, **kwargs}
    with pytest.raises(StyleError, match=field):
        structural_tag_for(args.pop("style"), **args)


def test_tool_choice_modes_shape_the_tag():
    auto = structural_tag_for("qwen_3", TOOLS, reasoning="disabled")["format"]
    assert auto["type"] == "triggered_tags" and not auto["at_least_one"] and not auto["stop_after_first"]
    # Required: calls only, joined by the template's separator, which may
    # also end the turn once (no free text anywhere).
    required = structural_tag_for("qwen_3", TOOLS, "required", parallel_tool_calls=False, reasoning="disabled")["format"]
    listed, trailing = required["elements"]
    assert listed["type"] == "tags_with_separator" and listed["separator"] == "\n"
    assert listed["at_least_one"] and listed["stop_after_first"]
    assert trailing == {"type": "optional", "content": {"type": "const_string", "value": "\n"}}
    forced = structural_tag_for("qwen_3", TOOLS, {"type": "function", "function": {"name": "search"}}, reasoning="disabled")["format"]
    assert forced["type"] == "tag" and '"search"' in forced["begin"]
    none = structural_tag_for("qwen_3", TOOLS, "none", reasoning="disabled")["format"]
    assert none == any_text(["<think>", "</think>"])
    allowed = structural_tag_for("qwen_3", TOOLS, {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [{"type": "function", "function": {"name": "search"}}]}}, reasoning="disabled")["format"]
    assert [t["begin"] for t in allowed["elements"][0]["tags"]] == ['<tool_call>\n{"name": "search", "arguments": ']
    assert allowed["elements"][0]["at_least_one"]


def test_strict_false_or_missing_parameters_mean_any_object():
    loose = copy.deepcopy(WEATHER)
    loose["function"]["strict"] = False
    bare = {"type": "function", "function": {"name": "ping"}}
    fmt = structural_tag_for("llama", [loose, bare])["format"]
    assert [t["content"]["json_schema"] for t in fmt["tags"]] == [{"type": "object"}, {"type": "object"}]
    strict = structural_tag_for("llama", [WEATHER])["format"]
    assert strict["tags"][0]["content"]["json_schema"] == WEATHER["function"]["parameters"]


def test_reasoning_modes():
    enabled = structural_tag_for("qwen_3", TOOLS)["format"]["elements"][0]
    assert enabled["elements"][0]["begin"] == "" and enabled["elements"][0]["end"] == "</think>" and enabled["elements"][1]["value"] == "\n\n"
    auto = structural_tag_for("qwen_3", TOOLS, reasoning="auto")["format"]["elements"][0]
    assert auto["type"] == "optional"
    assert structural_tag_for("qwen_3", TOOLS, reasoning="disabled")["format"]["type"] == "triggered_tags"
    assert structural_tag_for("mimo", TOOLS)["format"]["elements"][0]["begin"] == "<think>"
    minimax_off = structural_tag_for("minimax", TOOLS, reasoning=False)["format"]["elements"][0]
    assert [e["value"] for e in minimax_off["elements"]] == ["\n</think>\n\n", "\n\n"]
    assert parse_output("qwen_3", "<think>hm</think>\n\nHi", tools=TOOLS, reasoning="auto").reasoning == "hm"
    assert parse_output("qwen_3", "Hi", tools=TOOLS, reasoning="auto").content == "Hi"


def test_harmony_builtin_tools_and_parallel_off():
    tag = structural_tag_for("harmony", TOOLS, builtin_tools=["python"], parallel_tool_calls=False)
    out = parse_output(tag, "<|channel|>analysis<|message|>plan<|end|><|start|>assistant<|channel|>commentary to=python code<|message|>print(1)<|call|>")
    assert out.well_formed and out.reasoning == "plan"
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("python", "print(1)")]
    two = '<|channel|>commentary to=functions.search<|constrain|>json<|message|>{"query": "a"}<|call|>'
    assert not parse_output(tag, two + "<|start|>assistant" + two).well_formed
    assert parse_output(structural_tag_for("harmony", TOOLS), "").well_formed  # empty output accepted
    with pytest.raises(StyleError, match="builtin_tools"):
        structural_tag_for("mimo", TOOLS, builtin_tools=["python"])


def test_registry_accepts_a_user_style():
    class Plain(Style):
        name = "test_plain_calls"

        def build(self, request, roles):
            return {"type": "triggered_tags", "triggers": ["CALL "], "tags": [roles.mark({"type": "tag", "begin": f"CALL {f.name} ", "content": {"type": "json_schema", "json_schema": f.schema}, "end": "\n"}, CallRole(f.name)) for f in request.functions]}

    register_style(Plain())
    with pytest.raises(StyleError, match="already registered"):
        register_style(Plain())
    out = parse_output("test_plain_calls", 'ok CALL search {"query": "x"}\nbye', tools=TOOLS)
    assert (out.content, out.tool_calls[0].name, out.tool_calls[0].arguments) == ("ok bye", "search", '{"query": "x"}')


def test_style_tag_survives_copies_and_plain_dicts_parse_with_tools():
    tag = structural_tag_for("qwen_3_5", TOOLS)
    assert isinstance(copy.deepcopy(tag), StyleTag) and copy.deepcopy(tag).roles == tag.roles
    text = "r</think>\n\nok<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"
    plain = json.loads(json.dumps(tag))
    a, b = parse_output(tag, text, call_id=str), parse_output(plain, text, tools=TOOLS, call_id=str)
    assert a == b and a.tool_calls[0].arguments == '{"city": "Rome", "days": 2}'


XML_FAMILIES = {
    "qwen_3_5": "qwen_xml", "mimo": "qwen_xml", "minimax": "minimax_xml", "minimax_m3": "minimax_m3_xml", "deepseek_v3_2": "deepseek_xml",
    "deepseek_v4": "deepseek_xml", "deepseek_v4_1": "deepseek_v4_1_xml", "glm_4_7": "glm_xml", "cohere": "cohere_xml", "kimi_k3": "kimi_k3_xml",
}


@pytest.fixture(scope="module")
def byte_compiler() -> fc.GrammarCompiler:
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    return fc.GrammarCompiler(fc.TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256]))


@pytest.mark.parametrize("family", sorted(XML_FAMILIES))
def test_xml_arguments_are_accepted_by_the_engine_grammar(family, byte_compiler):
    """The arguments format each family's tag names, the engine's grammar for
    it, the test writer and the parser all agree."""
    tag = structural_tag_for(family, [WEATHER, SEARCH])
    args_nodes = [n for n in _walk(tag) if n.get("type") == "json_schema"]
    assert {n["style"] for n in args_nodes} == {XML_FAMILIES[family]}
    schema = WEATHER["function"]["parameters"]
    for args in ({"city": "São Paulo <b>"}, {"city": "x", "days": 14}):
        text = xml_params(XML_FAMILIES[family], args)
        m = fc.GrammarMatcher(byte_compiler.compile(fc.Grammar.from_json_schema(schema, style=XML_FAMILIES[family])))
        assert m.accept_string(text) and m.can_terminate(), text
        from formcast.toolcalls.xmlargs import arguments_json

        assert json.loads(arguments_json(XML_FAMILIES[family], text, schema, True)) == args


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


@pytest.mark.skipif(not hasattr(fc.Grammar, "from_structural_tag"), reason="structural-tag compiler not merged yet")
@pytest.mark.parametrize("style", ALL_STYLES)
def test_verified_examples_are_accepted_by_the_compiled_tag(style, byte_compiler):
    from styles_wire import render

    tag = structural_tag_for(style, [WEATHER])
    text = render(style, "reasoning", "Sure.", [("get_weather", {"city": "Paris"})])
    m = fc.GrammarMatcher(byte_compiler.compile(fc.Grammar.from_structural_tag(tag)))
    assert m.accept_string(text) and m.can_terminate()


# ------------------------------------------------------------ style matrix --
# Every built-in style x tool_choice x parallel_tool_calls x reasoning (on /
# off where the style reasons): the spec's example output adapted to the
# mode is accepted by the compiled tag and parsed back exactly (whole and
# streamed in random pieces); malformed variants are rejected by the grammar
# and reported as not well-formed by the parser.

import random
import zlib

from formcast.toolcalls import OutputStreamParser, ToolCallDelta
from styles_wire import DISABLED_PREFIX, SECTION_STYLES, THINK_END, render

REASONING, CONTENT = "Let me check the weather.", "Sure."
W = ("get_weather", {"city": "Paris", "days": 3})
S = ("search", {"query": "rain", "exact": True})
CHOICES = {"auto": "auto", "none": "none", "required": "required", "forced": {"type": "function", "function": {"name": "get_weather"}}}
JSON_ARGS = {"llama", "kimi", "deepseek_r1", "deepseek_v3_1", "qwen_3", "exaone", "harmony"}
# Styles whose free text may not contain their call syntax at all; the
# others accept a call written with tool_choice="none" as plain content.
NONE_REFUSES_CALL_TEXT = {"harmony", "kimi", "kimi_k3", "mimo", "glm_4_7", "deepseek_v4_1", "minimax_m3"}


SCHEMA_FAULTS = {"argument of the wrong type", "missing required argument", "unknown argument"}


def _has_reasoning(style: str) -> bool:
    return style in ("harmony", "kimi_k3") or THINK_END[style] is not None


MATRIX = [
    pytest.param(style, choice, parallel, think, id=f"{style}-{choice}-{'parallel' if parallel else 'single'}-{'think' if think else 'nothink' if think is False else 'noreasoning'}")
    for style in ALL_STYLES
    for choice in CHOICES
    for parallel in (True, False)
    for think in ((True, False) if _has_reasoning(style) else (None,))
]


def _accepts(compiled, text: str) -> bool:
    m = fc.GrammarMatcher(compiled)
    return m.accept_string(text) and m.can_terminate()


def _check_parse(tag, text: str, reasoning: str, content: str, calls: list, seed: int) -> None:
    ids = lambda i: f"call_{i}"  # noqa: E731
    whole = parse_output(tag, text, call_id=ids)
    assert whole.well_formed, text
    assert (whole.reasoning, whole.content) == (reasoning, content), text
    assert [(c.name, json.loads(c.arguments)) for c in whole.tool_calls] == calls, text
    assert all(c.complete for c in whole.tool_calls)
    rng = random.Random(seed)
    for _ in range(1):  # (test_toolcalls_roundtrip streams many more chunkings)
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(1, 12))))
        p = OutputStreamParser(tag, call_id=ids)
        deltas = []
        for a, b in zip([0, *cuts], [*cuts, len(text)]):
            deltas += p.feed(text[a:b])
        deltas += p.finish()
        assert p.result() == whole, (text, cuts)
        for i, c in enumerate(whole.tool_calls):
            mine = [d for d in deltas if isinstance(d, ToolCallDelta) and d.index == i]
            assert (mine[0].id, mine[0].name) == (c.id, c.name)
            assert "".join(d.arguments for d in mine) == c.arguments


# How each family opens a call (harmony: the separator before a call that is
# not the first message).
CALL_OPEN = {
    "llama": '{"name": ', "qwen_3": "<tool_call>", "qwen_3_5": "<tool_call>", "qwen_3_coder": "<tool_call>", "mimo": "<tool_call>",
    "glm_4_7": "<tool_call>", "exaone": "<tool_call>", "kimi": "<|tool_call_begin|>", "deepseek_r1": "<｜tool▁call▁begin｜>",
    "deepseek_v3_1": "<｜tool▁call▁begin｜>", "deepseek_v3_2": "<｜DSML｜invoke", "deepseek_v4": "<｜DSML｜invoke",
    "deepseek_v4_1": "<｜DSML｜ invoke", "minimax": "<invoke", "minimax_m3": "]<]minimax[>[<invoke", "cohere": "<cofl:tool_call ",
    "kimi_k3": "<|open|>call tool=", "harmony": "<|start|>assistant<|channel|>commentary to=functions.",
}


def _between_calls(style: str, text: str, junk: str) -> str:
    """``text`` (at least two calls) with ``junk`` just before the second
    call's opening (after the family's separator, if any)."""
    opener = CALL_OPEN[style]
    first = text.index(opener.replace("<|start|>assistant", "") if style == "harmony" else opener)
    i = text.index(opener, first + 1)
    return text[:i] + junk + text[i:]


@pytest.mark.parametrize("style", ALL_STYLES)
def test_auto_takes_text_around_calls_where_the_family_writes_text(style, byte_compiler):
    # The counterpart of the matrix's required/forced rejections: under
    # "auto", free text may come before and after the calls (harmony and
    # Kimi-K3 write it in their own final / response blocks, covered above).
    tag = structural_tag_for(style, TOOLS, "auto", True, reasoning=True)
    g = byte_compiler.compile_structural_tag(tag)
    reasoning = REASONING if _has_reasoning(style) else ""
    before = render(style, REASONING, CONTENT, [W])
    assert _accepts(g, before)
    _check_parse(tag, before, reasoning, CONTENT, [W], 1)
    if style in ("harmony", "kimi_k3"):
        return
    after = before + " Done."
    assert _accepts(g, after), after
    _check_parse(tag, after, reasoning, CONTENT + " Done.", [W], 2)
    if style not in SECTION_STYLES:  # (a section holds calls only, in every mode)
        between = _between_calls(style, render(style, REASONING, CONTENT, [W, W]), "Then: ")
        assert _accepts(g, between), between
        _check_parse(tag, between, reasoning, CONTENT + "Then: ", [W, W], 3)


@pytest.mark.parametrize(("style", "choice", "parallel", "think"), MATRIX)
def test_style_matrix(style, choice, parallel, think, byte_compiler):
    tag = structural_tag_for(style, TOOLS, CHOICES[choice], parallel, reasoning=think)
    g = byte_compiler.compile_structural_tag(tag)
    seed = zlib.crc32(f"{style}{choice}{parallel}{think}".encode())
    reasoning = REASONING if think else ""
    content = CONTENT if choice in ("auto", "none") else ""

    def out(calls, *, content=content, think=bool(think), choice=choice):
        return render(style, REASONING, content, calls, choice=choice, think=think)

    good: list[list] = []
    if choice in ("auto", "none"):
        good.append([])
    if choice != "none":
        good.append([W])
        if parallel and choice != "forced":
            good.append([S, W, W])
    for calls in good:
        text = out(calls)
        assert _accepts(g, text), text
        _check_parse(tag, text, reasoning, content, calls, seed)

    bad: dict[str, str] = {}
    if choice != "none":
        bad["wrong function name"] = out([W]).replace("get_weather", "get_wether")
        bad["argument of the wrong type"] = out([("get_weather", {"city": "Paris", "days": "soon"})])
        bad["missing required argument"] = out([("get_weather", {"days": 3})])
        bad["unknown argument"] = out([("get_weather", {"city": "Paris", "hours": 3})])
        if style in JSON_ARGS:
            bad["broken JSON arguments"] = out([W]).replace('"Paris"', "Paris")
        if not parallel or choice == "forced":
            bad["second call"] = out([W, W])
        if choice in ("required", "forced"):
            # The turn is calls only (reasoning aside): nothing before,
            # between or after them.
            bad["no call"] = out([])
            if style == "harmony":  # a final-channel message before the call
                bad["text before the call"] = out([W], content="Sure. ", choice="auto")
            else:  # (Kimi-K3: inside its response block, which stays empty)
                bad["text before the call"] = out([W], content="Sure. ")
            bad["text after the call"] = out([W]) + " Done."
            if style == "kimi_k3":
                bad["text after the tools block"] = out([W]).replace("<|close|>tools<|sep|>", "<|close|>tools<|sep|>Done.")
            if choice == "required" and parallel:
                bad["text between the calls"] = _between_calls(style, out([W, W]), "Done.")
        if choice == "forced":
            bad["another tool than the forced one"] = out([S])
    if think is True and style != "harmony":  # harmony's analysis channel is optional
        no_block = out(good[0], think=False)
        bad["reasoning missing"] = no_block[len(DISABLED_PREFIX.get(style, "")):]
    if think is False:
        bad["reasoning while disabled"] = out(good[0], think=True)
    for reason, text in bad.items():
        assert not _accepts(g, text), f"{reason}: {text!r}"
        if reason not in SCHEMA_FAULTS:  # the parser reads structure, it does not validate arguments
            assert not parse_output(tag, text).well_formed, f"{reason}: {text!r}"

    if choice == "none":
        # A call written anyway is refused, or at least read as plain text.
        text = out([W], choice="auto")
        if style in NONE_REFUSES_CALL_TEXT:
            assert not _accepts(g, text), text
        else:
            assert _accepts(g, text), text
            parsed = parse_output(tag, text)
            assert parsed.tool_calls == [] and parsed.well_formed
            assert parsed.content == text[len(out([], choice="auto")) - len(content):]


@pytest.mark.parametrize("style", ALL_STYLES)
def test_tools_without_parameters_take_calls_without_arguments(style, byte_compiler):
    # A tool with no parameters ({"type": "object"}, empty properties or no
    # `parameters` at all) once made cohere/minimax_m3 build a tag their
    # compiler refused (free-form keys), and Qwen3.5/Coder refused the
    # template's "<function=NAME>\n</function>".
    for params in ({"type": "object"}, {"type": "object", "properties": {}}, None):
        fn = {"name": "ping"} if params is None else {"name": "ping", "parameters": params}
        tag = structural_tag_for(style, [{"type": "function", "function": fn}])
        g = byte_compiler.compile_structural_tag(tag)
        text = render(style, REASONING, "", [("ping", {})])
        assert _accepts(g, text), (params, text)
        out = parse_output(tag, text)
        assert out.well_formed and [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == [("ping", {})], text


# What opens a reasoning block the model writes itself (reasoning="auto").
THINK_BEGIN = {"minimax_m3": "<mm:think>", "cohere": "<|START_THINKING|>", "kimi_k3": "<|open|>think<|sep|>", "harmony": "", "mimo": ""}


@pytest.mark.parametrize("style", [s for s in ALL_STYLES if _has_reasoning(s)])
def test_reasoning_auto_takes_a_complete_block_or_none(style, byte_compiler):
    tag = structural_tag_for(style, TOOLS, reasoning="auto")
    g = byte_compiler.compile_structural_tag(tag)
    begin = THINK_BEGIN.get(style, "<think>")
    with_block = begin + render(style, REASONING, CONTENT, [W])
    without = render(style, REASONING, CONTENT, [W], think=False)[len(DISABLED_PREFIX.get(style, "")):]
    if style == "kimi_k3":  # the response block is opened by the model when it may reason
        without = "<|open|>response<|sep|>" + without
    for text, reasoning in ((with_block, REASONING), (without, "")):
        assert _accepts(g, text), text
        _check_parse(tag, text, reasoning, CONTENT, [W], zlib.crc32(text.encode()))
    if begin:
        unclosed = begin + REASONING + without
        assert not _accepts(g, unclosed), unclosed
        assert not parse_output(tag, unclosed).well_formed


# The "verified example" column of model-styles.md, verbatim (line numbers of
# the spec; "…" completed with the common "reasoning</think>Sure." prefix;
# deepseek_v4 is elided mid-call there and kimi_k3 has none: both are covered
# by the matrix above).
VERIFIED = [
    (21, "llama", 'Let me check. {"name": "get_weather", "parameters": {"city": "Paris"}}'),
    (22, "kimi", 'reasoning</think>Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'),
    (24, "deepseek_r1", 'reasoning</think>Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
    (25, "deepseek_v3_1", '…<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
    (26, "qwen_3", 'reasoning</think>\n\nSure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
    (27, "qwen_3_5", "reasoning</think>\n\nSure.<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"),
    (27, "qwen_3_coder", "reasoning</think>\n\nSure.<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"),
    (28, "mimo", "<think>reasoning</think>Sure.<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>"),
    (29, "harmony", '<|channel|>analysis<|message|>reasoning<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{"city": "Paris"}<|call|>'),
    (30, "deepseek_v3_2", 'reasoning</think>Sure.<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'),
    (32, "deepseek_v4_1", '…<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n<｜DSML｜ parameter name="city" string="true">Paris</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>'),
    (33, "minimax", 'reasoning</think>\n\nSure.<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>'),
    (34, "minimax_m3", 'reasoning</mm:think>Sure.]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>'),
    (35, "glm_4_7", "reasoning</think>Sure.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"),
    (36, "cohere", 'reasoning<|END_THINKING|>Sure.<cofl:tool_calls><cofl:tool_call id="0" name="get_weather"><cofl:value name="city" type="raw">Paris</cofl:value></cofl:tool_call></cofl:tool_calls>'),
    (37, "exaone", 'reasoning</think>\n\nSure.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
]


@pytest.mark.parametrize(("line", "style", "text"), VERIFIED, ids=[f"{v[1]}-line{v[0]}" for v in VERIFIED])
def test_spec_verified_example_verbatim(line, style, text, byte_compiler):
    text = text.replace("…", "reasoning</think>Sure.")
    tag = structural_tag_for(style, [WEATHER])
    assert _accepts(byte_compiler.compile_structural_tag(tag), text)
    out = parse_output(tag, text)
    assert out.well_formed
    assert (out.reasoning, out.content) == (("", "Let me check. ") if style == "llama" else ("reasoning", "Sure." if style != "harmony" else ""))
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("style", ["qwen_3", "qwen_3_5", "exaone"])
def test_required_may_end_with_its_newline_separator_once(style, byte_compiler):
    # A model that writes its usual newline after the last call can still
    # stop; the newline is layout, not content. Anything more is refused.
    tag = structural_tag_for(style, TOOLS, "required", reasoning=False)
    g = byte_compiler.compile_structural_tag(tag)
    text = render(style, REASONING, "", [W], choice="required", think=False)
    assert _accepts(g, text + "\n")
    out = parse_output(tag, text + "\n")
    assert out.well_formed and out.content == "" and [c.name for c in out.tool_calls] == ["get_weather"]
    assert not _accepts(g, text + "\n\n") and not parse_output(tag, text + "\n\n").well_formed
