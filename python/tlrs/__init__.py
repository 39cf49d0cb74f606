"""tlrs: a small, fast, deterministic neural-network runtime (Rust core, Python front)."""

from . import complex, cuda, init, models, ops, optim, random
from . import tensor_methods as tensor_methods  # attaches torch's shape and indexing methods to Tensor
from ._core import Tensor, __version__, fresh_seed
from .autograd import grad, is_grad_enabled, no_grad
from .complex import ComplexTensor
from .config import ExecConfig, Options
from .entry import RunAction, RunOptions, run, run_usage, with_module, with_module_runtime, with_runtime
from .errors import (
    ArgError,
    AutogradError,
    CheckpointError,
    CudaUnavailableError,
    DeviceError,
    DTypeError,
    NonFiniteLossError,
    ShapeError,
    TraceError,
)
from .instantiate import (
    forward_with_params,
    instantiate_configured,
    instantiate_float,
    instantiate_float_with_init,
    instantiate_float_with_plan,
)
from .interrupts import Interrupted
from .kernels import (
    cached_memory,
    fast_kernels,
    get_fast_kernels,
    get_num_threads,
    release_cached_memory,
    set_fast_kernels,
    set_num_threads,
)
from .module import (
    Module,
    ModuleDef,
    TrainProgress,
    instantiate_float_with_runtime_init_options,
    instantiate_float_with_runtime_plan_options,
    instantiate_with_options,
)
from .random import manual_seed
from .tensor import arange, from_dlpack, from_numpy, full, ones, rand, randn, tensor, zeros

__all__ = [
    "ExecConfig",
    "Module",
    "ModuleDef",
    "Options",
    "RunAction",
    "RunOptions",
    "instantiate_float_with_runtime_init_options",
    "instantiate_float_with_runtime_plan_options",
    "instantiate_with_options",
    "instantiate_configured",
    "instantiate_float",
    "instantiate_float_with_init",
    "instantiate_float_with_plan",
    "forward_with_params",
    "optim",
    "models",
    "run",
    "run_usage",
    "with_module",
    "with_module_runtime",
    "with_runtime",
    "ArgError",
    "AutogradError",
    "Interrupted",
    "NonFiniteLossError",
    "TrainProgress",
    "CheckpointError",
    "CudaUnavailableError",
    "DeviceError",
    "DTypeError",
    "ShapeError",
    "TraceError",
    "Tensor",
    "ComplexTensor",
    "complex",
    "__version__",
    "arange",
    "cached_memory",
    "fast_kernels",
    "fresh_seed",
    "from_dlpack",
    "from_numpy",
    "full",
    "get_fast_kernels",
    "get_num_threads",
    "grad",
    "cuda",
    "init",
    "is_grad_enabled",
    "manual_seed",
    "no_grad",
    "ones",
    "ops",
    "rand",
    "randn",
    "random",
    "release_cached_memory",
    "set_fast_kernels",
    "set_num_threads",
    "tensor",
    "zeros",
]
