"""Generic tests driven by one test record per recorded op (tests/op_records.py): every op name
the crate records has a record (or a stated reason it has none), and each record's forward

- records its op (the traced graph has a node of that name);
- has gradients equal to central differences (float64, parameters and input);
- compiles: the compiled backend gives eager's bits (loss, gradients, parameters after steps,
  float32 and float64);
- exports to ONNX and onnxruntime agrees with tlrs (float32, |diff| <= 1e-5 * max(1, max |y|)),
  or the export refuses naming the op, where the record says ONNX cannot express it;
- on CUDA (a GPU, or the emulator) gives the CPU's bits with reference kernels, eager and
  compiled (the compiled graph replayed on the device, its fused chains included).

The forwards' values come from PyTorch's own tests elsewhere (tests/test_opinfo.py); these check
that each op works on every path the crate offers, so a new op cannot skip one.
"""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from op_records import CASES, NO_FORWARD, Case
from tlrs import Options, ops

BATCH = 3


def _arrays(case: Case, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = [rng.uniform(-1.0, 1.0, size=s) for s in case.param_shapes]
    x = rng.uniform(-1.0, 1.0, size=(BATCH, case.features))
    return params, x


def _loss(case: Case):
    # Each output weighted differently, so a gradient routed to the wrong element shows.
    def loss(p, xs):
        y = case.predict(p, xs[0])
        w = np.linspace(0.5, 1.5, int(np.prod(y.shape)) or 1)[: int(np.prod(y.shape))].reshape(y.shape)
        return ops.sum(y * y * tlrs.tensor(w, dtype=y.dtype, device=y.device))

    return loss


def _module(case: Case, dtype: str, backend: str | None = None):
    params, _ = _arrays(case)
    defn = tlrs.ModuleDef([list(s) for s in case.param_shapes], [[BATCH, case.features]], _loss(case),
                          init_params=params, param_names=[f"p{i}" for i in range(len(params))],
                          predict=case.predict)
    return tlrs.instantiate_with_options(defn, dtype, Options(backend=backend) if backend else None)


def test_every_recorded_op_has_a_test_record():
    recorded = set(tlrs._core._recorded_ops())
    missing = sorted(recorded - set(CASES) - set(NO_FORWARD))
    assert not missing, f"add a record to tests/op_records.py (or a reason to NO_FORWARD): {missing}"
    stale = sorted((set(CASES) | set(NO_FORWARD)) - recorded)
    assert not stale, f"records for ops the crate no longer records: {stale}"
    assert not set(CASES) & set(NO_FORWARD)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_record_records_its_op(name):
    module = _module(CASES[name], "float64", "compiled")
    graph = module._compiled.graph_for([[BATCH, CASES[name].features]])
    names = {n["op"] for n in graph.nodes() if n["kind"] == "op"}
    assert name in names, f"{name}'s forward records {sorted(names)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_central_differences(name):
    case = CASES[name]
    params, x = _arrays(case)
    loss = _loss(case)

    def value(ps, xa):
        with tlrs.no_grad():
            return loss([tlrs.tensor(a) for a in ps], [tlrs.tensor(xa)]).item()

    pt = [tlrs.tensor(a, requires_grad=True) for a in params]
    xt = tlrs.tensor(x, requires_grad=True)
    grads = [g.numpy() for g in tlrs.grad(loss(pt, [xt]), [*pt, xt])]
    h, rtol = case.fd
    for k, arr in enumerate([*params, x]):
        numeric = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[i] += h
            lo[i] -= h
            args_hi = [hi if j == k else a for j, a in enumerate([*params, x])]
            args_lo = [lo if j == k else a for j, a in enumerate([*params, x])]
            numeric[i] = (value(args_hi[:-1], args_hi[-1]) - value(args_lo[:-1], args_lo[-1])) / (2 * h)
        np.testing.assert_allclose(grads[k], numeric, rtol=rtol, atol=1e-6, err_msg=f"{name}: input {k}")


def _bits(ts):
    return [t.numpy().tobytes() for t in ts]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_eager_bit_for_bit(name, dtype):
    case = CASES[name]
    compiled, eager = _module(case, dtype, "compiled"), _module(case, dtype)
    rng = np.random.default_rng(1)
    batches = [[tlrs.tensor(rng.uniform(-1, 1, (BATCH, case.features)), dtype=dtype)] for _ in range(3)]
    for b in batches:
        assert compiled.forward(b).numpy().tobytes() == eager.forward(b).numpy().tobytes()
        assert _bits(compiled.backward(b)) == _bits(eager.backward(b))
    for b in batches:
        compiled.step(0.05, b)
        eager.step(0.05, b)
    assert _bits(compiled.params()) == _bits(eager.params())


@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_export_runs_in_onnxruntime(name, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from tlrs.interop.onnx_export import OnnxExportError

    case = CASES[name]
    module = _module(case, "float32")
    _, x = _arrays(case, seed=2)
    x = x.astype(np.float32)
    path = tmp_path / "m.onnx"
    if not case.onnx:
        with pytest.raises(OnnxExportError, match=name):
            module.export_onnx(str(path), x)
        assert not path.exists()
        return
    module.export_onnx(str(path), x)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (1, BATCH, 5):
        xb = np.random.default_rng(batch).uniform(-1, 1, (batch, case.features)).astype(np.float32)
        want = case.predict(module.params(), tlrs.tensor(xb)).numpy()
        got = sess.run(None, {"x": xb})[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        err = float(np.abs(want.astype(np.float64) - got).max())
        assert err <= 1e-5 * max(1.0, float(np.abs(want).max())), f"{name} at batch {batch}: {err}"


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_agrees_with_the_cpu(name, dtype):
    case = CASES[name]
    params, x = _arrays(case)

    def run(device):
        ts = [tlrs.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in [*params, x]]
        loss = _loss(case)(ts[:-1], [ts[-1]])
        return [loss.numpy()] + [g.numpy() for g in tlrs.grad(loss, ts)]

    # Products in the tensors' own precision, as the CPU reference kernels fold them.
    tlrs.cuda.set_matmul_precision("fp64" if dtype == "float64" else "fp32")
    try:
        cpu, dev = run("cpu"), run("cuda")
    finally:
        tlrs.cuda.set_matmul_precision("fp32")
    # With reference kernels every device kernel folds in the CPU's order, products included
    # (cu/nn.cu gemm_exact), and its transcendentals are the CPU's algorithms
    # (backend/cuda/cu/libm_*.cu): the CPU's bits, on the emulator and on a GPU (NaNs equal to
    # NaNs: their payloads are the platform's).
    for k, (a, b) in enumerate(zip(cpu, dev, strict=True)):
        assert _nan_equal_arrays(a, b), f"{name} #{k}: CUDA differs from the CPU's bits"


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
@pytest.mark.parametrize("fast", [False, True], ids=["reference", "fast"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_on_cuda_gives_the_eager_bits(name, dtype, fast):
    """The compiled graph replayed on CUDA against eager: with reference kernels eager on the
    CPU (the CPU's bits), with fast kernels eager on CUDA under the same settings."""
    case = CASES[name]
    params, _ = _arrays(case)
    defn = tlrs.ModuleDef([list(s) for s in case.param_shapes], [[BATCH, case.features]], _loss(case),
                          init_params=params, param_names=[f"p{i}" for i in range(len(params))])
    on_cuda = tlrs.instantiate_with_options(
        defn, dtype, Options(backend="compiled", fast_kernels=fast).to_device("cuda"))
    on_cpu = tlrs.instantiate_with_options(
        defn, dtype, Options(fast_kernels=fast).to_device("cuda" if fast else "cpu"))
    assert on_cuda._compiled is not None and all(p.device == "cuda:0" for p in on_cuda.params())
    rng = np.random.default_rng(1)
    batches = [rng.uniform(-1, 1, (BATCH, case.features)) for _ in range(3)]
    # The thread's own fast GPU precision differs from the modules' (fp32, the default) for
    # float64: each module must run with its own settings, compiled as well as eager.
    tlrs.cuda.set_matmul_precision("fp64" if dtype == "float64" else "fp32")
    try:
        for b in batches:
            got, want = on_cuda.forward([tlrs.tensor(b, dtype=dtype, device="cuda")]), \
                on_cpu.forward([tlrs.tensor(b, dtype=dtype)])
            assert got.device == "cuda:0" and _nan_equal_bits([got], [want]), f"{name}: forward"
            assert _nan_equal_bits(on_cuda.backward([tlrs.tensor(b, dtype=dtype)]),
                                   on_cpu.backward([tlrs.tensor(b, dtype=dtype)])), f"{name}: gradients"
        for b in batches:
            on_cuda.step(0.05, [tlrs.tensor(b, dtype=dtype)])
            on_cpu.step(0.05, [tlrs.tensor(b, dtype=dtype)])
    finally:
        tlrs.cuda.set_matmul_precision("fp32")
    assert _nan_equal_bits(on_cuda.params(), on_cpu.params()), f"{name}: parameters after three steps"


def _nan_equal_arrays(a, b):
    """Whether two arrays hold the same bits, NaNs equal to NaNs (their payloads are the platform's)."""
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.all((np.isnan(a) & np.isnan(b)) | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))


def _nan_equal_bits(xs, ys):
    """`_nan_equal_arrays` for each pair of tensors."""
    return all(_nan_equal_arrays(x.numpy(), y.numpy()) for x, y in zip(xs, ys, strict=True))
