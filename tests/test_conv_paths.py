"""conv2d's lowering forms (backend/cpu/conv.rs, conv_grad.rs): feature maps of 64 positions or
more run a product per image, smaller ones fold groups of images into one product (several
groups for large batches with fast kernels), and the input gradient is skipped when the input
needs none. Each form against NumPy (central differences for gradients) or, for the grouped
fast form, against the reference kernels."""

import numpy as np
import pytest

import tlrs
from test_layer_ops import T, check, data, np_conv2d, numeric_grads
from tlrs import ops


def readout(shape_out, seed):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape_out)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("n", [1, 3])
def test_per_image_form_gradients_vs_central_differences(fast, n):
    # 10x10 output positions (>= 64): one product per image; one image alone threads inside it.
    x, w, b = data((n, 2, 10, 10), seed=70)[0], data((3, 2, 3, 3), seed=71)[0], data((3,), seed=72)[0]
    r = readout(np_conv2d(x, w, b, 1, 1).shape, 73)
    ts = [T(a, requires_grad=True) for a in (x, w, b)]
    with tlrs.fast_kernels(fast):
        y = ops.conv2d(*ts, stride=1, padding=1)
        got = tlrs.grad(ops.sum(ops.mul(y, T(r))), ts)
    check(y, np_conv2d(x, w, b, 1, 1), "float64")
    want = numeric_grads(lambda *a: float((np_conv2d(*a, 1, 1) * r).sum()), [x.copy(), w.copy(), b.copy()])
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("shape, pad", [((2, 3, 10, 10), 1), ((4, 3, 5, 5), 1)])
def test_weight_gradient_alone_when_the_input_needs_none(fast, shape, pad):
    x, w = data(shape, seed=80)[0], data((4, shape[1], 3, 3), seed=81)[0]
    r = readout(np_conv2d(x, w, None, 1, pad).shape, 82)
    wt = T(w, requires_grad=True)
    with tlrs.fast_kernels(fast):
        (gw,) = tlrs.grad(ops.sum(ops.mul(ops.conv2d(T(x), wt, None, 1, pad), T(r))), [wt])
    (want,) = numeric_grads(lambda a: float((np_conv2d(x, a, None, 1, pad) * r).sum()), [w.copy()])
    np.testing.assert_allclose(gw.numpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize(
    "shape, oc, dtype",
    [
        ((2, 3, 10, 10), 4, "float64"),
        ((4, 3, 5, 5), 4, "float64"),
        ((2, 32, 9, 9), 32, "float32"),
        ((8, 128, 2, 2), 128, "float32"),
    ],
)
def test_input_gradient_alone_when_the_weights_are_frozen(fast, shape, oc, dtype):
    # Frozen weights: the backward computes only gX (per-image and grouped forms; in f32 with
    # fast kernels the flipped-kernel direct convolution and, at 2x2, the small-map kernel).
    (x, x64), (w, w64) = data(shape, dtype, seed=83), data((oc, shape[1], 3, 3), dtype, seed=84)
    r = readout(np_conv2d(x64, w64, None, 1, 1).shape, 85).astype(dtype)
    xt, wt = T(x, requires_grad=True), T(w)
    with tlrs.fast_kernels(fast):
        ops.sum(ops.mul(ops.conv2d(xt, wt, None, 1, 1), T(r))).backward()
    gx, _ = np_conv2d_vjp(x64, w64, r.astype(np.float64), 1, 1)
    tol = 1e-9 if dtype == "float64" else 2e-5 * max(1.0, np.abs(gx).max())
    np.testing.assert_allclose(xt.grad.numpy().astype(np.float64), gx, rtol=0, atol=tol)
    assert wt.grad is None


def test_fast_kernels_over_several_image_groups_match_the_reference():
    # 7x7 outputs (< 64 positions) with 576 column rows: 148 images fill one group's columns,
    # so 160 images make two groups (the weight gradient adds the groups' products).
    n = 160
    x, w, b = (
        data((n, 64, 7, 7), "float32", seed=90)[0],
        data((8, 64, 3, 3), "float32", seed=91)[0],
        data((8,), "float32", seed=92)[0],
    )
    r = T(readout((n, 8, 7, 7), 93).astype(np.float32))

    def run(fast):
        ts = [T(a, requires_grad=True) for a in (x, w, b)]
        with tlrs.fast_kernels(fast):
            y = ops.conv2d(*ts, stride=1, padding=1)
            return [y.numpy().astype(np.float64)] + [
                g.numpy().astype(np.float64) for g in tlrs.grad(ops.sum(ops.mul(y, r)), ts)
            ]

    ref, fast = run(False), run(True)
    for a, e in zip(fast, ref, strict=True):
        scale = max(1.0, float(np.abs(e).max()))
        assert float(np.abs(a - e).max()) <= 1e-5 * scale


def np_conv2d_vjp(x, w, r, stride, padding):
    """(d/dx, d/dw) of sum(conv2d(x, w) * r), by the adjoint of NumPy's patch sum."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    _, _, kh, kw = w.shape
    oh, ow = r.shape[2:]
    for ky in range(kh):
        for kx in range(kw):
            rows = slice(ky, ky + stride * (oh - 1) + 1, stride)
            cols = slice(kx, kx + stride * (ow - 1) + 1, stride)
            gxp[:, :, rows, cols] += np.einsum("nohw,oc->nchw", r, w[:, :, ky, kx])
            gw[:, :, ky, kx] = np.einsum("nohw,nchw->oc", r, xp[:, :, rows, cols])
    h, wd = x.shape[2:]
    return gxp[:, :, padding : padding + h, padding : padding + wd], gw


# Every im2col/col2im form: stride 1 keeping the width (one shifted copy per row) with padding
# below, at and above the kernel's reach, stride 1 narrowing, strides 2 and 3, kernels larger
# than the padded input's rows in one axis, planes above and below the per-image threshold; the
# last two have 32 input channels, where fast kernels take the input gradient as the
# flipped-kernel convolution (same size, and narrowing).
GEOMETRIES = [
    ((2, 3, 9, 9), (4, 3, 3, 3), 1, 1),
    ((2, 2, 8, 8), (3, 2, 5, 5), 1, 2),
    ((2, 2, 6, 6), (3, 2, 3, 3), 1, 3),
    ((2, 2, 7, 7), (3, 2, 1, 1), 1, 0),
    ((2, 2, 9, 7), (3, 2, 3, 3), 1, 0),
    ((2, 2, 10, 10), (3, 2, 3, 3), 2, 1),
    ((2, 2, 11, 9), (3, 2, 4, 2), 3, 2),
    ((2, 2, 3, 12), (3, 2, 5, 3), 1, 1),
    ((1, 3, 12, 12), (2, 3, 7, 7), 2, 3),
    ((3, 2, 4, 4), (2, 2, 3, 3), 1, 4),
    ((2, 32, 8, 8), (4, 32, 3, 3), 1, 1),
    ((2, 32, 10, 10), (3, 32, 3, 3), 1, 0),
]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("xs, ws, stride, pad", GEOMETRIES)
def test_every_lowering_geometry_against_numpy(fast, xs, ws, stride, pad):
    x, w = data(xs, seed=90)[0], data(ws, seed=91)[0]
    r = readout(np_conv2d(x, w, None, stride, pad).shape, 92)
    ts = [T(x, requires_grad=True), T(w, requires_grad=True)]
    with tlrs.fast_kernels(fast):
        y = ops.conv2d(*ts, stride=stride, padding=pad)
        got = tlrs.grad(ops.sum(ops.mul(y, T(r))), ts)
    check(y, np_conv2d(x, w, None, stride, pad), "float64")
    for g, e in zip(got, np_conv2d_vjp(x, w, r, stride, pad), strict=True):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-12, atol=1e-12)


# With fast kernels in f32 on AVX-512 CPUs: "same" 3x3 convolutions (stride 1, padding 1) with
# output channels in blocks of 32 on maps of 64 positions or more take the weight gradient from
# the direct kernel (conv_direct/) and the input gradient from the flipped-kernel convolution;
# rows narrower than, equal to and wider than a vector, a single row and a single column, odd
# sizes, one and several images and input channels; one case below the direct kernel's 64
# positions; then the direct weight gradient at stride 2 for a 3x3 and (a ResNet stem) a 7x7
# kernel; last, 32 input channels, where the input gradient is the flipped-kernel convolution
# (3x3 and 5x5); then maps whose images x positions fill a few whole vectors (4x4 and 2x2 at 4 to
# 8 images), which the small-map kernel takes forward and backward (conv_direct/small_maps.rs);
# last, 2x2 maps of 4 images (not whole vectors), whose input gradient's columns come from the thin
# product that reads W unpacked (conv_direct/input_cols.rs), and a stride-2 convolution onto 2x2
# whose forward does too (conv_direct/thin_rows.rs).
# Entries: (x shape, output channels, kernel, stride, padding).
DIRECT = [
    ((1, 1, 8, 8), 32, 3, 1, 1),
    ((2, 3, 16, 16), 32, 3, 1, 1),
    ((3, 5, 9, 9), 64, 3, 1, 1),
    ((2, 2, 1, 64), 32, 3, 1, 1),
    ((1, 4, 33, 8), 32, 3, 1, 1),
    ((2, 1, 65, 1), 64, 3, 1, 1),
    ((2, 3, 4, 4), 32, 3, 1, 1),
    ((2, 8, 17, 17), 32, 3, 2, 1),
    ((2, 3, 20, 20), 64, 7, 2, 3),
    ((2, 32, 9, 9), 32, 3, 1, 1),
    ((4, 32, 8, 8), 32, 5, 1, 2),
    ((4, 8, 17, 17), 32, 3, 2, 1),
    ((4, 3, 22, 22), 64, 7, 2, 3),
    ((4, 8, 40, 40), 32, 3, 1, 1),
    ((4, 8, 3, 600), 32, 3, 1, 1),
    ((4, 32, 4, 4), 32, 3, 1, 1),
    ((4, 16, 7, 2), 32, 3, 1, 1),
    ((16, 32, 4, 4), 32, 3, 1, 1),
    ((8, 256, 4, 4), 64, 3, 1, 1),
    ((8, 128, 2, 2), 128, 3, 1, 1),
    ((8, 512, 2, 2), 512, 3, 1, 1),
    ((4, 128, 2, 2), 128, 3, 1, 1),
    ((8, 256, 4, 4), 512, 3, 2, 1),
]


@pytest.mark.parametrize("xs, oc, k, stride, pad", DIRECT)
def test_float32_outputs_and_gradients_with_fast_kernels_against_numpy(xs, oc, k, stride, pad):
    x, x64 = data(xs, "float32", seed=100)
    w, w64 = data((oc, xs[1], k, k), "float32", seed=101)
    want = np_conv2d(x64, w64, None, stride, pad)
    r = readout(want.shape, 102).astype(np.float32)
    ts = [T(x, requires_grad=True), T(w, requires_grad=True)]
    with tlrs.fast_kernels(True):
        y = ops.conv2d(*ts, stride=stride, padding=pad)
        got = tlrs.grad(ops.sum(ops.mul(y, T(r))), ts)
    # Each output sums C * K^2 products of magnitude <= 1 (the direct forward where it applies),
    # then its channel's bias when there is one.
    b, b64 = data((oc,), "float32", seed=103)
    with tlrs.fast_kernels(True):
        yb = ops.conv2d(T(x), T(w), T(b), stride=stride, padding=pad)
    for out, exp in ((y, want), (yb, want + b64[:, None, None])):
        np.testing.assert_allclose(out.numpy().astype(np.float64), exp, rtol=0, atol=2e-6 * max(1.0, np.abs(exp).max()))
    for g, e in zip(got, np_conv2d_vjp(x64, w64, r.astype(np.float64), stride, pad), strict=True):
        assert g.dtype == "float32"
        # Each element sums at most K^2 * max(C, OC) * N * H * W products of magnitude <= 1.
        np.testing.assert_allclose(g.numpy().astype(np.float64), e, rtol=0, atol=2e-5 * max(1.0, np.abs(e).max()))


def test_fast_small_map_kernel_skips_border_rows():
    # 3x3 convolutions on 2x2 maps (8 images) run the small-map kernel, which skips the taps
    # whose input row is border and multiplies the rest (border columns included). An infinite
    # corner weight W[3, 5, 0, 0] meets real input only at output (1, 1); at (1, 0) it meets a
    # border column (inf * 0 = NaN, as in the reference kernels); on row 0 it falls on the border
    # row and is skipped. The input gradient mirrors this at cell (0, 0). Everything else is the
    # sum of the finite taps.
    rng = np.random.default_rng(12)
    x = rng.uniform(0.5, 1.0, size=(8, 32, 2, 2)).astype(np.float32)
    w = rng.uniform(-1, 1, size=(32, 32, 3, 3)).astype(np.float32)
    w[3, 5, 0, 0] = np.inf
    r = rng.uniform(0.5, 1.0, size=(8, 32, 2, 2)).astype(np.float32)
    xt = T(x, requires_grad=True)
    with tlrs.fast_kernels(True):
        y = ops.conv2d(xt, T(w), None, stride=1, padding=1)
        (gx,) = tlrs.grad(ops.sum(ops.mul(y, T(r))), [xt])
    w0 = w.astype(np.float64)
    w0[3, 5, 0, 0] = 0.0
    want_y = np_conv2d(x.astype(np.float64), w0, None, 1, 1)
    want_gx, _ = np_conv2d_vjp(x.astype(np.float64), w0, r.astype(np.float64), 1, 1)
    for got, want, plane in ((y.numpy(), want_y, 3), (gx.numpy(), want_gx, 5)):
        # The plane as seen from the weight's corner: real cell, border column, border row.
        real, column = (1, 1) if plane == 3 else (0, 0), (1, 0) if plane == 3 else (0, 1)
        assert np.isposinf(got[:, plane, real[0], real[1]]).all()
        assert np.isnan(got[:, plane, column[0], column[1]]).all()
        finite = np.ones(got.shape, bool)
        finite[:, plane, real[0], real[1]] = finite[:, plane, column[0], column[1]] = False
        np.testing.assert_allclose(got[finite].astype(np.float64), want[finite], rtol=0, atol=1e-4)
