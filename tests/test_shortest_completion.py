"""GrammarMatcher.find_shortest_completion: the fewest bytes that complete the
output so far — what closes a constrained answer cut off by a token limit.

Every byte prefix of valid documents (the formatter dev sets' gold answers and
a schema with every kind of value) is completed, and the result must be valid
JSON matching the schema, exactly as long as shortest_completion_length says,
and no longer than any other completion we know of (the rest of the document
itself).
"""

from __future__ import annotations

import json
import jsonschema
import pytest

import formcast as fc
from conftest import SHARED

SLOT = SHARED / "data" / "slot"

RICH = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 3},
        "count": {"type": "integer", "minimum": 0},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean"},
        "none": {"type": "null"},
        "kind": {"enum": ["alpha", "beta", "gamma-ray"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "note": {"type": "string"},
    },
    "required": ["name", "count", "ratio", "ok", "none", "kind", "tags", "point", "either"],
    "additionalProperties": False,
}
RICH_DOC = {
    "name": "Zoë «x»",
    "count": 12,
    "ratio": -1.5e3,
    "ok": True,
    "none": None,
    "kind": "gamma-ray",
    "tags": ["a", "b\n", "日本"],
    "point": {"x": 1, "y": 2.5},
    "either": "text",
    "note": "optional",
}


@pytest.fixture(scope="module")
def compiler(smollm2) -> fc.GrammarCompiler:
    return fc.GrammarCompiler(smollm2)


def _cases() -> list[tuple[str, dict, object]]:
    cases = [("rich", RICH, RICH_DOC)]
    for name in ("e2e-dev.jsonl", "webnlg-dev.jsonl"):
        path = SLOT / name
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines()[:4]:
                ex = json.loads(line)
                cases.append((ex["id"], ex["json_schema"], ex["gold_json"]))
    return cases


def _check_all_prefixes(compiler, schema, doc, dumps) -> None:
    compiled = compiler.compile(fc.Grammar.from_json_schema(schema, strict=True))
    data = dumps(doc).encode("utf-8")
    matcher = fc.GrammarMatcher(compiled)
    for k in range(len(data) + 1):
        if k:
            assert matcher.accept_string(data[k - 1 : k])
        n = matcher.shortest_completion_length()
        completion = matcher.find_shortest_completion()
        assert completion is not None and n == len(completion), (data[:k], completion, n)
        # Never longer than the rest of the known document.
        assert len(completion) <= len(data) - k
        value = json.loads((data[:k] + completion).decode("utf-8"))
        jsonschema.validate(value, schema)
        # The matcher did not move, and takes the completion.
        assert matcher.num_rollbackable == k
        assert matcher.accept_string(completion) and matcher.can_terminate()
        matcher.rollback(1)
        # A limit below the shortest length finds nothing.
        if n:
            assert matcher.find_shortest_completion(n - 1) is None


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_every_prefix_completes_to_a_valid_document(compiler, case):
    _, schema, doc = case
    _check_all_prefixes(compiler, schema, doc, lambda v: json.dumps(v, ensure_ascii=False))


def test_pretty_printed_prefixes_complete_too(compiler):
    _check_all_prefixes(compiler, RICH, RICH_DOC, lambda v: json.dumps(v, ensure_ascii=False, indent=2))


def test_known_shortest_completions(compiler):
    compiled = compiler.compile(fc.Grammar.from_json_schema(RICH, strict=True))
    m = fc.GrammarMatcher(compiled)
    full = m.find_shortest_completion()
    value = json.loads(full)
    # Required keys only, with the shortest values their schemas allow.
    assert set(value) == set(RICH["required"])
    assert value["kind"] == "beta" and len(value["name"]) == 3 and len(value["tags"]) == 2
    assert m.accept_string('{"name": "Ab')
    rest = m.find_shortest_completion().decode()
    assert rest.startswith(' "') or rest.startswith('"')  # minLength 3: one more character
    m.reset()
    assert m.accept_string(json.dumps(RICH_DOC, ensure_ascii=False))
    assert m.find_shortest_completion() == b"" and m.shortest_completion_length() == 0


def test_no_text_completion_is_none(compiler, smollm2):
    # A grammar that can only end with a special token.
    eos = smollm2.stop_token_ids[0]
    compiled = compiler.compile(fc.Grammar.from_ebnf(f'root ::= "a" <[{eos}]>'))
    m = fc.GrammarMatcher(compiled)
    assert m.accept_string("a")
    assert m.shortest_completion_length() is None
    assert m.find_shortest_completion() is None


def _ambiguous_nested_tags() -> dict:
    """A structural tag the fuzzer found (tags within tags, seven nested
    unbounded repeats): its shortest completion is 2,330 bytes long, and
    every step's closures visit hundreds of thousands of parser items."""
    tc = "</tool_call>"

    def tws(tag, sep):
        return {"type": "tags_with_separator", "tags": [tag], "separator": sep, "at_least_one": True, "stop_after_first": True}

    def tag(begin, content, end):
        return {"type": "tag", "begin": begin, "content": content, "end": end}

    def rep(content):
        return {"type": "repeat", "min": 3, "max": -1, "content": content}

    inner = {"type": "const_string", "value": "abc"}
    for _ in range(6):
        inner = rep(inner)
    first = tws(tag(tc, inner, "abc"), "abc")
    for end in [tc, tc, "<|sep|>", tc, tc]:
        first = tws(tag(tc, first, end), "abc")
    second = {"type": "const_string", "value": tc}
    for _ in range(5):
        second = tws(tag(tc, second, tc), tc)
    for _ in range(7):
        second = rep(second)
    tags = [tag("x", first, tc), tag("abc", second, "abc")]
    return {"type": "structural_tag", "format": {"type": "tags_with_separator", "tags": tags, "separator": tc, "at_least_one": True, "stop_after_first": True}}


def test_a_completion_past_its_work_bound_is_a_limit_error():
    """A completion bounds the parser items its closures visit (it took 40 s
    here): past the bound it is a LimitError, and the matcher is as before."""
    vocab = fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<tool_call>", b"</tool_call>", b"<|sep|>"])
    m = fc.GrammarMatcher(fc.GrammarCompiler(vocab).compile_structural_tag(_ambiguous_nested_tags()))
    assert m.shortest_completion_length() == 2330
    with pytest.raises(fc.LimitError, match="too ambiguous here to complete"):
        m.find_shortest_completion(4096)
    assert m.accept_string("x</tool_call>")
