"""Rung 3: tag-delimited answers read into dicts, validated, and streamed."""

from __future__ import annotations

import formcast.repair as fr
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

ANSWER = """Let me look at this review.
<analysis>
<sentiment>negative</sentiment>
<confidence>0.87</confidence>
<quote>the hinge "snapped" after <b>two</b> weeks; code: if (a < b) { return {"x": 1}; } </div></quote>
<tags><tag>hinge</tag><tag>durability</tag></tags>
<details>{"part": "hinge", "days": 14,}</details>
</analysis>
Hope that helps!"""

SCHEMA = {
    "type": "object",
    "properties": {
        "sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "quote": {"type": "string", "description": "verbatim"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "details": {"type": "object", "properties": {"part": {"type": "string"}, "days": {"type": "integer"}}},
    },
    "required": ["sentiment", "confidence", "quote"],
}

QUOTE = 'the hinge "snapped" after <b>two</b> weeks; code: if (a < b) { return {"x": 1}; } </div>'


def test_without_schema_structure_follows_the_tags() -> None:
    res = fr.parse_tags(ANSWER)
    a = res.data["analysis"]
    assert a["sentiment"] == "negative"
    assert a["confidence"] == "0.87"  # text: nothing says it is a number
    assert a["quote"] == QUOTE  # mixed content stays verbatim
    assert a["tags"] == {"tag": ["hinge", "durability"]}
    assert a["details"] == '{"part": "hinge", "days": 14,}'


def test_with_schema_values_are_decoded_validated_and_logged() -> None:
    res = fr.parse_tags(ANSWER, SCHEMA)
    assert res.value == {
        "sentiment": "negative",
        "confidence": 0.87,
        "quote": QUOTE,
        "tags": ["hinge", "durability"],
        "details": {"part": "hinge", "days": 14},
    }
    kinds = res.report.kinds()
    assert "tag_root" in kinds and "tag_text" in kinds and "trailing_comma" in kinds and "prose" in kinds
    assert res.report.stages["validate"] == "ok"
    [root] = res.report.stage("decode")[:1]
    assert "<analysis>" in root.message


def test_semantic_problems_are_reported_not_fixed() -> None:
    text = "<sentiment>slightly_negative</sentiment><confidence>high</confidence><quote>x</quote>"
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse_tags(text, SCHEMA)
    assert sorted(i.pointer for i in e.value.issues) == ["/confidence", "/sentiment"]
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse_tags(text, SCHEMA, coerce={"enum"})
    assert [i.pointer for i in e.value.issues] == ["/confidence"]


def test_pydantic_model_and_explicit_root() -> None:
    class Review(BaseModel):
        sentiment: str
        confidence: float

    text = "<thinking>It <b>broke</b>.</thinking><answer><sentiment>negative</sentiment><confidence>0.9</confidence></answer>"
    res = fr.parse_tags(text, Review, root="answer")
    assert res.value == Review(sentiment="negative", confidence=0.9)
    with pytest.raises(fr.ExtractionError, match="no <final>"):
        fr.parse_tags(text, Review, root="final")


def test_stray_and_unclosed_tags_inside_content_are_text() -> None:
    res = fr.parse_tags("<code>a </b> <br> x < y && z > 2</code>")
    assert res.data == {"code": "a </b> <br> x < y && z > 2"}


def test_names_filter() -> None:
    res = fr.parse_tags("<a><b>1</b></a>", names={"a"})
    assert res.data == {"a": "<b>1</b>"}


def test_no_tags_fails_loudly() -> None:
    with pytest.raises(fr.ExtractionError):
        fr.parse_tags("negative, 0.87")


def test_truncated_answer_is_flagged() -> None:
    res = fr.parse_tags(ANSWER[:140], {"type": "object", "properties": {"sentiment": {"type": "string"}}})
    assert res.data["sentiment"] == "negative"
    assert res.report.truncated and res.report.guessed
    with pytest.raises(fr.TruncatedError):
        fr.parse_tags(ANSWER[:140], allow_truncated=False)


def test_incremental_fields_arrive_as_tags_close() -> None:
    t = fr.TagStream()
    seen = []
    for i in range(0, len(ANSWER), 5):
        t.feed(ANSWER[i : i + 5])
        seen.extend(p for p, _ in t.new_events())
    assert seen[:2] == ["/analysis/sentiment", "/analysis/confidence"]
    assert "/analysis/quote" in seen and seen[-1] == "/analysis"
    assert t.done


def test_snapshot_shows_closed_fields_under_open_parents() -> None:
    t = fr.TagStream()
    assert t.feed("<analysis><sentiment>neg") == {"analysis": {}}  # a parent shows once it has a child
    assert t.feed("ative</sentiment><quote>it's") == {"analysis": {"sentiment": "negative"}}
    assert t.feed(' "broken"</qu') == {"analysis": {"sentiment": "negative"}}
    assert t.feed("ote>") == {"analysis": {"sentiment": "negative", "quote": 'it\'s "broken"'}}
    res = t.finish({"type": "object", "properties": {"sentiment": {"type": "string"}, "quote": {"type": "string"}}})
    assert res.report.truncated  # </analysis> never came


_names = st.sampled_from(["alpha", "beta", "gamma", "delta"])
_content = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40).map(str.strip)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(_names, _content, min_size=1), chunk=st.integers(1, 9))
def test_any_free_text_round_trips_through_string_fields(fields: dict[str, str], chunk: int) -> None:
    for name, text in fields.items():
        if f"</{name}" in text:
            return  # the one collision tags have: the literal closing tag
    doc = "Answer:\n<result>\n" + "\n".join(f"<{k}>{v}</{k}>" for k, v in fields.items()) + "\n</result>"
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in ["alpha", "beta", "gamma", "delta"]}}
    t = fr.TagStream(schema)
    for i in range(0, len(doc), chunk):
        t.feed(doc[i : i + chunk])
    assert t.finish().value == fields


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="<>/abc \"'{}x\n", max_size=60), size=st.integers(1, 7))
def test_arbitrary_text_never_crashes_the_tag_reader(text: str, size: int) -> None:
    t = fr.TagStream()
    for i in range(0, len(text), size):
        t.feed(text[i : i + size])
    try:
        t.finish()
    except fr.RepairError:
        pass
