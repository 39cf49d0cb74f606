"""NCCL at world size 1 on cuda:0, for tlrs and, as a control, for PyTorch (which loads the
same pip libnccl), each in its own process with NCCL_DEBUG=INFO so NCCL's own log says what
failed. Run by scripts/gpu-check.sh on a GPU machine; exit code 0 when tlrs's collectives work.

    python scripts/nccl-check.py
"""

from __future__ import annotations

import os
import subprocess
import sys

MAPPED = r"""
def mapped():
    libs = {}
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) >= 6:
            name = parts[-1].rsplit("/", 1)[-1]
            for lib in ("libnccl.so", "libcublas.so", "libcublasLt.so", "libnvrtc.so"):
                if name.startswith(lib):
                    libs.setdefault(lib, set()).add(parts[-1])
    for lib, paths in sorted(libs.items()):
        print(f"mapped {lib}: {len(paths)} cop{'y' if len(paths) == 1 else 'ies'}: {sorted(paths)}")
"""

TLRS = MAPPED + r"""
import numpy as np
import tlrs
from tlrs.distributed import _nccl
from tlrs import _core
ok, why = _nccl.probe()
print("tlrs nccl probe:", ok, why, flush=True)
assert ok, why
comm = _core.NcclComm(0, 1, 0, _core.nccl_unique_id())
x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
t = tlrs.tensor(x, device="cuda")
bad = 0
for name, run in (("all_gather", lambda: comm.all_gather(t).numpy()[0]),
                  ("broadcast", lambda: comm.broadcast(t, 0).numpy()),
                  ("all_reduce_sum", lambda: comm.all_reduce_sum(t).numpy())):
    try:
        got = run()
        print(f"tlrs {name}: equal={np.array_equal(got, x)}", flush=True)
        bad += not np.array_equal(got, x)
    except Exception as e:
        print(f"tlrs {name}: {type(e).__name__}: {e}", flush=True)
        bad += 1
(tlrs.tensor(np.ones((64, 64), np.float32), device="cuda") @ tlrs.tensor(np.ones((64, 64), np.float32), device="cuda")).numpy()
mapped()
raise SystemExit(1 if bad else 0)
"""

TORCH = r"""
import os
import torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), flush=True)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4) - 5.5
out = torch.empty(1, 3, 4, device="cuda")
dist.all_gather_into_tensor(out, x)
print("torch all_gather ok:", bool(torch.equal(out[0], x)), flush=True)
dist.destroy_process_group()
"""


def run(name: str, code: str) -> int:
    env = dict(os.environ, NCCL_DEBUG="INFO", PYTHONUNBUFFERED="1")
    print(f"--- {name}", flush=True)
    try:
        p = subprocess.run([sys.executable, "-c", code], env=env, timeout=90,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "", f"\n{name}: timed out after 90 s", flush=True)
        return 124
    print(p.stdout, f"{name}: exit {p.returncode}", flush=True)
    return p.returncode


TORCH_THEN_TLRS = "import torch\ntorch.ones(4, device='cuda').sum().item()\n" + TLRS


def main() -> int:
    rc = run("tlrs", TLRS)
    run("torch (control)", TORCH)
    rc2 = run("torch, then tlrs in the same process", TORCH_THEN_TLRS)
    return rc or rc2


if __name__ == "__main__":
    sys.exit(main())
