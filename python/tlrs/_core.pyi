"""Type stubs for ``tlrs._core``, the native (Rust/PyO3) module behind tlrs.

Sources: rust/src/py/*.rs. Dtype names accepted wherever ``dtype: str`` appears are
"float32"/"f32" and "float64"/"f64"/"float"/"double"; device names are "cpu", "cuda", "cuda:N".
Arguments typed ``Sequence[...]`` take any sequence except ``str`` (PyO3 ``Vec`` extraction);
arguments typed ``dict[...]`` must be real dicts.
"""

import os
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, final, overload

import numpy as np
import numpy.typing as npt

__version__: str

# ---- exceptions (errors.rs) ----

class ShapeError(ValueError):
    """Operand shapes do not fit the operation."""

class DTypeError(TypeError):
    """Operand dtypes differ or are not supported."""

class DeviceError(ValueError):
    """Operands live on different devices."""

class CudaUnavailableError(RuntimeError):
    """CUDA cannot be used here."""

class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt or cannot be written."""

class TraceError(ValueError):
    """The loss cannot be compiled: the message names the reason and, where known, the op."""
class AutogradError(RuntimeError):
    """Autograd was used in a way it cannot serve."""

# ---- Tensor (tensor.rs) ----

@final
class Tensor:
    """An n-dimensional float32/float64 array with autograd; created by the module functions."""
    @property
    def shape(self) -> list[int]:
        """The dimensions, outermost first."""
    @property
    def dtype(self) -> str:
        """The dtype name: 'float32' or 'float64'."""
    @property
    def device(self) -> str:
        """The device the data lives on, e.g. 'cpu'."""
    @property
    def ndim(self) -> int:
        """The number of dimensions (rank)."""
    @property
    def requires_grad(self) -> bool:
        """Whether autograd records ops on this tensor."""
    @requires_grad.setter
    def requires_grad(self, on: bool) -> None:
        """Sets requires_grad (leaf tensors only; else ValueError)."""
    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient, or None."""
    @grad.setter
    def grad(self, g: Tensor | None) -> None:
        """Replaces (or clears, with None) the accumulated gradient."""
    @property
    def is_leaf(self) -> bool:
        """Whether this tensor was not computed from others."""
    @property
    def T(self) -> Tensor:
        """The transpose of a matrix (the last two axes swapped)."""
    def numel(self) -> int:
        """The number of elements."""
    def numpy(self) -> npt.NDArray[np.float32] | npt.NDArray[np.float64]:
        """A read-only NumPy view of a CPU tensor's memory (no copy: a permuted or sliced view
        comes out strided); CUDA values are copied."""
    def __array__(
        self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
    ) -> npt.NDArray[Any]:
        """NumPy array protocol: the read-only view, a cast to `dtype` if given, a writable
        copy with copy=True; copy=False refuses any copy."""
    def __dlpack__(
        self, *, stream: int | Any | None = None, max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None, copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule over this tensor's memory (read-only flag set)."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLPack device type, id): (1, 0) on the CPU, (2, N) on cuda:N."""
    def data_ptr(self) -> int:
        """The address of the first element (host memory, or device memory on CUDA)."""
    def item(self) -> Any:
        """The value of a one-element tensor."""
    def tolist(self) -> Any:
        """The data as (nested) Python lists, or a float for a 0-d tensor."""
    def detach(self) -> Tensor:
        """The same data, cut off from the autograd graph."""
    def to(self, target: str) -> Tensor:
        """Converts to a dtype ('float32'/'float64') or moves to a device ('cpu', 'cuda:N')."""
    def cpu(self) -> Tensor:
        """A copy on the CPU (this tensor when it is already there)."""
    def cuda(self, device: int | None = None) -> Tensor:
        """A copy on CUDA device `device` (default 0)."""
    def backward(self) -> None:
        """Accumulates gradients of this (scalar) tensor into the leaves' .grad."""
    def __len__(self) -> int:
        """The size of the first dimension (TypeError for a 0-d tensor)."""
    def __float__(self) -> float:
        """The value of a one-element tensor."""
    def __add__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise self + other (a number takes self's dtype)."""
    def __radd__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise other + self."""
    def __sub__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise self - other."""
    def __rsub__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise other - self."""
    def __mul__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise self * other."""
    def __rmul__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise other * self."""
    def __truediv__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise self / other."""
    def __rtruediv__(self, other: Tensor | float, /) -> Tensor:
        """Elementwise other / self."""
    def __matmul__(self, other: Tensor, /) -> Tensor:
        """Matrix product self @ other."""
    def __neg__(self) -> Tensor:
        """Elementwise -self."""
    def __pow__(self, exponent: float | Tensor, mod: None = None, /) -> Tensor:
        """Elementwise self ** exponent (a number, or a tensor: broadcast, with its gradient)."""
    def __rpow__(self, base: float, mod: None = None, /) -> Tensor:
        """Elementwise base ** self, recorded for autograd."""
    # ---- generated from the op table by scripts/gen_stub.py: methods ----
    def neg(self) -> Tensor:
        """Elementwise -x."""
    def exp(self) -> Tensor:
        """Elementwise e ** x."""
    def log(self) -> Tensor:
        """Elementwise natural logarithm."""
    def sqrt(self) -> Tensor:
        """Elementwise square root."""
    def abs(self) -> Tensor:
        """Elementwise absolute value."""
    def relu(self) -> Tensor:
        """Elementwise max(x, 0); NaN stays NaN."""
    def tanh(self) -> Tensor:
        """Elementwise hyperbolic tangent."""
    def sigmoid(self) -> Tensor:
        """Elementwise logistic sigmoid 1 / (1 + e ** -x)."""
    def log1p(self) -> Tensor:
        """Elementwise log(1 + x), accurate near 0."""
    def expm1(self) -> Tensor:
        """Elementwise e ** x - 1, accurate near 0."""
    def rsqrt(self) -> Tensor:
        """Elementwise 1 / sqrt(x)."""
    def erf(self) -> Tensor:
        """Elementwise error function."""
    def sin(self) -> Tensor:
        """Elementwise sine (radians)."""
    def cos(self) -> Tensor:
        """Elementwise cosine (radians)."""
    def trunc(self) -> Tensor:
        """Elementwise rounding toward zero; the gradient is zero."""
    def floor(self) -> Tensor:
        """Elementwise rounding toward negative infinity; the gradient is zero."""
    # ---- end of generated methods ----
    def sum(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Sum over `dim` (all elements when None)."""
    def mean(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Mean over `dim` (all elements when None)."""
    def max(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Maximum over `dim` (all elements when None)."""
    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """The same data in a new shape, given as ints or one sequence; -1 infers a dim."""
    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merges dims start_dim..end_dim (inclusive) into one."""
    def is_contiguous(self) -> bool:
        """Whether it reads memory holding exactly its elements in row-major order (false for
        most views: a CPU permute, transpose, slice or broadcast reads its input's memory)."""
    def contiguous(self) -> Tensor:
        """The same values in row-major memory of their own (this tensor when they already are)."""
    def permute(self, *dims: int) -> Tensor:
        """Reorders the dimensions (on the CPU a view: no copy)."""
    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """Swaps two dimensions."""
    def softmax(self, dim: int) -> Tensor:
        """Softmax along `dim`."""
    def log_softmax(self, dim: int) -> Tensor:
        """Log-softmax along `dim`."""
    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product self @ other."""
    def clamp(self, min: float | None = None, max: float | None = None) -> Tensor:
        """Elementwise clamp to [min, max]; None leaves that side open."""
    def pow(self, exponent: float) -> Tensor:
        """Elementwise x ** exponent."""
    # ---- torch's shape and indexing methods, attached by tlrs.tensor_methods (Python) ----
    @overload
    def size(self, dim: None = None) -> tuple[int, ...]:
        """The shape as a tuple of ints, or the size of axis `dim`."""
    @overload
    def size(self, dim: int) -> int: ...
    def dim(self) -> int:
        """The number of axes."""
    def view(self, *shape: int | Sequence[int]) -> Tensor:
        """The same elements in a new shape (ints or one sequence; one may be -1)."""
    def unsqueeze(self, dim: int) -> Tensor:
        """A size-1 axis inserted at `dim`."""
    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Size-1 axes removed (all, or those of `dim`)."""
    def expand(self, *sizes: int | Sequence[int]) -> Tensor:
        """A broadcast view at `sizes` (-1 keeps a size)."""
    def repeat(self, *sizes: int | Sequence[int]) -> Tensor:
        """Tiled `sizes[i]` times along each axis."""
    def flip(self, *dims: int | Sequence[int]) -> Tensor:
        """Reversed along `dims`."""
    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
        """Elements shifted along `dims` (the flattened tensor when None), wrapping around."""
    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """`chunks` pieces (torch's sizes) along `dim`."""
    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces of one size (the last smaller) or of the listed sizes along `dim`."""
    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """The slices along `dim`, that axis removed."""
    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """`length` elements from `start` along `dim`."""
    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two axes, the rest +0.0."""
    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two axes, the rest +0.0."""
    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """Axes `source` moved to `destination`."""
    def __getitem__(self, key: Any) -> Tensor:
        """Torch's indexing: ints, slices (step > 0), None, ..., int lists/arrays, bool masks."""
    def __iter__(self) -> Iterator[Tensor]:
        """The slices along the first axis (a 0-d tensor raises TypeError, as in torch)."""
    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        """Elementwise ==: a bool tensor (likewise !=, <, <=, >, >=)."""
    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        ...
    def __lt__(self, other: Tensor | float) -> Tensor: ...
    def __le__(self, other: Tensor | float) -> Tensor: ...
    def __gt__(self, other: Tensor | float) -> Tensor: ...
    def __ge__(self, other: Tensor | float) -> Tensor: ...
    def __hash__(self) -> int: ...
    @property
    def _is_traced(self) -> bool:
        """Whether the values come from a compiled trace's leaves (unreadable placeholders)."""
    def __bool__(self) -> bool:
        """The truth of a one-element tensor (more elements: ValueError)."""
    def long(self) -> Tensor:
        """As int64 (floats truncate toward zero; NaN and out-of-range values are refused)."""
    def float(self) -> Tensor:
        """As float32."""
    def double(self) -> Tensor:
        """As float64."""
    def bool(self) -> Tensor:
        """As bool (nonzero is True)."""

# ---- elementwise op table (elementwise.rs) ----

# ---- generated from the op table by scripts/gen_stub.py: functions ----
__all__ = [
    "neg",
    "exp",
    "log",
    "sqrt",
    "abs",
    "relu",
    "tanh",
    "sigmoid",
    "gelu",
    "gelu_tanh",
    "softplus",
    "smooth_l1",
    "huber",
    "logsigmoid",
    "silu",
    "leaky_relu",
    "elu",
    "hardtanh",
    "log1p",
    "expm1",
    "rsqrt",
    "erf",
    "sin",
    "cos",
    "trunc",
    "floor",
    "maximum",
    "minimum",
    "atan2",
]

def neg(input: Tensor) -> Tensor:
    """Elementwise -x."""
def exp(input: Tensor) -> Tensor:
    """Elementwise e ** x."""
def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm."""
def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root."""
def abs(input: Tensor) -> Tensor:
    """Elementwise absolute value."""
def relu(input: Tensor) -> Tensor:
    """Elementwise max(x, 0); NaN stays NaN."""
def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic sigmoid 1 / (1 + e ** -x)."""
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Elementwise GELU, 0.5 * x * (1 + erf(x / sqrt(2))) (the exact form; approximate='tanh' in Python gives gelu_tanh)."""
def gelu_tanh(input: Tensor) -> Tensor:
    """Elementwise GELU, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))) (PyTorch's approximate='tanh')."""
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Elementwise log(1 + e ** (beta * x)) / beta, and x itself where beta * x > threshold (PyTorch's softplus)."""
def smooth_l1(input: Tensor, beta: float = 1.0) -> Tensor:
    """Elementwise 0.5 * x * x / beta where |x| < beta, else |x| - 0.5 * beta (smooth_l1_loss's term at x = input - target)."""
def huber(input: Tensor, delta: float = 1.0) -> Tensor:
    """Elementwise 0.5 * x * x where |x| < delta, else delta * (|x| - 0.5 * delta) (huber_loss's term at x = input - target)."""
def logsigmoid(input: Tensor) -> Tensor:
    """Elementwise log(sigmoid(x)), as min(x, 0) - log1p(e ** -|x|) (PyTorch's logsigmoid)."""
def silu(input: Tensor) -> Tensor:
    """Elementwise SiLU (swish), x * sigmoid(x)."""
def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """Elementwise x where x > 0, else negative_slope * x."""
def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Elementwise x where x > 0, else alpha * (e ** x - 1)."""
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """Elementwise clamp to [min_val, max_val]; NaN stays NaN."""
def log1p(input: Tensor) -> Tensor:
    """Elementwise log(1 + x), accurate near 0."""
def expm1(input: Tensor) -> Tensor:
    """Elementwise e ** x - 1, accurate near 0."""
def rsqrt(input: Tensor) -> Tensor:
    """Elementwise 1 / sqrt(x)."""
def erf(input: Tensor) -> Tensor:
    """Elementwise error function."""
def sin(input: Tensor) -> Tensor:
    """Elementwise sine (radians)."""
def cos(input: Tensor) -> Tensor:
    """Elementwise cosine (radians)."""
def trunc(input: Tensor) -> Tensor:
    """Elementwise rounding toward zero; the gradient is zero."""
def floor(input: Tensor) -> Tensor:
    """Elementwise rounding toward negative infinity; the gradient is zero."""
def add(input: Tensor, other: Tensor) -> Tensor:
    """Broadcasting a + b."""
def sub(input: Tensor, other: Tensor) -> Tensor:
    """Broadcasting a - b."""
def mul(input: Tensor, other: Tensor) -> Tensor:
    """Broadcasting a * b."""
def div(input: Tensor, other: Tensor) -> Tensor:
    """Broadcasting a / b."""
def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum (IEEE 754-2019: NaN propagates, maximum(-0, +0) = +0); ties split the gradient."""
def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum (IEEE 754-2019: NaN propagates, minimum(-0, +0) = -0); ties split the gradient."""
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise atan2(a, b): the angle of the point (x = b, y = a) in (-pi, pi]."""
def div_trunc(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise trunc(a / b), PyTorch's div(a, b, rounding_mode='trunc'), as one op. The gradient is zero."""
def floor_divide(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise floor(a / b) as PyTorch computes it (fmod-based, Python's a // b); a / b where b == 0. The gradient is zero."""
# ---- end of generated functions ----

# ---- construction and ops (ops.rs) ----

def dtype_spellings() -> list[tuple[str, str]]:
    """Every accepted dtype spelling with its canonical name ("float32" or "float64")."""

def tensor_from_numpy(
    array: npt.NDArray[np.float32] | npt.NDArray[np.float64] | npt.NDArray[np.int64] | npt.NDArray[np.bool_],
    requires_grad: bool = False,
    copy: bool = False,
) -> Tensor:
    """A Tensor from a float32/float64 array (other dtypes raise DTypeError): sharing its memory
    when C-contiguous and aligned unless `copy`, else copied."""
def from_dlpack(x: Any, /, *, device: str | None = None, copy: bool | None = None) -> Tensor:
    """A tensor over the memory of `x` (anything with `__dlpack__`, or a capsule), without a
    copy when C-contiguous and aligned float32/float64."""
def full(
    shape: Sequence[int], value: float, dtype: str = "float64", requires_grad: bool = False,
    device: str = "cpu",
) -> Tensor:
    """A tensor of `shape` filled with `value`, on `device` ('cpu', 'cuda', 'cuda:N')."""
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product a @ b."""
def mse_loss(a: Tensor, b: Tensor) -> Tensor:
    """Mean squared error between a and b (a scalar)."""
def l1_loss(a: Tensor, b: Tensor) -> Tensor:
    """Mean of |a - b| over all elements (a scalar)."""
def smooth_l1_loss(a: Tensor, b: Tensor, beta: float) -> Tensor:
    """Mean of smooth_l1(a - b, beta) over all elements (a scalar), beta > 0."""
def huber_loss(a: Tensor, b: Tensor, delta: float) -> Tensor:
    """Mean of huber(a - b, delta) over all elements (a scalar), delta > 0."""
def binary_cross_entropy_with_logits(a: Tensor, b: Tensor) -> Tensor:
    """Mean of (1 - b) * a - logsigmoid(a) over all elements (a scalar): logits a, targets b."""
def pow(x: Tensor, exponent: float) -> Tensor:
    """Elementwise x ** exponent."""
def clamp(x: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Elementwise clamp to [min, max]; None leaves that side open."""
def sum(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Sum over `dim` (all elements when None)."""
def mean(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Mean over `dim` (all elements when None)."""
def max(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Maximum over `dim` (all elements when None)."""
def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """The same data in a new shape; -1 infers one dim."""
def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """`x` repeated along broadcast axes to `shape` (NumPy rules)."""
def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merges dims start_dim..end_dim (inclusive) into one."""
def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    """Reorders the dimensions."""
def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps two dimensions."""
def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Joins tensors along `dim`."""
def slice(x: Tensor, dim: int, start: int, end: int) -> Tensor:
    """Elements start..end (exclusive) along `dim`."""
def index_select_t(x: Tensor, dim: int, index: Tensor) -> Tensor: ...
def enter_step(step: int) -> tuple[int, int] | None: ...
def exit_step(previous: tuple[int, int] | None) -> None: ...
def compare(op: str, a: Tensor, b: Tensor) -> Tensor: ...
def cross_entropy_index_tensor(x: Tensor, target: Tensor, ignore_index: int | None = None) -> Tensor: ...
def index_select(x: Tensor, dim: int, index: Sequence[int]) -> Tensor:
    """The entries at `index` along `dim`."""
def softmax(x: Tensor, dim: int) -> Tensor:
    """Softmax along `dim`."""
def log_softmax(x: Tensor, dim: int) -> Tensor:
    """Log-softmax along `dim`."""
def logsumexp(x: Tensor, dims: list[int], keepdim: bool = False) -> Tensor:
    """logsumexp along the axes `dims` as one op (they must not be empty)."""
def var(x: Tensor, dims: list[int], correction: float, keepdim: bool = False) -> Tensor:
    """The variance along the axes `dims` as one op."""
def prod(x: Tensor, dim: int | None, keepdim: bool = False) -> Tensor:
    """The product along `dim` (None: every element) by halving, as one op."""
def cumsum(x: Tensor, dim: int) -> Tensor:
    """Running sums along `dim`, in index order."""
def cross_entropy_indices(x: Tensor, target: Sequence[int], ignore_index: int | None = None) -> Tensor:
    """Mean cross-entropy of logits `x` against class indices."""
def cross_entropy_probs(x: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy of logits `x` against target probabilities."""
def cross_entropy_smoothed(x: Tensor, target: Any, label_smoothing: float) -> Tensor:
    """Mean cross-entropy of logits `x` with label smoothing at class indices (none ignored)."""
def nll_loss_index_tensor(logp: Tensor, target: Tensor, ignore_index: int | None = None) -> Tensor:
    """Mean negative log-likelihood of log-probabilities `logp` at int64 class indices."""
def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias."""
def grad(outputs: Sequence[Tensor], inputs: Sequence[Tensor],
         grad_outputs: Sequence[Tensor | None]) -> list[Tensor | None]:
    """sum_k grad_outputs[k] . d(outputs[k])/d(input) per input; None where unused."""
def enter_no_grad() -> None:
    """Enters a no-grad region on this thread; pair with exit_no_grad."""
def exit_no_grad() -> None:
    """Ends the innermost no-grad region."""
def is_grad_enabled() -> bool:
    """Whether autograd is recording ops now."""
def set_num_threads(n: int) -> None:
    """Sets the number of CPU threads kernels use (n >= 1)."""
def get_num_threads() -> int:
    """The number of CPU worker threads."""
def fma_peak_gflops(iters: int) -> float | None:
    """f32 GFLOP/s of vector FMA loops on every tlrs thread (`iters` steps each): the ceiling
    benchmarks report kernels against; None where the CPU has no vector FMA."""
def mul_add_peak_gflops(iters: int) -> float | None:
    """As `fma_peak_gflops` with a multiply and a separate add per term (two flops): the ceiling
    of the reference kernels' arithmetic; None where the CPU has no vector FMA."""
def cached_memory() -> int:
    """Bytes of freed host buffers kept for reuse."""
def release_cached_memory() -> int:
    """Returns the kept buffers to the system; the bytes returned."""
def set_fast_kernels(on: bool) -> None:
    """Selects this thread's kernel kind: fast (True) or bit-reproducible reference (False)."""
def get_fast_kernels() -> bool:
    """Whether this thread runs the fast kernels."""
def optim_update(kind: str, hyper: dict[str, float], t: int, param: Tensor, grad: Tensor,
                 slots: Sequence[Tensor]) -> tuple[Tensor, list[Tensor]]:
    """One update of one parameter at step t by the optimizer `kind`: (parameter, slots)."""
def optim_update_(kind: str, hyper: dict[str, float], t: int, param: Tensor, grad: Tensor,
                  slots: Sequence[Tensor]) -> None:
    """As optim_update, replacing param's and the slots' values (in place when unshared)."""
def get_kernel_settings() -> tuple[bool, bool, bool]:
    """This thread's kernel settings: (fast CPU kernels, GPU matmuls in fp64, TF32)."""
def set_kernel_settings(fast: bool, gpu_fp64: bool, tf32: bool) -> None:
    """Replaces this thread's kernel settings."""

# ---- seeding and random tensors (random.rs) ----

def manual_seed(seed: int) -> None:
    """Restarts the global seed stream at `seed` (the reference's `manualSeed`)."""
def fresh_seed() -> int:
    """The next seed of the global stream (the reference's `freshSeed`)."""
def rand(shape: Sequence[int], dtype: str = "float64", requires_grad: bool = False) -> Tensor:
    """Uniform [0, 1) samples of `shape`."""
def randn(shape: Sequence[int], dtype: str = "float64", requires_grad: bool = False) -> Tensor:
    """Standard normal samples of `shape`."""
def cpu_features() -> list[str]:
    """SIMD features the kernels can use on this CPU."""

# ---- initialisation and generators (init.rs) ----

@final
class FloatInit:
    """One parameter's initialiser (the reference's `RuntimeInit.FloatInit`)."""
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __eq__(self, other: object, /) -> bool:
        """Whether two initialisers are the same."""
    @staticmethod
    def zeros() -> FloatInit:
        """All zeros."""
    @staticmethod
    def ones() -> FloatInit:
        """All ones."""
    @staticmethod
    def uniform(lo: float, hi: float, seed: int = 0) -> FloatInit:
        """Uniform values in [lo, hi)."""
    @staticmethod
    def xavier_uniform(fan_in: int, fan_out: int, seed: int = 0) -> FloatInit:
        """Xavier/Glorot uniform values."""
    @staticmethod
    def kaiming_uniform(fan_in: int, seed: int = 0) -> FloatInit:
        """Kaiming/He uniform values."""
    @staticmethod
    def flat(values: Sequence[float]) -> FloatInit:
        """Exactly these values, in row-major order."""
    def values(self, shape: Sequence[int], dtype: str = "float64", device: str = "cpu") -> Tensor:
        """The values for a tensor of `shape` in `dtype`, as a Tensor."""

@final
class Plan:
    """A plan: one initialiser per parameter shape, checked when built (the reference's `Plan`)."""
    def __init__(self, param_shapes: Sequence[Sequence[int]], inits: Sequence[FloatInit]) -> None:
        """Pairs shapes with initialisers (ValueError if they do not fit)."""
    def __len__(self) -> int:
        """The number of parameters."""
    @property
    def param_shapes(self) -> list[list[int]]:
        """The parameter shapes, in order."""
    @property
    def inits(self) -> list[FloatInit]:
        """The initialisers, in order."""
    def materialise(self, dtype: str = "float64", device: str = "cpu") -> list[Tensor]:
        """One tensor per parameter, in order, in `dtype`."""

def fan_in_out(shape: Sequence[int]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shape."""
def xavier_uniform_for_shape(shape: Sequence[int], seed: int = 0) -> FloatInit:
    """A Xavier-uniform initialiser with fans taken from `shape`."""
def kaiming_uniform_for_shape(shape: Sequence[int], seed: int = 0) -> FloatInit:
    """A Kaiming-uniform initialiser with fan_in taken from `shape`."""
def xavier_linear_weight(out_dim: int, in_dim: int, seed: int = 0) -> FloatInit:
    """A Xavier-uniform initialiser for an (out_dim, in_dim) linear weight."""
def kaiming_linear_weight(out_dim: int, in_dim: int, seed: int = 0) -> FloatInit:
    """A Kaiming-uniform initialiser for an (out_dim, in_dim) linear weight."""
def splitmix64(x: int) -> int:
    """The SplitMix64 mix of a 64-bit integer."""
def next_seed(seed: int, counter: int) -> int:
    """The seed derived from (seed, counter)."""
def key_of(seed: int, counter: int) -> int:
    """The random key derived from (seed, counter)."""
def runtime_init_unit(seed: int, index: int) -> float:
    """The runtime initialiser's unit value for element `index` under `seed`."""
def lcg_units(seed: int, n: int) -> list[float]:
    """The layer-initialiser LCG's first `n` unit values for `seed` (one O(n) sweep)."""
def shuffle_permutation(seed: int, n: int) -> tuple[list[int], int]:
    """The dataset-shuffle LCG: the permutation of `n` items for `seed`, and the next seed."""
def seed_stream_state() -> tuple[int, int]:
    """The global seed stream's (seed, counter), for `with_model` and tests."""
def set_seed_stream_state(seed: int, counter: int) -> None:
    """Puts the global seed stream at (seed, counter), as `seed_stream_state` read it."""
def layer_init(
    scheme: str,
    shape: Sequence[int],
    seed: int = 0,
    lo: float = 0.0,
    hi: float = 1.0,
    fan_in: int = 0,
    fan_out: int = 0,
    dtype: str = "float64",
) -> Tensor:
    """A layer initialiser's values: scheme 'zeros', 'ones', 'uniform', 'xavier_uniform', ..."""

# ---- checkpoints (checkpoint.rs) ----

def save_safetensors(
    path: str | os.PathLike[str],
    names: Sequence[str],
    tensors: Sequence[Tensor],
    metadata: dict[str, str],
    complex: Sequence[bool] | None = None,
) -> None:
    """Writes named tensors and string metadata to `path` atomically; a tensor flagged in
    `complex` is complex64 as float32 [..., 2] (re, im), written as C64."""
def load_safetensors_complex(
    path: str | os.PathLike[str],
) -> tuple[list[str], list[Tensor], list[bool], dict[str, str]]:
    """Reads (names, tensors, complex flags, metadata); a C64 tensor comes as float32 [..., 2]."""
def load_safetensors(
    path: str | os.PathLike[str],
) -> tuple[list[str], list[Tensor], dict[str, str]]:
    """Reads (names, tensors, metadata) from `path`; a corrupt file raises CheckpointError."""

# ---- layer ops (nn_ops.rs) ----

def conv2d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1, padding: int = 0
) -> Tensor:
    """2-D convolution of NCHW `x` with OIHW `weight`."""
def max_pool2d(
    x: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """2-D max pooling (stride defaults to kernel_size); with return_indices, (values, int64
    NumPy array of flat winner indices)."""
def avg_pool2d(
    x: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-D average pooling (stride defaults to kernel_size)."""
def global_avg_pool2d(x: Tensor) -> Tensor:
    """Mean over H and W: [N, C, H, W] -> [N, C], or [C, H, W] -> [C]."""
def batch_norm_per_image(
    x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-6
) -> Tensor:
    """Batch norm with mean and biased variance per image and channel over H x W."""
def batch_norm_train(
    x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> tuple[Tensor, Tensor, Tensor]:
    """(output, batch mean, biased batch variance) with statistics over (N, H, W)."""
def batch_norm_eval(
    x: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation with the running statistics."""
def layer_norm(
    x: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalisation over the trailing `normalized_shape` dims."""
def attention_softmax(x: Tensor, scale: float, causal: bool) -> Tensor:
    """softmax over keys of scores [..., queries, keys] times `scale`, later keys hidden when causal."""
def multi_head_attention(
    x: Tensor,
    wq: Tensor,
    wk: Tensor,
    wv: Tensor,
    wo: Tensor,
    num_heads: int,
    mask: Sequence[bool] | None = None,
) -> Tensor:
    """Self-attention over x [B, n, d] or [n, d]; `mask` is row-major [n, n], True = masked out."""
def dropout(x: Tensor, p: float, key: int | None = None) -> Tensor:
    """Inverted dropout with drop probability p; key None draws one from the seed stream."""
def embedding_t(indices: Tensor, weight: Tensor) -> Tensor: ...
def embedding(indices: Sequence[int], indices_shape: Sequence[int], weight: Tensor) -> Tensor:
    """Rows of `weight` [num, dim] per index; output shape is `indices_shape` + [dim]."""
def gather(x: Tensor, dim: int, index: Sequence[int], index_shape: Sequence[int]) -> Tensor:
    """Values of `x` at `index` (flat, with shape `index_shape`) along `dim`."""
def sort_along(x: Tensor, dim: int, descending: bool, k: int | None = None) -> tuple[Tensor, Tensor]:
    """The first `k` (all when None) values along `dim` in stable sorted order, and their
    positions (int64)."""
def scatter_add(x: Tensor, dim: int, index: Sequence[int], src: Tensor) -> Tensor:
    """`x` with `src` added at `index` along `dim`."""
def masked_fill(x: Tensor, mask: Sequence[bool] | bytes, mask_shape: Sequence[int], value: float) -> Tensor:
    """`value` where the row-major `mask` (of `mask_shape`, broadcast against x) is True."""
def assign_(dst: Tensor, src: Tensor) -> None:
    """Makes `dst` refer to `src`'s value in place; shapes and dtypes must match."""

# ---- compiled graphs (graph.rs) ----

@final
class Graph:
    """A traced loss graph that can be replayed, differentiated and trained natively."""
    @staticmethod
    def trace(root: Tensor, params: Sequence[Tensor], inputs: Sequence[Tensor]) -> Graph:
        """Traces `root` (computed from leaves `params` and `inputs` that all required grad)."""
    @staticmethod
    def leaves(ts: Sequence[Tensor]) -> list[Tensor]:
        """Trace leaves with these values: they require grad, and Python reads of anything
        computed from them are refused (raising TraceError). Starts a trace."""
    @property
    def node_count(self) -> int:
        """The number of nodes in the graph."""
    @property
    def op_count(self) -> int:
        """The number of op nodes in the traced graph."""
    @property
    def plan_op_count(self) -> int:
        """The number of ops the plan runs (each fused elementwise chain counts once)."""
    @property
    def activation_bytes(self) -> int:
        """Bytes of all node values of one evaluation (what a forward pass keeps for backward)."""
    def describe(self) -> str:
        """A human-readable listing of the plan that runs (fused chains shown with their steps)."""
    def step_memory(self, params: list[Tensor], flags: list[bool], inputs: list[Tensor],
                    fast: bool = False) -> dict[str, int]:
        """One forward + backward, measured: `peak_bytes` (most bytes held at once above what was
        live before), `large_buffers` (buffers of 256 KiB or more) and `fresh_large_buffers` (those
        not served from buffers freed earlier)."""
    def without_fusion(self) -> Graph:
        """This graph with a plan that runs the traced ops one by one."""
    def nodes(self) -> list[dict[str, Any]]:
        """One dict per node in SSA order: `kind` ('param', 'input', 'const', 'op'), `shape`,
        `dtype`; leaves: `index` or `value`; ops: `op`, `inputs` (node indices), `attrs`."""
    @property
    def output(self) -> int:
        """The node index of the graph's result."""
    def first_difference(self, other: Graph) -> str | None:
        """None when `other` (a second trace) matches this one, else why not."""
    def evaluate(
        self, params: Sequence[Tensor], inputs: Sequence[Tensor], fast: bool = False
    ) -> Tensor:
        """The root's value for these params and inputs, without autograd."""
    def loss_and_grads(
        self,
        params: Sequence[Tensor],
        flags: Sequence[bool],
        inputs: Sequence[Tensor],
        fast: bool = False,
    ) -> tuple[Tensor, list[Tensor]]:
        """(loss, gradient per parameter); parameters whose flag is False get zeros."""
    def train(
        self,
        params: Sequence[Tensor],
        flags: Sequence[bool],
        samples: Sequence[Sequence[Tensor]],
        steps: int,
        kind: str,
        hyper: dict[str, float],
        slots: Sequence[Sequence[Tensor]],
        step: int,
        fast: bool = False,
        lrs: Sequence[float] | None = None,
        clip: float | None = None,
        accumulate: int = 1,
    ) -> tuple[list[float], list[Tensor], list[list[Tensor]], int, BaseException | None]:
        """Runs `steps` updates natively; returns (pre-update losses, params, slots, step count,
        the exception of an interrupt that ended the loop early, or None)."""

# ---- CUDA (cuda.rs) ----

def nccl_probe() -> tuple[bool, str]:
    """(usable, NCCL's version and library path such as '2.28.9 (/path/libnccl.so.2)', or why
    NCCL cannot be used here)."""
def nccl_unique_id() -> bytes:
    """A new 128-byte NCCL unique id (rank 0 makes it; MPI carries it to the others)."""
@final
class NcclComm:
    """One rank's NCCL communicator on one CUDA device."""
    def __new__(cls, ordinal: int, size: int, rank: int, unique_id: bytes) -> NcclComm: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    def all_gather(self, t: Tensor) -> Tensor:
        """Every rank's tensor stacked in rank order: shape [size, *t.shape]."""
    def broadcast(self, t: Tensor, root: int) -> Tensor:
        """Rank `root`'s tensor on every rank."""
    def all_reduce_sum(self, t: Tensor) -> Tensor:
        """The sum over ranks in NCCL's own order."""

def cuda_status() -> tuple[bool, str]:
    """(usable, reason): whether tlrs can run tensors on CUDA here, and why not."""
def cuda_device_count() -> int:
    """The number of CUDA devices visible (0 when built without CUDA)."""
def cuda_diagnostics() -> list[tuple[str, str]]:
    """(item, finding) pairs describing the CUDA setup."""
def cuda_synchronize() -> None:
    """Wait until all queued work on the opened CUDA devices has finished."""
def cuda_set_tf32(on: bool) -> None:
    """Allow TF32 tensor-core math for later float32 GPU matmuls."""
def cuda_set_matmul_precision(precision: str) -> None:
    """Select SGEMM ('fp32') or DGEMM ('fp64') for later GPU matmuls of either dtype."""
def build_features() -> list[str]:
    """The features this build was compiled with, e.g. ['cpu']."""
