"""Complex tensors (`--dtype complex`: complex64, two binary32 per element; complex128 from NumPy
complex128 data), as TorchLean's executable complex scalar: a real and an imaginary component,
each component operation one IEEE operation of the component dtype, rounded once.

A `ComplexTensor` holds its two components as real tensors of one shape, dtype and device, so
every complex operation is a short formula of real tlrs ops: it runs wherever they run (CPU
reference or fast kernels, CUDA), and autograd flows through the components. The formulas
(docs/complex.md says more):

- `+`, `-`: componentwise. `*`: (ac - bd) + (ad + bc)i. `/`: ((ac + bd) + (bc - ad)i) / (c² + d²)
  — TorchLean's formulas, so the same bits as its executable complex; the division's c² + d²
  overflows (to inf, giving 0) where |c| or |d| exceeds about 1.8e19 in complex64, where NumPy's
  Smith division does not. A real operand is promoted to complex with a zero imaginary part
  first (TorchLean's `ofReal`), so `inf · z` follows the full formula as in PyTorch.
- `abs`: sqrt(a² + b²) (TorchLean's; overflows beyond about 1.8e19 where hypot does not);
  `angle`: atan2(b, a); `exp`: e^a·cos b + e^a·sin b·i; `log`: log|z| + angle(z)·i and `sqrt`
  the principal square root — both on their principal branches, where TorchLean drops the
  argument of `log` and returns a real `sqrt` for non-real z.
- `matmul`: (AC - BD) + (AD + BC)i with four real products (each folding over k in index
  order), not a fold of complex products; `sum` componentwise; `mean` divides each component by
  the count.

Gradients follow PyTorch's convention: for a real loss L, `z.grad` is dL/d(re z) + i·dL/d(im z)
(the conjugate Wirtinger derivative, doubled), which is the pair of component gradients.
Complex numbers have no order: `relu`, `max`, comparisons and cross-entropy have no complex
meaning and `ComplexTensor` does not offer them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import _core, ops
from ._core import Tensor
from .errors import AutogradError

__all__ = ["COMPONENT_DTYPES", "ComplexTensor", "abs", "angle", "cat", "complex_tensor", "conj", "exp", "grad",
           "imag", "is_complex_dtype", "load", "log", "matmul", "mean", "op_without_complex_meaning", "real", "save",
           "sqrt", "stack", "sum"]

COMPONENT_DTYPES = {"complex64": "float32", "complex128": "float64"}
"""Each complex dtype and the dtype of its components."""
_COMPLEX_OF = {v: k for k, v in COMPONENT_DTYPES.items()}


def is_complex_dtype(dtype: Any) -> bool:
    """Whether `dtype` (a name or NumPy dtype) is complex64 or complex128."""
    try:
        return bool(np.dtype(dtype).kind == "c")
    except (TypeError, ValueError):
        return False


class ComplexTensor:
    """A complex tensor: `real` + i·`imag`, two real tensors of one shape, dtype and device."""

    __slots__ = ("imag", "real")

    def __init__(self, real: Tensor, imag: Tensor) -> None:
        if not isinstance(real, Tensor) or not isinstance(imag, Tensor):
            raise TypeError(f"ComplexTensor: expected two Tensors, got {type(real).__name__} and "
                            f"{type(imag).__name__}")
        if real.dtype not in _COMPLEX_OF or real.dtype != imag.dtype:
            raise _core.DTypeError(f"ComplexTensor: expected float32 or float64 components of one dtype, "
                                   f"got {real.dtype} and {imag.dtype}")
        if real.shape != imag.shape or real.device != imag.device:
            raise _core.ShapeError(f"ComplexTensor: expected components of one shape and device, got "
                                   f"{real.shape} on {real.device} and {imag.shape} on {imag.device}")
        self.real, self.imag = real, imag

    # ---- description ----
    @property
    def dtype(self) -> str:
        return _COMPLEX_OF[self.real.dtype]

    @property
    def shape(self) -> list[int]:
        return self.real.shape

    @property
    def ndim(self) -> int:
        return self.real.ndim

    @property
    def device(self) -> str:
        return self.real.device

    def numel(self) -> int:
        return self.real.numel()

    def __len__(self) -> int:
        return len(self.real)

    def __repr__(self) -> str:
        return f"ComplexTensor({self.numpy()!r}, dtype={self.dtype})"

    # ---- values ----
    def numpy(self) -> np.ndarray[Any, Any]:
        """The values as a NumPy complex64/complex128 array (each component copied exactly)."""
        out = np.empty(self.shape, dtype=self.dtype)
        out.real, out.imag = self.real.numpy(), self.imag.numpy()
        return out

    def item(self) -> complex:
        if self.numel() != 1:
            raise ValueError(f"item: expected a tensor of one element, got shape {self.shape}")
        return complex(self.real.item(), self.imag.item())

    def to(self, target: str) -> ComplexTensor:
        """On another device (`'cpu'`, `'cuda'`, ...) or as the other complex dtype."""
        if is_complex_dtype(target):
            comp = COMPONENT_DTYPES[np.dtype(target).name]
            return ComplexTensor(self.real.to(comp), self.imag.to(comp))
        return ComplexTensor(self.real.to(target), self.imag.to(target))

    def detach(self) -> ComplexTensor:
        return ComplexTensor(self.real.detach(), self.imag.detach())

    # ---- autograd ----
    @property
    def requires_grad(self) -> bool:
        return bool(self.real.requires_grad or self.imag.requires_grad)

    @requires_grad.setter
    def requires_grad(self, on: bool) -> None:
        self.real.requires_grad = on
        self.imag.requires_grad = on

    @property
    def grad(self) -> ComplexTensor | None:
        """dL/d(re) + i·dL/d(im) after `loss.backward()` (PyTorch's convention), or None."""
        gr, gi = self.real.grad, self.imag.grad
        if gr is None and gi is None:
            return None
        zero = gr if gi is None else gi
        assert zero is not None
        gr = gr if gr is not None else _core.full(zero.shape, 0.0, zero.dtype, device=zero.device)
        gi = gi if gi is not None else _core.full(zero.shape, 0.0, zero.dtype, device=zero.device)
        return ComplexTensor(gr, gi)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise AutogradError("backward: a gradient can be implicitly created only for a real scalar "
                            "output (reduce the complex tensor to a real loss, e.g. .abs().sum())")

    # ---- arithmetic ----
    def __neg__(self) -> ComplexTensor:
        return ComplexTensor(-self.real, -self.imag)

    def __add__(self, other: Any) -> ComplexTensor:
        o = _operand(other, self)
        return ComplexTensor(self.real + o.real, self.imag + o.imag)

    def __radd__(self, other: Any) -> ComplexTensor:
        return _operand(other, self).__add__(self)

    def __sub__(self, other: Any) -> ComplexTensor:
        o = _operand(other, self)
        return ComplexTensor(self.real - o.real, self.imag - o.imag)

    def __rsub__(self, other: Any) -> ComplexTensor:
        return _operand(other, self).__sub__(self)

    def __mul__(self, other: Any) -> ComplexTensor:
        o = _operand(other, self)
        a, b, c, d = self.real, self.imag, o.real, o.imag
        return ComplexTensor(a * c - b * d, a * d + b * c)

    def __rmul__(self, other: Any) -> ComplexTensor:
        return _operand(other, self).__mul__(self)

    def __truediv__(self, other: Any) -> ComplexTensor:
        o = _operand(other, self)
        a, b, c, d = self.real, self.imag, o.real, o.imag
        denom = c * c + d * d
        return ComplexTensor((a * c + b * d) / denom, (b * c - a * d) / denom)

    def __rtruediv__(self, other: Any) -> ComplexTensor:
        return _operand(other, self).__truediv__(self)

    def __matmul__(self, other: Any) -> ComplexTensor:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> ComplexTensor:
        return matmul(_operand(other, self), self)

    # ---- functions as methods ----
    def conj(self) -> ComplexTensor:
        return conj(self)

    def abs(self) -> Tensor:
        return abs(self)

    def angle(self) -> Tensor:
        return angle(self)

    def exp(self) -> ComplexTensor:
        return exp(self)

    def log(self) -> ComplexTensor:
        return log(self)

    def sqrt(self) -> ComplexTensor:
        return sqrt(self)

    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> ComplexTensor:
        return sum(self, dim, keepdim)

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> ComplexTensor:
        return mean(self, dim, keepdim)

    # ---- layout: the same op on both components ----
    def reshape(self, *shape: Any) -> ComplexTensor:
        return ComplexTensor(self.real.reshape(*shape), self.imag.reshape(*shape))

    def view(self, *shape: Any) -> ComplexTensor:
        return self.reshape(*shape)

    def transpose(self, dim0: int, dim1: int) -> ComplexTensor:
        return ComplexTensor(self.real.transpose(dim0, dim1), self.imag.transpose(dim0, dim1))

    def permute(self, *dims: Any) -> ComplexTensor:
        return ComplexTensor(self.real.permute(*dims), self.imag.permute(*dims))

    def unsqueeze(self, dim: int) -> ComplexTensor:
        return ComplexTensor(self.real.unsqueeze(dim), self.imag.unsqueeze(dim))

    def squeeze(self, *dim: Any) -> ComplexTensor:
        return ComplexTensor(self.real.squeeze(*dim), self.imag.squeeze(*dim))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> ComplexTensor:
        return ComplexTensor(self.real.flatten(start_dim, end_dim), self.imag.flatten(start_dim, end_dim))

    def __getitem__(self, index: Any) -> ComplexTensor:
        return ComplexTensor(self.real[index], self.imag[index])

    @property
    def T(self) -> ComplexTensor:  # noqa: N802 - torch's name
        return ComplexTensor(self.real.T, self.imag.T)


def _constant(value: complex, like: ComplexTensor) -> ComplexTensor:
    comp, dev = like.real.dtype, like.device
    return ComplexTensor(_core.full([], value.real, comp, device=dev), _core.full([], value.imag, comp, device=dev))


def _operand(other: Any, like: ComplexTensor) -> ComplexTensor:
    """`other` as a complex operand of `like`'s dtype: a ComplexTensor as it is, a real Tensor
    with a zero imaginary part (TorchLean's `ofReal`), a Python number as a 0-d constant."""
    if isinstance(other, ComplexTensor):
        if other.dtype != like.dtype:
            raise _core.DTypeError(f"expected complex operands of one dtype (tlrs never promotes), got "
                                   f"{like.dtype} and {other.dtype}")
        return other
    if isinstance(other, Tensor):
        if other.dtype != like.real.dtype:
            raise _core.DTypeError(f"expected a {like.real.dtype} real operand for {like.dtype} (tlrs never "
                                   f"promotes), got {other.dtype}")
        return ComplexTensor(other, _core.full(other.shape, 0.0, other.dtype, device=other.device))
    if isinstance(other, (int, float, complex, np.number)) and not isinstance(other, bool):
        return _constant(complex(other), like)
    raise TypeError(f"expected a ComplexTensor, a Tensor or a number, got {type(other).__name__}")


# ---- constructors ----------------------------------------------------------------------------

def complex_tensor(data: Any, dtype: Any = None, device: str | None = None,
                   requires_grad: bool = False) -> ComplexTensor:
    """A complex tensor holding a copy of `data` (NumPy complex arrays, Python complex numbers or
    lists, a ComplexTensor). `dtype`: complex64 or complex128 (default: complex64 for complex64
    data, else complex128, as tlrs's default float is binary64). With `requires_grad`, both
    components are leaves and `.grad` assembles their gradients."""
    if isinstance(data, ComplexTensor):
        data = data.numpy()
    arr = np.asarray(data)
    if arr.dtype.kind not in "biufc":
        raise _core.DTypeError(f"complex_tensor: expected numeric data, got an array of dtype {arr.dtype}")
    name = (np.dtype(dtype).name if dtype is not None
            else "complex64" if arr.dtype == np.complex64 else "complex128")
    if name not in COMPONENT_DTYPES:
        raise _core.DTypeError(f"complex_tensor: expected dtype complex64 or complex128, got {name}")
    arr = arr.astype(name)
    comp = COMPONENT_DTYPES[name]
    parts = [_core.tensor_from_numpy(np.ascontiguousarray(p, dtype=comp), copy=True) for p in (arr.real, arr.imag)]
    if device is not None and device != "cpu":
        parts = [p.to(device).detach() for p in parts]
    for p in parts:
        p.requires_grad = requires_grad
    return ComplexTensor(parts[0], parts[1])


# ---- functions -------------------------------------------------------------------------------

def real(z: ComplexTensor) -> Tensor:
    return z.real


def imag(z: ComplexTensor) -> Tensor:
    return z.imag


def conj(z: ComplexTensor) -> ComplexTensor:
    return ComplexTensor(z.real, -z.imag)


def abs(z: ComplexTensor) -> Tensor:  # noqa: A001 - torch's name
    """|z| = sqrt(a² + b²), each operation rounded once (TorchLean's formula)."""
    return ops.sqrt(z.real * z.real + z.imag * z.imag)


def angle(z: ComplexTensor) -> Tensor:
    """The argument atan2(b, a), in (-pi, pi]."""
    return ops.atan2(z.imag, z.real)


def exp(z: ComplexTensor) -> ComplexTensor:
    """e^a·cos b + i·e^a·sin b."""
    ea = ops.exp(z.real)
    return ComplexTensor(ea * ops.cos(z.imag), ea * ops.sin(z.imag))


def log(z: ComplexTensor) -> ComplexTensor:
    """The principal logarithm: log|z| + i·atan2(b, a) (log 0 = -inf + 0i)."""
    return ComplexTensor(ops.log(abs(z)), angle(z))


def sqrt(z: ComplexTensor) -> ComplexTensor:
    """The principal square root (real part >= 0, the imaginary part takes b's sign, -0 too):
    with t = sqrt((|z| + |a|) / 2), t + i·b/(2t) where a >= 0, else |b|/(2t) ± i·t; sqrt(0) = 0 + bi."""
    a, b = z.real, z.imag
    t = ops.sqrt((abs(z) + ops.abs(a)) * 0.5)
    two_t = t * 2.0
    zero_t = t == 0.0
    nonneg = a >= 0.0
    # b's sign bit, -0 included (1 / -0 = -inf), -inf included (b < 0).
    b_negative = ((b < 0.0).to(b.dtype) + ((1.0 / b) < 0.0).to(b.dtype)) > 0.0
    re = ops.where(nonneg, t, ops.abs(b) / two_t)
    im = ops.where(nonneg, b / two_t, ops.where(b_negative, -t, t))
    zero = _core.full(t.shape, 0.0, t.dtype, device=t.device)
    return ComplexTensor(ops.where(zero_t, zero, re), ops.where(zero_t, b, im))


def matmul(x: Any, y: Any) -> ComplexTensor:
    """(A + iB)(C + iD) = (AC - BD) + i(AD + BC), four real products (broadcast as `ops.matmul`)."""
    like = x if isinstance(x, ComplexTensor) else y
    if not isinstance(like, ComplexTensor):
        raise TypeError("matmul: expected a ComplexTensor operand")
    p, q = _operand(x, like), _operand(y, like)
    a, b, c, d = p.real, p.imag, q.real, q.imag
    return ComplexTensor(ops.matmul(a, c) - ops.matmul(b, d), ops.matmul(a, d) + ops.matmul(b, c))


def sum(z: ComplexTensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> ComplexTensor:  # noqa: A001
    """Componentwise sums (complex addition is componentwise), each the real sum's fold."""
    return ComplexTensor(ops.sum(z.real, dim, keepdim), ops.sum(z.imag, dim, keepdim))


def mean(z: ComplexTensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> ComplexTensor:
    """Componentwise means: each component's sum divided by the count (a real divisor)."""
    return ComplexTensor(ops.mean(z.real, dim, keepdim), ops.mean(z.imag, dim, keepdim))


def cat(zs: Sequence[ComplexTensor], dim: int = 0) -> ComplexTensor:
    return ComplexTensor(ops.cat([z.real for z in zs], dim), ops.cat([z.imag for z in zs], dim))


def stack(zs: Sequence[ComplexTensor], dim: int = 0) -> ComplexTensor:
    return ComplexTensor(ops.stack([z.real for z in zs], dim), ops.stack([z.imag for z in zs], dim))


def grad(loss: Tensor, inputs: Sequence[ComplexTensor | Tensor]) -> list[ComplexTensor | Tensor]:
    """`tlrs.grad` for complex inputs: dL/d(re) + i·dL/d(im) for each ComplexTensor (PyTorch's
    convention), the real gradient for each Tensor. `loss` must be a real scalar."""
    from .autograd import grad as real_grad

    if isinstance(loss, ComplexTensor):
        raise AutogradError("grad: expected a real scalar loss, got a complex tensor")
    flat: list[Tensor] = []
    for x in inputs:
        flat += [x.real, x.imag] if isinstance(x, ComplexTensor) else [x]
    found = real_grad(loss, flat)
    out: list[ComplexTensor | Tensor] = []
    i = 0
    for x in inputs:
        if isinstance(x, ComplexTensor):
            gr, gi = found[i], found[i + 1]
            assert gr is not None and gi is not None
            out.append(ComplexTensor(gr, gi))
            i += 2
        else:
            g = found[i]
            assert g is not None
            out.append(g)
            i += 1
    return out


# ---- checkpoints -----------------------------------------------------------------------------

def save(tensors: Mapping[str, ComplexTensor | Tensor], path: str | os.PathLike[str],
         metadata: Mapping[str, str] | None = None) -> None:
    """Write named tensors to a safetensors file, atomically: complex64 ones as C64 (each
    element's real then imaginary binary32, safetensors' complex64 layout), real ones as they
    are. complex128 has no safetensors dtype and is refused."""
    names, parts, flags = [], [], []
    for name, t in tensors.items():
        if isinstance(t, ComplexTensor):
            if t.dtype != "complex64":
                raise _core.DTypeError(f"save: {name} is {t.dtype}; safetensors stores complex64 (C64) only "
                                       "(convert with .to('complex64'))")
            t = ops.stack([t.real.detach(), t.imag.detach()], -1)
            flags.append(True)
        else:
            flags.append(False)
        names.append(name)
        parts.append(t)
    _core.save_safetensors(path, names, parts, dict(metadata or {}), flags)


def load(path: str | os.PathLike[str]) -> tuple[dict[str, ComplexTensor | Tensor], dict[str, str]]:
    """(named tensors, metadata) from a safetensors file; C64 tensors come as complex64
    ComplexTensors, the others as they are."""
    names, parts, flags, metadata = _core.load_safetensors_complex(path)
    out: dict[str, ComplexTensor | Tensor] = {}
    for name, t, is_complex in zip(names, parts, flags, strict=True):
        out[name] = ComplexTensor(t[..., 0], t[..., 1]) if is_complex else t
    return out, metadata


# ---- models ----------------------------------------------------------------------------------

ORDERED_OPS = frozenset({
    "relu", "leaky_relu", "elu", "hardtanh", "clamp", "max", "maximum", "minimum", "max_pool2d",
    "softmax", "log_softmax", "attention_softmax", "cross_entropy", "lt", "le", "gt", "ge",
    "floor", "trunc", "floor_divide", "div_trunc",
})
"""Recorded ops that need an order of the scalars (or a max inside): no complex meaning."""


def op_without_complex_meaning(defn: Any) -> str | None:
    """The first op of a `ModuleDef`'s loss, traced at float32, that has no complex meaning
    (`ORDERED_OPS`), or None (also when the loss cannot be traced)."""
    from .compiled import CompiledLoss, TraceError

    try:
        traced = CompiledLoss(defn.loss, defn.param_shapes, defn.input_shapes, "float32", defn.input_dtypes)
        nodes = traced.graph_for(defn.input_shapes).nodes()
    except TraceError:
        return None
    return next((n["op"] for n in nodes if n["kind"] == "op" and n["op"] in ORDERED_OPS), None)
