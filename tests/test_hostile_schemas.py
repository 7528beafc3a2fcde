"""The hardening issue's reproducers at the Python API, each in a fresh
interpreter on a thread with a 2 MiB stack (what a server's worker thread
may have): a crash is a failed test here, not the end of the run. Each
schema once killed the process (a stack overflow, or a recursion without
end); now it gives a grammar or a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

import formcast as fc

ROOT = Path(__file__).resolve().parents[1]

RUNNER = textwrap.dedent(
    """
    import json, sys, threading
    import formcast as fc
    case = json.loads(sys.stdin.read())
    out = {}
    def work():
        try:
            if case.get("tools") is not None:
                from formcast.styles import structural_tag_for
                tag = structural_tag_for(case["style"], case["tools"], "auto")
                g = fc.Grammar.from_structural_tag(tag)
            else:
                g = fc.Grammar.from_json_schema(case["schema"], style=case.get("style", "json"))
            compiled = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])).compile(g, timeout_s=60)
            m = fc.GrammarMatcher(compiled)
            out["result"] = "ok"
            if case.get("text") is not None:
                out["accepts"] = m.accept_string(case["text"]) and m.can_terminate()
        except fc.FormcastError as e:
            out["result"] = type(e).__name__ + ": " + str(e)
    threading.stack_size(2 << 20)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    print(json.dumps(out))
    """
)


def run(case: dict) -> dict:
    """Runs `case` in a fresh interpreter; fails the test on a crash."""
    p = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(case), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"the process died (exit status {p.returncode}): {p.stderr[-2000:]}"
    return json.loads(p.stdout)


TREE = {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}}}
WEATHER_TOOL = lambda params: [{"type": "function", "function": {"name": "get_weather", "parameters": params}}]  # noqa: E731


@pytest.mark.parametrize("style", ["cohere_xml", "minimax_m3_xml"])
def test_recursive_schemas_in_element_styles_are_recursive_grammars(style):
    text = {
        "cohere_xml": '<cofl:value name="child" type="dict"><cofl:value name="name" type="raw">a</cofl:value></cofl:value>',
        "minimax_m3_xml": "]<]minimax[>[<child>]<]minimax[>[<name>a]<]minimax[>[</name>]<]minimax[>[</child>",
    }[style]
    assert run({"schema": TREE, "style": style, "text": text}) == {"result": "ok", "accepts": True}


@pytest.mark.parametrize("style", ["cohere", "minimax_m3"])
def test_recursive_tool_parameters_through_the_tool_styles(style):
    assert run({"tools": WEATHER_TOOL(TREE), "style": style})["result"] == "ok"


@pytest.mark.parametrize(
    "schema, expected",
    [
        ({"type": "array", "uniqueItems": True, "maxItems": 1, "items": {"$ref": "#"}}, "GrammarError: unsupported keyword 'uniqueItems'"),
        ({"type": "number", "minimum": 1e-300}, "ok"),
        ({"type": "string", "not": {"const": "é" * 30_000}}, "LimitError"),
        ({"type": "object", "properties": {"é" * 30_000: {"type": "integer"}}, "additionalProperties": True}, "LimitError"),
        ({"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(5000)} | {"d5000": {"type": "string"}}, "$ref": "#/$defs/d0"}, "LimitError"),
        ({"type": "string", "allOf": [{"pattern": "^(?:a{1000}){4}$"}, {"pattern": "^a"}]}, "ok"),
    ],
)
def test_hostile_schemas_get_a_grammar_or_an_error(schema, expected):
    assert run({"schema": schema})["result"].startswith(expected)


def test_bounds_written_with_huge_exponents_are_refused():
    # 1e-99999 as JSON text (a Python float would round it to 0).
    with pytest.raises(fc.GrammarError, match="1000 digits"):
        fc.Grammar.from_json_schema('{"type": "number", "minimum": 1e-99999}')


def test_any_order_is_honoured_or_refused():
    wide = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(12)}}
    with pytest.raises(fc.GrammarError, match="option 'any_order' cannot be honoured at the root: at most 10 declared properties"):
        fc.Grammar.from_json_schema(wide, any_order=True)
    lenient = fc.Grammar.from_json_schema(wide, any_order=True, lenient=True)
    assert any("schema order" in w for w in lenient.warnings)
    # minProperties / maxProperties are counted in any order.
    counted = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
               "minProperties": 2}
    compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)]))
    g = compiler.compile(fc.Grammar.from_json_schema(counted, any_order=True, whitespace="compact"))
    for text, ok in [('{"c":1,"a":2}', True), ('{"b":1}', False), ('{"c":1,"b":2,"a":3}', True)]:
        m = fc.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_terminate()) is ok, text


def test_kimi_k3_escapes_key_attributes_and_accepts_integer_free_form_keys():
    compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)]))

    def accepts(schema, text):
        m = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_json_schema(schema, style="kimi_k3_xml")))
        return m.accept_string(text) and m.can_terminate()

    arg = '<|open|>argument key="{}" type="{}"<|sep|>{}<|close|>argument<|sep|>'.format
    weird = {"type": "object", "properties": {'we"ird&key': {"type": "string"}}}
    assert accepts(weird, arg("we&quot;ird&amp;key", "string", "x"))
    assert not accepts(weird, arg('we"ird&key', "string", "x"))
    assert accepts(True, arg("a", "integer", "1"))
    assert not accepts(True, arg("a", "integer", "1.5"))


def test_uri_template_literals_follow_rfc_6570_with_its_erratum():
    # The hardening issue asked to refuse `'`, as RFC 6570's published text
    # does; its verified erratum 6937 (and the JSON-Schema-Test-Suite) make it
    # a literal, which the RFC's own `'{var}'` example needs.
    compiler = fc.GrammarCompiler(fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)]))
    g = compiler.compile(fc.Grammar.from_json_schema({"type": "string", "format": "uri-template"}))
    for text, ok in [('"/a/{b}"', True), ('"a\'b"', True), ('"a b"', False), ('"a<b"', False)]:
        m = fc.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_terminate()) is ok, text


def _self_intersections(depth: int) -> dict:
    """`{"allOf": [P]}`, P nesting `depth` properties `a` over a level that
    refers to the root in place and in its property; `b` is an integer.
    Other properties are allowed (strict mode would forbid them)."""
    s: dict = {"$ref": "#", "properties": {"a": {"$ref": "#"}}, "additionalProperties": True}
    for _ in range(depth):
        s = {"properties": {"a": s}, "additionalProperties": True}
    s["properties"]["b"] = {"type": "integer"}
    return {"allOf": [s]}


def _nest(depth: int, leaf: dict) -> str:
    v: dict = leaf
    for _ in range(depth):
        v = {"a": v}
    return json.dumps(v)


@pytest.mark.parametrize(
    "text, valid",
    [(_nest(0, {"b": "x"}), False), (_nest(3, {"b": "x"}), True), (_nest(13, {"b": "x"}), False), (_nest(14, {"b": "x"}), True),
     (_nest(26, {"b": "x"}), False), (_nest(26, {"b": 1}), True)],
)
def test_recursive_self_intersections_compile_and_stay_exact(text, valid):
    # The json_schema fuzz target's schema that exhausted memory, reduced:
    # each descent intersected the same subschemas grouped anew, a node per
    # grouping. b must be an integer wherever the root applies again (depth
    # 0, 12, 13, 24, 25, 26...) and is free elsewhere.
    schema = _self_intersections(12)
    assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)) is valid
    assert run({"schema": schema, "text": text}) == {"result": "ok", "accepts": valid}


def test_the_fuzz_schema_that_exhausted_memory_compiles():
    schema = json.loads((ROOT / "crates/formcast-jsonschema/tests/data/fuzz-self-intersections.json").read_text())
    assert run({"schema": schema})["result"] == "ok"
