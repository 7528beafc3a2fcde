"""Training examples made from templates (formcast.formatter.template_synth)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formcast.evaluate.metrics import schema_matches
from formcast.formatter.template_synth import template_examples

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "slot"


def test_examples_are_deterministic_valid_and_alternate_formats():
    a, b = template_examples(40, seed=3), template_examples(40, seed=3)
    assert [e.to_json() for e in a] == [e.to_json() for e in b]
    assert [e.to_json() for e in template_examples(40, seed=4)] != [e.to_json() for e in a]
    assert {e.dataset for e in a[::2]} == {"template-e2e"} and {e.dataset for e in a[1::2]} == {"template-webnlg"}
    for e in a:
        assert schema_matches(e.gold_json, e.json_schema, mode="jsonschema")


def test_names_and_entities_are_written_in_the_text():
    for e in template_examples(200, seed=0):
        if e.dataset == "template-e2e":
            assert e.gold_json["name"] in e.input_text
            assert e.gold_json.get("near", e.gold_json["name"]) in e.input_text
        else:
            assert e.gold_json["subject"] in e.input_text or e.gold_json["subject"].capitalize() in e.input_text


def test_no_dev_set_text_or_entity_is_reused():
    # The training data must not leak the dev sets: no input text and no
    # E2E venue / WebNLG subject of a dev example appears in 2000 examples.
    dev = [json.loads(l) for f in ("e2e-dev.jsonl", "webnlg-dev.jsonl") for l in (DEV / f).read_text().splitlines()]
    if not dev:
        pytest.skip("shared dev sets not found")
    names = {d["gold_json"].get("name") or d["gold_json"].get("subject") for d in dev}
    texts = {d["input_text"] for d in dev}
    for e in template_examples(2000, seed=0):
        assert e.input_text not in texts
        assert (e.gold_json.get("name") or e.gold_json.get("subject")) not in names


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown formats"):
        template_examples(3, formats=("wikibio",))
