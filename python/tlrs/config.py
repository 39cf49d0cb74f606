"""Execution configuration from the command line (the reference's `ExecConfig`, same consumption
order and messages) and the runtime `Options` record a `Module` follows.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ._flag_tokens import parse_nat, take_parsed_flag_default
from .dtype import FLOAT, FLOAT32, LOG_PREFIX, DType
from .errors import ArgError

_DEVICE_CHOICES = "auto | cpu | cuda | cuda:N | rocm | metal | wasm | tpu | trainium | custom | external"
# TorchLean's named targets without a runtime profile: `--device` parses them (so `--show-backend`
# can name them), and running on one fails with TorchLean's message.
FUTURE_DEVICES = ("rocm", "metal", "wasm", "tpu", "trainium", "custom", "external")


class Backend(enum.StrEnum):
    """Execution backend: `eager` runs each op as called; `compiled` traces once and replays."""

    EAGER = "eager"
    COMPILED = "compiled"


class GpuMatmulPrecision(enum.StrEnum):
    """Arithmetic of CUDA matmuls: single (SGEMM) or double (DGEMM) precision."""

    FP32 = "fp32"
    FP64 = "fp64"


def parse_backend(value: str) -> Backend:
    """Parse a `--backend` value: exactly `eager` or `compiled`.

    Raises ArgError: `unknown --backend <v> (supported: eager | compiled)`.
    """
    if value in ("eager", "compiled"):
        return Backend(value)
    raise ArgError(f"unknown --backend {value} (supported: eager | compiled)")


def parse_fast_gpu_matmul_precision(value: str) -> GpuMatmulPrecision:
    """Parse a `--fast-gpu-matmul-precision` value: `fp32`/`float32` or `fp64`/`float64`/`double`.

    Raises ArgError: `unknown --fast-gpu-matmul-precision <v> (supported: fp32 | fp64)`.
    """
    if value in ("fp32", "float32"):
        return GpuMatmulPrecision.FP32
    if value in ("fp64", "float64", "double"):
        return GpuMatmulPrecision.FP64
    raise ArgError(f"unknown --fast-gpu-matmul-precision {value} (supported: fp32 | fp64)")


def parse_device(value: str) -> tuple[bool, int]:
    """Parse a `--device` value (`cpu`, `cuda`, `cuda:N` with N ASCII digits) to (use_gpu, index).

    Raises ArgError: `unknown --device <v> (supported: auto | cpu | ...)`.
    """
    if value == "cpu":
        return False, 0
    if value == "cuda":
        return True, 0
    index = parse_nat(value[len("cuda:"):]) if value.startswith("cuda:") else None
    if index is None:
        raise ArgError(f"unknown --device {value} (supported: {_DEVICE_CHOICES})")
    return True, index


def parse_device_request(value: str) -> tuple[bool, int, str]:
    """Parse a command-line `--device` value to (use_gpu, index, request): `auto` is CUDA when it
    is usable, else the CPU (request `auto`); a named future target parses with use_gpu False and
    request its name (running on it fails, `ExecConfig.to_options`); the rest as `parse_device`
    (request "").

    Raises ArgError: `unknown --device <v> (supported: ...)`.
    """
    if value == "auto":
        from . import cuda

        return cuda.is_available(), 0, "auto"
    if value in FUTURE_DEVICES:
        return False, 0, value
    use_gpu, index = parse_device(value)
    return use_gpu, index, ""


def requests_cuda(args: Sequence[str]) -> bool:
    """True iff the raw arguments ask for CUDA anywhere, as the default-dtype policy reads them.

    Args: args: the raw list; `--cuda`, `--device=cuda[:N]` or `--device` followed by `cuda[:N]`
    count wherever they stand, even as another flag's value or before a later `--cpu`.
    """
    def is_cuda(value: str) -> bool:
        return value == "cuda" or value.startswith("cuda:")

    return any(
        tok == "--cuda"
        or (tok.startswith("--device=") and is_cuda(tok[len("--device="):]))
        or (tok == "--device" and i + 1 < len(args) and is_cuda(args[i + 1]))
        for i, tok in enumerate(args)
    )


def _device_name(use_gpu: bool, device_index: int) -> str:
    if not use_gpu:
        return "cpu"
    return "cuda" if device_index == 0 else f"cuda:{device_index}"


def _check_index(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


@dataclass(frozen=True)
class Options:
    """Runtime options a `Module` follows (the reference's `Options`, fields in snake case).

    Args: backend, fast_gpu_matmul_precision: enum members or their names; seed: carried for
    programs (a natural); use_gpu, device_index: the device (`cuda:device_index` when use_gpu);
    requires_grad_by_default, track_gradients, fast_kernels: flags as in the reference; tf32:
    allow TF32 tensor-core math in float32 GPU matmuls (a tlrs addition, off by default). A
    Module runs every call with exactly these kernel settings, whatever its thread's are.
    Raises: ArgError: an unknown backend or precision name; TypeError/ValueError: seed or
    device_index not a natural.
    """

    backend: Backend = Backend.EAGER
    requires_grad_by_default: bool = True
    seed: int = 0
    fast_kernels: bool = False
    fast_gpu_matmul_precision: GpuMatmulPrecision = GpuMatmulPrecision.FP32
    use_gpu: bool = False
    track_gradients: bool = True
    device_index: int = 0
    tf32: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", parse_backend(str(self.backend)))
        precision = parse_fast_gpu_matmul_precision(str(self.fast_gpu_matmul_precision))
        object.__setattr__(self, "fast_gpu_matmul_precision", precision)
        _check_index("seed", self.seed)
        _check_index("device_index", self.device_index)

    @property
    def device(self) -> str:
        """`cpu`, `cuda` (ordinal 0) or `cuda:N`."""
        return _device_name(self.use_gpu, self.device_index)

    def to_device(self, device: str) -> Options:
        """A copy of these options on `device` (`cpu`, `cuda`, `cuda:N` or `auto`).

        Raises: ArgError: an unknown device, with the `--device` message, or a named future target.
        """
        use_gpu, index, request = parse_device_request(device)
        if request in FUTURE_DEVICES:
            raise ArgError(f"device `{request}` has no maintained runtime profile; use a programmatic backend profile")
        return replace(self, use_gpu=use_gpu, device_index=index)


@dataclass(frozen=True)
class ExecConfig:
    """Execution configuration (the reference's `ExecConfig`; the record's own default dtype is
    `float`, while the parsers default as the reference's policy says).

    Args: dtype: a `DType` or a `--dtype` spelling; backend, fast_gpu_matmul_precision: enum members
    or names; use_gpu, device_index: the device; fast_kernels: use the fast CPU kernels; tf32:
    allow TF32 tensor-core math in float32 GPU matmuls (`--tf32`, a tlrs addition).
    Raises: ArgError: an unknown dtype, backend or precision name; TypeError/ValueError: a dtype
    of another type, or a device_index that is not a natural.
    """

    dtype: DType = FLOAT
    backend: Backend = Backend.EAGER
    use_gpu: bool = False
    fast_kernels: bool = False
    fast_gpu_matmul_precision: GpuMatmulPrecision = GpuMatmulPrecision.FP32
    device_index: int = 0
    tf32: bool = False
    # How `--device` was asked: "" (as named), "auto", or a named future target (FUTURE_DEVICES).
    device_request: str = ""
    # `--show-backend`: the log says which backend, kernels and precision the run uses.
    show_backend: bool = False

    parse_backend = staticmethod(parse_backend)
    parse_fast_gpu_matmul_precision = staticmethod(parse_fast_gpu_matmul_precision)
    parse_device = staticmethod(parse_device)

    def __post_init__(self) -> None:
        if isinstance(self.dtype, str):
            object.__setattr__(self, "dtype", DType.parse(self.dtype))
        elif not isinstance(self.dtype, DType):
            raise TypeError(f"dtype must be a DType or a --dtype spelling, got {self.dtype!r}")
        object.__setattr__(self, "backend", parse_backend(str(self.backend)))
        precision = parse_fast_gpu_matmul_precision(str(self.fast_gpu_matmul_precision))
        object.__setattr__(self, "fast_gpu_matmul_precision", precision)
        _check_index("device_index", self.device_index)

    @classmethod
    def parse_and_strip_with_default_dtype(
        cls, args: Sequence[str], default: DType
    ) -> tuple[ExecConfig, list[str]]:
        """Parse and remove the runtime flags, in the reference's order; return (config, rest).

        Order: `--dtype`, `--float32-mode` and their exclusion check (absent: `default`); then
        `--backend` (once; default eager); then `--fast-gpu-matmul-precision` (once; default fp32);
        then one left-to-right pass taking `--cpu`, `--cuda`, `--device D`/`--device=D` (the last
        wins; D also `auto` or a named future target, as TorchLean's newer API), `--fast-kernels`,
        `--tf32` and `--show-backend` (repeats allowed). Anything else stays in `rest`.
        Raises: ArgError: the first error in that order (e.g. `--backend --cuda` makes `--cuda` the
        backend value), `missing value after --device (supported: auto | cpu | ...)` or an
        unknown `--device`.
        """
        dtype, rest = DType.parse_and_strip_with_default(args, default)
        backend, rest = take_parsed_flag_default(rest, "backend", "eager", parse_backend)
        precision, rest = take_parsed_flag_default(
            rest, "fast-gpu-matmul-precision", "fp32", parse_fast_gpu_matmul_precision
        )
        use_gpu, index, fast_kernels, tf32, request, show = False, 0, False, False, "", False
        kept: list[str] = []
        i = 0
        while i < len(rest):
            tok = rest[i]
            if tok in ("--cuda", "--cpu"):
                use_gpu, index, request = tok == "--cuda", 0, ""
            elif tok == "--fast-kernels":
                fast_kernels = True
            elif tok == "--tf32":
                tf32 = True
            elif tok == "--show-backend":
                show = True
            elif tok == "--device":
                if i + 1 == len(rest):
                    raise ArgError(f"missing value after --device (supported: {_DEVICE_CHOICES})")
                use_gpu, index, request = parse_device_request(rest[i + 1])
                i += 1
            elif tok.startswith("--device="):
                use_gpu, index, request = parse_device_request(tok[len("--device="):])
            else:
                kept.append(tok)
            i += 1
        config = cls(dtype, backend, use_gpu, fast_kernels, precision, index, tf32, request, show)
        return config, kept

    @classmethod
    def parse_and_strip(cls, args: Sequence[str]) -> tuple[ExecConfig, list[str]]:
        """`parse_and_strip_with_default_dtype` with the reference's default-dtype policy.

        The default is `float` when `requests_cuda(args)` (the raw list asks for CUDA anywhere),
        else executable `float32`. Raises: ArgError: as `parse_and_strip_with_default_dtype`.
        """
        default = FLOAT if requests_cuda(args) else FLOAT32
        return cls.parse_and_strip_with_default_dtype(args, default)

    @property
    def device(self) -> str:
        """`cpu`, `cuda` (ordinal 0) or `cuda:N`; a named future target by its name."""
        if self.device_request in FUTURE_DEVICES:
            return self.device_request
        return _device_name(self.use_gpu, self.device_index)

    def check_device(self) -> None:
        """Refuse a named future target, with TorchLean's message (it has no runtime profile).

        Raises: ArgError: ``device `rocm` has no maintained runtime profile; ...``.
        """
        if self.device_request in FUTURE_DEVICES:
            raise ArgError(f"device `{self.device_request}` has no maintained runtime profile; use a "
                           f"programmatic backend profile")

    def to_options(self, seed: int = 0) -> Options:
        """Runtime `Options` with this backend, device, kernels and precision, and `seed`.

        Args: seed: a natural carried in `Options.seed`; other fields keep their defaults.
        Raises: ArgError: a named future device (`check_device`); TypeError/ValueError: seed not a
        natural.
        """
        self.check_device()
        return Options(
            backend=self.backend,
            seed=seed,
            fast_kernels=self.fast_kernels,
            fast_gpu_matmul_precision=self.fast_gpu_matmul_precision,
            use_gpu=self.use_gpu,
            device_index=self.device_index,
            tf32=self.tf32,
        )

    def log_lines(self) -> list[str]:
        """The lines `log` prints: dtype line(s), backend, device, fastKernels, precision."""
        auto = f" (auto: {'CUDA is usable' if self.use_gpu else 'no usable CUDA device'})" \
            if self.device_request == "auto" else ""
        lines = [
            *self.dtype.log_lines(),
            f"{LOG_PREFIX} backend: {self.backend}",
            f"{LOG_PREFIX} device: {self.device}{auto}",
            f"{LOG_PREFIX} fastKernels: {'true' if self.fast_kernels else 'false'}",
            f"{LOG_PREFIX} fastGpuMatmulPrecision: {self.fast_gpu_matmul_precision}",
        ]
        return lines + (self.backend_lines() if self.show_backend else [])

    def backend_lines(self) -> list[str]:
        """What `--show-backend` adds: the kernels each kind of op runs on this configuration."""
        kernels = "fast (FMA, within stated tolerances)" if self.fast_kernels else \
            "reference (fixed fold order: the same bits on any thread count)"
        if self.device_request in FUTURE_DEVICES:
            where = f"{self.device}: no maintained runtime profile"
        elif self.use_gpu:
            products = f"cuBLAS {self.fast_gpu_matmul_precision}{', TF32 allowed' if self.tf32 else ''}"
            where = f"CUDA {self.device}: NVRTC kernels, products through {products}"
        else:
            where = "CPU: tlrs kernels"
        return [f"{LOG_PREFIX} show-backend: {self.backend} backend on {where}; {kernels}"]

    def log(self) -> None:
        """Print the configuration to stdout, one `[tlrs] ...` line each, in reference order."""
        for line in self.log_lines():
            print(line)
