"""Checkpoints from anywhere never crash the process that opens them, and an interrupted save
leaves no litter: truncations at every byte, random byte flips and crafted headers each load
correctly or raise CheckpointError; SIGKILLs during saves leave only the checkpoint behind.

The file cases run in a worker process, so a crash is a failing test naming the last case."""

import json
import os
import random
import signal
import struct
import subprocess
import sys
import textwrap
import time

import pytest

WORKER = textwrap.dedent('''
    import json, sys
    import tlrs
    defn, _ = tlrs.models.mlp(3, 4, 1)
    counts = {"loaded": 0, "checkpoint_error": 0}
    for line in sys.stdin:
        path = line.strip()
        print("case", path, file=sys.stderr, flush=True)
        try:
            m = tlrs.Module.load(path, defn)
            m.forward([tlrs.ones(3), tlrs.ones(1)])
            counts["loaded"] += 1
        except tlrs.CheckpointError as e:
            assert str(e), "empty message"
            counts["checkpoint_error"] += 1
    print(json.dumps(counts))
''')


def _good(tmp_path):
    import tlrs

    defn, _ = tlrs.models.mlp(3, 4, 1)
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    path = tmp_path / "good.safetensors"
    m.save(str(path))
    return path.read_bytes()


def _run(paths):
    proc = subprocess.run([sys.executable, "-c", WORKER], input="\n".join(map(str, paths)),
                          capture_output=True, text=True, timeout=600)
    last = [ln for ln in proc.stderr.splitlines() if ln.startswith("case ")][-1:]
    assert proc.returncode == 0, f"worker died ({proc.returncode}) at {last}: {proc.stderr[-800:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _crafted(header, data=b""):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


CRAFTED = [
    {"w": {"dtype": "F64", "shape": [0, 2**62], "data_offsets": [0, 0]}},
    {"w": {"dtype": "F64", "shape": [2**40, 2**40], "data_offsets": [0, 8]}},
    {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 2**60]}},
    {"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}},
    {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
    {"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}},
    {"w": {"dtype": "F64", "shape": [-1], "data_offsets": [0, 8]}},
    {"w": {"dtype": "F64", "shape": [2**64], "data_offsets": [0, 8]}},
    {"__metadata__": {"format": "tlrs.module/1", "checksum": "x"}},
    {"__metadata__": {"format": 3}},
    b"not json at all",
    b"{" * 1000,
    b"",
]


def test_truncations_flips_and_crafted_headers_never_crash(tmp_path):
    good = _good(tmp_path)
    paths = []
    for cut in range(len(good)):
        p = tmp_path / f"cut{cut}.safetensors"
        p.write_bytes(good[:cut])
        paths.append(p)
    rng = random.Random(0)
    for i in range(400):
        b = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        p = tmp_path / f"flip{i}.safetensors"
        p.write_bytes(bytes(b))
        paths.append(p)
    for i, h in enumerate(CRAFTED):
        p = tmp_path / f"crafted{i}.safetensors"
        p.write_bytes(_crafted(h, b"\0" * 16))
        paths.append(p)
    big = tmp_path / "hugelen.safetensors"
    big.write_bytes(struct.pack("<Q", 2**63) + b"{}")
    paths.append(big)
    counts = _run(paths)
    assert counts["loaded"] + counts["checkpoint_error"] == len(paths)
    # The intact prefix (all bytes) is not among the cuts; flips of metadata or data are caught
    # by the checksum, so (almost) nothing corrupt loads.
    assert counts["checkpoint_error"] >= len(good) + len(CRAFTED)


SAVER = textwrap.dedent('''
    import sys
    import tlrs
    defn, _ = tlrs.models.mlp(64, 256, 1)
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    print("ready", flush=True)
    while True:
        m.save(sys.argv[1])
''')


@pytest.mark.skipif(not os.path.exists("/proc/self"), reason="liveness of a writer is read from /proc")
def test_killed_saves_leave_no_temporary_files(tmp_path):
    target = tmp_path / "model.safetensors"
    rng = random.Random(1)
    for _ in range(30):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(target)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    import tlrs

    defn, _ = tlrs.models.mlp(64, 256, 1)
    tlrs.Module.load(str(target), defn)  # whatever was killed, the target is whole
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != target.name)
    assert leftovers == [], leftovers
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    m.save(str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]
