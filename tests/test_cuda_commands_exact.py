"""Ten training steps of `tlrs run` commands give the same bits on CUDA as on the CPU (reference
kernels): every parameter and optimizer slot of the saved checkpoint. On the emulator in CI, where
products fold as the CPU's; scripts/gpu-check.sh runs it on a GPU, where cuBLAS's fold order
differs (see docs/numerics.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tlrs
import tlrs.cli.commands

safetensors_numpy = pytest.importorskip("safetensors.numpy")

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")]

# Every model command (`hello` trains nothing).
COMMANDS = tuple(name for name in tlrs.cli.commands.__all__ if name != "DEFAULT_MODELS")


def test_the_list_is_every_model_command():
    assert len(COMMANDS) == 10 and {"gpt", "vit", "resnet", "cnn"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_ten_steps_on_cuda_give_the_cpu_bits(command, tmp_path):
    saved = {}
    for device in ("cpu", "cuda"):
        path = tmp_path / f"{device}.safetensors"
        flags = ["--cuda"] if device == "cuda" else []
        run = subprocess.run([sys.executable, "-m", "tlrs", "run", command, "--steps", "10", "--save", str(path),
                              *flags], capture_output=True, text=True, env=dict(os.environ), timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        saved[device] = safetensors_numpy.load_file(str(path))
    assert saved["cpu"].keys() == saved["cuda"].keys()
    differ = [k for k in saved["cpu"] if saved["cpu"][k].tobytes() != saved["cuda"][k].tobytes()]
    assert not differ, f"{command}: {len(differ)} of {len(saved['cpu'])} tensors differ, e.g. {differ[:3]}"
