"""Every example and recipe of the structural-tag usage guides, as tests.

Sources (``/work/shared/spec``): ``structural-tag-guide.txt`` ("guide:N")
and ``structural-tag-reference.txt`` ("ref:N"), N = the line where the
example's JSON starts (or the documented output line). Each entry of
``EXAMPLES`` is the documented format, the outputs the documentation says it
accepts (plus the obvious ones of its prose) and near-misses it must refuse:
wrong function name, missing end, text after ``stop_after_first``, leading
text with ``at_least_one``, content containing the end string, broken
arguments. Accepted outputs are checked twice: as a string through a matcher
that must then be able to terminate, and token by token through the
vocabulary mask (each token of a tokenization must be allowed when it is
generated), so the output is not only recognized but can be generated.

Where the documentation writes ``"json_schema": ...`` the examples use
``PERSON`` (the ``{"name": "John", "age": 30}`` of its sample outputs).
Token strings of the documentation (``<|tool_call|>``, ``</s>``...) do not
exist in real vocabularies; ``TOKEN_NAMES`` maps each to a real Llama-3
special token, and the documented JSON is rewritten through it.

``NOT_EXAMPLES`` lists every other JSON block of the two files (field
templates with ``...``, the request envelope) with what covers it;
``test_every_example_of_the_spec_is_listed`` checks that the two lists
together name every JSON block of the spec files, so a new example in the
spec fails here until it is added.

Four documented examples are not valid as written (``tag_and_text``,
``const_string.text``, ``token_dispatch.cases``, and a ``tags_with_separator``
whose sample outputs name a function it does not declare); ``REFUSED`` checks
that the literal text is refused with an error naming the field, and the
corrected form is an ordinary entry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import pytest

import formcast as fc
from tokenwalk import can_stop, greedy_tokens, walk

SPEC = Path(__file__).resolve().parent.parent.parent / "shared" / "spec"

# ------------------------------------------------------------ vocabulary --

# Documented token string -> a real Llama-3 special token.
TOKEN_NAMES = {
    "<|tool_call|>": "<|python_tag|>",
    "<|end|>": "<|eom_id|>",
    # Not Llama-3's stop tokens: a stop token ends generation wherever the
    # format may end, which would hide whether an exclusion works.
    "</s>": "<|reserved_special_token_2|>",
    "<|eos|>": "<|reserved_special_token_3|>",
    "<|tool|>": "<|python_tag|>",
    "<|tool_call_start|>": "<|python_tag|>",
    "<|tool_call_end|>": "<|eom_id|>",
    "<|think_start|>": "<|reserved_special_token_0|>",
    "<|think_end|>": "<|reserved_special_token_1|>",
}


@dataclass(frozen=True)
class T:
    """A step that is one token, by documented name (see TOKEN_NAMES) or id."""

    ref: Union[str, int]


@dataclass(frozen=True)
class Spelled:
    """A step that is the *text* of a documented token (not the token)."""

    ref: str


@dataclass(frozen=True)
class Tokens:
    """A step that is text fed as tokens (a tokenization of it), for
    token-level regions: a string never satisfies a token-level element."""

    text: str


Step = Union[str, int, T, Spelled, Tokens]
Output = Union[str, tuple]  # a string, or a tuple of steps


def _tok(ref: Any) -> Any:
    return TOKEN_NAMES.get(ref, ref) if isinstance(ref, str) else ref


def _real(fmt: Any) -> Any:
    """The documented format with token strings (in token positions only)
    renamed to real ones."""
    if isinstance(fmt, (list, tuple)):
        return [_real(v) for v in fmt]
    if not isinstance(fmt, dict):
        return fmt
    out = {k: _real(v) for k, v in fmt.items()}
    t = fmt.get("type")
    if t == "token":
        out["token"] = _tok(fmt["token"])
    for key in ("exclude_tokens", "trigger_tokens"):
        if key in fmt:
            out[key] = [_tok(r) for r in fmt[key]]
    if t == "token_dispatch" and "rules" in fmt:
        out["rules"] = [[_tok(r[0]), _real(r[1])] for r in fmt["rules"]]
    return out


@pytest.fixture(scope="module")
def compiler(llama3) -> fc.GrammarCompiler:
    return fc.GrammarCompiler(llama3)


def _id(tok: fc.TokenizerInfo, ref: Union[str, int]) -> int:
    if isinstance(ref, int):
        return ref
    i = tok.token_id(TOKEN_NAMES.get(ref, ref))
    assert i is not None, ref
    return i


def _steps(output: Output) -> tuple:
    return (output,) if isinstance(output, str) else output


def accepts(compiled, tok, output: Output) -> bool:
    """The output is accepted by accept_string/accept_token and complete."""
    m = fc.GrammarMatcher(compiled)
    for s in _steps(output):
        if isinstance(s, Spelled):
            s = TOKEN_NAMES.get(s.ref, s.ref)
        if isinstance(s, str):
            ok = m.accept_string(s)
        elif isinstance(s, Tokens):
            ok = all(m.accept_token(t) for t in greedy_tokens(tok, s.text))
        else:
            ok = m.accept_token(_id(tok, s.ref if isinstance(s, T) else s))
        if not ok:
            return False
    return m.can_terminate()


def assert_generable(compiled, tok, output: Output) -> None:
    """Each token of the output is allowed by the mask when it comes, and a
    stop token is allowed at the end."""
    m = fc.GrammarMatcher(compiled)
    done = ""
    for s in _steps(output):
        if isinstance(s, T) or isinstance(s, int):
            ids = [_id(tok, s.ref if isinstance(s, T) else s)]
        else:
            text = s.text if isinstance(s, Tokens) else TOKEN_NAMES.get(s.ref, s.ref) if isinstance(s, Spelled) else s
            ids = greedy_tokens(tok, text)
        done = walk(m, tok, ids, done)
    assert can_stop(m, tok), "cannot stop at the end"


# --------------------------------------------------------------- schemas --

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
JOHN = '{"name": "John", "age": 30}'
JANE = '{"name": "Jane", "age": 25}'
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIMEZONE = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
LOCATION = {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
ADDRESS = {
    "type": "object",
    "properties": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["street", "city"],
        }
    },
    "required": ["address"],
}
ELLIPSIS = PERSON  # what `"json_schema": ...` stands for


def fn_tag(name: str, schema: Any = ELLIPSIS, typed: bool = False) -> dict:
    """``{"begin": "<function=NAME>", content json_schema, "end": "</function>"}``."""
    t = {"begin": f"<function={name}>", "content": {"type": "json_schema", "json_schema": schema}, "end": "</function>"}
    return {"type": "tag", **t} if typed else t


def call(name: str, args: str = JOHN) -> str:
    return f"<function={name}>{args}</function>"


THINK = {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}

# DeepSeek (ref:684-725); the reference writes the markers with ASCII bars.
DS_CALLS_BEGIN, DS_CALLS_END = "<|tool▁calls▁begin|>", "<|tool▁calls▁end|>"


def ds_tag(n: int) -> dict:
    return {
        "begin": f"<|tool▁call▁begin|>function<|tool▁sep|>function_name_{n}\n```jsonc\n",
        "content": {"type": "json_schema", "json_schema": ELLIPSIS},
        "end": "\n```<|tool▁call▁end|>",
    }


def ds_call(n: int, args: str = JOHN) -> str:
    return f"<|tool▁call▁begin|>function<|tool▁sep|>function_name_{n}\n```jsonc\n{args}\n```<|tool▁call▁end|>"


def ds_section(n_tags: int, *, inner: dict | None = None) -> dict:
    return {
        "begin": DS_CALLS_BEGIN,
        "end": DS_CALLS_END,
        "content": {"type": "tags_with_separator", "separator": "\n", "tags": [ds_tag(i + 1) for i in range(n_tags)], **(inner or {})},
    }


def phi_tag(n: int) -> dict:
    return {
        "begin": f'{{"name": "function_name_{n}", "arguments": ',
        "content": {"type": "json_schema", "json_schema": ELLIPSIS},
        "end": "}",
    }


def qwen_tag(name: str, schema: Any = ELLIPSIS) -> dict:
    return {
        "begin": f'<tool_call>\n{{"name": "{name}", "arguments": ',
        "content": {"type": "json_schema", "json_schema": schema},
        "end": "}\n</tool_call>",
    }


def qwen_call(name: str, args: str = JOHN) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


TOKEN_RECIPE = {  # guide:997 = ref:939
    "type": "sequence",
    "elements": [
        {
            "type": "tag",
            "begin": {"type": "token", "token": "<|think_start|>"},
            "content": {"type": "any_tokens"},
            "end": {"type": "token", "token": "<|think_end|>"},
        },
        {
            "type": "token_triggered_tags",
            "trigger_tokens": ["<|tool_call_start|>"],
            "tags": [
                {
                    "type": "tag",
                    "begin": {"type": "token", "token": "<|tool_call_start|>"},
                    "content": {"type": "json_schema", "json_schema": ELLIPSIS},
                    "end": {"type": "token", "token": "<|tool_call_end|>"},
                }
            ],
            "exclude_tokens": ["<|eos|>"],
            "at_least_one": True,
        },
    ],
}

# ------------------------------------------------------------- examples --


@dataclass
class Example:
    name: str
    where: tuple[str, ...]  # spec lines (example JSON, documented outputs)
    fmt: dict
    accept: list[Output]
    reject: list[Output] = field(default_factory=list)


# Ordinary token ids of Llama-3 used as "any token": "hello" and " world".
HELLO, WORLD = 15339, 1917

EXAMPLES: list[Example] = [
    # ---------------------------------------------------------------- guide
    Example("minimal_tag", ("guide:111", "guide:120"), THINK,
            accept=["<think>...</think>", "<think>Let me reason.</think>", "<think></think>", "<think>a <b> </thin k></think>"],
            reject=["<think>abc",  # missing end
                    "<think>a</think>b</think>",  # content containing the end
                    "<think>abc</think> more", "abc</think>", ""]),
    Example("minimal_triggered_tags", ("guide:126", "guide:150"),
            {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("get_weather", CITY, typed=True)]},
            accept=['I will call a tool now. <function=get_weather>{"city": "San Francisco"}</function>', "", "No call.",
                    '<function=get_weather>{"city": "a"}</function> then text'],
            reject=['I will call <function=get_wether>{"city": "SF"}</function>',  # wrong function name
                    '<function=get_weather>{"city": "SF"}',  # missing end
                    '<function=get_weather>{"city": SF}</function>',  # broken JSON
                    "<function=get_weather>{}</function>",  # missing required argument
                    "text ends in a trigger <function="]),
    Example("const_string", ("guide:174",), {"type": "const_string", "value": "Let's think step by step."},
            accept=["Let's think step by step."],
            reject=["Let's think step by step", "Let's think step by step. More", ""]),
    Example("json_schema", ("guide:213",),
            {"type": "json_schema", "json_schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}},
            accept=['{"name": "Bob", "age": 30}', '{"name":"Bob","age":30}', '{\n  "name": "Bob",\n  "age": -1\n}'],
            reject=['{"name": "Bob"}', '{"name": "Bob", "age": "30"}', '{"name": "Bob", "age": 3.5}',
                    '{"name": "Bob", "age": 30, "extra": 1}', '{"name": "Bob", "age": 30} tail']),
    Example("json_schema_qwen_xml", ("guide:227",),
            {"type": "json_schema", "json_schema": LOCATION, "style": "qwen_xml"},
            accept=["<parameter=location>Paris</parameter>", "<parameter=location>\nSan Francisco, CA\n</parameter>",
                    "\n<parameter=location>a \"raw\" & <b></parameter>\n"],
            reject=['{"location": "Paris"}', "<parameter=city>Paris</parameter>", "<parameter=location>Paris",
                    "<parameter=location>a</parameter>b</parameter>"]),
    Example("grammar", ("guide:257",), {"type": "grammar", "grammar": 'root ::= ("yes" | "no")'},
            accept=["yes", "no"], reject=["maybe", "yesno", "Yes", ""]),
    Example("regex", ("guide:282",), {"type": "regex", "pattern": "[A-Z]{3}-[0-9]{4}"},
            accept=["ABC-1234", "XYZ-0000"], reject=["AB-1234", "ABC-12345", "abc-1234", "ABC1234"]),
    Example("any_text_excludes", ("guide:307",), {"type": "any_text", "excludes": ["<function="]},
            accept=["", "Plain text, even <function but no trigger", "</function> is fine", "ends with <function"],
            reject=["call <function=f> now", "<function="]),
    Example("sequence", ("guide:334",),
            {"type": "sequence", "elements": [{"type": "const_string", "value": "Answer: "}, {"type": "json_schema", "json_schema": {"type": "object"}}]},
            accept=['Answer: {"a": 1}', "Answer: {}", 'Answer: {"nested": {"x": [1, 2]}}'],
            reject=['{"a": 1}', "Answer: [1]", "Answer:{}", "Answer: "]),
    Example("or", ("guide:368",),
            {"type": "or", "elements": [{"type": "const_string", "value": "yes"}, {"type": "const_string", "value": "no"}]},
            accept=["yes", "no"], reject=["yesno", "", "y"]),
    Example("optional", ("guide:400", "ref:331", "ref:340"),
            {"type": "optional", "content": {"type": "const_string", "value": "Optional prefix: "}},
            accept=["", "Optional prefix: "], reject=["Optional prefix:", "x", "Optional prefix: Optional prefix: "]),
    Example("plus", ("guide:426", "ref:358", "ref:367"),
            {"type": "plus", "content": {"type": "const_string", "value": "item"}},
            accept=["item", "itemitem", "itemitemitem", "item" * 10], reject=["", "ite", "itemx", "item item"]),
    Example("star", ("guide:452", "ref:385", "ref:394"),
            {"type": "star", "content": {"type": "const_string", "value": "x"}},
            accept=["", "x", "xx", "xxx", "x" * 20], reject=["y", "xy", " x"]),
    Example("repeat_1_3", ("guide:490", "ref:406", "ref:417"),
            {"type": "repeat", "min": 1, "max": 3, "content": {"type": "const_string", "value": "item"}},
            accept=["item", "itemitem", "itemitemitem"], reject=["", "itemitemitemitem", "itemite"]),
    Example("tag_two_ends", ("guide:532",),
            {"type": "tag", "begin": "<response>", "content": {"type": "json_schema", "json_schema": {"type": "object"}}, "end": ["</response>", "</answer>"]},
            accept=['<response>{"a": 1}</response>', "<response>{}</answer>"],
            reject=["<response>{}",  # missing end
                    "<response>{}</respons>", "<answer>{}</answer>", "<response>[]</response>", "<response>{}</response></answer>"]),
    Example("triggered_tags_two_tools", ("guide:594",),
            {"type": "triggered_tags", "triggers": ["<function="],
             "tags": [fn_tag("get_weather", CITY, typed=True), fn_tag("get_time", TIMEZONE, typed=True)],
             "at_least_one": False, "stop_after_first": False},
            accept=["", "text only",
                    'Weather: <function=get_weather>{"city": "Paris"}</function> and time: <function=get_time>{"timezone": "UTC"}</function>.',
                    '<function=get_time>{"timezone": "UTC"}</function><function=get_time>{"timezone": "CET"}</function>',
                    "a partial trigger <functi"],
            reject=['<function=get_date>{"timezone": "UTC"}</function>',  # wrong function name
                    '<function=get_time>{"city": "Paris"}</function>',  # the other tool's arguments
                    '<function=get_time>{"timezone": "UTC"}',  # missing end
                    "text <function="]),
    Example("tags_with_separator", ("guide:675",),
            {"type": "tags_with_separator",
             "tags": [{"type": "tag", "begin": "<item>", "content": {"type": "json_schema", "json_schema": {"type": "object"}}, "end": "</item>"}],
             "separator": ",", "at_least_one": False, "stop_after_first": False},
            accept=["", "<item>{}</item>", '<item>{"a": 1}</item>,<item>{}</item>', ",".join(["<item>{}</item>"] * 4)],
            reject=["x<item>{}</item>", "<item>{}</item> x",  # no text around the tags
                    "<item>{}</item><item>{}</item>",  # missing separator
                    "<item>{}</item>,", "<item>{}", "<item>[]</item>"]),
    Example("dispatch", ("guide:723",),
            {"type": "dispatch", "rules": [["<function=func1>", {"type": "json_schema", "json_schema": ELLIPSIS}],
                                           ["<function=func2>", {"type": "json_schema", "json_schema": ELLIPSIS}]],
             "loop": True, "excludes": ["</end>"]},
            accept=["", "just text", f"text <function=func1>{JOHN} more <function=func2>{JANE} end", f"<function=func2>{JANE}"],
            reject=["a </end> b",  # excluded
                    '<function=func1>{"name": "John"}',  # arguments miss "age"
                    "<function=func1>"]),
    Example("dispatch_in_tag", ("guide:735", "guide:750"),
            {"type": "tag", "begin": "<response>",
             "content": {"type": "dispatch", "rules": [["<function=func1>", {"type": "json_schema", "json_schema": ELLIPSIS}],
                                                      ["<function=func2>", {"type": "json_schema", "json_schema": ELLIPSIS}]],
                         "loop": True, "excludes": ["</response>"]},
             "end": "</response>"},
            accept=["<response></response>", f"<response>Calling <function=func1>{JOHN} and <function=func2>{JANE} done</response>",
                    f"<response><function=func1>{JOHN}</response>"],
            reject=["<response>a</response>b</response>",  # content containing the end
                    "<response>a",  # missing end
                    f"<response><function=func1>{JOHN}</response> after"]),
    Example("token_by_id", ("guide:772", "ref:500"), {"type": "token", "token": 42},
            accept=[(T(42),)], reject=[(T(43),), (T(42), T(42)), ()]),
    Example("token_by_string", ("guide:773", "ref:501"), {"type": "token", "token": "<|tool_call|>"},
            accept=[(T("<|tool_call|>"),)],
            reject=[(Spelled("<|tool_call|>"),),  # its text is not the token
                    (T("<|end|>"),), ()]),
    Example("exclude_token", ("guide:795", "ref:511"), {"type": "exclude_token", "exclude_tokens": [42, "</s>"]},
            accept=[(T(43),), (T(HELLO),), (T("<|tool_call|>"),)],
            reject=[(T(42),), (T("</s>"),), (), (T(43), T(43))]),
    Example("any_tokens_excluding_eos", ("guide:817",), {"type": "any_tokens", "exclude_tokens": ["<|eos|>"]},
            accept=[(), (T(HELLO), T(WORLD)), (T("<|tool_call|>"), T(42)), (Tokens("some text"),)],
            reject=[(T("<|eos|>"),), (T(HELLO), T("<|eos|>")),
                    "some text"]),  # token-level: text given as a string does not match
    Example("token_triggered_tags", ("guide:869",),
            {"type": "token_triggered_tags", "trigger_tokens": ["<|tool_call_start|>"],
             "tags": [{"type": "tag", "begin": {"type": "token", "token": "<|tool_call_start|>"},
                       "content": {"type": "json_schema", "json_schema": {"type": "object"}},
                       "end": {"type": "token", "token": "<|tool_call_end|>"}}],
             "exclude_tokens": ["<|eos|>"], "at_least_one": False, "stop_after_first": False},
            accept=[(), (Tokens("free text"),), (Tokens("text "), T("<|tool_call_start|>"), '{"a": 1}', T("<|tool_call_end|>"), Tokens(" more")),
                    (T("<|tool_call_start|>"), "{}", T("<|tool_call_end|>"), T("<|tool_call_start|>"), "{}", T("<|tool_call_end|>"))],
            reject=[(T("<|tool_call_start|>"), "{}"),  # missing end
                    (T("<|tool_call_start|>"), "[1]", T("<|tool_call_end|>")),  # not an object
                    ("text", T("<|eos|>")),  # excluded token
                    (T("<|tool_call_start|>"), "{}", Spelled("<|tool_call_end|>"))]),  # the end's text is not the end token
    Example("token_dispatch", ("guide:920",),
            {"type": "token_dispatch",
             "rules": [[100, {"type": "const_string", "value": "x"}], ["<|tool|>", {"type": "json_schema", "json_schema": ELLIPSIS}]],
             "loop": True, "exclude_tokens": ["</s>"]},
            accept=[(), (T(HELLO), T(100), "x", T(WORLD), T("<|tool|>"), JOHN), (T("<|tool|>"), JANE, T(100), "x")],
            reject=[(T(100), "y"), (T(HELLO), T("</s>")), (T("<|tool|>"), "{}")]),
    Example("recipe_force_exactly_one_call", ("guide:936",),
            {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1", typed=True), fn_tag("func2", typed=True)],
             "at_least_one": True, "stop_after_first": True},
            accept=[call("func1"), call("func2", JANE)],
            reject=["", "text only",
                    "Sure: " + call("func1"),  # leading text with at_least_one
                    call("func1") + " done",  # text after stop_after_first
                    call("func1") + call("func2"),  # a second call
                    call("func3"),  # wrong function name
                    f"<function=func1>{JOHN}"]),  # missing end
    Example("recipe_reasoning_text_and_calls", ("guide:963",),
            {"type": "sequence", "elements": [THINK, {"type": "triggered_tags", "triggers": ["<function="],
                                                      "tags": [fn_tag("func1", typed=True), fn_tag("func2", typed=True)]}]},
            accept=["<think>plan</think>", "<think>plan</think>Sure. " + call("func1") + " Then " + call("func2", JANE) + " done."],
            reject=["Sure. " + call("func1"),  # reasoning is forced
                    "<think>plan" + call("func1"),  # the reasoning never ends
                    "<think></think>" + call("func3"),  # wrong function name
                    "<think></think>" + f"<function=func1>{JOHN}"]),  # missing end
    Example("recipe_token_level_delimiters", ("guide:997", "ref:939"), TOKEN_RECIPE,
            accept=[(T("<|think_start|>"), T(HELLO), T(WORLD), T("<|think_end|>"), T("<|tool_call_start|>"), JOHN, T("<|tool_call_end|>")),
                    (T("<|think_start|>"), T("<|think_end|>"), T("<|tool_call_start|>"), JOHN, T("<|tool_call_end|>"), Tokens(" text "),
                     T("<|tool_call_start|>"), JANE, T("<|tool_call_end|>"))],
            reject=[(T("<|tool_call_start|>"), JOHN, T("<|tool_call_end|>")),  # the think block is required
                    (T("<|think_start|>"), T("<|think_end|>")),  # at_least_one: no call
                    (T("<|think_start|>"), T("<|think_end|>"), Tokens("Sure"), T("<|tool_call_start|>"), JOHN, T("<|tool_call_end|>")),  # leading text
                    (T("<|think_start|>"), T("<|think_end|>"), T("<|tool_call_start|>"), JOHN),  # missing end
                    (T("<|think_start|>"), T("<|think_end|>"), T("<|tool_call_start|>"), JOHN, T("<|tool_call_end|>"), T("<|eos|>")),
                    (T("<|think_start|>"), Spelled("<|think_end|>"), T("<|tool_call_start|>"), JOHN, T("<|tool_call_end|>"))]),
    # ------------------------------------------------------------ reference
    Example("tag_token_begin_end", ("ref:157",),
            {"type": "tag", "begin": {"type": "token", "token": "<|tool_call|>"},
             "content": {"type": "json_schema", "json_schema": ELLIPSIS}, "end": {"type": "token", "token": "<|end|>"}},
            accept=[(T("<|tool_call|>"), JOHN, T("<|end|>"))],
            reject=[(Spelled("<|tool_call|>"), JOHN, T("<|end|>")), (T("<|tool_call|>"), JOHN), (T("<|tool_call|>"), JOHN, T("<|eos|>")),
                    (T("<|tool_call|>"), '{"name": "John"}', T("<|end|>"))]),
    Example("tag_any_text_excludes_empty_begin", ("ref:176", "ref:187"),
            {"type": "tag", "begin": "", "content": {"type": "any_text", "excludes": ["<tool_call>"]}, "end": "</think>"},
            accept=["reasoning</think>", "</think>", "a <tool_cal b</think>"],
            reject=["a <tool_call> b</think>",  # excluded
                    "a</think>b</think>",  # content containing the end
                    "reasoning"]),  # missing end
    Example("triggered_tags_func1_func2", ("ref:224", "ref:252", "ref:253", "ref:254"),
            {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1"), fn_tag("func2")],
             "at_least_one": False, "stop_after_first": False},
            accept=[call("func1"), call("func2", JANE), "any_text" + call("func1") + "any_text1" + call("func2", JANE) + "any_text2"],
            reject=[call("func3"), "any_text" + f"<function=func1>{JOHN}", f"<function=func1>{JOHN}</function", call("func1", '{"name": "John", "age": "30"}')]),
    Example("tags_with_separator_as_documented", ("ref:285", "ref:306"),
            {"type": "tags_with_separator", "tags": [{"type": "tag", **fn_tag("func1")}], "separator": ",", "at_least_one": False, "stop_after_first": False},
            accept=["", call("func1"), call("func1") + "," + call("func1", JANE)],
            # ref:307-308 show func2, which this tag does not declare: refused as written
            # (the corrected example below declares it).
            reject=[call("func1") + "," + call("func2", JANE), call("func1") + call("func1"), "x" + call("func1")]),
    Example("tags_with_separator_corrected", ("ref:307", "ref:308"),
            {"type": "tags_with_separator", "tags": [{"type": "tag", **fn_tag("func1")}, {"type": "tag", **fn_tag("func2")}],
             "separator": ",", "at_least_one": False, "stop_after_first": False},
            accept=["", call("func1"), call("func1") + "," + call("func2", JANE), call("func1") + "," + call("func2", JANE) + "," + call("func1")],
            reject=[call("func1") + ", " + call("func2", JANE), call("func1") + ",", call("func3")]),
    Example("repeat_at_least_2", ("ref:421", "ref:432"),
            {"type": "repeat", "min": 2, "max": -1, "content": {"type": "const_string", "value": "x"}},
            accept=["xx", "xxx", "xxxx", "x" * 30], reject=["", "x", "xxy"]),
    Example("qwen_xml_parameter", ("ref:450", "ref:462", "ref:463", "ref:464", "ref:465"),
            {"type": "qwen_xml_parameter", "json_schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}},
            accept=["<parameter=name>Bob</parameter><parameter=age>\t100\n</parameter>",
                    "<parameter=name>Bob</parameter>\t\n<parameter=age>\t100\n</parameter>",
                    "<parameter=name>Bob</parameter><parameter=age>100</parameter>",
                    '<parameter=name>"Bob&lt;"</parameter><parameter=age>100</parameter>'],
            reject=['{"name": "Bob", "age": 100}',
                    "<parameter=name>Bob</parameter>",  # missing age
                    "<parameter=name>Bob</parameter><parameter=age>abc</parameter>",
                    "<parameter=name>Bob</parameter><parameter=age>100</parameter><parameter=x>1</parameter>"]),
    Example("qwen_xml_parameter_nested_object", ("ref:470", "ref:488", "ref:489", "ref:494"),
            {"type": "qwen_xml_parameter", "json_schema": ADDRESS},
            accept=['<parameter=address>{"street": "Main St", "city": "New York"}</parameter>',
                    '<parameter=address>{"street": "Main St", "city": "No more xml escape&<>"}</parameter>'],
            reject=["<parameter=address><parameter=street>Main St</parameter><parameter=city>New York</parameter></parameter>",
                    '<parameter=address>{"street": "Main St"}</parameter>']),
    Example("exclude_token_any", ("ref:510",), {"type": "exclude_token"},
            accept=[(T(42),), (T("<|tool_call|>"),), (T("<|eos|>"),)], reject=[(), (T(42), T(43))]),
    Example("any_tokens_unrestricted", ("ref:520",), {"type": "any_tokens"},
            accept=[(), (T(42), T(43), T("<|tool_call|>"), T("</s>"))], reject=[]),
    Example("any_tokens_excluding_ids", ("ref:521",), {"type": "any_tokens", "exclude_tokens": [42, "</s>"]},
            accept=[(), (T(43), T(HELLO))], reject=[(T(42),), (T(43), T("</s>"))]),
    Example("token_triggered_tags_ids", ("ref:532",),
            {"type": "token_triggered_tags", "trigger_tokens": [100, "<|tool_call|>"],
             "tags": [{"begin": {"type": "token", "token": 100}, "content": {"type": "json_schema", "json_schema": ELLIPSIS},
                       "end": {"type": "token", "token": 101}}],
             "exclude_tokens": ["</s>"], "at_least_one": False, "stop_after_first": False},
            accept=[(), (T(HELLO), T(100), JOHN, T(101), T(WORLD)), (T(100), JOHN, T(101), T(100), JANE, T(101))],
            reject=[(T(100), JOHN), (T(100), '{"age": 1}', T(101)), (T(HELLO), T("</s>"))]),
    Example("dispatch_then_end_string", ("ref:564",),
            {"type": "sequence", "elements": [
                {"type": "dispatch", "rules": [["<function=func1>", {"type": "json_schema", "json_schema": ELLIPSIS}]], "excludes": ["abc"]},
                {"type": "const_string", "value": "abc"}]},
            accept=["abc", "free text abc", f"x <function=func1>{JOHN} y abc"],
            reject=["free text",  # the end string never comes
                    "ab abc abc",  # text after the end
                    f"<function=func1>{{}} abc"]),
    Example("llama_json_calls", ("ref:602", "ref:606"),
            {"type": "triggered_tags", "triggers": ['{"name":'],
             "tags": [{"begin": '{"name": "func1", "parameters": ', "content": {"type": "json_schema", "json_schema": ELLIPSIS}, "end": "}"},
                      {"begin": '{"name": "func2", "parameters": ', "content": {"type": "json_schema", "json_schema": ELLIPSIS}, "end": "}"}]},
            accept=['{"name": "func1", "parameters": ' + JOHN + "}", 'Let me call {"name": "func2", "parameters": ' + JANE + "} ok"],
            reject=['{"name": "func3", "parameters": ' + JOHN + "}", '{"name": "func1", "parameters": ' + JOHN,
                    '{"name": "func1", "arguments": ' + JOHN + "}"]),
    Example("llama_custom_calls", ("ref:628", "ref:632"),
            {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1"), fn_tag("func2")]},
            accept=[call("func1"), "x " + call("func2", JANE) + " y"],
            reject=[call("function_name"), f"<function=func1>{JOHN}"]),
    Example("qwen_hermes_calls", ("ref:654", "ref:655", "ref:660"),
            {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [qwen_tag("get_current_temperature", LOCATION), qwen_tag("func2")]},
            accept=['<tool_call>\n{"name": "get_current_temperature", "arguments": {"location": "San Francisco, CA, USA"}}\n</tool_call>',
                    "Sure. " + qwen_call("func2") + "\n" + qwen_call("func2", JANE)],
            reject=['<tool_call>{"name": "func2", "arguments": ' + JOHN + "}\n</tool_call>",  # newline after the trigger
                    qwen_call("get_current_temp", '{"location": "x"}'),
                    '<tool_call>\n{"name": "func2", "arguments": ' + JOHN + "}\n",  # missing end
                    qwen_call("get_current_temperature", JOHN)]),
    Example("deepseek_calls", ("ref:684", "ref:686", "ref:690", "ref:695"),
            {"type": "triggered_tags", "triggers": [DS_CALLS_BEGIN], "tags": [ds_section(2)], "stop_after_first": True},
            accept=[DS_CALLS_BEGIN + ds_call(1) + DS_CALLS_END, "Sure." + DS_CALLS_BEGIN + ds_call(1) + "\n" + ds_call(2, JANE) + DS_CALLS_END, "No call."],
            reject=[DS_CALLS_BEGIN + ds_call(1),  # missing end
                    DS_CALLS_BEGIN + ds_call(1) + ds_call(2) + DS_CALLS_END,  # missing separator
                    DS_CALLS_BEGIN + ds_call(1) + DS_CALLS_END + " more",  # text after stop_after_first
                    DS_CALLS_BEGIN + ds_call(3) + DS_CALLS_END]),  # wrong function name
            # (an empty section is accepted: the inner tags_with_separator has no at_least_one)
    Example("phi4_mini_calls", ("ref:731", "ref:735"),
            {"type": "triggered_tags", "triggers": ["<|tool_call|>"],
             "tags": [{"begin": "<|tool_call|>[", "end": "]<|/tool_call|>",
                       "content": {"type": "tags_with_separator", "separator": ", ", "tags": [phi_tag(1), phi_tag(2)]}}],
             "stop_after_first": True},
            accept=['<|tool_call|>[{"name": "function_name_1", "arguments": ' + JOHN + '}, {"name": "function_name_2", "arguments": ' + JANE + "}]<|/tool_call|>",
                    'ok <|tool_call|>[{"name": "function_name_2", "arguments": ' + JOHN + "}]<|/tool_call|>"],
            reject=['<|tool_call|>[{"name": "function_name_1", "arguments": ' + JOHN + "}<|/tool_call|>",  # missing ]
                    '<|tool_call|>[{"name": "function_name_1", "arguments": ' + JOHN + '},{"name": "function_name_2", "arguments": ' + JANE + "}]<|/tool_call|>",
                    '<|tool_call|>[{"name": "function_name_1", "arguments": ' + JOHN + "}]<|/tool_call|> more",  # text after stop_after_first
                    '<|tool_call|>[{"name": "function_name_3", "arguments": ' + JOHN + "}]<|/tool_call|>"]),
    Example("force_think", ("ref:772", "ref:776"),
            {"type": "sequence", "elements": [THINK, {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1"), fn_tag("func2")]}]},
            accept=["<think> any_text </think> any_text " + call("func1") + " any_text", "<think>x</think>"],
            reject=["any_text " + call("func1"), "<think>x</think>" + call("func9")]),
    Example("think_then_exactly_one_call", ("ref:813", "ref:817"),
            {"type": "sequence", "elements": [THINK, {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1"), fn_tag("func2")],
                                                      "stop_after_first": True, "at_least_one": True}]},
            accept=["<think> any_text </think>" + call("func1"), "<think></think>" + call("func2", JANE)],
            reject=["<think>x</think> " + call("func1"),  # leading text with at_least_one
                    "<think>x</think>" + call("func1") + " bye",  # text after stop_after_first
                    "<think>x</think>" + call("func1") + call("func2"),
                    "<think>x</think>",  # no call
                    "<think>x</think>" + call("func3")]),
    Example("think_then_deepseek_call_corrected", ("ref:856",),
            {"type": "sequence", "elements": [THINK, {"type": "triggered_tags", "triggers": [DS_CALLS_BEGIN],
                                                      "tags": [ds_section(2, inner={"at_least_one": True, "stop_after_first": True})],
                                                      "stop_after_first": True}]},
            # The outer triggered_tags has no at_least_one, so (despite the
            # prose's "must") a text-only answer is accepted.
            accept=["<think>r</think>Calling." + DS_CALLS_BEGIN + ds_call(2, JANE) + DS_CALLS_END, "<think>r</think>text only"],
            reject=["<think>r</think>" + DS_CALLS_BEGIN + ds_call(1) + "\n" + ds_call(2) + DS_CALLS_END,  # inner stop_after_first
                    "<think>r</think>" + DS_CALLS_BEGIN + DS_CALLS_END,  # inner at_least_one
                    "<think>r</think>" + DS_CALLS_BEGIN + ds_call(1) + DS_CALLS_END + "more"]),
    Example("non_thinking_mode_corrected", ("ref:906",),
            {"type": "sequence", "elements": [{"type": "const_string", "value": "<think></think>"},
                                              {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [qwen_tag("func1"), qwen_tag("func2")]}]},
            accept=["<think></think>", "<think></think>Hello " + qwen_call("func1") + " bye"],
            reject=["<think>x</think>Hello", "Hello", "<think></think>" + qwen_call("func3")]),
    Example("tool_choice_required", ("ref:987",),
            {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1"), fn_tag("func2")], "at_least_one": True},
            accept=[call("func1"), call("func1") + " then text " + call("func2", JANE) + " end"],
            reject=["", "text only", "lead " + call("func1"), call("func3")]),
    Example("tool_choice_forced", ("ref:1010",),
            {"type": "tag", "begin": "<function=func1>", "content": {"type": "json_schema", "json_schema": ELLIPSIS}, "end": "</function>"},
            accept=[call("func1")],
            reject=[call("func2"), "x" + call("func1"), call("func1") + "x", f"<function=func1>{JOHN}", ""]),
    Example("parallel_tool_calls_false", ("ref:1030",),
            {"type": "triggered_tags", "triggers": ["<function="], "tags": [fn_tag("func1"), fn_tag("func2")], "stop_after_first": True},
            accept=["", "text", "text " + call("func1"), call("func2", JANE)],
            reject=[call("func1") + call("func2"), call("func1") + " after", "text " + call("func1") + " x " + call("func2")]),
]

# Documented configurations that are not valid as written: the literal text
# must be refused with an error naming the culprit (corrected forms above).
REFUSED = [
    # ref:583: token_dispatch written with "cases" instead of "rules".
    ("ref:583", {"type": "token_dispatch", "cases": [[100, {"type": "const_string", "value": "x"}]], "loop": True, "exclude_tokens": ["</s>"]}, "rules"),
    # ref:856: "tag_and_text" is not a format type.
    ("ref:856", {"type": "sequence", "elements": [THINK, {"type": "tag_and_text", "triggers": [DS_CALLS_BEGIN], "tags": [ds_section(2)], "stop_after_first": True}]},
     "tag_and_text"),
    # ref:906: const_string written with "text" instead of "value".
    ("ref:906", {"type": "sequence", "elements": [{"type": "const_string", "text": "<think></think>"},
                                                 {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [qwen_tag("func1")]}]}, "value"),
]

# Every other JSON block of the two spec files, and what covers it.
NOT_EXAMPLES = {
    "guide:19": "request envelope: every example is compiled as {'type': 'structural_tag', 'format': ...}",
    "ref:19": "request envelope (as guide:19)",
    "ref:43": "const_string template -> guide:174",
    "ref:64": "json_schema template -> guide:213",
    "ref:75": "XML-style json_schema template -> guide:227, ref:450, test_styles_builtin",
    "ref:87": "grammar template -> guide:257",
    "ref:99": "regex template -> guide:282",
    "ref:111": "sequence template -> guide:334",
    "ref:128": "or template -> guide:368",
    "ref:145": "tag template -> guide:111",
    "ref:168": "any_text template -> guide:307",
    "ref:197": "triggered_tags template -> ref:224",
    "ref:265": "tags_with_separator template -> ref:285",
    "ref:321": "optional template -> ref:331",
    "ref:348": "plus template -> ref:358",
    "ref:375": "star template -> ref:385",
    "ref:440": "qwen_xml_parameter template -> ref:450",
}


def _wrap(fmt: dict) -> dict:
    return {"type": "structural_tag", "format": _real(fmt)}


def _cases(kind: str):
    for ex in EXAMPLES:
        for i, out in enumerate(getattr(ex, kind)):
            yield pytest.param(ex, out, id=f"{ex.name}-{kind}{i}")


@pytest.fixture(scope="module")
def compiled(compiler):
    cache: dict[str, Any] = {}

    def get(ex: Example):
        if ex.name not in cache:
            cache[ex.name] = compiler.compile_structural_tag(_wrap(ex.fmt))
        return cache[ex.name]

    return get


@pytest.mark.parametrize(("ex", "output"), list(_cases("accept")))
def test_documented_output_is_accepted_and_generable(ex, output, compiled, llama3):
    g = compiled(ex)
    assert accepts(g, llama3, output), output
    assert_generable(g, llama3, output)


@pytest.mark.parametrize(("ex", "output"), list(_cases("reject")))
def test_near_miss_is_rejected(ex, output, compiled, llama3):
    assert not accepts(compiled(ex), llama3, output), output


@pytest.mark.parametrize(("where", "fmt", "names"), REFUSED, ids=[r[0] for r in REFUSED])
def test_documented_typo_is_refused_with_a_clear_error(where, fmt, names, compiler):
    with pytest.raises(fc.StructuralTagError) as info:
        compiler.compile_structural_tag(_wrap(fmt))
    assert names in str(info.value)


def test_bare_format_and_envelope_compile_alike(compiler, llama3):
    """guide:19 — the ``format`` may be given bare or in the envelope."""
    fmt = _real(EXAMPLES[1].fmt)
    out = EXAMPLES[1].accept[0]
    for tag in (fmt, {"type": "structural_tag", "format": fmt}, json.dumps({"type": "structural_tag", "format": fmt})):
        assert accepts(compiler.compile_structural_tag(tag), llama3, out)


def test_token_names_map_to_special_tokens(llama3):
    for doc, real in TOKEN_NAMES.items():
        assert llama3.token_id(real) in llama3.special_token_ids, (doc, real)


@pytest.mark.skipif(not SPEC.is_dir(), reason="spec files not available")
def test_every_example_of_the_spec_is_listed():
    """Each JSON block of the two spec files is an example above, a refused
    typo, or a template listed in NOT_EXAMPLES."""
    listed = {w for ex in EXAMPLES for w in ex.where} | {r[0] for r in REFUSED} | set(NOT_EXAMPLES)
    missing = []
    for short, name in (("guide", "structural-tag-guide.txt"), ("ref", "structural-tag-reference.txt")):
        for n, line in enumerate((SPEC / name).read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"^ {0,4}\{", line) or line.startswith("format: sequence"):
                if f"{short}:{n}" not in listed:
                    missing.append(f"{short}:{n}: {line.strip()[:60]}")
    assert not missing, "spec examples without a test:\n" + "\n".join(missing)


# ------------------------------------------------ semantics.md examples --
# The structural-tag-semantics.md examples of json_schema.excludes and
# any_text.max_tokens (no guide or reference example uses them).

def test_json_schema_excludes(compiler, llama3):
    """semantics.md: ``{"a": "a bad one"}`` is rejected with ``excludes: ["bad"]``."""
    fmt = {"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, "excludes": ["bad"]}
    g = compiler.compile_structural_tag(_wrap(fmt))
    assert accepts(g, llama3, '{"a": "a good one"}')
    assert not accepts(g, llama3, '{"a": "a bad one"}')


def test_any_text_max_tokens_is_enforced_by_the_mask(compiler, llama3):
    """semantics.md: once ``max_tokens`` is spent the mask only allows
    leaving the region (the enclosing tag's end)."""
    fmt = {"type": "tag", "begin": "<s>", "content": {"type": "any_text", "max_tokens": 2}, "end": "</s>"}
    g = compiler.compile_structural_tag(_wrap(fmt))
    m = fc.GrammarMatcher(g)
    bm = fc.allocate_token_bitmask(1, llama3.logits_size)
    assert m.accept_string("<s>")
    for t in (HELLO, WORLD):
        m.fill_next_token_bitmask(bm)
        assert fc.bitmask_to_bool(bm, llama3.logits_size)[0][t]
        assert m.accept_token(t)
    m.fill_next_token_bitmask(bm)
    allowed = fc.bitmask_to_bool(bm, llama3.logits_size)[0]
    assert not allowed[HELLO] and not allowed[WORLD]
    assert allowed[greedy_tokens(llama3, "</s>")[0]]
