"""Streaming JSON: partial values with the fields complete so far."""

from __future__ import annotations

import copy
import json
import random

import formcast.repair as fr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=14,
)
containers = st.lists(values, max_size=4) | st.dictionaries(st.text(max_size=6), values, max_size=4)


def _chunks(text: str, rnd: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        k = rnd.randint(1, 6)
        out.append(text[i : i + k])
        i += k
    return out


def _is_prefix(part: object, full: object) -> bool:
    if isinstance(full, list):
        return isinstance(part, list) and len(part) <= len(full) and all(_is_prefix(p, f) for p, f in zip(part, full))
    if isinstance(full, dict):
        return isinstance(part, dict) and all(k in full and _is_prefix(v, full[k]) for k, v in part.items())
    return part == full  # scalars appear only once complete


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=containers, seed=st.integers(0, 2**32 - 1), ascii_only=st.booleans())
def test_every_snapshot_is_a_prefix_and_the_end_is_exact(value: object, seed: int, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    s = fr.JsonStream()
    for chunk in _chunks(text, random.Random(seed)):
        snap = copy.deepcopy(s.feed(chunk))
        assert _is_prefix(snap, value), (text, snap)
    assert s.done and s.error is None
    assert s.value == value
    assert s.finish().data == value


def test_fields_appear_as_they_complete() -> None:
    s = fr.JsonStream()
    assert s.feed("Sure! ```json\n{") == {}
    assert s.feed('"name": "Al') == {}
    assert s.feed('ice", "age": 3') == {"name": "Alice"}  # 3 may become 30
    assert s.feed("0, ") == {"name": "Alice", "age": 30}
    assert s.feed('"tags": ["a", ') == {"name": "Alice", "age": 30, "tags": ["a"]}
    assert s.feed('"b"]}\n```\nDone!') == {"name": "Alice", "age": 30, "tags": ["a", "b"]}
    assert s.done


def test_partial_strings_show_text_as_it_arrives() -> None:
    s = fr.JsonStream(partial_strings=True)
    assert s.feed('{"bio": "Loves hik') == {"bio": "Loves hik"}
    assert s.feed('ing", "list": ["x') == {"bio": "Loves hiking", "list": ["x"]}
    assert s.feed('y", "z"]}') == {"bio": "Loves hiking", "list": ["xy", "z"]}


def test_events_give_json_pointers_of_completed_values() -> None:
    s = fr.JsonStream()
    s.feed('{"a": {"b": [1, {"c": true}]}, "d/e": null}')
    assert s.new_events() == [
        ("/a/b/0", 1),
        ("/a/b/1/c", True),
        ("/a/b/1", {"c": True}),
        ("/a/b", [1, {"c": True}]),
        ("/a", {"b": [1, {"c": True}]}),
        ("/d~1e", None),
        ("", {"a": {"b": [1, {"c": True}]}, "d/e": None}),
    ]
    assert s.new_events() == []


def test_escapes_split_across_chunks() -> None:
    text = json.dumps({"s": 'a"b\\c\u00e9\U0001f600\n'})
    for size in range(1, 8):
        s = fr.JsonStream()
        for i in range(0, len(text), size):
            s.feed(text[i : i + size])
        assert s.value == {"s": 'a"b\\c\u00e9\U0001f600\n'}, size


def test_tolerates_common_model_dialect() -> None:
    s = fr.JsonStream()
    s.feed("{'a': True, // note\n 'b': [1, 2,], c: None,}")
    assert s.value == {"a": True, "b": [1, 2], "c": None}
    assert s.done


def test_finish_runs_the_full_pipeline_when_the_view_gave_up() -> None:
    s = fr.JsonStream()
    s.feed('{"a": 1, "b": "say "hi" now", "c": 2}')
    assert s.error is not None  # the live view froze...
    res = s.finish({"type": "object", "required": ["a", "b", "c"]})
    assert res.value == {"a": 1, "b": 'say "hi" now', "c": 2}  # ...the pipeline did not


def test_truncated_stream_keeps_complete_fields() -> None:
    assert fr.parse_partial('{"a": [1, 2], "b": {"c": "x"}, "d": "unfini') == {"a": [1, 2], "b": {"c": "x"}}


def test_iter_partial_and_root_option() -> None:
    snaps = [copy.deepcopy(v) for v in fr.iter_partial(['[see {"a"', ": 1}"])]
    assert snaps[-1] == [] or snaps[-1] == {"a": 1}
    s = fr.JsonStream(root="object")
    s.feed('Notes [1]: {"a": [2]}')
    assert s.value == {"a": [2]}


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60) | st.text(alphabet="{}[]\"',:tfnTN0123456789.-+ \n\\/*u", max_size=60), size=st.integers(1, 7))
def test_arbitrary_text_never_crashes_the_stream(text: str, size: int) -> None:
    s = fr.JsonStream(partial_strings=True)
    for i in range(0, len(text), size):
        s.feed(text[i : i + size])  # errors freeze the view; they are never raised
    json.dumps(s.value, allow_nan=True)
