"""How much of PyTorch's OpInfo sample set tlrs serves: per op, the samples that pass (values
and gradients match torch), that tlrs refuses (unsupported), that it gets wrong, and that crash;
then the totals and the commonest reasons for refusing (what to implement next).
The harness and the op mapping are tests/opinfo_cases.py.

    python benchmarks/opinfo_coverage.py [--ops add,nn.functional.conv2d] [--json PATH]

`--ops` takes OpInfo keys (`div:trunc_rounding`) or names (`div`: every variant).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import opinfo_cases as oc  # noqa: E402
from opinfo_runner import Runner  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated OpInfo keys or names (default: every mapped op)")
    ap.add_argument("--json", type=Path, help="write the counts, the reasons and every non-passing sample here")
    ap.add_argument("--top", type=int, default=25, help="how many unsupported reasons to list")
    ap.add_argument("--raise-floors", action="store_true",
                    help="raise tests/opinfo_floors.json to the pass counts measured here (never lowers one)")
    args = ap.parse_args()

    keys = list(oc.CASES)
    if args.ops:
        want = args.ops.split(",")
        unknown = [w for w in want if not any(k == w or k.split(":")[0] == w for k in keys)]
        if unknown:
            ap.error(f"not mapped: {', '.join(unknown)} (mapped: {', '.join(keys)})")
        keys = [k for k in keys if k in want or k.split(":")[0] in want]

    started = time.monotonic()
    runner = Runner()
    per_op, failing = {}, []
    try:
        for key in keys:
            recs = runner.run(key)
            per_op[key] = oc.summarize(recs)
            failing += [r for r in recs if r["status"] != "pass"]
    finally:
        runner.close()
    wall = time.monotonic() - started

    print(f"tlrs: {runner.tlrs_file}\ndtypes: float32, float64 (CPU)\n")
    head = f"{'op':34} {'samples':>7} {'pass':>6} {'unsup':>6} {'wrong':>6} {'crash':>6} {'pass %':>7}"
    print(head + "\n" + "-" * len(head))
    total = collections.Counter()
    for key, c in per_op.items():
        total.update(c)
        print(_row(key, c))
    print("-" * len(head) + "\n" + _row("TOTAL", total))
    print(f"  (wrong = {total['wrong_value']} wrong_value + {total['wrong_grad']} wrong_grad)")

    reasons = collections.Counter(r["reason"] for r in failing if r["status"] == "unsupported")
    print(f"\ntop {args.top} unsupported reasons (of {len(reasons)}):")
    for reason, n in reasons.most_common(args.top):
        ops = sorted({r["op"] for r in failing if r.get("reason") == reason})
        print(f"{n:6}  {reason}  [{', '.join(ops)}]")
    for status in ("wrong_value", "wrong_grad", "crash"):
        for r in (r for r in failing if r["status"] == status):
            nan = " [NaN input]" if r.get("nan_input") else ""
            print(f"{status}{nan}: {r['op']} {r['dtype']} #{r['index']} ({r['sample']}): "
                  f"{r.get('reason') or r.get('detail', '')}"[:400])
    print(f"\nwall time: {wall:.1f} s")

    if args.json:
        args.json.write_text(json.dumps({
            "tlrs": runner.tlrs_file, "wall_s": round(wall, 1), "per_op": per_op,
            "total": {k: total[k] for k in ("samples", *oc.STATUSES)},
            "unsupported_reasons": reasons.most_common(), "not_passing": failing,
        }, indent=1, default=str) + "\n")
    if args.raise_floors:
        _raise_floors({k: c["pass"] for k, c in per_op.items()})


def _raise_floors(passed: dict[str, int]) -> None:
    path = Path(__file__).resolve().parents[1] / "tests" / "opinfo_floors.json"
    doc = json.loads(path.read_text())
    raised = {k: (doc["floors"].get(k, 0), n) for k, n in passed.items() if n > doc["floors"].get(k, 0)}
    for k, (_, n) in raised.items():
        doc["floors"][k] = n
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)
    print("\nfloors raised: " + (", ".join(f"{k} {a} -> {b}" for k, (a, b) in raised.items()) or "none"))


def _row(key: str, c: collections.Counter | dict) -> str:
    wrong = c["wrong_value"] + c["wrong_grad"]
    pct = 100 * c["pass"] / c["samples"] if c["samples"] else 0.0
    return (f"{key:34} {c['samples']:7} {c['pass']:6} {c['unsupported']:6} {wrong:6} {c['crash']:6} "
            f"{pct:6.1f}%")


if __name__ == "__main__":
    main()
