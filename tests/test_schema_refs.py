"""Local $ref resolution shared by schema accuracy, the trivial answers and
grounded answers (formcast._refs), and what each of those callers makes of it."""

from __future__ import annotations

import pytest

from formcast._refs import NOT_FOUND, follow_refs, ref_target, unescape
from formcast.evaluate import baselines, metrics
from formcast.formatter import grounding

DOC = {
    "$defs": {
        "name": {"type": "string"},
        "a/b": {"type": "integer"},
        "a~b": {"type": "boolean"},
        "~1": {"type": "null"},
        "": {"type": "number"},
        "to_name": {"$ref": "#/$defs/name"},
        "to_to_name": {"$ref": "#/$defs/to_name"},
        "to_missing": {"$ref": "#/$defs/nowhere"},
        "remote": {"$ref": "other.json#/x"},
        "ping": {"$ref": "#/$defs/pong"},
        "pong": {"$ref": "#/$defs/ping"},
    },
    "anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/name"}}],
}


def test_unescape_reads_tilde_one_before_tilde_zero():
    assert unescape("a~1b") == "a/b"
    assert unescape("a~0b") == "a~b"
    assert unescape("~01") == "~1"  # not "/": ~0 is unescaped last
    assert unescape("plain") == "plain"


@pytest.mark.parametrize("strict", [True, False])
def test_escaped_segments(strict):
    assert ref_target("#/$defs/a~1b", DOC, strict=strict) == {"type": "integer"}
    assert ref_target("#/$defs/a~0b", DOC, strict=strict) == {"type": "boolean"}
    assert ref_target("#/$defs/~01", DOC, strict=strict) == {"type": "null"}


@pytest.mark.parametrize("strict", [True, False])
def test_the_root_and_one_step(strict):
    assert ref_target("#", DOC, strict=strict) is DOC
    assert ref_target("#/$defs/name", DOC, strict=strict) is DOC["$defs"]["name"]
    # One step only: a reference to a reference is the reference.
    assert ref_target("#/$defs/to_name", DOC, strict=strict) == {"$ref": "#/$defs/name"}


def test_strict_indexes_lists_and_reads_empty_segments_as_keys():
    assert ref_target("#/anyOf/1/items", DOC, strict=True) == {"$ref": "#/$defs/name"}
    assert ref_target("#/$defs/", DOC, strict=True) == {"type": "number"}  # the key ""
    with pytest.raises(IndexError):
        ref_target("#/anyOf/7", DOC, strict=True)
    with pytest.raises(ValueError):
        ref_target("#/anyOf/first", DOC, strict=True)


def test_lenient_descends_only_objects_and_skips_empty_segments():
    assert ref_target("#/anyOf/1", DOC) is NOT_FOUND
    assert ref_target("#/$defs/", DOC) is DOC["$defs"]
    assert ref_target("#//$defs//name", DOC) is DOC["$defs"]["name"]


def test_missing_pointer():
    with pytest.raises(KeyError):
        ref_target("#/$defs/nowhere", DOC, strict=True)
    with pytest.raises(TypeError):  # indexing into a string
        ref_target("#/$defs/name/type/x", DOC, strict=True)
    assert ref_target("#/$defs/nowhere", DOC) is NOT_FOUND
    assert ref_target("#/$defs/name/type/x", DOC) is NOT_FOUND


def test_non_local_ref():
    with pytest.raises(ValueError, match=r"only local \$ref is supported in schema accuracy, got 'other.json#/x'"):
        ref_target("other.json#/x", DOC, strict=True, context="schema accuracy")
    with pytest.raises(ValueError, match=r"only local \$ref is supported, got"):
        ref_target("other.json#/x", DOC, strict=True)
    assert ref_target("other.json#/x", DOC) is NOT_FOUND
    # Not followed, whatever ``unresolved`` says: a schema that is not a local reference is no chain.
    remote = DOC["$defs"]["remote"]
    assert follow_refs(remote, DOC, max_hops=8, unresolved={}) is remote
    assert follow_refs({"$ref": 3}, DOC, max_hops=8, unresolved={}) == {"$ref": 3}


def test_chains_are_followed_to_the_end():
    start = {"$ref": "#/$defs/to_to_name"}
    assert follow_refs(start, DOC, max_hops=3) is DOC["$defs"]["name"]
    assert follow_refs(DOC["$defs"]["name"], DOC, max_hops=0) is DOC["$defs"]["name"]
    assert follow_refs("not a schema", DOC, max_hops=3) == "not a schema"


def test_the_hop_bound_counts_references_followed():
    start = {"$ref": "#/$defs/to_to_name"}  # three references to the string schema
    assert follow_refs(start, DOC, max_hops=3, unresolved={}) is DOC["$defs"]["name"]
    assert follow_refs(start, DOC, max_hops=2, unresolved={}) == {}
    # As is: the schema whose reference was not followed.
    assert follow_refs(start, DOC, max_hops=2) is DOC["$defs"]["to_name"]


def test_a_cycle_ends_at_the_bound():
    start = {"$ref": "#/$defs/ping"}
    assert follow_refs(start, DOC, max_hops=5, unresolved={}) == {}
    # Hops to the schemas named ping, pong, ping, pong, ping: the last one reached is returned.
    assert follow_refs(start, DOC, max_hops=5) is DOC["$defs"]["ping"]
    assert follow_refs(start, DOC, max_hops=4) is DOC["$defs"]["pong"]


def test_a_missing_pointer_in_a_chain():
    start = {"$ref": "#/$defs/to_missing"}
    assert follow_refs(start, DOC, max_hops=8, unresolved={}) == {}
    assert follow_refs(start, DOC, max_hops=8) is DOC["$defs"]["to_missing"]
    assert follow_refs({"$ref": "#/anyOf/1"}, DOC, max_hops=8) == {"$ref": "#/anyOf/1"}  # no list index when lenient


def test_each_caller_keeps_its_mode():
    # Schema accuracy: strict, one step (its own walk follows the rest).
    assert metrics._resolve_ref("#/anyOf/1/items", DOC) == {"$ref": "#/$defs/name"}
    with pytest.raises(ValueError, match="schema accuracy"):
        metrics._resolve_ref("other.json#/x", DOC)
    with pytest.raises(KeyError):
        metrics._resolve_ref("#/$defs/nowhere", DOC)
    # The trivial answers: chains of up to 64, else {}.
    assert baselines._resolve({"$ref": "#/$defs/to_to_name"}, DOC) is DOC["$defs"]["name"]
    assert baselines._resolve({"$ref": "#/$defs/ping"}, DOC) == {}
    assert baselines._resolve({"$ref": "#/$defs/to_missing"}, DOC) == {}
    assert baselines.schema_skeleton({"$ref": "#/$defs/ping", **DOC}) is None
    # Grounded answers: chains of up to 32, else the schema where it stopped.
    assert grounding._resolve({"$ref": "#/$defs/to_to_name"}, DOC) is DOC["$defs"]["name"]
    assert grounding._resolve({"$ref": "#/$defs/ping"}, DOC)["$ref"].startswith("#/$defs/p")
    assert grounding._resolve({"$ref": "#/$defs/to_missing"}, DOC) is DOC["$defs"]["to_missing"]


@pytest.mark.parametrize("length, expected", [(64, {"type": "string"}), (65, {})])
def test_the_trivial_answers_follow_64_references(length, expected):
    defs = {f"n{i}": {"$ref": f"#/$defs/n{i + 1}"} for i in range(length - 1)}
    defs[f"n{length - 1}"] = {"type": "string"}
    assert baselines._resolve({"$ref": "#/$defs/n0"}, {"$defs": defs}) == expected


@pytest.mark.parametrize("length, resolved", [(32, True), (33, False)])
def test_grounded_answers_follow_32_references(length, resolved):
    defs = {f"n{i}": {"$ref": f"#/$defs/n{i + 1}"} for i in range(length - 1)}
    defs[f"n{length - 1}"] = {"type": "string"}
    got = grounding._resolve({"$ref": "#/$defs/n0"}, {"$defs": defs})
    assert got == ({"type": "string"} if resolved else {"$ref": f"#/$defs/n{length - 1}"})
