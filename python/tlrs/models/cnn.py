"""The reference two-convolution CNN: `two_conv_cnn`, alias `cnn2`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ..module import ModuleDef
from . import _common as c

__all__ = ["cnn2", "two_conv_cnn"]

Model = tuple[ModuleDef, Callable[[Sequence[Tensor], Any], Tensor]]
_NAMES = ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias")


def _max_pool(x: Tensor, kh: int, kw: int, stride: int) -> Tensor:
    """Max pooling without padding over kh×kw windows; rectangular windows are composed from
    index_select and elementwise maxima (first along W, then along H)."""
    if kh == kw:
        return ops.max_pool2d(x, kh, stride)

    def along(t: Tensor, dim: int, k: int) -> Tensor:
        n = (t.shape[dim] - k) // stride + 1
        out = None
        for d in range(k):
            sel = ops.index_select(t, dim, [i * stride + d for i in range(n)])
            out = sel if out is None else ops.maximum(out, sel)
        assert out is not None
        return out

    return along(along(x, -1, kw), -2, kh)


def two_conv_cnn(in_c: int, c1: int, c2: int, out_dim: int, in_h: int, in_w: int, kh: int,
                 kw: int, stride1: int = 1, padding1: int = 0, stride2: int = 1,
                 padding2: int = 0, pool_kh: int = 2, pool_kw: int = 2, pool_stride1: int = 2,
                 pool_stride2: int = 2, *, dtype: Any = "float64") -> Model:
    """The reference `twoConvCnn` / `cnn2`: `CHW(in_c, in_h, in_w) → Vec out_dim`.

    conv(in_c→c1, kh×kw, stride1, padding1) → ReLU → max-pool(pool_kh×pool_kw, pool_stride1)
    → conv(c1→c2, kh×kw, stride2, padding2) → ReLU → max-pool(pool_stride2) → flatten (per
    sample, C·H·W row-major) → linear(→ out_dim), giving logits; one-hot cross-entropy loss.
    Params `conv1.weight [c1, in_c, kh, kw], conv1.bias [c1], conv2.weight [c2, c1, kh, kw],
    conv2.bias [c2], fc.weight [out_dim, feat], fc.bias [out_dim]`; kernels uniform(−0.1, 0.1)
    with LCG seeds 0 and 2, fc weight Xavier with seed 4, biases zero.
    Raises: ValueError: a non-positive size or stride, a negative padding, or a kernel / pool
    window larger than its (padded) input.
    """
    m = "two_conv_cnn"
    in_c, c1, c2, out_dim = (c.dim(m, n, v) for n, v in
                             (("in_c", in_c), ("c1", c1), ("c2", c2), ("out_dim", out_dim)))
    in_h, in_w, kh, kw = (c.dim(m, n, v) for n, v in
                          (("in_h", in_h), ("in_w", in_w), ("kh", kh), ("kw", kw)))
    s1, s2, pk_h, pk_w, ps1, ps2 = (c.dim(m, n, v) for n, v in (
        ("stride1", stride1), ("stride2", stride2), ("pool_kh", pool_kh), ("pool_kw", pool_kw),
        ("pool_stride1", pool_stride1), ("pool_stride2", pool_stride2)))
    p1, p2 = c.nat(m, "padding1", padding1), c.nat(m, "padding2", padding2)
    h1 = c.conv_out(m, "conv1 height", in_h, kh, s1, p1)
    w1 = c.conv_out(m, "conv1 width", in_w, kw, s1, p1)
    ph1 = c.conv_out(m, "pool1 height", h1, pk_h, ps1, 0)
    pw1 = c.conv_out(m, "pool1 width", w1, pk_w, ps1, 0)
    h2 = c.conv_out(m, "conv2 height", ph1, kh, s2, p2)
    w2 = c.conv_out(m, "conv2 width", pw1, kw, s2, p2)
    ph2 = c.conv_out(m, "pool2 height", h2, pk_h, ps2, 0)
    pw2 = c.conv_out(m, "pool2 width", w2, pk_w, ps2, 0)
    feat = c2 * ph2 * pw2
    dtype = c.dtype_name(dtype)
    init = [c.uniform([c1, in_c, kh, kw], 0, -0.1, 0.1, dtype), c.zeros([c1], dtype),
            c.uniform([c2, c1, kh, kw], 2, -0.1, 0.1, dtype), c.zeros([c2], dtype),
            *c.linear_params(out_dim, feat, 4, dtype)]
    shapes = [list(t.shape) for t in init]

    def predict(params: Sequence[Tensor], x: Any) -> Tensor:
        k1, b1, k2, b2, w, b = c.check_params(m, params, shapes)
        x = c.as_input(x, params)
        is_batched = c.batched(m, x, [in_c, in_h, in_w])
        y = _max_pool(ops.relu(ops.conv2d(x, k1, b1, s1, p1)), pk_h, pk_w, ps1)
        y = _max_pool(ops.relu(ops.conv2d(y, k2, b2, s2, p2)), pk_h, pk_w, ps2)
        y = ops.reshape(y, [x.shape[0], feat] if is_batched else [feat])
        return ops.linear(y, w, b)

    defn = c.module_def(m, _NAMES, init, [in_c, in_h, in_w], [out_dim], predict, "ce")
    return defn, predict


cnn2 = two_conv_cnn
