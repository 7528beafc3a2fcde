"""The shared corpus of malformed LLM outputs: every unambiguous case gives the
expected value; ambiguous ones either fail loudly or come back flagged as guesses."""

from __future__ import annotations

import json
from pathlib import Path

import formcast.repair as fr
import pytest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "repair" / "malformed-llm-outputs.jsonl"
if not CORPUS.exists():  # CI clones main with shared/ beside it
    CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "repair" / "malformed-llm-outputs.jsonl"

CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()] if CORPUS.exists() else []
pytestmark = pytest.mark.skipif(not CASES, reason=f"corpus not found at {CORPUS}")


def _id(case: dict) -> str:
    return f"{case['id']:02d}-{case['category']}"


@pytest.mark.parametrize("case", [c for c in CASES if not c["ambiguous"]], ids=_id)
def test_unambiguous_case_gives_expected_value(case: dict) -> None:
    res = fr.parse(case["input"])
    assert res.data == case["expected"]
    assert not res.report.guessed, res.report.lines()
    json.dumps(res.report.to_dict())  # the report is loggable as JSON


@pytest.mark.parametrize("case", [c for c in CASES if c["ambiguous"]], ids=_id)
def test_ambiguous_case_is_reported_as_a_guess_or_fails_loudly(case: dict) -> None:
    try:
        res = fr.parse(case["input"])
    except fr.RepairError as e:
        assert str(e)
        return
    assert res.report.guessed, f"ambiguous case returned without a guess flag: {res.report.lines()}"
    assert res.data == case["expected"]


@pytest.mark.parametrize("case", [c for c in CASES if c["ambiguous"]], ids=_id)
def test_ambiguous_case_makes_no_guess_when_guesses_are_rejected(case: dict) -> None:
    try:
        res = fr.parse(case["input"], guesses="reject")
    except fr.GuessRejected as e:
        assert "judgement call" in str(e)
        return
    # Only a literal reading is acceptable then (a double-encoded reply stays a string).
    assert not res.report.guessed
    assert res.data == json.loads(case["input"])


def test_valid_control_takes_the_fast_path_unchanged() -> None:
    case = next(c for c in CASES if c["category"] == "valid_control")
    res = fr.parse(case["input"])
    assert res.data == case["expected"]
    assert res.report.clean and res.report.fast_path


EXPECTED_KINDS = {
    "fence_json": {"code_fence"},
    "prose_both_sides": {"prose"},
    "trailing_comma_object": {"trailing_comma"},
    "single_quotes": {"single_quotes"},
    "python_literals": {"python_literal"},
    "smart_quotes": {"smart_quotes"},
    "unquoted_keys": {"unquoted_key"},
    "line_comment": {"comment"},
    "hash_comment": {"comment"},
    "missing_comma": {"missing_comma"},
    "unescaped_newline_in_string": {"control_char"},
    "unescaped_inner_quotes": {"unescaped_quote"},
    "truncated_after_comma": {"truncated"},
    "kitchen_sink": {"code_fence", "prose", "single_quotes", "python_literal", "trailing_comma"},
}


@pytest.mark.parametrize("category", sorted(EXPECTED_KINDS))
def test_report_names_what_was_touched(category: str) -> None:
    case = next(c for c in CASES if c["category"] == category)
    res = fr.parse(case["input"])
    assert EXPECTED_KINDS[category] <= set(res.report.kinds())
    for fix in res.report.fixes:
        assert fix.kind in fr.FIX_KINDS
        if fix.offset is not None:
            assert 0 <= fix.offset <= len(case["input"])


def test_truncated_cases_are_flagged() -> None:
    for case in CASES:
        if case["category"].startswith("truncated"):
            assert fr.parse(case["input"]).report.truncated, case["category"]
            with pytest.raises(fr.TruncatedError):
                fr.parse(case["input"], allow_truncated=False)


def test_trailing_prose_with_braces_chooses_the_first_candidate() -> None:
    case = next(c for c in CASES if c["category"] == "trailing_text_with_braces")
    res = fr.parse(case["input"])
    assert res.report.chosen == 0
    assert len(res.report.candidates) == 2
    assert res.report.candidates[0].outcome == "chosen"


# -- formcast's own corpus (tests/data/repair, written by make_corpus.py) ---------------

OWN = Path(__file__).resolve().parent / "data" / "repair"
OWN_CASES = [json.loads(line) for line in (OWN / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
# Cases formcast fails on loudly, by shape (an error is allowed by the contract; these say where it gives up).
KNOWN_ERRORS = {"stray_punctuation"}


def _own_id(case: dict) -> str:
    return f"{case['id']:03d}-{case['shape']}"


def test_own_corpus_is_what_the_generator_writes() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(OWN / "make_corpus.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(OWN_CASES) >= 200
    assert {"hand", "generated"} == {c["source"] for c in OWN_CASES}


@pytest.mark.parametrize("case", OWN_CASES, ids=_own_id)
def test_own_corpus_case_is_right_or_marked_never_silently_wrong(case: dict) -> None:
    readings = case["readings"] if case["ambiguous"] else [case["expected"]]
    try:
        res = fr.parse(case["input"])
    except fr.RepairError:
        assert case["shape"] in KNOWN_ERRORS, f"unexpected failure on {case['input']!r}"
        return
    if case["ambiguous"]:
        # Two readings are plausible: the pick must say it is a guess.
        assert res.report.guessed, res.report.lines()
        assert res.data in readings, (res.data, readings)
    else:
        assert res.data == readings[0], (res.data, res.report.lines())
        assert not res.report.guessed, res.report.lines()  # one reading: no needless flag


@pytest.mark.parametrize("case", [c for c in OWN_CASES if c["ambiguous"]], ids=_own_id)
def test_own_corpus_ambiguous_case_is_refused_when_guesses_are_rejected(case: dict) -> None:
    with pytest.raises(fr.GuessRejected) as e:
        fr.parse(case["input"], guesses="reject")
    assert e.value.report.guesses or "judgement call" in str(e.value)


def test_every_fix_follows_its_class() -> None:
    # FIX_CLASSES is the written contract: a mechanical kind is never a guess, a
    # judgement kind always is. Checked on every fix the two corpora produce.
    assert set(fr.FIX_CLASSES) == set(fr.FIX_KINDS)
    seen: set[str] = set()
    for case in CASES + OWN_CASES:
        try:
            fixes = fr.parse(case["input"]).report.fixes
        except fr.RepairError as e:
            fixes = e.report.fixes
        for f in fixes:
            assert f.kind in fr.FIX_KINDS, f
            seen.add(f.kind)
            if fr.FIX_CLASSES[f.kind] == "mechanical":
                assert not f.guess, (case["input"], f)
            elif fr.FIX_CLASSES[f.kind] == "judgement":
                assert f.guess, (case["input"], f)
    assert {"missing_quote", "continuation", "duplicate_key", "candidate", "unescaped_quote", "truncated"} <= seen
