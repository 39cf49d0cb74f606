"""CUDA on a machine without it: every query answers without raising, every use raises
CudaUnavailableError (an Exception, never a panic) naming what is missing and how to fix it."""

import subprocess
import sys

import pytest

import tlrs
from tlrs import cuda

pytestmark = pytest.mark.skipif(tlrs.cuda.device_count() > 0,
                                reason="this machine has a CUDA device (or the emulator is on)")


def test_queries_never_raise():
    assert cuda.is_available() is False
    assert cuda.device_count() == 0
    d = cuda.diagnostics()
    assert d["binding"] == "cuda-13000"
    assert d["device tensors"] == "f32 and f64 (NVRTC kernels, cuBLAS GEMM)"
    assert d["tf32"] == "off"
    # A library preloaded from a pip wheel is reported with the path it was loaded from.
    for path in d["preloaded from pip"].split(", "):
        if "libnvrtc" in path:
            assert d["nvrtc library"] == f"found: {path}"


def test_allow_tf32_flag_round_trips():
    cuda.allow_tf32(True)
    try:
        assert cuda.tf32_allowed() and cuda.diagnostics()["tf32"] == "allowed"
    finally:
        cuda.allow_tf32(False)
    assert not cuda.tf32_allowed()


def test_unavailable_reason_names_the_missing_library():
    reason = cuda.unavailable_reason()
    assert "cuda" in reason and "libcuda.so.1" in reason
    assert "install the NVIDIA driver" in reason


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:1"])
def test_tensor_to_cuda_raises_cleanly(device):
    with pytest.raises(tlrs.CudaUnavailableError) as info:
        tlrs.ones(3).to(device)
    assert isinstance(info.value, RuntimeError) and "libcuda" in str(info.value)


def test_constructor_with_cuda_device_raises_cleanly():
    with pytest.raises(tlrs.CudaUnavailableError):
        tlrs.zeros(2, device="cuda")


def test_cli_cuda_is_one_error_line_exit_2():
    proc = subprocess.run([sys.executable, "-m", "tlrs", "run", "hello", "--cuda"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tlrs: error: ") and "CUDA" in err[0]
    assert proc.stdout == ""


def test_cuda_method_raises_cleanly():
    with pytest.raises(tlrs.CudaUnavailableError):
        tlrs.ones(2).cuda()
    assert tlrs.ones(2).cpu().device == "cpu"
