"""A quick slice of the op fuzzer (tests/op_fuzz.py; the full run is scripts/fuzz-ops): random
calls over the public op surface in worker processes, so a crash fails this test naming the
call. Every call gives a result or a documented exception with a message, never a crash, a
panic, an internal error, an OverflowError, or a value different from NumPy's."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import op_fuzz  # noqa: E402


def test_two_thousand_op_calls_neither_crash_nor_lie():
    report = op_fuzz.run(seed=20261202, n=2000)
    counts = report["counts"]
    assert report["findings"] == [], "\n".join(report["findings"][:20])
    assert counts["crash"] == counts["bad"] == counts["wrong"] == 0
    # The slice really exercises both outcomes.
    assert counts["result"] > 300 and counts["error"] > 300


def test_the_fuzzer_detects_a_crash_and_a_wrong_value(monkeypatch):
    cases = [("__import__('os')._exit(3)", None), ("tlrs.zeros(2) + 1", None),
             ("ops.add(T([3], 'float64', 1), T([3], 'float64', 2))", "np.subtract(X0, X1)")]
    monkeypatch.setattr(op_fuzz, "cases", lambda seed, n: cases[:n])
    report = op_fuzz.run(seed=0, n=3)
    assert report["counts"]["crash"] == 1 and report["counts"]["wrong"] == 1
    assert any("os')._exit(3)" in f for f in report["findings"])
