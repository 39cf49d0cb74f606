"""Ten training steps of `tlrs run` commands give the same bits on CUDA as on the CPU (reference
kernels), on the eager and on the compiled backend (its graph replayed on the device): every
parameter and optimizer slot of the saved checkpoint. On the emulator in CI, where
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
    runs = {"cpu": [], "cuda": ["--cuda"], "cuda compiled": ["--cuda", "--backend", "compiled"]}
    for name, flags in runs.items():
        path = tmp_path / f"{name.replace(' ', '-')}.safetensors"
        run = subprocess.run([sys.executable, "-m", "tlrs", "run", command, "--steps", "10", "--save", str(path),
                              *flags], capture_output=True, text=True, env=dict(os.environ), timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        saved[name] = safetensors_numpy.load_file(str(path))
    for name in ("cuda", "cuda compiled"):
        assert saved["cpu"].keys() == saved[name].keys()
        differ = [k for k in saved["cpu"] if saved["cpu"][k].tobytes() != saved[name][k].tobytes()]
        assert not differ, f"{command} on {name}: {len(differ)} of {len(saved['cpu'])} tensors differ, e.g. {differ[:3]}"
