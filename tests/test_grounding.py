"""Grounded mode: string values are spans of whole words of the input
(formcast.formatter.grounding), checked against the definition by brute force."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formcast as fc
from formcast.formatter.grounding import grounded_tag, substring_gbnf, suffix_automaton, words

VOCAB = [bytes([i]) for i in range(256)] + [b"<eos>"]


@pytest.fixture(scope="module")
def compiler():
    tok = fc.TokenizerInfo.from_vocab(VOCAB, stop_token_ids=[256], special_token_ids=[256])
    return fc.GrammarCompiler(tok)


def accepts(compiled, text: str) -> bool:
    m = fc.GrammarMatcher(compiled)
    return m.accept_string(text) and m.can_terminate()


def spans(text: str) -> set[str]:
    units = words(text)
    return {units[i][1] + "".join(a + b for a, b in units[i + 1 : j]) for i in range(len(units)) for j in range(i + 1, len(units) + 1)}


@given(st.lists(st.text(alphabet="ab", min_size=0, max_size=12), min_size=1, max_size=3))
@settings(max_examples=60, deadline=None)
def test_suffix_automaton_spells_exactly_the_substrings(texts):
    text = "".join(texts)
    sam = suffix_automaton(text)
    accepted = set()
    stack = [(0, "")]
    while stack:
        state, s = stack.pop()
        accepted.add(s)
        for c, t in sam[state].items():
            stack.append((t, s + c))
    assert accepted == {text[i:j] for i in range(len(text) + 1) for j in range(i, len(text) + 1)}
    assert len(sam) <= (max(2, 2 * len(text) - 1) if text else 1)


TEXTS = st.text(alphabet=st.sampled_from(list("ab c.,-\"\\\né")), min_size=1, max_size=24)


@given(TEXTS, st.booleans())
@settings(max_examples=40, deadline=None)
def test_substring_grammar_accepts_exactly_word_spans(compiler, text, allow_empty):
    compiled = compiler.compile(fc.Grammar.from_ebnf(substring_gbnf(text, allow_empty=allow_empty)))
    good = spans(text) | ({""} if allow_empty else set())
    candidates = good | {text[i:j] for i in range(len(text)) for j in range(i, len(text) + 1)} | {"zz", text + "a"}
    for c in candidates:
        assert accepts(compiled, json.dumps(c, ensure_ascii=False)) == (c in good), c


def test_word_spans_on_a_real_sentence(compiler):
    text = 'Blue Spice is a coffee shop near "The Rice Boat", rated 5 out of 5.'
    compiled = compiler.compile(fc.Grammar.from_ebnf(substring_gbnf(text)))
    for ok in ["Blue Spice", "coffee shop", '"The Rice Boat"', "The Rice Boat", "5 out of 5", "5 out of 5."]:
        assert accepts(compiled, json.dumps(ok)), ok
    for bad in ["", "lue Spice", "Blue Spic", "string", "coffee  shop", "Blue Spice ", " Blue Spice", "shop coffee"]:
        assert not accepts(compiled, json.dumps(bad)), bad


def test_array_of_spans(compiler):
    compiled = compiler.compile(fc.Grammar.from_ebnf(substring_gbnf("It stars Tom Sizemore and Michael Rooker.", array=True)))
    assert accepts(compiled, '["Tom Sizemore", "Michael Rooker"]')
    assert accepts(compiled, "[]")
    assert accepts(compiled, '[\n  "Tom Sizemore"\n]')
    assert not accepts(compiled, '["Tom Cruise"]')


SCHEMA = {
    "type": "object",
    "properties": {
        "category": {"type": "string"},
        "subject": {"type": "string"},
        "properties": {
            "type": "object",
            "properties": {
                "starring": {"type": "array", "items": {"type": "string"}},
                "runtime": {"type": "number"},
                "country": {"type": "string", "enum": ["USA", "UK"]},
                "director": {"type": "string"},
            },
            "required": ["starring", "runtime", "country", "director"],
            "additionalProperties": False,
        },
    },
    "required": ["category", "subject", "properties"],
    "additionalProperties": False,
}
TEXT = "Super Capers is a 98 minute film directed by Ray Griggs. It stars Tom Sizemore and Michael Rooker."


def test_grounded_tag_grounds_free_strings_and_generates_the_rest(compiler):
    plan = grounded_tag(SCHEMA, TEXT, generated=["category"])
    assert plan.grounded == ["subject", "properties.starring[]", "properties.director"]
    assert plan.generated == ["category", "properties.runtime", "properties.country"]
    compiled = compiler.compile(fc.Grammar.from_structural_tag(plan.tag))
    answer = {
        "category": "Film",  # generated: not in the text
        "subject": "Super Capers",
        "properties": {"starring": ["Tom Sizemore", "Michael Rooker"], "runtime": 98, "country": "USA",
                       "director": "Ray Griggs"},
    }
    assert accepts(compiled, json.dumps(answer, indent=2))
    for path, value in [("subject", "string"), ("director", "Ray")]:
        bad = json.loads(json.dumps(answer))
        if path == "subject":
            bad["subject"] = value
            assert not accepts(compiled, json.dumps(bad, indent=2))
        else:
            bad["properties"]["director"] = "Ray Griggs (director)"
            assert not accepts(compiled, json.dumps(bad, indent=2))
    bad = json.loads(json.dumps(answer))
    bad["properties"]["country"] = "France"
    assert not accepts(compiled, json.dumps(bad, indent=2))


def test_grounded_tag_without_generated_fields_grounds_the_category_too(compiler):
    plan = grounded_tag(SCHEMA, TEXT)
    compiled = compiler.compile(fc.Grammar.from_structural_tag(plan.tag))
    answer = {"category": "film", "subject": "Super Capers",
              "properties": {"starring": [], "runtime": 98.0, "country": "UK", "director": "Ray Griggs"}}
    assert accepts(compiled, json.dumps(answer, indent=2))
    answer["category"] = "Film"
    assert not accepts(compiled, json.dumps(answer, indent=2))


def test_optional_keys_and_marked_fields_are_generated():
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "x-grounded": False}},
              "required": ["b"]}
    plan = grounded_tag(schema, "x y")
    assert plan.grounded == [] and plan.generated == ["(root)"]
    schema["required"] = ["a", "b"]
    schema["additionalProperties"] = False
    plan = grounded_tag(schema, "x y")
    assert plan.grounded == ["a"] and plan.generated == ["b"]


def test_input_too_long_is_an_error():
    with pytest.raises(ValueError, match="at most"):
        substring_gbnf("a " * 20_000)
