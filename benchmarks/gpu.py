"""GPU speed: tlrs on CUDA against PyTorch on CUDA (SGEMM, DGEMM, training steps of MLPs and
ResNet-18), measured in one run, interleaved. Prints a table of times and tlrs/torch ratios;
never fails (a case that raises prints its error in its row and the run goes on).

    python benchmarks/gpu.py [--n 8192] [--quick] [--reps 5] [--k 10] [--budget 1.0] [--out DIR]

tlrs runs with fast kernels (cuBLAS products: the GPU's fast path; its reference kernels fold
each product exactly in the CPU's order, far slower). GEMM: C = A @ B, n x n operands (standard
normal) already on the device. tlrs multiplies f32 tensors under `tlrs.cuda.set_matmul_precision("fp32")` (SGEMM) and f64 tensors under "fp64"
(DGEMM); torch runs `torch.matmul`; TF32 is off on both sides (`tlrs.cuda.allow_tf32(False)`,
`torch.backends.cuda.matmul.allow_tf32 = False`, `torch.backends.cudnn.allow_tf32 = False`).
One repetition times k back-to-back products and then waits for them: torch with
`torch.cuda.synchronize()`, tlrs with `tlrs.cuda.synchronize()`. The tlrs time includes
allocating (and freeing) each product's output; nothing is subtracted. Reported: the median over the
repetitions of ms per product, TFLOP/s = 2n^3 / t, and the tlrs/torch time ratio (> 1: tlrs is
slower). Correctness, once per case: max |C - C_ref| / max |C_ref| over the top-left 256 x 256
corner, of tlrs against torch and against a float64 NumPy product of the same operands.

Training steps, f32: one step = forward, backward and a plain SGD update (lr 1e-3) of every
parameter, on one fixed batch with one-hot targets and the cross-entropy averaged over rows.
tlrs: a `Module` on cuda (eager backend) calling `module.step`; each repetition ends by
downloading the last parameter (the 10-element head bias), which waits for every queued step.
torch: the same architecture with the same initial parameters (nn.Sequential of Linear/ReLU for
the MLPs; for ResNet-18 a torchvision-free BasicBlock ResNet with conv biases and a per-image
norm = nn.GroupNorm(C, C, eps=1e-6), as tlrs's `batch_norm_per_image`), `torch.optim.SGD`,
`torch.cuda.synchronize()`. The number of steps per repetition is chosen so that all
repetitions take about --budget seconds. "loss diff" compares the two initial losses (relative),
a check that both sides compute the same model; for ResNet-18 it is made once more at 3x64x64,
since at 32x32 stage 4 sees 1x1 maps, whose per-image norm is just its bias: the loss is then
log(10) whatever the weights (and only the head bias gets a nonzero gradient), in both.

Without torch, or without a CUDA device for torch, the torch columns show "-". When tlrs
cannot use CUDA, the reason is printed and the exit code is 0. With TLRS_CUDA_EMULATOR=1 tlrs
runs on its host emulator (slow; --quick then uses n = 256).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tlrs
import tlrs.cuda
from tlrs import models, ops
from tlrs.config import Options

LR = 1e-3
CORNER = 256
KMAX = 1000  # most training steps per repetition

Run = Callable[[int], float]  # run(k): seconds for k calls, completion included


def load_torch() -> tuple[Any, str]:
    """(torch with TF32 off, or None; a one-line description)."""
    try:
        import torch
    except ImportError:
        return None, "not installed"
    except Exception as e:  # noqa: BLE001 - a broken install counts as none
        return None, f"not importable ({error_text(e)})"
    try:
        if not torch.cuda.is_available():
            return None, f"{torch.__version__}, no CUDA device for torch"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        return torch, f"{torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}"
    except Exception as e:  # noqa: BLE001
        return None, f"{torch.__version__}, CUDA unusable ({error_text(e)})"


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def measure(runners: dict[str, Run], reps: int, budget: float, fixed_k: int | None
            ) -> tuple[dict[str, float], dict[str, str]]:
    """Median seconds per call of each runner, the runners interleaved in every repetition.

    Each runner is warmed up with one call (kernel compilation, algorithm choice), then k calls
    per repetition: `fixed_k`, else as many as fit budget/reps seconds by a second timed call
    (1 when budget <= 0). Returns (medians, errors by runner name)."""
    ks: dict[str, int] = {}
    errors: dict[str, str] = {}
    for name, run in runners.items():
        try:
            run(1)
            if fixed_k is not None:
                ks[name] = fixed_k
            elif budget <= 0:
                ks[name] = 1
            else:
                ks[name] = max(1, min(KMAX, int(budget / reps / max(run(1), 1e-7))))
        except Exception as e:  # noqa: BLE001 - reported in the table
            errors[name] = error_text(e)
    times: dict[str, list[float]] = {name: [] for name in ks}
    for _ in range(reps):
        for name, k in ks.items():
            if name in errors:
                continue
            try:
                times[name].append(runners[name](k) / k)
            except Exception as e:  # noqa: BLE001
                errors[name] = error_text(e)
    medians = {n: statistics.median(v) for n, v in times.items() if v and n not in errors}
    return medians, errors


def rel_diff(x: np.ndarray, ref: np.ndarray) -> float:
    """max |x - ref| / max |ref| (in float64)."""
    x, ref = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(x - ref))) / scale


def wait_tlrs(y: Any) -> None:
    """Wait for every queued kernel (the product `y` among them)."""
    del y
    tlrs.cuda.synchronize()


# ---------------------------------------------------------------------------------------------
# GEMM


def gemm_case(torch: Any, n: int, dtype: str, k: int, reps: int) -> dict[str, Any]:
    precision = "fp32" if dtype == "float32" else "fp64"
    row: dict[str, Any] = {"case": f"{'s' if dtype == 'float32' else 'd'}gemm n={n}", "dtype": dtype,
                           "n": n, "precision": precision, "k": k}
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.dtype(dtype).type)
    b_np = rng.standard_normal((n, n), dtype=np.dtype(dtype).type)
    c = min(CORNER, n)
    ref = a_np[:c].astype(np.float64) @ b_np[:, :c].astype(np.float64)
    runners: dict[str, Run] = {}
    corners: dict[str, Callable[[], np.ndarray]] = {}

    a, b = tlrs.tensor(a_np, dtype=dtype, device="cuda"), tlrs.tensor(b_np, dtype=dtype, device="cuda")

    def run_tlrs(k: int) -> float:
        tlrs.cuda.set_matmul_precision(precision)
        t0 = time.perf_counter()
        with tlrs.fast_kernels():  # cuBLAS: the GPU's fast path (reference kernels fold exactly)
            for _ in range(k):
                y = ops.matmul(a, b)
            wait_tlrs(y)
        return time.perf_counter() - t0

    def corner_tlrs() -> np.ndarray:
        tlrs.cuda.set_matmul_precision(precision)
        with tlrs.fast_kernels():
            y = ops.matmul(a, b)
        return ops.slice(ops.slice(y, 0, 0, c), 1, 0, c).numpy()

    runners["tlrs"], corners["tlrs"] = run_tlrs, corner_tlrs
    if torch is not None:
        ta = torch.from_numpy(a_np).cuda()
        tb = torch.from_numpy(b_np).cuda()

        def run_torch(k: int) -> float:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(k):
                torch.matmul(ta, tb)
            torch.cuda.synchronize()
            return time.perf_counter() - t0

        def corner_torch() -> np.ndarray:
            return torch.matmul(ta, tb)[:c, :c].cpu().numpy()

        runners["torch"], corners["torch"] = run_torch, corner_torch

    medians, errors = measure(runners, reps, 0.0, k)
    flops = 2.0 * n**3
    for side in runners:
        t = medians.get(side)
        row[f"{side}_ms"] = None if t is None else t * 1e3
        row[f"{side}_tflops"] = None if t is None else flops / t / 1e12
    got: dict[str, np.ndarray] = {}
    for side, fn in corners.items():
        if side in errors:
            continue
        try:
            got[side] = fn()
        except Exception as e:  # noqa: BLE001
            errors[side] = error_text(e)
    row["diff_torch"] = rel_diff(got["tlrs"], got["torch"]) if {"tlrs", "torch"} <= set(got) else None
    row["diff_f64"] = rel_diff(got["tlrs"], ref) if "tlrs" in got else None
    row["torch_diff_f64"] = rel_diff(got["torch"], ref) if "torch" in got else None
    row["errors"] = errors
    return row


# ---------------------------------------------------------------------------------------------
# Training steps


def deep_mlp(dtype: str) -> tlrs.ModuleDef:
    """784-512-512-10 from tlrs ops, as in benchmarks/train_step.py."""
    shapes = [[512, 784], [512], [512, 512], [512], [10, 512], [10]]
    rng = np.random.default_rng(0)
    init = [tlrs.tensor(rng.normal(size=s) * 0.05, dtype=dtype) for s in shapes]

    def loss(ps, xs):
        h = ops.relu(ops.linear(xs[0], ps[0], ps[1]))
        h = ops.relu(ops.linear(h, ps[2], ps[3]))
        return ops.cross_entropy(ops.linear(h, ps[4], ps[5]), xs[1])

    return tlrs.ModuleDef(shapes, [[784], [10]], loss, init_params=init)


def train_cases(quick: bool) -> list[tuple[str, Callable[[], tlrs.ModuleDef], int, tuple]]:
    """(name, definition maker, batch, torch architecture) for each training case."""

    def mlp() -> tlrs.ModuleDef:
        return models.mlp_classifier(784, 128, 10, dtype="float32")[0]

    def deep() -> tlrs.ModuleDef:
        return deep_mlp("float32")

    def resnet(hw: int) -> Callable[[], tlrs.ModuleDef]:
        return lambda: models.resnet18_model(3, hw, hw, 10, dtype="float32")[0]

    mlp_arch, deep_arch, resnet_arch = ("mlp", [784, 128, 10]), ("mlp", [784, 512, 512, 10]), ("resnet18", 3, 10, 64)
    if quick:
        return [("mlp 784-128-10 b8", mlp, 8, mlp_arch),
                ("mlp 784-512-512-10 b8", deep, 8, deep_arch),
                ("resnet18 3x16x16 b2", resnet(16), 2, resnet_arch)]
    return [("mlp 784-128-10 b128", mlp, 128, mlp_arch),
            ("mlp 784-512-512-10 b128", deep, 128, deep_arch),
            ("resnet18 3x32x32 b8", resnet(32), 8, resnet_arch),
            ("resnet18 3x32x32 b32", resnet(32), 32, resnet_arch)]


def sample(defn: tlrs.ModuleDef, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed f32 batch: standard-normal inputs, one-hot targets of random classes."""
    rng = np.random.default_rng(1)
    (x_shape, y_shape) = defn.input_shapes
    x = rng.standard_normal((batch, *x_shape), dtype=np.float32)
    y = np.zeros((batch, *y_shape), dtype=np.float32)
    y[np.arange(batch), rng.integers(0, y_shape[-1], size=batch)] = 1.0
    return x, y


def torch_resnet18(torch: Any, in_c: int, num_classes: int, width: int) -> Any:
    """tlrs's reference ResNet-18 (python/tlrs/models/resnet.py) in torch, with the same
    parameter names and order: conv layers with bias, per-image norm over H x W per channel
    (GroupNorm with one channel per group, biased variance, eps 1e-6), stem conv 7x7 s2 p3 ->
    norm -> ReLU -> max-pool 3x3 s2 p1, four stages of two BasicBlocks (widths w, 2w, 4w, 8w;
    the first block of stages 2-4: conv 3x3 s2 and a conv 1x1 s2 + norm projection), global
    average pool, linear head."""
    nn = torch.nn
    Module: Any = nn.Module

    def conv(cin: int, cout: int, k: int, s: int, p: int) -> Any:
        return nn.Conv2d(cin, cout, k, stride=s, padding=p, bias=True)

    def norm(ch: int) -> Any:
        return nn.GroupNorm(ch, ch, eps=1e-6, affine=True)

    class BasicBlock(Module):
        def __init__(self, cin: int, cout: int, down: bool) -> None:
            super().__init__()
            self.conv1 = conv(cin, cout, 3, 2 if down else 1, 1)
            self.bn1 = norm(cout)
            self.conv2 = conv(cout, cout, 3, 1, 1)
            self.bn2 = norm(cout)
            self.downsample = nn.Sequential(conv(cin, cout, 1, 2, 0), norm(cout)) if down else None

        def forward(self, x: Any) -> Any:
            r = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            skip = x if self.downsample is None else self.downsample(x)
            return torch.relu(r + skip)

    class ResNet18(Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = conv(in_c, width, 7, 2, 3)
            self.bn1 = norm(width)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            prev = width
            for stage in range(1, 5):
                ch = width << (stage - 1)
                setattr(self, f"layer{stage}",
                        nn.Sequential(BasicBlock(prev, ch, stage > 1), BasicBlock(ch, ch, False)))
                prev = ch
            self.fc = nn.Linear(prev, num_classes)

        def forward(self, x: Any) -> Any:
            y = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            y = self.layer4(self.layer3(self.layer2(self.layer1(y))))
            return self.fc(y.mean(dim=(2, 3)))

    return ResNet18()


def torch_model(torch: Any, arch: tuple, defn: tlrs.ModuleDef) -> Any:
    """The torch model of `arch` on cuda, holding the definition's initial parameters."""
    nn = torch.nn
    if arch[0] == "mlp":
        dims = arch[1]
        layers: list[Any] = []
        for i in range(len(dims) - 1):
            layers += [nn.Linear(dims[i], dims[i + 1])] + ([nn.ReLU()] if i < len(dims) - 2 else [])
        model = nn.Sequential(*layers)
    else:
        _, in_c, num_classes, width = arch
        model = torch_resnet18(torch, in_c, num_classes, width)
        names = [n for n, _ in model.named_parameters()]
        if names != list(defn.param_names or ()):
            raise ValueError("torch ResNet-18 parameter names differ from tlrs's")
    params = list(model.parameters())
    init = [p.numpy() for p in defn.initial_params()]
    if [tuple(p.shape) for p in params] != [a.shape for a in init]:
        raise ValueError("torch parameter shapes differ from tlrs's")
    with torch.no_grad():
        for p, a in zip(params, init):
            # A writable copy: tlrs hands out read-only arrays, which torch.from_numpy warns about.
            p.copy_(torch.from_numpy(np.array(a, dtype=np.float32)))
    return model.cuda()


def train_case(torch: Any, name: str, make: Callable[[], tlrs.ModuleDef], batch: int, arch: tuple,
               reps: int, budget: float) -> dict[str, Any]:
    row: dict[str, Any] = {"case": name, "dtype": "float32", "batch": batch}
    defn = make()
    x, y = sample(defn, batch)
    runners: dict[str, Run] = {}
    losses: dict[str, float] = {}
    errors: dict[str, str] = {}

    try:
        m = tlrs.instantiate_with_options(defn, "float32", Options(use_gpu=True, fast_kernels=True))
        xs = [tlrs.tensor(x, dtype="float32", device="cuda"), tlrs.tensor(y, dtype="float32", device="cuda")]
        losses["tlrs"] = m.forward(xs).item()

        def run_tlrs(k: int) -> float:
            t0 = time.perf_counter()
            for _ in range(k):
                m.step(LR, xs)
            m.params()[-1].numpy()
            return time.perf_counter() - t0

        runners["tlrs"] = run_tlrs
    except Exception as e:  # noqa: BLE001
        errors["tlrs"] = error_text(e)

    if torch is not None:
        try:
            import torch.nn.functional as F

            model = torch_model(torch, arch, defn)
            tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=LR)
            with torch.no_grad():
                losses["torch"] = F.cross_entropy(model(tx), ty).item()

            def run_torch(k: int) -> float:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(k):
                    opt.zero_grad(set_to_none=True)
                    F.cross_entropy(model(tx), ty).backward()
                    opt.step()
                torch.cuda.synchronize()
                return time.perf_counter() - t0

            runners["torch"] = run_torch
        except Exception as e:  # noqa: BLE001
            errors["torch"] = error_text(e)

    medians, run_errors = measure(runners, reps, budget, None)
    errors.update(run_errors)
    for side in ("tlrs", "torch"):
        t = medians.get(side)
        row[f"{side}_ms"] = None if t is None else t * 1e3
        row[f"{side}_loss0"] = losses.get(side)
    row["loss_diff"] = (abs(losses["tlrs"] - losses["torch"]) / max(abs(losses["torch"]), 1e-30)
                        if {"tlrs", "torch"} <= set(losses) else None)
    row["errors"] = errors
    return row


def resnet_check(torch: Any) -> dict[str, Any]:
    """The initial loss of ResNet-18 at 3x64x64, batch 2, in tlrs and torch. At 32x32 (the timed
    cases) stage 4 works on 1x1 maps, whose per-image norm is just its bias, so the loss there is
    log(10) whatever the weights; at 64x64 every layer counts."""
    row: dict[str, Any] = {"case": "resnet18 3x64x64 b2 initial loss"}
    defn = models.resnet18_model(3, 64, 64, 10, dtype="float32")[0]
    x, y = sample(defn, 2)
    m = tlrs.instantiate_with_options(defn, "float32", Options(use_gpu=True, fast_kernels=True))
    row["tlrs_loss0"] = m.forward([tlrs.tensor(x, dtype="float32", device="cuda"),
                                   tlrs.tensor(y, dtype="float32", device="cuda")]).item()
    if torch is not None:
        import torch.nn.functional as F

        model = torch_model(torch, ("resnet18", 3, 10, 64), defn)
        with torch.no_grad():
            row["torch_loss0"] = F.cross_entropy(model(torch.from_numpy(x).cuda()),
                                                 torch.from_numpy(y).cuda()).item()
        row["loss_diff"] = abs(row["tlrs_loss0"] - row["torch_loss0"]) / abs(row["torch_loss0"])
    return row


# ---------------------------------------------------------------------------------------------
# Output


def fmt(v: float | None, width: int, spec: str) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:{width}{spec}}"


def ratio(row: dict[str, Any]) -> float | None:
    t, r = row.get("tlrs_ms"), row.get("torch_ms")
    return t / r if t is not None and r else None


def print_errors(row: dict[str, Any]) -> None:
    for side, msg in row.get("errors", {}).items():
        print(f"    {side} error: {msg}")


def write_json(out_dir: str | None, doc: dict[str, Any]) -> None:
    if not out_dir:
        return
    try:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "gpu.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(path + ".tmp", path)
    except OSError as e:
        print(f"cannot write {out_dir}/gpu.json: {e}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None, help="GEMM size (default 8192; --quick: 1024)")
    p.add_argument("--quick", action="store_true", help="small sizes and few repetitions (smoke test)")
    p.add_argument("--reps", type=int, default=None, help="repetitions, median taken (default 5; --quick: 2)")
    p.add_argument("--k", type=int, default=None, help="GEMM products per repetition (default 10; --quick: 2)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of training steps per side and case (default 1.0; --quick: 0 = 1 step)")
    p.add_argument("--out", default=None, help="also write the table as DIR/gpu.json")
    args = p.parse_args()

    if not tlrs.cuda.is_available():
        print("tlrs cannot use CUDA here, nothing to measure:")
        print(tlrs.cuda.unavailable_reason())
        write_json(args.out, {"available": False, "reason": tlrs.cuda.unavailable_reason()})
        return
    diag = tlrs.cuda.diagnostics()
    emulated = "emulator" in diag
    n = args.n or ((256 if emulated else 1024) if args.quick else 8192)
    reps = max(1, args.reps or (2 if args.quick else 5))
    k = max(1, args.k or (2 if args.quick else 10))
    budget = args.budget if args.budget is not None else (0.0 if args.quick else 1.0)
    tlrs.cuda.allow_tf32(False)
    torch, torch_desc = load_torch()
    device = "emulator (TLRS_CUDA_EMULATOR=1, host CPU)" if emulated else diag.get("device 0", "?")
    print(f"tlrs {tlrs.__version__} on {device}, driver {diag.get('driver version', '?')}; TF32 off")
    print(f"torch: {torch_desc}")
    doc: dict[str, Any] = {"available": True, "tlrs": tlrs.__version__, "device": device,
                           "diagnostics": diag, "torch": torch_desc, "n": n, "reps": reps, "k": k,
                           "budget_s": budget, "quick": args.quick, "gemm": [], "train": []}

    print()
    print(f"GEMM n={n}: {k} products per repetition, median of {reps}; diff = max|C-ref|/max|ref| "
          f"on the {min(CORNER, n)}x{min(CORNER, n)} corner")
    print(f"{'case':<16} | {'tlrs ms':>9} {'torch ms':>9} | {'tlrs TF/s':>9} {'torch TF/s':>10} | "
          f"{'tlrs/torch':>10} | {'vs torch':>9} {'vs f64':>9}")
    for dtype in ("float32", "float64"):
        try:
            row = gemm_case(torch, n, dtype, k, reps)
        except Exception as e:  # noqa: BLE001 - e.g. out of memory while setting up
            row = {"case": f"{'s' if dtype == 'float32' else 'd'}gemm n={n}", "dtype": dtype,
                   "errors": {"setup": error_text(e)}}
        doc["gemm"].append(row)
        print(f"{row['case']:<16} | {fmt(row.get('tlrs_ms'), 9, '.3f')} {fmt(row.get('torch_ms'), 9, '.3f')} | "
              f"{fmt(row.get('tlrs_tflops'), 9, '.2f')} {fmt(row.get('torch_tflops'), 10, '.2f')} | "
              f"{fmt(ratio(row), 9, '.2f')}{'x' if ratio(row) is not None else ' '} | "
              f"{fmt(row.get('diff_torch'), 9, '.1e')} {fmt(row.get('diff_f64'), 9, '.1e')}")
        print_errors(row)
        write_json(args.out, doc)

    print()
    print(f"Training steps, float32 (forward + backward + SGD), ms per step, median of {reps}; "
          "loss diff = |tlrs - torch| / |torch| of the initial loss")
    print(f"{'case':<26} | {'tlrs ms':>9} {'torch ms':>9} | {'tlrs/torch':>10} | {'loss diff':>9}")
    for name, make, batch, arch in train_cases(args.quick):
        try:
            row = train_case(torch, name, make, batch, arch, reps, budget)
        except Exception as e:  # noqa: BLE001
            row = {"case": name, "dtype": "float32", "batch": batch, "errors": {"setup": error_text(e)}}
        doc["train"].append(row)
        print(f"{name:<26} | {fmt(row.get('tlrs_ms'), 9, '.3f')} {fmt(row.get('torch_ms'), 9, '.3f')} | "
              f"{fmt(ratio(row), 9, '.2f')}{'x' if ratio(row) is not None else ' '} | "
              f"{fmt(row.get('loss_diff'), 9, '.1e')}")
        print_errors(row)
        write_json(args.out, doc)
    try:
        row = resnet_check(torch)
    except Exception as e:  # noqa: BLE001
        row = {"case": "resnet18 3x64x64 b2 initial loss", "errors": {"check": error_text(e)}}
    doc["train"].append(row)
    print(f"ResNet-18 check at 3x64x64 b2, initial loss: tlrs {fmt(row.get('tlrs_loss0'), 0, '.6f')}, "
          f"torch {fmt(row.get('torch_loss0'), 0, '.6f')}, loss diff {fmt(row.get('loss_diff'), 0, '.1e')}")
    print_errors(row)

    failed = [(r["case"], side, msg) for r in doc["gemm"] + doc["train"]
              for side, msg in r.get("errors", {}).items()]
    doc["errors"] = [f"{case}: {side}: {msg}" for case, side, msg in failed]
    doc["tlrs_errors"] = [f"{case}: {side}: {msg}" for case, side, msg in failed if side != "torch"]
    write_json(args.out, doc)
    if doc["errors"]:
        print(f"\n{len(doc['errors'])} measurement(s) failed (see the rows above)")


if __name__ == "__main__":
    main()
