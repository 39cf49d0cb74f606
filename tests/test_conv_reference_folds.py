"""conv2d with reference kernels against its fold contract, bit for bit, whichever kernel runs
(the GEMM lowering, or in f32 on AVX-512 CPUs the direct kernels of backend/cpu/conv_direct/):

- output: a left fold from 0 over (c, ky, kx) of w * x (padding cells as zeros), then + bias;
- input gradient: per input cell, starting from 0, the taps (ky, kx) that reach it added in
  order, each tap's value a left fold from 0 over the output channels of w * gY;
- bias gradient: per output channel, a left fold from 0 over (image, position) of gY (with fast
  kernels too);
- weight gradient: on maps of 64 positions or more, per image a left fold from 0 over the
  positions of gY * x, the images' results added in image order to 0; on smaller maps one fold
  over (image, position).

The oracle runs the same folds with NumPy elementwise operations in the tensor's dtype (each
product and each sum rounded on its own), so equal bits mean the kernels keep the contract."""

import numpy as np
import pytest

import tlrs
from tlrs import ops


def bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def fold_forward(x, w, b, s, p):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh, ow = (h + 2 * p - kh) // s + 1, (wd + 2 * p - kw) // s + 1
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    y = np.zeros((n, oc, oh, ow), x.dtype)
    for ci in range(c):
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, None, ci, ky:ky + s * (oh - 1) + 1:s, kx:kx + s * (ow - 1) + 1:s]
                y = y + w[None, :, ci, ky, kx, None, None] * patch
    return y + b[None, :, None, None]


def fold_input_grad(g, w, xshape, s, p):
    n, c, h, wd = xshape
    oc, _, kh, kw = w.shape
    oh, ow = g.shape[2:]
    gx = np.zeros((n, c, h + 2 * p, wd + 2 * p), g.dtype)
    # A cell of the padded plane belongs to x when it lies inside [p, p + h) x [p, p + w).
    inside = np.zeros(gx.shape[2:], bool)
    inside[p:p + h, p:p + wd] = True
    for ky in range(kh):
        for kx in range(kw):
            tap = np.zeros((n, c, oh, ow), g.dtype)
            for o in range(oc):
                tap = tap + w[o, :, ky, kx][None, :, None, None] * g[:, o][:, None]
            rows, cols = slice(ky, ky + s * (oh - 1) + 1, s), slice(kx, kx + s * (ow - 1) + 1, s)
            keep = inside[rows, cols]
            region = gx[:, :, rows, cols]
            gx[:, :, rows, cols] = np.where(keep, region + tap, region)
    return gx[:, :, p:p + h, p:p + wd]


def fold_weight_grad(g, x, wshape, s, p):
    oc, c, kh, kw = wshape
    n, _, oh, ow = g.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    # cols[n, c, ky, kx, oy, ox]: the patch value each output position multiplies.
    cols = np.empty((n, c, kh, kw, oh, ow), x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, :, ky, kx] = xp[:, :, ky:ky + s * (oh - 1) + 1:s, kx:kx + s * (ow - 1) + 1:s]
    gf, cf = g.reshape(n, oc, oh * ow), cols.reshape(n, c * kh * kw, oh * ow)
    per_image = oh * ow >= 64
    total = np.zeros((oc, c * kh * kw), x.dtype)
    for i in range(n):
        # Per image a fold from 0 then added to the total; else one fold through every image.
        acc = np.zeros_like(total) if per_image else total
        for q in range(oh * ow):
            acc = acc + gf[i, :, q, None] * cf[i, None, :, q]
        total = total + acc if per_image else acc
    return total.reshape(wshape)


def fold_bias_grad(g):
    n, oc, oh, ow = g.shape
    flat = g.reshape(n, oc, oh * ow)
    acc = np.zeros(oc, g.dtype)
    for i in range(n):
        for q in range(oh * ow):
            acc = acc + flat[i, :, q]
    return acc


# (x shape, w shape, stride, padding): 32-channel blocks on both sides with 4 or more (image,
# block) items (the direct kernels' geometry) and off them, same-size 3x3 at maps above and below
# 64 positions, 5x5, 1x1 and 7x7 kernels, narrowing and widening paddings, stride 2 on maps
# below and above 64 output positions.
GEOMETRIES = [
    ((4, 32, 9, 9), (32, 32, 3, 3), 1, 1),
    ((2, 64, 8, 8), (64, 64, 3, 3), 1, 1),
    ((4, 32, 10, 8), (32, 32, 5, 5), 1, 2),
    ((4, 32, 12, 12), (32, 32, 3, 3), 1, 0),
    ((4, 32, 8, 8), (32, 32, 3, 3), 1, 2),
    ((4, 32, 9, 8), (64, 32, 1, 1), 1, 0),
    ((4, 16, 16, 16), (32, 16, 3, 3), 1, 1),
    ((2, 32, 4, 4), (32, 32, 3, 3), 1, 1),
    ((2, 32, 9, 9), (32, 32, 3, 3), 1, 1),
    ((2, 5, 9, 9), (7, 5, 3, 3), 1, 1),
    ((4, 32, 11, 11), (32, 32, 3, 3), 2, 1),
    ((2, 8, 17, 17), (32, 8, 3, 3), 2, 1),
    ((2, 3, 20, 20), (32, 3, 7, 7), 2, 3),
    # Stride 2 through the direct forward (4+ items, rows of 8+, folds of 64+ terms).
    ((4, 8, 17, 17), (32, 8, 3, 3), 2, 1),
    ((4, 3, 20, 20), (32, 3, 7, 7), 2, 3),
    ((4, 16, 18, 18), (32, 16, 3, 3), 2, 0),
    # Direct forward over several groups of rows (40 x 40 outputs: groups of 12 rows, then 4).
    ((4, 8, 40, 40), (32, 8, 3, 3), 1, 1),
    # The direct input gradient with rows longer than its group of cells (one row per group).
    ((4, 32, 2, 130), (16, 32, 3, 3), 1, 1),
    # The direct forward on rows narrower than 8, several rows a run (4 x 3 + 4, 5 x 2,
    # 3 x 4 + 3, 2 x 6 + 2), and at stride 2.
    ((4, 32, 4, 4), (32, 32, 3, 3), 1, 1),
    ((4, 16, 6, 5), (32, 16, 3, 3), 1, 1),
    ((4, 8, 5, 3), (32, 8, 3, 3), 1, 1),
    ((4, 16, 7, 2), (32, 16, 3, 3), 1, 1),
    ((4, 32, 8, 8), (32, 32, 3, 3), 2, 1),
    # Several images per item on narrow rows (2 threads: 4 images of 16, 4 of 8 with 2 blocks).
    ((16, 32, 4, 4), (32, 32, 3, 3), 1, 1),
    ((8, 16, 5, 3), (64, 16, 3, 3), 1, 1),
    # 40 output channels: the bias gradient's two groups of 16 side by side, then 8 alone.
    ((2, 8, 9, 9), (40, 8, 3, 3), 1, 1),
    # Maps of at most 4 positions from inputs of at most 16 cells (im2col gathers them through
    # one table of offsets): 2x2 and 1x1 maps, and 4x4 inputs at stride 2.
    ((4, 16, 2, 2), (16, 16, 3, 3), 1, 1),
    ((3, 8, 4, 4), (16, 8, 3, 3), 2, 1),
    ((2, 8, 1, 1), (8, 8, 3, 3), 1, 1),
    ((2, 8, 2, 1), (8, 8, 3, 3), 1, 1),
    ((2, 8, 3, 3), (8, 8, 2, 2), 1, 0),
    ((2, 8, 4, 4), (8, 8, 3, 3), 1, 0),
    ((2, 8, 2, 3), (8, 8, 1, 2), 1, 0),
]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_reference_forward_on_narrow_rows_keeps_its_fold_on_any_thread_count(threads):
    # Narrow rows group images per item by the thread count: who computes changes, not how.
    rng = np.random.default_rng(5)
    x = rng.normal(size=(12, 16, 4, 4)).astype(np.float32)
    w = rng.normal(size=(64, 16, 3, 3)).astype(np.float32)
    b = rng.normal(size=64).astype(np.float32)
    before = tlrs.get_num_threads()
    tlrs.set_num_threads(threads)
    try:
        with tlrs.fast_kernels(False):
            y = ops.conv2d(tlrs.tensor(x), tlrs.tensor(w), tlrs.tensor(b), stride=1, padding=1)
    finally:
        tlrs.set_num_threads(before)
    assert np.array_equal(bits(y.numpy()), bits(fold_forward(x, w, b, 1, 1)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ws, stride, pad", GEOMETRIES)
def test_reference_conv_keeps_its_folds_bit_for_bit(dtype, xs, ws, stride, pad):
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x, w = rng.normal(size=xs).astype(dtype), rng.normal(size=ws).astype(dtype)
    b = rng.normal(size=ws[0]).astype(dtype)
    want_y = fold_forward(x, w, b, stride, pad)
    r = rng.normal(size=want_y.shape).astype(dtype)
    ts = [tlrs.tensor(a, requires_grad=True) for a in (x, w, b)]
    with tlrs.fast_kernels(False):
        y = ops.conv2d(*ts, stride=stride, padding=pad)
        gx, gw, gb = tlrs.grad(ops.sum(ops.mul(y, tlrs.tensor(r))), ts)
    # d(sum(y * r))/dy = r, rounded exactly (a product with 1).
    for got, want in [(y, want_y), (gx, fold_input_grad(r, w, xs, stride, pad)),
                      (gw, fold_weight_grad(r, x, ws, stride, pad)), (gb, fold_bias_grad(r))]:
        got = got.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(bits(got), bits(want)), float(np.max(np.abs(got - want)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ws", [((8, 64, 16, 16), (64, 64, 3, 3)), ((3, 8, 6, 7), (37, 8, 3, 3))])
def test_fast_kernels_keep_the_bias_gradient_fold(dtype, xs, ws):
    rng = np.random.default_rng(11)
    ts = [tlrs.tensor(rng.normal(size=s).astype(dtype), requires_grad=True) for s in (xs, ws, ws[:1])]
    with tlrs.fast_kernels(True):
        y = ops.conv2d(*ts, stride=1, padding=1)
        r = rng.normal(size=tuple(y.shape)).astype(dtype)
        (gb,) = tlrs.grad(ops.sum(ops.mul(y, tlrs.tensor(r))), ts[2:])
    assert np.array_equal(bits(gb.numpy()), bits(fold_bias_grad(r)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reference_input_gradient_never_adds_a_tap_that_misses_the_cell(dtype):
    # An infinite weight makes every tap value it enters inf or NaN (inf * 0 on the border), so a
    # tap added where it does not reach would turn an edge cell's finite sum into NaN.
    rng = np.random.default_rng(7)
    xs, ws = (4, 32, 9, 9), (32, 32, 3, 3)
    x, w = rng.normal(size=xs).astype(dtype), rng.normal(size=ws).astype(dtype)
    w[3, 5, 0, 0] = np.inf
    r = rng.normal(size=(4, 32, 9, 9)).astype(dtype)
    xt = tlrs.tensor(x, requires_grad=True)
    with tlrs.fast_kernels(False):
        (gx,) = tlrs.grad(ops.sum(ops.mul(ops.conv2d(xt, tlrs.tensor(w), None, 1, 1), tlrs.tensor(r))), [xt])
    with np.errstate(invalid="ignore"):
        want = fold_input_grad(r, w, xs, 1, 1)
    got = gx.numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isfinite(got[:, :, -1, :]).any()
    finite = ~np.isnan(want)
    assert np.array_equal(bits(got[finite]), bits(want[finite]))
