"""The engine benchmark's merge of rounds (benchmarks/report.py): what its
tables of cold p99 and max are made of."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import report  # noqa: E402


def _run(compile_ms, mask_ns, digests=None, status="ok"):
    return dict(engine="e", workload="w", status=status, compile_ms=compile_ms, tokenizer_ms=1.0,
                cold=dict(mask_ns=mask_ns, digests=digests or [1] * len(mask_ns), allowed=[1] * len(mask_ns),
                          failures=[]),
                warm=[dict(mask_ns=[5] * len(mask_ns), failures=[])])


def test_each_cold_step_and_the_compile_are_medians_over_the_rounds():
    # One round's stall (step 1 of round 2) must not become the maximum.
    runs = [_run(2.0, [100, 10, 30]), _run(9.0, [120, 900, 30]), _run(3.0, [80, 12, 31])]
    m = report.with_stats(report.merge_rounds(runs))
    assert m["rounds"] == 3
    assert m["compile_ms"] == 3.0
    assert m["cold"]["mask_ns"] == [100, 12, 30]
    assert m["cold_stats"]["max"] == 0.1
    # Time to first mask: the median of each round's compile + first mask.
    assert m["first_mask_ms"] == sorted(r["compile_ms"] + r["cold"]["mask_ns"][0] / 1e6 for r in runs)[1]


def test_rounds_whose_masks_differ_are_incorrect():
    runs = [_run(1.0, [1, 2], digests=[7, 8]), _run(1.0, [1, 2], digests=[7, 9])]
    m = report.merge_rounds(runs)
    assert m["status"] == "incorrect"
    assert "step 1" in m["reason"]


def test_a_failed_round_is_the_result():
    runs = [_run(1.0, [1, 2]), dict(engine="e", workload="w", status="timeout", reason="> 120 s")]
    m = report.merge_rounds(runs)
    assert m["status"] == "timeout"
    assert m["rounds"] == 2


def test_one_round_is_left_as_measured():
    r = _run(1.5, [3, 4])
    m = report.with_stats(report.merge_rounds([r]))
    assert m["compile_ms"] == 1.5
    assert m["cold"]["mask_ns"] == [3, 4]
    assert m["first_mask_ms"] == 1.5 + 3 / 1e6
