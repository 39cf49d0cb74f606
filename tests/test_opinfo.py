"""PyTorch's OpInfo samples against tlrs (tests/opinfo_cases.py), one test per mapped OpInfo,
float32 and float64, values and gradients:

- no sample crashes (a panic, SystemError, OverflowError, an undocumented exception, a dead
  worker or a hang);
- no sample gives a wrong value;
- no sample gives a wrong gradient unless an input holds NaN: there the gradient is not defined
  and torch itself is not consistent (its relu passes the cotangent through at NaN, its hardtanh
  passes it at some NaN elements and not at others, its maximum picks the NaN operand); tlrs's
  choice is documented per op (e.g. `ops.max`, `ops.maximum`);
- at least as many samples pass as `opinfo_floors.json` records, so coverage only goes up. The
  floors were measured on the build the file came with; raise them when an op gains samples.
  (A new torch release may add or drop samples: re-measure with benchmarks/opinfo_coverage.py.)

Every sample of every mapped op runs, float32 and float64, with gradients: the whole file takes
about 15 s on two idle cores (about 60 s while a Rust build shares them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
# PyTorch's OpInfo database needs expecttest (scripts/test installs it): without it the workers
# could not start, so fail here, once, rather than per op.
import expecttest  # noqa: E402,F401

sys.path.insert(0, str(Path(__file__).resolve().parent))

import opinfo_cases as oc  # noqa: E402
from opinfo_runner import Runner  # noqa: E402

FLOORS = json.loads((Path(__file__).parent / "opinfo_floors.json").read_text())["floors"]


@pytest.fixture(scope="module")
def runner():
    r = Runner()
    yield r
    r.close()


def _show(recs: list[dict]) -> str:
    return "\n".join(f"  {r['dtype']} #{r['index']} ({r['sample']}): {r.get('reason') or r.get('detail', '')}"
                     for r in recs[:10])


@pytest.mark.parametrize("key", list(oc.CASES))
def test_opinfo(runner, key):
    recs = runner.run(key)
    crashes = [r for r in recs if r["status"] == "crash"]
    assert not crashes, f"{key}: {len(crashes)} samples crash:\n{_show(crashes)}"
    wrong = [r for r in recs if r["status"] == "wrong_value"]
    assert not wrong, f"{key}: {len(wrong)} samples give wrong values:\n{_show(wrong)}"
    bad_grads = [r for r in recs if r["status"] == "wrong_grad" and not r["nan_input"]]
    assert not bad_grads, f"{key}: {len(bad_grads)} samples without NaN give wrong gradients:\n{_show(bad_grads)}"
    passed, floor = oc.summarize(recs)["pass"], FLOORS.get(key, 0)
    assert passed >= floor, f"{key}: passing samples dropped from {floor} to {passed}"
