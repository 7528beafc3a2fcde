"""Grammar.from_json_schema: inputs, options, errors, warnings and caching."""

from __future__ import annotations

import json

import pydantic
import pytest

import formcast as fc


@pytest.fixture(scope="module")
def compiler() -> fc.GrammarCompiler:
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    tok = fc.TokenizerInfo.from_vocab(tokens, special_token_ids=[256], stop_token_ids=[256])
    return fc.GrammarCompiler(tok)


def accepts(compiler: fc.GrammarCompiler, grammar: fc.Grammar, text: str) -> bool:
    m = fc.GrammarMatcher(compiler.compile(grammar))
    return m.accept_string(text) and m.can_terminate()


PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 5}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}


def test_inputs_dict_text_bool_and_pydantic(compiler):
    for schema in (PERSON, json.dumps(PERSON), json.dumps(PERSON).encode()):
        g = fc.Grammar.from_json_schema(schema, whitespace="compact")
        assert accepts(compiler, g, '{"name":"Bob","age":3}')
        assert not accepts(compiler, g, '{"name":"Bobbie"}')
    assert accepts(compiler, fc.Grammar.from_json_schema(True), "[1, {}]")
    with pytest.raises(fc.GrammarError, match="unsatisfiable"):
        fc.Grammar.from_json_schema(False)

    class Item(pydantic.BaseModel):
        name: str
        count: int = 0

    g = fc.Grammar.from_json_schema(Item, whitespace="compact")
    assert accepts(compiler, g, '{"name":"x","count":2}')
    assert not accepts(compiler, g, '{"count":2}')
    with pytest.raises(TypeError):
        fc.Grammar.from_json_schema(3.5)


def test_errors_name_keyword_and_pointer():
    with pytest.raises(fc.GrammarError) as e:
        fc.Grammar.from_json_schema({"properties": {"tags": {"type": "array", "uniqueItems": True}}})
    msg = str(e.value)
    assert "'uniqueItems'" in msg and "/properties/tags" in msg and "not finite" in msg
    with pytest.raises(fc.GrammarError, match="remote"):
        fc.Grammar.from_json_schema({"$ref": "https://example.com/schema.json"})
    with pytest.raises(fc.GrammarError, match="not valid JSON"):
        fc.Grammar.from_json_schema("{nope")


def test_lenient_mode_lists_dropped_keywords(compiler):
    g = fc.Grammar.from_json_schema(
        {"properties": {"tags": {"type": "array", "uniqueItems": True}}}, lenient=True, whitespace="compact"
    )
    assert len(g.warnings) == 1 and "uniqueItems" in g.warnings[0] and "/properties/tags" in g.warnings[0]
    assert accepts(compiler, g, '{"tags":[1,1]}')
    assert fc.Grammar.from_json_schema(PERSON).warnings == ()


def test_whitespace_policies(compiler):
    any_ws = fc.Grammar.from_json_schema(PERSON, max_whitespace=2)
    assert accepts(compiler, any_ws, '{"name": "a",\n "age": 1}')
    assert not accepts(compiler, any_ws, '{"name":      "a"}')  # bounded per gap
    compact = fc.Grammar.from_json_schema(PERSON, whitespace="compact")
    assert not accepts(compiler, compact, '{"name": "a"}')
    value = {"name": "Al", "age": 3}
    for indent, seps in ((2, None), (None, None), (4, (",", ":")), (None, (",", ":"))):
        g = fc.Grammar.from_json_schema(PERSON, indent=indent, separators=seps)
        kw = {"indent": indent} if indent is not None else {}
        if seps is not None:
            kw["separators"] = seps
        assert accepts(compiler, g, json.dumps(value, **kw)), (indent, seps)
    g = fc.Grammar.from_json_schema(PERSON, indent=2)
    assert not accepts(compiler, g, json.dumps(value))


def test_strict_and_any_order(compiler):
    strict = fc.Grammar.from_json_schema(PERSON, whitespace="compact")
    loose = fc.Grammar.from_json_schema(PERSON, whitespace="compact", strict=False)
    assert not accepts(compiler, strict, '{"name":"a","x":1}')
    assert accepts(compiler, loose, '{"name":"a","x":1}')
    ordered = fc.Grammar.from_json_schema(PERSON, whitespace="compact")
    free = fc.Grammar.from_json_schema(PERSON, whitespace="compact", any_order=True)
    assert not accepts(compiler, ordered, '{"age":1,"name":"a"}')
    assert accepts(compiler, free, '{"age":1,"name":"a"}')
    assert not accepts(compiler, free, '{"age":1}')


def test_xml_styles(compiler):
    g = fc.Grammar.from_json_schema(PERSON, style="qwen_xml")
    assert accepts(compiler, g, "<parameter=name>\nBob\n</parameter>\n<parameter=age> 7 </parameter>")
    assert not accepts(compiler, g, "<parameter=age>7</parameter>")
    g = fc.Grammar.from_json_schema(PERSON, style="kimi_k3_xml")
    assert accepts(compiler, g, '<|open|>argument key="name" type="string"<|sep|>Bob<|close|>argument<|sep|>')
    with pytest.raises(ValueError):
        fc.Grammar.from_json_schema(PERSON, style="yaml")


def test_cache_key_covers_schema_and_options(compiler):
    a = fc.Grammar.from_json_schema(PERSON)
    b = fc.Grammar.from_json_schema(dict(PERSON))
    c = fc.Grammar.from_json_schema(PERSON, strict=False)
    d = fc.Grammar.from_json_schema(PERSON, style="qwen_xml")
    assert a._key == b._key
    assert len({a._key, c._key, d._key}) == 3
    assert compiler.compile(a) is compiler.compile(b)
    assert compiler.compile_json_schema(PERSON) is compiler.compile(a)


def test_exact_numbers_and_formats(compiler):
    g = fc.Grammar.from_json_schema({"type": "number", "exclusiveMaximum": 0.3, "minimum": -1}, whitespace="compact")
    for text, ok in (("0.29999", True), ("0.3", False), ("-1", True), ("-1.0001", False)):
        assert accepts(compiler, g, text) == ok, text
    g = fc.Grammar.from_json_schema({"type": "string", "format": "date"})
    assert accepts(compiler, g, '"2024-02-29"') and not accepts(compiler, g, '"2023-02-29"')
    g = fc.Grammar.from_json_schema({"type": "string", "format": "date"}, formats="annotate")
    assert accepts(compiler, g, '"whenever"')
