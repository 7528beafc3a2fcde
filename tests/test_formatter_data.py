"""Dataset loading, the E2E and WebNLG converters, and the synthesis pipeline."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from formcast.formatter.backends import Completion, GenerationRequest
from formcast.formatter.cli import main
from formcast.formatter.convert import (
    ConversionError,
    e2e_examples,
    e2e_record,
    parse_e2e_mr,
    webnlg_examples,
    webnlg_record,
)
from formcast.formatter.data import DatasetError, load_jsonl
from formcast.formatter import synth

SLOT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "slot"


# -- loading ----------------------------------------------------------------------------


def test_shared_datasets_load():
    e2e = load_jsonl(SLOT / "e2e-dev.jsonl")
    webnlg = load_jsonl(SLOT / "webnlg-dev.jsonl")
    assert (len(e2e), len(webnlg)) == (100, 98)
    assert e2e[0].id == "e2e-0" and e2e[0].dataset == "e2e"
    assert load_jsonl(SLOT / "e2e-dev.jsonl", limit=3)[-1].id == e2e[2].id


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ('["a"]', "expected a JSON object"),
        ('{"input_text": "x", "json_schema": {}}', "missing field(s) gold_json"),
        ('{"input_text": 3, "json_schema": {}, "gold_json": {}}', "input_text must be a string"),
        ('{"input_text": "x", "json_schema": [], "gold_json": {}}', "json_schema must be an object"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    f = tmp_path / "d.jsonl"
    good = json.dumps({"input_text": "x", "json_schema": {}, "gold": {}})
    f.write_text(good + "\n\n" + line + "\n")
    with pytest.raises(DatasetError) as info:
        load_jsonl(f)
    assert str(info.value).startswith(f"{f}:3: ") and message in str(info.value)


def test_duplicate_ids_are_rejected(tmp_path):
    f = tmp_path / "d.jsonl"
    rec = json.dumps({"id": "a", "input_text": "x", "json_schema": {}, "gold_json": {}})
    f.write_text(rec + "\n" + rec + "\n")
    with pytest.raises(DatasetError, match=":2: duplicate id 'a'"):
        load_jsonl(f)


# -- converters reproduce the shared data ------------------------------------------------


def test_e2e_converter_reproduces_shared_dev_set():
    for ex in load_jsonl(SLOT / "e2e-dev.jsonl"):
        schema, gold = e2e_record(ex.meta["mr"])
        assert (schema, gold) == (ex.json_schema, ex.gold_json), ex.id


def test_webnlg_converter_reproduces_shared_dev_set():
    for ex in load_jsonl(SLOT / "webnlg-dev.jsonl"):
        schema, gold = webnlg_record(ex.gold_json["category"], ex.meta["mtriples"])
        assert (schema, gold) == (ex.json_schema, ex.gold_json), ex.id


def test_parse_e2e_mr():
    assert parse_e2e_mr("name[The Eagle], priceRange[£20-25], customer rating[3 out of 5]") == {
        "name": "The Eagle",
        "priceRange": "£20-25",
        "customer rating": "3 out of 5",
    }
    with pytest.raises(ValueError, match="repeats"):
        parse_e2e_mr("name[a], name[b]")
    with pytest.raises(ValueError, match="not an E2E meaning representation"):
        parse_e2e_mr("name: a")


def test_e2e_csv_groups_references_by_mr(tmp_path):
    f = tmp_path / "testset_w_refs.csv"
    f.write_text(
        'mr,ref\n'
        '"name[Giraffe], eatType[coffee shop], near[The Rice Boat]","Near The Rice Boat is Giraffe, a coffee shop."\n'
        '"name[Giraffe], eatType[coffee shop], near[The Rice Boat]","Giraffe is a coffee shop near The Rice Boat."\n'
        '"name[Blue Spice], customer rating[high]","Blue Spice is highly rated."\n',
        encoding="utf-8",
    )
    examples = e2e_examples(f)
    assert [e.id for e in examples] == ["e2e-0", "e2e-1"]
    assert examples[0].input_text == "Near The Rice Boat is Giraffe, a coffee shop."
    assert len(examples[0].meta["all_refs"]) == 2
    assert examples[1].gold_json == {"name": "Blue Spice", "customerRating": "high"}
    out = tmp_path / "e2e.jsonl"
    assert main(["data", "e2e", str(f), "-o", str(out)]) == 0
    assert [e.gold_json for e in load_jsonl(out)] == [e.gold_json for e in examples]


def test_e2e_csv_errors_name_the_line(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text('mr,ref\n"name[a]",x\n"name a",y\n')
    with pytest.raises(ConversionError, match=r"bad.csv:3: not an E2E"):
        e2e_examples(f)
    g = tmp_path / "nocol.csv"
    g.write_text("meaning,text\na,b\n")
    with pytest.raises(ConversionError, match="no column named mr"):
        e2e_examples(g)


WEBNLG_XML = """<?xml version="1.0" encoding="utf-8"?>
<benchmark><entries>
  <entry category="Food" eid="Id5" shape="" shape_type="mixed" size="4">
    <originaltripleset><otriple>x | y | z</otriple></originaltripleset>
    <modifiedtripleset>
      <mtriple>Bionico | course | Dessert</mtriple>
      <mtriple>Bionico | country | Mexico</mtriple>
      <mtriple>Mexico | currency | Mexican_peso</mtriple>
      <mtriple>Bionico | ingredient | Granola</mtriple>
      <mtriple>Bionico | ingredient | "Honey"</mtriple>
    </modifiedtripleset>
    <lex comment="good" lid="Id1" lang="en">Bionico, a dessert from Mexico (currency: the peso), has granola and honey.</lex>
    <lex comment="good" lid="Id2" lang="ru">Бионико</lex>
  </entry>
  <entry category="City" eid="Id6" shape="" shape_type="NA" size="2">
    <modifiedtripleset><mtriple>A | p | B</mtriple><mtriple>B | q | A</mtriple></modifiedtripleset>
    <lex lid="Id1" lang="en">A cycle.</lex>
  </entry>
</entries></benchmark>
"""


def test_webnlg_xml(tmp_path):
    f = tmp_path / "test.xml"
    f.write_text(WEBNLG_XML, encoding="utf-8")
    [ex] = webnlg_examples(f)  # the cyclic entry has no root and is skipped
    assert ex.id == "webnlg-4"
    assert ex.gold_json == {
        "category": "Food",
        "subject": "Bionico",
        "properties": {
            "course": "Dessert",
            "country": {"subject": "Mexico", "properties": {"currency": "Mexican peso"}},
            "ingredient": ["Granola", "Honey"],
        },
    }
    assert ex.json_schema["properties"]["properties"]["properties"]["ingredient"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert ex.meta["all_refs"] == [ex.input_text]
    with pytest.raises(ConversionError, match="entry Id6: .*root"):
        webnlg_examples(f, skip_unconvertible=False)
    bad = tmp_path / "bad.xml"
    bad.write_text("<benchmark><entries>")
    with pytest.raises(ConversionError, match="not well-formed"):
        webnlg_examples(bad)


# -- synthesis -------------------------------------------------------------------------------


GOOD_PAIR = {
    "input_text": "Acme Clinic in Leeds treats 40 patients a day.",
    "json_schema": {
        "type": "object",
        "properties": {"clinic": {"type": "string"}, "patients_per_day": {"type": "number"}},
    },
    "gold": {"clinic": "Acme Clinic", "patients_per_day": 40},
}
WRONG_TYPE = {**GOOD_PAIR, "gold": {"clinic": "Acme Clinic", "patients_per_day": "forty"}}
HALLUCINATED = {**GOOD_PAIR, "gold": {"clinic": "Acme Clinic", "patients_per_day": 400}}


class ScriptedBackend:
    """Generator and judge in one: answers by prompt kind."""

    name = "scripted"

    def __init__(self):
        self.prompts: list[GenerationRequest] = []

    def generate(self, request: GenerationRequest) -> Completion:
        self.prompts.append(request)
        if request.prompt.startswith("Be an impartial judge"):
            ok = '"patients_per_day": 400' not in request.prompt
            return Completion(f"<validity>{ok}</validity>", "stop")
        lines = "\n".join(json.dumps(r) for r in (GOOD_PAIR, WRONG_TYPE, HALLUCINATED))
        return Completion(f"<planning>...</planning>\n<JSONL>\n{lines}\n</JSONL>", "stop")


def test_synthesis_pipeline_filters_in_two_stages(tmp_path):
    demos = load_jsonl(SLOT / "e2e-dev.jsonl", limit=5)
    backend = ScriptedBackend()
    out = tmp_path / "synth.jsonl"
    stats = synth.synthesize(backend, out, n=2, demonstrations=demos, seed=1, progress=False)
    assert stats.accepted == 2 and stats.requests == 2
    assert stats.stage1_rejected == 1  # WRONG_TYPE of the first answer
    assert stats.stage2_rejected == 1  # HALLUCINATED of the first answer
    kept = load_jsonl(out)
    assert [k.gold_json for k in kept] == [GOOD_PAIR["gold"]] * 2
    spec = kept[0].meta["spec"]
    assert spec["industry_vertical"] in synth.INDUSTRY_VERTICALS and 0 <= spec["temperature"] <= 0.5
    rejected = [json.loads(l) for l in (tmp_path / "synth.rejected.jsonl").read_text().splitlines()]
    assert {r["stage"] for r in rejected} == {1, 2}
    gen_prompt = backend.prompts[0].prompt
    assert "<industry_vertical> " + spec["industry_vertical"] + " </industry_vertical>" in gen_prompt
    assert demos[0].input_text in gen_prompt or any(d.input_text in gen_prompt for d in demos)
    assert backend.prompts[0].temperature == spec["temperature"]
    # Resuming with n=3 keeps the two and adds one.
    stats = synth.synthesize(backend, out, n=3, demonstrations=demos, seed=1, progress=False)
    assert stats.accepted == 1 and len(load_jsonl(out)) == 3


def test_stage1_problems():
    assert synth.stage1_problems(GOOD_PAIR) == []
    assert "gold does not validate" in synth.stage1_problems(WRONG_TYPE)[0]
    assert synth.stage1_problems({**GOOD_PAIR, "gold": {"clinic": "A"}}) == [
        "gold keys or value types differ from the schema's properties"
    ]
    assert "not a valid JSON Schema" in synth.stage1_problems({**GOOD_PAIR, "json_schema": {"type": 5, "properties": {"a": {}}}})[-1]
    assert synth.stage1_problems({"input_text": "x"}) == ["missing json_schema", "missing gold"]


def test_parse_generation_and_verdicts():
    text = '<JSONL>\n{"a": 1}\n{"b":\n  2}\n</JSONL> then <jsonl>nothing</jsonl>'
    cands = synth.parse_generation(text)
    assert [c.record for c in cands[:2]] == [{"a": 1}, {"b": 2}]
    assert cands[2].problem
    assert synth.parse_verdict("thinking... <validity> True </validity>") is True
    assert synth.parse_verdict("<validity>False</validity>") is False
    assert synth.parse_verdict("True") is None


def test_spec_sampling_covers_the_paper_dimension_counts():
    assert (len(synth.INDUSTRY_VERTICALS), len(synth.JSON_COMPLEXITIES), len(synth.TEXT_LENGTH_STYLES)) == (30, 10, 10)
    assert (len(synth.GENRES), len(synth.TEXT_TYPES)) == (40, 10)
    specs = [synth.sample_spec(random.Random(i)) for i in range(200)]
    assert len({s.industry_vertical for s in specs}) > 20
    assert all(0 <= s.temperature <= 0.5 for s in specs)
