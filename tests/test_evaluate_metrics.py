"""Schema accuracy and content similarity on hand-computed cases.

Most cases use a table encoder with chosen vectors, so every cosine — and so
every expected score — is known exactly; a few use the real all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formcast.evaluate import (
    ContentSimilarity,
    SimilarityOptions,
    evaluate,
    flatten,
    parse_response,
    schema_accuracy,
    schema_matches,
)


class TableEncoder:
    """Unit vectors from a table; other strings get a pseudo-random unit vector."""

    def __init__(self, table: dict[str, list[float]] | None = None, dim: int = 8) -> None:
        self.dim = dim
        self.table = {k: self._unit(v) for k, v in (table or {}).items()}
        self.calls = 0

    def _unit(self, v):
        v = np.zeros(self.dim) + np.pad(np.asarray(v, dtype=float), (0, self.dim - len(v)))
        return v / np.linalg.norm(v)

    def encode(self, texts):
        self.calls += 1
        out = []
        for t in texts:
            if t in self.table:
                out.append(self.table[t])
            else:
                rng = np.random.default_rng(zlib.crc32(t.encode()))
                out.append(self._unit(rng.normal(size=self.dim)))
        return np.array(out, dtype=np.float32)


def cos_pair(c: float) -> tuple[list[float], list[float]]:
    """Two vectors with cosine c."""
    return [1.0, 0.0], [c, math.sqrt(1 - c * c)]


E2E_GOLD = {"name": "Giraffe", "eatType": "coffee shop", "near": "The Rice Boat"}


@pytest.fixture
def enc() -> TableEncoder:
    g, r = cos_pair(0.2)
    a, b = cos_pair(0.0)
    n99, n98 = cos_pair(0.9)
    neg1, neg2 = [1.0, 0.0], [-0.6, 0.8]
    return TableEncoder(
        {"Giraffe": g, "The Rice Boat": r, "a": a, "b": b, "99.0": n99, "98.0": n98, "up": neg1, "down": neg2}
    )


def sim(enc, **opts) -> ContentSimilarity:
    return ContentSimilarity(enc, SimilarityOptions(**opts))


# -- flattening ----------------------------------------------------------------


def test_flatten_keys_by_full_path():
    assert flatten({"a": {"b": 1}, "c": [True, {}], "d": []}) == {
        ("a", "b"): 1,
        ("c", 0): True,
        ("c", 1): {},
        ("d",): [],
    }
    assert flatten("x") == {(): "x"}


# -- content similarity: hand-computed --------------------------------------------


def test_identical_prediction_scores_one(enc):
    s = sim(enc).score(E2E_GOLD, E2E_GOLD)
    assert (s.precision, s.recall, s.similarity) == (1.0, 1.0, 1.0)


def test_missing_key_lowers_recall_only(enc):
    s = sim(enc).score({"name": "Giraffe"}, E2E_GOLD)
    assert s.precision == 1.0
    assert s.recall == pytest.approx(1 / 3)
    assert s.similarity == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))


def test_extra_key_lowers_precision_only(enc):
    s = sim(enc).score({**E2E_GOLD, "area": "riverside"}, E2E_GOLD)
    assert s.precision == pytest.approx(3 / 4)
    assert s.recall == 1.0
    assert s.similarity == pytest.approx(2 * 0.75 / 1.75)


def test_swapped_values_are_penalised_as_in_the_paper(enc):
    # Appendix C.2: name and near swapped; cos("Giraffe", "The Rice Boat") = 0.2.
    pred = {"name": "The Rice Boat", "eatType": "coffee shop", "near": "Giraffe"}
    s = sim(enc).score(pred, E2E_GOLD)
    assert s.precision == pytest.approx((0.2 + 1 + 0.2) / 3, abs=1e-6)
    assert s.recall == pytest.approx(s.precision)
    assert s.similarity == pytest.approx(s.precision)


def test_nested_objects_compare_with_all_ancestor_keys(enc):
    gold = {"p": {"q": "x", "r": "y"}}
    # "x" is at the wrong level: its path (q,) is not (p, q).
    pred = {"q": "x", "p": {"r": "y"}}
    s = sim(enc).score(pred, gold)
    assert (s.precision, s.recall) == (0.5, 0.5)
    assert s.similarity == 0.5


def test_value_of_wrong_shape_scores_zero(enc):
    gold = {"p": {"q": "x"}}
    s = sim(enc).score({"p": "x"}, gold)
    assert s.similarity == 0.0


def test_arrays_by_index_and_by_assignment(enc):
    gold = {"l": ["a", "b"]}
    pred = {"l": ["b", "a"]}  # cos(a, b) = 0
    assert sim(enc).score(pred, gold).similarity == 0.0
    assert sim(enc, array_alignment="assignment").score(pred, gold).similarity == 1.0


def test_assignment_with_an_extra_element(enc):
    gold = {"l": ["a", "b"]}
    pred = {"l": ["b", "a", "Giraffe"]}
    s = sim(enc, array_alignment="assignment").score(pred, gold)
    assert s.precision == pytest.approx(2 / 3)
    assert s.recall == 1.0


def test_assignment_matches_nested_objects_by_content(enc):
    gold = [{"n": "a", "v": "Giraffe"}, {"n": "b", "v": "The Rice Boat"}]
    pred = [{"n": "b", "v": "The Rice Boat"}, {"n": "a", "v": "Giraffe"}]
    assert sim(enc, array_alignment="assignment").score(pred, gold).similarity == 1.0
    s_index = sim(enc).score(pred, gold)
    assert s_index.similarity == pytest.approx((0 + 0.2 + 0 + 0.2) / 4, abs=1e-6)


def test_typed_scalars(enc):
    typed, untyped = sim(enc), sim(enc, typed_scalars=False)
    assert typed.leaf_score("99.0", "98.0") == 0.0
    assert untyped.leaf_score("99.0", "98.0") == pytest.approx(0.9, abs=1e-6)
    assert typed.leaf_score("1887", 1887) == 1.0
    assert typed.leaf_score("99.0", 99) == 1.0
    assert typed.leaf_score("1,777,539", 1777539) == 1.0
    assert typed.leaf_score(True, "true") == 1.0
    assert typed.leaf_score(True, False) == 0.0
    assert typed.leaf_score(1, True) == 0.0  # a boolean is not the number 1
    assert typed.leaf_score(None, None) == 1.0
    assert typed.leaf_score(None, "null") == 0.0
    assert typed.leaf_score(12, "twelve") == 0.0
    assert typed.leaf_score([], []) == 1.0
    assert typed.leaf_score({}, []) == 0.0


def test_identical_strings_score_one_without_embedding():
    enc = TableEncoder()
    assert sim(enc).leaf_score("Blue Spice", "Blue Spice") == 1.0
    assert enc.calls == 0


def test_negative_cosine_is_clipped_to_zero(enc):
    assert sim(enc).leaf_score("up", "down") == 0.0


def test_unparseable_counts_zero_or_is_skipped(enc):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    gold = {"name": "Giraffe"}
    preds = ['{"name": "Giraffe"}', "Sure! Here it is: {"]
    r = evaluate(preds, [gold, gold], [schema, schema], scorer=sim(enc))
    assert (r.schema_accuracy, r.content_similarity, r.unparseable) == (0.5, 0.5, 1)
    r = evaluate(preds, [gold, gold], [schema, schema], scorer=sim(enc, unparseable="skip"))
    assert (r.schema_accuracy, r.content_similarity) == (0.5, 1.0)
    assert r.examples[1].content is None


def test_each_example_carries_its_parsed_answer(enc):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    gold = {"name": "Giraffe"}
    r = evaluate(['{"name": "Giraffe"}', "null", "{"], [gold] * 3, [schema] * 3, scorer=sim(enc))
    assert [(e.parsed, e.value) for e in r.examples] == [(True, {"name": "Giraffe"}), (True, None), (False, None)]


def test_evaluate_checks_lengths(enc):
    with pytest.raises(ValueError, match="differ in length"):
        evaluate(["{}"], [{}, {}], [{}], scorer=sim(enc))


def test_options_are_validated():
    with pytest.raises(ValueError, match="array_alignment"):
        SimilarityOptions(array_alignment="sorted")


# -- content similarity: properties ----------------------------------------------

json_leaf = st.one_of(
    st.text(max_size=8), st.integers(-1000, 1000), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=12,
)
options = st.builds(
    SimilarityOptions, array_alignment=st.sampled_from(["index", "assignment"]), typed_scalars=st.booleans()
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pred=json_values, gold=json_values, opts=options)
def test_scores_are_in_unit_interval(pred, gold, opts):
    s = ContentSimilarity(TableEncoder(), opts).score(pred, gold)
    for x in (s.precision, s.recall, s.similarity):
        assert 0.0 <= x <= 1.0
    assert min(s.precision, s.recall) - 1e-12 <= s.similarity <= max(s.precision, s.recall) + 1e-12


@settings(max_examples=200, deadline=None)
@given(value=json_values, opts=options)
def test_identical_prediction_is_one(value, opts):
    assert ContentSimilarity(TableEncoder(), opts).score(value, value).similarity == 1.0


@settings(max_examples=200, deadline=None)
@given(pred=json_values, gold=json_values, typed=st.booleans())
def test_swapping_prediction_and_gold_swaps_precision_and_recall(pred, gold, typed):
    scorer = ContentSimilarity(TableEncoder(), SimilarityOptions(typed_scalars=typed))
    a, b = scorer.score(pred, gold), scorer.score(gold, pred)
    assert a.precision == pytest.approx(b.recall)
    assert a.recall == pytest.approx(b.precision)
    assert a.similarity == pytest.approx(b.similarity)


# -- content similarity with the real Sentence-BERT ----------------------------------


def test_real_model_swapped_e2e_example():
    scorer = ContentSimilarity()
    pred = {"name": "The Rice Boat", "eatType": "coffee shop", "near": "Giraffe"}
    swapped = scorer.score(pred, E2E_GOLD)
    assert 1 / 3 < swapped.similarity < 0.9
    right = scorer.score({"name": "Giraffe", "eatType": "coffee-shop", "near": "The Rice Boat"}, E2E_GOLD)
    assert right.similarity > swapped.similarity + 0.2


# -- schema accuracy ----------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "year": {"type": "integer"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {
            "type": "object",
            "properties": {"login": {"type": "string"}, "admin": {"type": "boolean"}},
            "required": ["login"],
        },
    },
    "required": ["name", "year"],
}
GOOD = {"name": "x", "year": 1887, "score": 2.5, "tags": ["a"], "owner": {"login": "me", "admin": False}}


def test_schema_accuracy_accepts_exact_keys_and_types():
    assert schema_accuracy(json.dumps(GOOD), SCHEMA) == 1.0
    assert schema_accuracy("\n  " + json.dumps(GOOD, indent=2) + "\n", SCHEMA) == 1.0
    assert schema_matches({**GOOD, "year": 1887.0}, SCHEMA)  # JSON Schema integer
    assert schema_matches({**GOOD, "score": 3}, SCHEMA)  # an integer is a number


@pytest.mark.parametrize(
    "value",
    [
        {k: v for k, v in GOOD.items() if k != "score"},  # missing (optional) key
        {**GOOD, "extra": 1},  # extra key
        {**GOOD, "year": "1887"},  # string for integer
        {**GOOD, "year": True},  # boolean is not an integer
        {**GOOD, "score": "2.5"},
        {**GOOD, "tags": ["a", 1]},  # wrong item type
        {**GOOD, "owner": {"login": "me"}},  # nested missing key
        {**GOOD, "owner": {"login": "me", "admin": False, "x": 1}},  # nested extra key
        [GOOD],
    ],
)
def test_schema_accuracy_rejects_key_and_type_mismatches(value):
    assert schema_accuracy(json.dumps(value), SCHEMA) == 0.0


@pytest.mark.parametrize(
    "raw",
    [
        "```json\n" + json.dumps(GOOD) + "\n```",
        "Here is the JSON: " + json.dumps(GOOD),
        json.dumps(GOOD) + " Done.",
        json.dumps(GOOD)[:-1],
        '{"name": "x", "year": 1887, "score": NaN, "tags": [], "owner": {"login": "m", "admin": true}}',
        "",
    ],
)
def test_response_must_be_valid_json_by_itself(raw):
    assert not parse_response(raw).ok
    assert schema_accuracy(raw, SCHEMA) == 0.0


def test_jsonschema_mode_follows_required():
    partial = {"name": "x", "year": 1}
    assert not schema_matches(partial, SCHEMA)
    assert schema_matches(partial, SCHEMA, mode="jsonschema")
    assert not schema_matches({"name": "x"}, SCHEMA, mode="jsonschema")


def test_refs_and_unions():
    schema = {
        "$defs": {"item": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}, "note": {"type": ["string", "null"]}},
    }
    assert schema_matches({"items": [{"id": 1}], "note": None}, schema)
    assert not schema_matches({"items": [{"id": "1"}], "note": None}, schema)
    assert schema_matches({"items": [], "note": "n"}, {"anyOf": [{"type": "integer"}, schema]})


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="mode"):
        schema_matches({}, {}, mode="loose")
