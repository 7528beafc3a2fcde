"""Honest evaluation: trivial baselines and degenerate-answer rates
(formcast.evaluate.baselines, formcast.evaluate.degenerate)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formcast.evaluate.baselines import empty_answer, input_everywhere, schema_skeleton
from formcast.evaluate.degenerate import degeneracy, find_loop, summarize

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "eatType": {"type": "string"},
        "rating": {"type": "integer"},
        "kids": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"$ref": "#/$defs/place"},
        "kind": {"enum": ["pub", "cafe"]},
    },
    "$defs": {"place": {"type": "object", "properties": {"area": {"type": "string"}}}},
}
TEXT = "The Cricketers is a pub near Café Rouge."


def test_empty_and_input_baselines_follow_keys_and_types():
    assert empty_answer(SCHEMA) == {
        "name": "", "eatType": "", "rating": 0, "kids": False, "tags": [], "where": {"area": ""}, "kind": "pub"
    }
    filled = input_everywhere(SCHEMA, TEXT)
    assert filled["name"] == filled["eatType"] == filled["where"]["area"] == TEXT
    assert filled["rating"] == 0


def test_baselines_of_recursive_schemas_stop():
    schema = {"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}}
    value = schema_skeleton(schema)
    depth = 0
    while isinstance(value, dict):
        value, depth = value["next"], depth + 1
    assert value is None and depth <= 66


@pytest.mark.parametrize(
    "text,loop",
    [
        ("john_john_john_", (0, 15)),
        ("name: john_john_john_john", (6, 25)),
        ("aaaaaaaaaaaa", (0, 12)),
        ("aaaaaaaaaaa", None),  # 11 characters: below the threshold
        ("abcabc", None),  # two repetitions
        ("Blue Spice is a coffee shop", None),
        ("the the the the", (0, 15)),
    ],
)
def test_find_loop(text, loop):
    assert find_loop(text) == loop


@given(st.text(min_size=1, max_size=6), st.integers(3, 8))
@settings(max_examples=100, deadline=None)
def test_find_loop_finds_every_long_enough_repetition(unit, times):
    text = "<" + unit * times + ">"
    span = find_loop(text)
    if len(unit) * times >= 12:
        assert span is not None
        start, end = span
        assert end - start >= 12
    # whatever it returns has a period of at most 40 repeated three times
    if span is not None:
        seg = text[span[0] : span[1]]
        assert any(seg == (seg[:p] * (len(seg) // p + 1))[: len(seg)] and len(seg) >= 3 * p for p in range(1, 41))


def test_degeneracy_of_the_issue_examples():
    copied = {"name": "The Cricketers", "eatType": "The Cricketers", "customerRating": "The Cricketers", "near": "x"}
    d = degeneracy(copied, TEXT)
    assert d.copied and d.degenerate and not d.loop and not d.type_name
    d = degeneracy({"name": "string", "eatType": "pub"}, TEXT)
    assert d.type_name and not d.copied
    d = degeneracy({"name": "john_john_john_john_john_", "eatType": ""}, TEXT)
    assert d.loop
    d = degeneracy({"name": "", "eatType": "", "n": 0, "k": False}, TEXT)
    assert d.empty
    good = degeneracy({"name": "The Cricketers", "eatType": "pub", "near": "Café Rouge"}, TEXT)
    assert not good.degenerate and good.unsupported == 0 and good.values == 3


def test_repetition_copied_from_the_input_is_not_a_loop():
    text = "The band Duran Duran Duran Duran played."
    assert not degeneracy({"artist": "Duran Duran Duran Duran"}, text).loop


def test_unsupported_values_and_summary():
    answers = [
        degeneracy({"name": "The Cricketers", "date": "2018-01-01"}, TEXT),  # invented date
        degeneracy({"name": "Cricketers pub", "date": ""}, TEXT),
    ]
    assert answers[0].unsupported == 1 and answers[1].unsupported == 0
    s = summarize(answers)
    assert s.n == 2 and s.unsupported_values == pytest.approx(1 / 3) and s.degenerate == 0.0
    assert summarize([]).degenerate == 0.0
