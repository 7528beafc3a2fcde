"""The seven JSON-complexity measures (paper appendix D.3) on hand-computed values."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formcast.evaluate import complexity as cx

DOC = {"a": "xy", "b": [1, 2], "c": {"d": None, "e": []}}


def test_depth():
    assert cx.depth("x") == 0
    assert cx.depth({}) == 1
    assert cx.depth([[1]]) == 2
    assert cx.depth(DOC) == 3  # root > c > e (an empty array is a level)


def test_keys_elements_cyclomatic():
    assert cx.num_keys(DOC) == 5  # a b c + d e
    # root, "xy", [1,2], 1, 2, {d,e}, None, []
    assert cx.num_elements(DOC) == 8
    # 5 keys + 1 non-empty array ([] does not count)
    assert cx.cyclomatic_complexity(DOC) == 6


def test_size_is_utf8_of_default_json_dumps():
    assert cx.size_bytes(DOC) == len(json.dumps(DOC))
    assert cx.size_bytes("é") == len('"\\u00e9"')


def test_schema_complexity():
    assert cx.schema_complexity("") == 1
    assert cx.schema_complexity("x" * 30) == pytest.approx(4.0)
    assert cx.schema_complexity("x" * 500) == pytest.approx(11.0)  # capped at 100 chars
    assert cx.schema_complexity(7) == 1
    assert cx.schema_complexity([]) == 1
    # homogeneous: 1 + len + sc(first)
    assert cx.schema_complexity(["ab", "abcdefghij"]) == pytest.approx(1 + 2 + 1.2)
    # heterogeneous: 1 + len + sum
    assert cx.schema_complexity(["ab", 3]) == pytest.approx(1 + 2 + 1.2 + 1)
    # object: 1 + keys + sum
    assert cx.schema_complexity({"k": "ab", "n": None}) == pytest.approx(1 + 2 + 1.2 + 1)


def test_content_complexity():
    assert cx.content_complexity(None) == 0
    assert cx.content_complexity(True) == 0  # booleans are not numbers
    assert cx.content_complexity(123) == pytest.approx(0.6)
    assert cx.content_complexity(1234567) == 1.0
    assert cx.content_complexity(-2.5) == pytest.approx(0.4)
    assert cx.content_complexity("") == 0
    # "aab!": lf 4/20, ef 2/4*3 (a, b, ! -> 3 unique of 4 chars: 3/4*3), sf 1/4*5
    assert cx.content_complexity("aab!") == pytest.approx(0.2 + 0.75 * 3 + 1.25)
    assert cx.content_complexity({"x": "aab!", "y": [123, "aab!"]}) == pytest.approx(2 * 3.7 + 0.6)


def test_code_like_strings_get_the_structure_factor():
    plain = "The meeting is on Monday near the station"
    code = "def f(x):\n    return x + 1"
    assert not cx.CODE_PATTERN.search(plain)
    for s in [code, "x = foo(bar)", "`pip install x`", "if (a == b) { go(); }", "<div>hi</div>", "ValueError: bad value"]:
        assert cx.CODE_PATTERN.search(s), s
    n = len(code)
    lf, ef = n / 20, len(set(code)) / n * 3
    sf = min(sum(1 for ch in code if not ch.isalnum() and not ch.isspace()) / n * 5, 3)
    assert cx.content_complexity(code) == pytest.approx(lf + ef + sf + 2)


def test_profile_and_mean():
    p = cx.complexity_profile(DOC)
    assert list(p) == ["depth", "keys", "elements", "size", "cyclomatic", "schema", "content"]
    m = cx.mean_profile([{"a": 1}, {"a": 1, "b": [2]}])
    assert m["keys"] == 1.5 and m["depth"] == 1.5
    with pytest.raises(ValueError):
        cx.mean_profile([])


json_values = st.recursive(
    st.one_of(st.text(max_size=10), st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_measures_relate_as_defined(v):
    p = cx.complexity_profile(v)
    assert p["elements"] >= p["keys"] + 1  # every key has a value, plus the root
    assert p["cyclomatic"] >= p["keys"]
    assert p["size"] == len(json.dumps(v).encode())
    assert p["schema"] >= 1 and p["content"] >= 0
    # Wrapping in an object adds one level, one key and one element.
    w = cx.complexity_profile({"k": v})
    assert (w["depth"], w["keys"], w["elements"]) == (p["depth"] + 1, p["keys"] + 1, p["elements"] + 1)
