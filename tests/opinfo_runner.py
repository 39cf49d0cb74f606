"""The OpInfo harness's worker process (tests/opinfo_cases.py has the op mapping and one
sample's check): `Runner` feeds it jobs and reads its records, so a sample that crashes the
process or hangs is recorded as a crash and the next worker goes on after it.
`python tests/opinfo_runner.py --worker` is that worker."""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
import time
from typing import Any

import torch

import tlrs
from opinfo_cases import SETUP_S, TIMEOUT_S, dtypes_of, iter_records


class Runner:
    """Runs ops in a worker process: a sample that kills the worker or runs past `timeout` is a
    crash, and the next worker goes on from the sample after it."""

    def __init__(self, timeout: float = TIMEOUT_S) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.buf = b""
        self.tlrs_file = ""

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf = b""
        hello = self._read(SETUP_S)
        if hello is None:
            raise RuntimeError("the opinfo worker did not start")
        self.tlrs_file = hello["tlrs"]

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next message, or None when it died or said nothing for `timeout` s."""
        assert self.proc is not None and self.proc.stdout is not None
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
        self._stop()

    def run(self, key: str, dtypes: tuple[torch.dtype, ...] | None = None) -> list[dict[str, Any]]:
        """The records of `key`'s samples (skipped ones left out), in `dtypes_of(key)` by default."""
        dtypes = dtypes_of(key) if dtypes is None else dtypes
        out: list[dict[str, Any]] = []
        for dtype in dtypes:
            dt, start = str(dtype).removeprefix("torch."), 0
            while True:
                if self.proc is None:
                    self._start()
                assert self.proc is not None and self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": key, "dtype": dt, "start": start}).encode() + b"\n")
                self.proc.stdin.flush()
                # The time limit runs from a sample's start; making the samples may take longer.
                begun: dict[str, Any] | None = None
                while (msg := self._read(self.timeout if begun else SETUP_S)) is not None and "done" not in msg:
                    if "begin" in msg:
                        begun = msg
                        continue
                    out.append(msg)
                    start, begun = msg["index"] + 1, None
                if msg is not None:
                    break
                try:  # the pipe closes a moment before the process ends
                    rc = self.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    rc = None
                what = f"no result within {self.timeout:g} s" if rc is None else f"the worker died (exit {rc})"
                self._stop()
                begun = begun or {"sample": "?", "nan_input": False}
                out.append({"op": key, "dtype": dt, "index": start, "status": "crash", "reason": what,
                            "nan_input": begun["nan_input"], "sample": begun["sample"]})
                start += 1
        return [r for r in out if r["status"] != "skipped"]


def _worker() -> None:
    """Reads jobs ({"op", "dtype", "start"}) from stdin; writes {"begin": i, ...} before and the
    record after each sample, then {"done": true}. Stdout is the channel: anything else printed
    goes to stderr."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash ends at once, leaving no core file
    chan = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(msg: dict[str, Any]) -> None:
        chan.write(json.dumps(msg, default=str) + "\n")

    send({"tlrs": tlrs.__file__})
    for line in sys.stdin:
        job = json.loads(line)
        for rec in iter_records(job["op"], getattr(torch, job["dtype"]), job["start"], on_begin=send):
            send(rec)
        send({"done": True})


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _worker()

