"""The evaluation metrics on hostile predictions and schemas: deep values,
self-referencing and exponential schemas, nested arrays under assignment
alignment. They score (or raise a typed error); they never recurse without
bound or run for ever."""

from __future__ import annotations

import numpy as np
import pytest

from formcast.evaluate import SimilarityOptions, complexity_profile, schema_accuracy
from formcast.evaluate.complexity import content_complexity, depth, schema_complexity
from formcast.evaluate.metrics import ContentSimilarity, flatten, parse_response, schema_matches
from formcast.repair.errors import InvalidSchema


class OneVector:
    """Every text embeds to the same unit vector (cosine 1): no model needed."""

    def encode(self, texts):
        out = np.zeros((len(texts), 4), dtype=np.float32)
        out[:, 0] = 1
        return out


def nested(levels: int):
    v: object = "x"
    for _ in range(levels):
        v = [v]
    return v


def test_deep_predictions_parse_or_fail_cleanly():
    assert not parse_response("[" * 100_000 + "]" * 100_000).ok
    assert "levels deep" in parse_response("[" * 100_000).error
    assert schema_accuracy("[" * 100_000 + "]" * 100_000, {"type": "array"}) == 0.0
    deep = nested(5_000)
    assert len(flatten(deep)) == 1 and next(iter(flatten(deep))) == (0,) * 5_000
    # keys-and-types: deeper than the budget is no match, not an exception.
    assert schema_matches(deep, {"type": "array", "items": {"$ref": "#"}}) is False
    assert schema_matches(nested(50), {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#"}}]}) is True


def test_schemas_that_refer_to_themselves_or_explode():
    assert schema_matches(1, {"$ref": "#"}) is False  # a reference to itself never decides: no match
    defs = {"d0": {"type": "string"}}
    for i in range(1, 60):
        defs[f"d{i}"] = {"anyOf": [{"$ref": f"#/$defs/d{i - 1}"}, {"$ref": f"#/$defs/d{i - 1}"}]}
    assert schema_matches("s", {"$defs": defs, "$ref": "#/$defs/d59"}) is True  # each pair decided once
    with pytest.raises(InvalidSchema, match="circular"):
        schema_matches({"a": 1}, {"$ref": "#"}, mode="jsonschema")


def test_assignment_alignment_scores_each_pair_once():
    scorer = ContentSimilarity(encoder=OneVector(), options=SimilarityOptions(array_alignment="assignment"))
    v: object = "x"
    for _ in range(12):  # 4**12 sub-pairs scored level by level, but every level shares one object
        v = [v, v]
    assert scorer.score(v, v).similarity == 1.0
    assert scorer.score(nested(1_000), nested(1_000)).similarity == 1.0
    assert scorer._pairs == {}


def test_complexity_measures_are_iterative():
    deep = nested(5_000)
    assert depth(deep) == 5_000
    assert schema_complexity(deep) == 5_000 * 2 + 1 + 1 / 10
    assert content_complexity(deep) == content_complexity("x")
    with pytest.raises(ValueError, match="deeper than 512"):  # size_bytes: json.dumps recurses
        complexity_profile(deep)
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        depth(loop)
