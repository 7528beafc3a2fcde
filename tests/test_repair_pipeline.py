"""Unit tests for the defensive parsing pipeline: extract, repair, parse, validate, report."""

from __future__ import annotations

import json
from typing import Literal

import formcast.repair as fr
import pytest
from pydantic import BaseModel, Field

SENTIMENT = {
    "type": "object",
    "properties": {
        "sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["sentiment", "confidence"],
    "additionalProperties": False,
}


class Sentiment(BaseModel):
    sentiment: Literal["positive", "neutral", "negative"]
    confidence: float = Field(ge=0, le=1, description="calibrated, in [0,1]")


# -- extract ---------------------------------------------------------------------


def test_braces_inside_strings_do_not_move_the_boundaries() -> None:
    text = 'Code: {"code": "if (x) { return \\"}\\"; }", "n": 1} and {later}'
    assert fr.parse(text).data == {"code": 'if (x) { return "}"; }', "n": 1}


def test_single_quoted_apostrophes_do_not_move_the_boundaries() -> None:
    text = "Here's the dict: {'text': 'It's a {bracket}', 'n': 1}. That's all {folks}."
    assert fr.parse(text).data == {"text": "It's a {bracket}", "n": 1}


def test_candidates_are_non_overlapping_and_in_order() -> None:
    text = 'a {"x": {"y": 1}} b [1, 2] c {"z": 3'
    cands = fr.find_candidates(text)
    assert [(c.source, text[c.start : c.end]) for c in cands] == [
        ("balanced", '{"x": {"y": 1}}'),
        ("balanced", "[1, 2]"),
        ("unclosed", '{"z": 3'),
    ]


def test_first_candidate_that_validates_wins_and_report_says_which() -> None:
    text = 'Example format: {"sentiment": "<label>"}\nAnswer: {"sentiment": "negative", "confidence": 0.9}'
    res = fr.parse(text, SENTIMENT)
    assert res.data == {"sentiment": "negative", "confidence": 0.9}
    assert res.report.chosen == 1
    assert res.report.candidates[0].outcome.startswith("parsed but invalid")
    assert "candidate 2 of 2" in res.report.stages["extract"]


def test_several_values_are_a_guess_the_first_kept() -> None:
    res = fr.parse('{"a": 1} then {"b": 2}')
    assert res.data == {"a": 1}
    assert res.report.chosen == 0
    [g] = res.report.guesses
    assert g.kind == "candidate" and "2 values" in g.message
    with pytest.raises(fr.GuessRejected):
        fr.parse('{"a": 1} then {"b": 2}', guesses="reject")


def test_a_schema_that_accepts_one_of_several_values_decides_without_a_guess() -> None:
    text = '{"sentiment": "maybe"} or rather {"sentiment": "neutral", "confidence": 0.5}'
    res = fr.parse(text, SENTIMENT)
    assert res.data == {"sentiment": "neutral", "confidence": 0.5}
    assert not res.report.guessed
    [c] = [f for f in res.report.fixes if f.kind == "candidate"]
    assert "only one that matches the schema" in c.message
    # Both valid: a guess again.
    two = '{"sentiment": "neutral", "confidence": 0.5} or {"sentiment": "positive", "confidence": 0.7}'
    assert fr.parse(two, SENTIMENT).report.guessed


def test_text_after_a_value_that_continues_it_is_merged_as_a_guess() -> None:
    res = fr.parse('{"key": "value"}, "key2": "value2"}')
    assert res.data == {"key": "value", "key2": "value2"}
    assert [g.kind for g in res.report.guesses] == ["continuation"]
    assert res.report.guesses[0].offset == 15  # the early '}'
    assert fr.parse("[1, 2], 3]").data == [1, 2, 3]
    with pytest.raises(fr.GuessRejected):
        fr.parse('{"key": "value"}, "key2": "value2"}', guesses="reject")


def test_text_after_a_value_that_does_not_fit_is_dropped_as_a_guess_with_its_offset() -> None:
    res = fr.parse('{"a": 1}, {{{')
    assert res.data == {"a": 1}
    [g] = res.report.guesses
    assert g.kind == "trailing_text" and g.offset == 8
    # Prose is just dropped (and reported where it starts).
    res = fr.parse('{"a": 1}\nHope this helps!')
    assert not res.report.guessed
    [p] = res.report.stage("extract")
    assert p.kind == "prose" and p.offset == 9


def test_a_fence_inside_a_string_is_never_the_value() -> None:
    res = fr.parse('{"a": "\n```{}```\n"\n",\n b: "x",\n}')
    assert res.data != {}
    assert res.report.guessed
    assert fr.parse('{"doc": "see ```json\n{\\"k\\": 1}\n```", "n": 1,}').data == {"doc": 'see ```json\n{"k": 1}\n```', "n": 1}


def test_a_quote_that_could_end_a_string_is_a_guess_either_way() -> None:
    # A regex with a quote: ending the string at it leaves '", "x"]' unreadable.
    res = fr.parse('["^\\s*path\\(\\s*[\'"]", "x"]')
    assert res.data == ["^\\s*path\\(\\s*['\"]", "x"]
    assert [g.kind for g in res.report.guesses] == ["unescaped_quote"]
    # A lost closing quote before the next key: the structural reading, as a guess.
    res = fr.parse('{"city": "New York, "gender": "male"}')
    assert res.data == {"city": "New York", "gender": "male"}
    assert [g.kind for g in res.report.guesses] == ["missing_quote"]
    # A quote followed by a letter cannot end the string: content, no guess.
    res = fr.parse('{"q": "She said "hi" twice",}')
    assert res.data == {"q": 'She said "hi" twice'} and not res.report.guessed


def test_duplicate_keys_are_reported_on_the_fast_path_too() -> None:
    res = fr.parse('[{"key": "first", "key": "second"}]')  # valid JSON: json.loads keeps the last silently
    assert res.data == [{"key": "second"}]
    [g] = res.report.guesses
    assert g.kind == "duplicate_key" and g.pointer == "/0/key"
    assert res.guessed and res.report.fast_path
    with pytest.raises(fr.GuessRejected):
        fr.parse('[{"key": "first", "key": "second"}]', guesses="reject")
    same = fr.parse('{"a": 1, "a": 1}')
    assert same.report.kinds() == ["duplicate_key"] and not same.guessed
    assert fr.parse('{"a": 1, "b": 2}').report.clean


def test_mechanical_candidate_beats_an_earlier_one_that_needs_a_guess() -> None:
    # "[see below]" only parses as a guess (bare words); the real object needs none.
    res = fr.parse('Results [see below]: {"a": 1}')
    assert res.data == {"a": 1}
    assert not res.report.guessed


def test_unclosed_fence_bounds_a_truncated_value() -> None:
    res = fr.parse('```json\n{"a": [1, 2\n```\nSorry, I ran out of tokens.')
    assert res.data == {"a": [1, 2]}
    assert res.report.truncated
    assert {"code_fence", "prose"} <= set(res.report.kinds())


def test_no_json_fails_loudly() -> None:
    with pytest.raises(fr.ExtractionError, match="no JSON"):
        fr.parse("I'm sorry, I can't help with that.")
    with pytest.raises(fr.ExtractionError):
        fr.parse("")


def test_scalar_reply_without_brackets_is_read_mechanically_only() -> None:
    assert fr.parse("True").data is True
    assert fr.parse("'negative'").data == "negative"
    with pytest.raises(fr.ExtractionError):
        fr.parse("negative")  # a bare word is prose, not a guessed string


def test_bom_and_bytes_input() -> None:
    res = fr.parse('\ufeff{"a": 1}'.encode())
    assert res.data == {"a": 1}
    assert "bom" in res.report.kinds()
    with pytest.raises(fr.RepairError, match="UTF-8"):
        fr.parse(b"\xff\xfe{")
    with pytest.raises(TypeError):
        fr.parse(123)  # type: ignore[arg-type]


# -- repair ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ('{"a": 1,}', {"a": 1}, "trailing_comma"),
        ("[1, 2,]", [1, 2], "trailing_comma"),
        ("[1,,2]", [1, 2], "extra_comma"),
        ('{"a": 1 "b": 2}', {"a": 1, "b": 2}, "missing_comma"),
        ('{"a" 1}', {"a": 1}, "missing_colon"),
        ('{"a": 1 /* c */, // d\n "b": 2 # e\n}', {"a": 1, "b": 2}, "comment"),
        ("{“a”: “b”}", {"a": "b"}, "smart_quotes"),
        ("{'a': 'b'}", {"a": "b"}, "single_quotes"),
        ('{"a": True, "b": None}', {"a": True, "b": None}, "python_literal"),
        ('{"a": TRUE}', {"a": True}, "literal_case"),
        ('{"a": undefined}', {"a": None}, "js_literal"),
        ("{a: 1, $b: 2, c_d: 3}", {"a": 1, "$b": 2, "c_d": 3}, "unquoted_key"),
        ("{1: 'x'}", {"1": "x"}, "numeric_key"),
        ('{"a": "x\ny\tz"}', {"a": "x\ny\tz"}, "control_char"),
        ('{"a": "say "hi" now"}', {"a": 'say "hi" now'}, "unescaped_quote"),
        ('{"a": "C:\\dir"}', {"a": "C:\\dir"}, "invalid_escape"),
        ("{'a': 'it\\'s \\xe9'}", {"a": "it's é"}, "python_escape"),
        ('{"a": +1, "b": .5, "c": 2.}', {"a": 1, "b": 0.5, "c": 2.0}, "json5_number"),
        ('{"a": [1, 2}', {"a": [1, 2]}, "mismatched_bracket"),
        ('[{"a": 1]', [{"a": 1}], "mismatched_bracket"),
        ('{"a": 1]}', {"a": 1}, "extra_closer"),
    ],
)
def test_each_fault_class_is_repaired_and_logged(text: str, expected: object, kind: str) -> None:
    res = fr.parse(text)
    assert res.data == expected
    assert kind in res.report.kinds(), res.report.lines()
    assert not res.report.guessed


def test_apostrophes_and_literals_inside_values_are_left_alone() -> None:
    text = "{'q': 'It's True that None of them said \"False\"', 'ok': True}"
    assert fr.parse(text).data == {"q": 'It\'s True that None of them said "False"', "ok": True}


def test_inner_quote_before_a_comma_that_is_prose_stays_content() -> None:
    text = '{"a": "He said "yes, sure" and left", "b": 1}'
    assert fr.parse(text).data == {"a": 'He said "yes, sure" and left', "b": 1}


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ('{"a": 0x10}', {"a": 16}, "hex_number"),
        ("[,1]", [1], "extra_comma"),  # or '[], 1': the '[' may have lost its ']'
        ('{"name": "John", "city": "New York, "age": 30}', {"name": "John", "city": "New York", "age": 30}, "missing_quote"),
        ('[{"key": "first", "key": "second"}]', [{"key": "second"}], "duplicate_key"),
        ('{"a": {"key": 1, "key": 2},}', {"a": {"key": 2}}, "duplicate_key"),
        ('{"a": 007}', {"a": 7}, "leading_zeros"),
        ('{"a": negative}', {"a": "negative"}, "bare_string"),
        ('{"a": "cut', {"a": "cut"}, "truncated"),
        ('{"a": 1, "b', {"a": 1}, "truncated"),
        ('{"a": tr', {"a": True}, "truncated"),
        ('{"a": 12', {"a": 12}, "truncated"),
    ],
)
def test_judgement_calls_are_marked_as_guesses(text: str, expected: object, kind: str) -> None:
    res = fr.parse(text)
    assert res.data == expected
    assert kind in [g.kind for g in res.report.guesses]
    with pytest.raises(fr.GuessRejected):
        fr.parse(text, guesses="reject")


def test_clean_truncation_is_not_a_guess() -> None:
    res = fr.parse('{"a": [1, 2], "b": {"c": true},')
    assert res.data == {"a": [1, 2], "b": {"c": True}}
    assert res.report.truncated and not res.report.guessed


@pytest.mark.parametrize(
    ("option", "expected"),
    [("null", {"a": None, "b": None}), ("float", {"a": float("inf"), "b": float("-inf")})],
)
def test_nonfinite_numbers_follow_the_option(option: str, expected: dict) -> None:
    res = fr.parse("{'a': Infinity, 'b': -Infinity}", nonfinite=option)
    assert res.data == expected
    assert "nonfinite_number" in res.report.kinds()


def test_nonfinite_float_accepts_what_json_loads_accepts() -> None:
    # With nonfinite="float" a reply that is otherwise valid takes the fast path, as json.loads would.
    res = fr.parse('{"a": NaN}', nonfinite="float")
    assert res.report.fast_path
    assert fr.parse('{"a": NaN}').data == {"a": None}


def test_nonfinite_error_option_and_nan() -> None:
    with pytest.raises(fr.UnrepairableError, match="nonfinite='error'"):
        fr.parse('{"a": NaN}', nonfinite="error")
    value = fr.parse('{"a": NaN}', nonfinite="float").data["a"]
    assert value != value  # NaN


def test_strict_parse_never_evaluates() -> None:
    res = fr.parse("{'a': __import__('os').getcwd()}")
    assert res.data == {"a": "__import__('os').getcwd()"}  # text, never executed
    assert res.report.guessed
    with pytest.raises(fr.GuessRejected):
        fr.parse("{'a': __import__('os').getcwd()}", guesses="reject")


def test_unrepairable_reports_where() -> None:
    with pytest.raises(fr.UnrepairableError) as e:
        fr.parse('{"a": @@@}')
    assert e.value.offset == 6
    assert "offset 6" in str(e.value)


def test_deep_nesting_fails_cleanly() -> None:
    with pytest.raises(fr.RepairError):
        fr.parse("[" * 100_000 + "1,")


def test_repair_json_stage_alone() -> None:
    out = fr.repair_json("{'a': True,}")
    assert out.text == '{"a":true}'
    assert {f.kind for f in out.fixes} == {"single_quotes", "python_literal", "trailing_comma"}


# -- validate ----------------------------------------------------------------------


def test_enum_near_miss_is_reported_not_changed() -> None:
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse('{"sentiment": "slightly_negative", "confidence": 0.4}', SENTIMENT)
    err = e.value
    assert err.value == {"sentiment": "slightly_negative", "confidence": 0.4}
    [issue] = err.issues
    assert issue.pointer == "/sentiment"
    assert issue.keyword == "enum"
    assert issue.message == "'slightly_negative' is not one of ['positive', 'neutral', 'negative']"
    assert "'negative'" in (issue.hint or "")
    assert str(err) == "1 validation issue:\n/sentiment: 'slightly_negative' is not one of ['positive', 'neutral', 'negative']"
    assert err.report.issues == err.issues


def test_enum_coercion_is_explicit_and_logged_as_a_guess() -> None:
    res = fr.parse('{"sentiment": "slightly_negative", "confidence": 0.4}', SENTIMENT, coerce={"enum"})
    assert res.value == {"sentiment": "negative", "confidence": 0.4}
    [fix] = res.report.stage("coerce")
    assert fix.guess and fix.pointer == "/sentiment" and "'slightly_negative' -> 'negative'" in fix.message
    assert res.report.issues  # what was wrong before coercion stays in the log


def test_enum_coercion_refuses_negations_and_ties() -> None:
    with pytest.raises(fr.ValidationFailed):
        fr.parse('{"sentiment": "not_negative", "confidence": 0.4}', SENTIMENT, coerce={"enum"})
    with pytest.raises(fr.ValidationFailed):
        fr.parse('{"sentiment": "positive_or_negative", "confidence": 0.4}', SENTIMENT, coerce={"enum"})


def test_type_coercion_is_explicit() -> None:
    text = '{"sentiment": "POSITIVE", "confidence": "0.8"}'
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse(text, SENTIMENT)
    assert {i.pointer for i in e.value.issues} == {"/sentiment", "/confidence"}
    res = fr.parse(text, SENTIMENT, coerce={"enum", "types"})
    assert res.value == {"sentiment": "positive", "confidence": 0.8}
    assert sorted(f.kind for f in res.report.stage("coerce")) == ["enum", "types"]


def test_validation_issues_carry_json_pointers_for_nested_values() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"a/b": {"type": "integer"}}}}}}
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse('{"items": [{"a/b": 1}, {"a/b": "x"}]}', schema)
    assert [i.pointer for i in e.value.issues] == ["/items/1/a~1b"]


def test_pydantic_model_gives_an_instance_and_is_strict() -> None:
    res = fr.parse('```json\n{"sentiment": "neutral", "confidence": 0.5,}\n```', Sentiment)
    assert isinstance(res.value, Sentiment)
    assert res.value.confidence == 0.5
    assert res.data == {"sentiment": "neutral", "confidence": 0.5}
    # Strict: a string is not silently an int/float.
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse('{"sentiment": "neutral", "confidence": "0.5"}', Sentiment)
    assert e.value.issues[0].pointer == "/confidence"
    res = fr.parse('{"sentiment": "Neutral", "confidence": "0.5"}', Sentiment, coerce={"types", "enum"})
    assert res.value == Sentiment(sentiment="neutral", confidence=0.5)


def test_pydantic_type_adapter_targets() -> None:
    res = fr.parse("[1, 2, 3,]", list[int])
    assert res.value == [1, 2, 3]
    with pytest.raises(fr.ValidationFailed) as e:
        fr.parse('[1, "x"]', list[int])
    assert e.value.issues[0].pointer == "/1"


def test_invalid_schema_is_a_clear_error() -> None:
    with pytest.raises(fr.InvalidSchema, match="invalid JSON Schema"):
        fr.parse("{}", {"type": "objekt"})


def test_unknown_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown coercion"):
        fr.parse("{}", coerce={"everything"})
    with pytest.raises(ValueError, match="nonfinite"):
        fr.RepairOptions(nonfinite="zero")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fr.parse("{}", not_an_option=True)


def test_double_encoded_reply_is_kept_when_the_schema_wants_a_string() -> None:
    text = json.dumps(json.dumps({"a": 1}))
    assert fr.parse(text, {"type": "string"}).value == '{"a": 1}'
    res = fr.parse(text, {"type": "object"})
    assert res.value == {"a": 1} and res.report.guessed


# -- report ----------------------------------------------------------------------------


def test_report_is_loggable() -> None:
    res = fr.parse("Sure!\n```json\n{'a': True, 'b': [1, 2,],}\n```")
    d = res.report.to_dict()
    json.dumps(d)
    assert d["summary"] == res.report.summary()
    assert res.report.summary().startswith("repaired: ")
    text = str(res.report)
    for kind in ("code_fence", "single_quotes", "python_literal", "trailing_comma"):
        assert kind in text
    assert set(res.report.stages) >= {"extract", "repair", "parse", "validate"}


def test_fast_path_report_is_clean() -> None:
    res = fr.parse('{"a": 1}')
    assert not res.repaired and res.report.clean and res.report.summary() == "clean (fast path)"
    assert fr.loads("[1]") == [1]


def test_library_fallback_is_opt_in_and_marked_as_guess() -> None:
    pytest.importorskip("json_repair")
    text = '{"a": 1 ; "b": 2}'  # our repairer refuses the stray ';'
    with pytest.raises(fr.UnrepairableError):
        fr.parse(text)
    res = fr.parse(text, fallback="json_repair")
    assert res.data == {"a": 1, "b": 2}
    assert res.report.guessed
    assert all(f.stage == "fallback" for f in res.report.fixes)
