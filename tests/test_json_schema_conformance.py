"""Conformance of Grammar.from_json_schema on the JSON-Schema-Test-Suite
(draft 2020-12) and on maskbench-dev (see formcast.conformance; the full
printout is `python -m formcast.conformance json-schema-test-suite|maskbench`).

Targets: no wrong answer anywhere (a valid instance rejected or an invalid
one accepted), at least 90% of the required-file cases answered right, and
at least 95% of maskbench schemas compiled.
"""

from __future__ import annotations

import pytest

from formcast import conformance

pytestmark = pytest.mark.skipif(not conformance.SUITE_DIR.exists(), reason="shared data not available")


@pytest.fixture(scope="module")
def suite_report() -> conformance.Report:
    return conformance.run_suite()


def test_suite_has_no_wrong_answer(suite_report):
    wrong = suite_report.wrong
    assert not wrong, "\n".join(wrong[:20])


def test_suite_required_files_mostly_right(suite_report):
    t = suite_report.totals["required"]
    assert t.cases >= 1290
    assert t.right >= 0.90 * t.cases, f"{t.right}/{t.cases}"
    assert t.undecided == 0


def test_suite_refusals_are_reasoned(suite_report):
    # Remote references, infinite uniqueItems and unknown meta-schemas are
    # the expected refusals; each comes with its reason.
    reasons = " | ".join(suite_report.reasons)
    assert "unresolvable $ref" in reasons and "uniqueItems" in reasons


@pytest.mark.skipif(not conformance.MASKBENCH_DIR.exists(), reason="maskbench-dev not available")
def test_maskbench_sample_has_no_wrong_answer():
    # Every fifth schema, with tight time budgets, keeps the run short (a
    # budget refusal is not a wrong answer); the README command runs all.
    report = conformance.run_maskbench(every=5, time_budget_ms=2000, compile_timeout_s=5.0)
    t = report.totals["maskbench"]
    assert not report.wrong, "\n".join(report.wrong[:20])
    assert t.compiled >= 0.93 * t.schemas, f"{t.compiled}/{t.schemas}"
