"""Shared test machinery.

- `device_kind`: runs one test body on the CPU reference kernels, the CPU fast kernels and CUDA
  (`cuda:0`: a GPU, or the emulator under TLRS_CUDA_EMULATOR=1). The CUDA case is marked
  `cuda`, so scripts/test runs it in its emulator pass.
- Under TLRS_NO_SKIPS=1 (scripts/test sets it) a skipped test fails: CI must run every test it
  collects, so a test that cannot run its subject there is a failure, never a silent pass.
"""

from __future__ import annotations

import contextlib
import os

import pytest

import tlrs
import tlrs.cuda

DEVICE_KINDS = ["cpu-ref", "cpu-fast", pytest.param("cuda", marks=pytest.mark.cuda)]


class DeviceKind:
    """Where a test body runs: `device` for tensors, `run()` around the ops (kernel settings)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.device = "cuda" if name == "cuda" else "cpu"
        self.fast = name == "cpu-fast"

    def tensor(self, array, dtype=None, requires_grad=False):
        return tlrs.tensor(array, dtype=dtype, device=self.device, requires_grad=requires_grad)

    @contextlib.contextmanager
    def run(self):
        with tlrs.fast_kernels(self.fast):
            yield


@pytest.fixture(params=DEVICE_KINDS)
def device_kind(request) -> DeviceKind:
    if request.param == "cuda" and not tlrs.cuda.is_available():
        pytest.skip("no usable CUDA device (or emulator)")
    return DeviceKind(request.param)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("TLRS_NO_SKIPS") == "1" and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under TLRS_NO_SKIPS=1 (CI runs every test it collects): {reason}"
