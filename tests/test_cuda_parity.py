"""CUDA against the CPU: every op forward and backward, a short training run per model, device
init plans and dropout, and run-to-run repeatability.

Marked `cuda`: scripts/gpu-check.sh runs them on a real GPU; scripts/test runs them on the CUDA
emulator (`TLRS_CUDA_EMULATOR=1`: the same kernels and cuBLAS call mapping on the host). Without
either they are skipped.
"""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import layer_ops as L
from tlrs import models, ops
from tlrs.config import Options

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)"),
]

DEV = "cuda"
TOL = {"float32": 2e-5, "float64": 1e-11}


@pytest.fixture(autouse=True)
def _dgemm_for_f64():
    """f64 products at fp64 (DGEMM) so they agree with the CPU to rounding; fp32 is the default
    and is restored afterwards."""
    yield
    tlrs.cuda.set_matmul_precision("fp32")


def _inputs(shapes, seed, positive=False):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        v = rng.uniform(0.2, 2.0, size=s) if positive else rng.uniform(-2.0, 2.0, size=s)
        out.append(v)
    return out


def _run(fn, arrays, dtype, device):
    xs = [tlrs.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in arrays]
    y = fn(*xs)
    w = tlrs.tensor(np.random.default_rng(7).uniform(-1, 1, size=y.shape), dtype=dtype, device=device)
    grads = tlrs.grad(ops.sum(y * w), xs)
    assert y.device == ("cpu" if device == "cpu" else "cuda:0")
    return [y.numpy()] + [g.numpy() for g in grads]


def _close(cpu, dev, dtype, name):
    for k, (a, b) in enumerate(zip(cpu, dev, strict=True)):
        assert a.shape == b.shape, f"{name} #{k}"
        np.testing.assert_allclose(b, a, rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"{name} #{k}")


# (name, function, input shapes, positive inputs only)
CASES = [
    ("neg", ops.neg, [[3, 5]], False),
    ("exp", ops.exp, [[3, 5]], False),
    ("log", ops.log, [[3, 5]], True),
    ("sqrt", ops.sqrt, [[3, 5]], True),
    ("abs", ops.abs, [[3, 5]], False),
    ("relu", ops.relu, [[3, 5]], False),
    ("tanh", ops.tanh, [[3, 5]], False),
    ("sigmoid", ops.sigmoid, [[3, 5]], False),
    ("gelu", ops.gelu, [[3, 5]], False),
    ("softplus", ops.softplus, [[3, 5]], False),
    ("softplus beta threshold", lambda x: ops.softplus(x, 2.0, 1.5), [[3, 5]], False),
    ("gelu tanh", lambda x: ops.gelu(x, approximate="tanh"), [[3, 5]], False),
    ("trunc", lambda x: ops.trunc(x * 3.0), [[3, 5]], False),
    ("floor", lambda x: ops.floor(x * 3.0), [[3, 5]], False),
    ("silu", ops.silu, [[3, 5]], False),
    ("leaky_relu", lambda x: ops.leaky_relu(x, 0.2), [[3, 5]], False),
    ("elu", lambda x: ops.elu(x, 1.5), [[3, 5]], False),
    ("hardtanh", lambda x: ops.hardtanh(x, -0.5, 0.75), [[3, 5]], False),
    ("log1p", ops.log1p, [[3, 5]], True),
    ("expm1", ops.expm1, [[3, 5]], False),
    ("rsqrt", ops.rsqrt, [[3, 5]], True),
    ("erf", ops.erf, [[3, 5]], False),
    ("pow", lambda x: ops.pow(x, 3.0), [[3, 5]], True),
    ("clamp", lambda x: ops.clamp(x, -0.5, 0.7), [[3, 5]], False),
    ("add bcast", ops.add, [[2, 3, 4], [3, 1]], False),
    ("sub", ops.sub, [[3, 4], [4]], False),
    ("mul", ops.mul, [[3, 4], [3, 4]], False),
    ("div", ops.div, [[3, 4], [1, 4]], True),
    ("maximum", ops.maximum, [[3, 4], [3, 4]], False),
    ("minimum", ops.minimum, [[4], [3, 4]], False),
    ("floor_divide", lambda a, b: ops.floor_divide(a * 5.0, b), [[3, 4], [4]], False),
    ("sum", lambda x: ops.sum(x, 1), [[3, 4, 5]], False),
    ("sum all", ops.sum, [[3, 4, 5]], False),
    ("mean", lambda x: ops.mean(x, 0, keepdim=True), [[3, 4, 5]], False),
    ("max", lambda x: ops.max(x, -1), [[3, 4, 5]], False),
    ("reshape", lambda x: ops.reshape(x, [5, -1]), [[3, 4, 5]], False),
    ("permute", lambda x: ops.permute(x, [2, 0, 1]), [[3, 4, 5]], False),
    ("transpose", lambda x: ops.transpose(x, 0, 1), [[3, 4]], False),
    ("concat", lambda a, b: ops.concat([a, b], 1), [[2, 3, 4], [2, 1, 4]], False),
    ("slice", lambda x: ops.slice(x, 1, 1, 3), [[2, 4, 3]], False),
    ("index_select", lambda x: ops.index_select(x, 0, [2, 0, 2]), [[3, 4]], False),
    ("matmul", ops.matmul, [[5, 6], [6, 3]], False),
    ("bmm", ops.matmul, [[2, 4, 6], [2, 6, 3]], False),
    ("linear", ops.linear, [[4, 6], [3, 6], [3]], False),
    ("softmax", lambda x: ops.softmax(x, 0), [[4, 5]], False),
    ("log_softmax", ops.log_softmax, [[4, 5]], False),
    ("cross_entropy", lambda x: ops.cross_entropy(x, np.array([1, 0, 4, 2])), [[4, 5]], False),
    ("cross_entropy ignored", lambda x: ops.cross_entropy(x, np.array([1, -100, 4, 2])), [[4, 5]], False),
    ("mse", ops.mse_loss, [[4, 5], [4, 5]], False),
    ("conv2d", lambda x, w, b: L.conv2d(x, w, b, stride=2, padding=1), [[2, 3, 7, 6], [4, 3, 3, 2], [4]], False),
    ("max_pool2d", lambda x: L.max_pool2d(x, 2), [[2, 3, 6, 6]], False),
    ("avg_pool2d", lambda x: L.avg_pool2d(x, 3, stride=2, padding=1), [[2, 3, 7, 7]], False),
    ("global_avg_pool2d", L.global_avg_pool2d, [[2, 3, 4, 4]], False),
    ("batch_norm", lambda x, w, b: L.batch_norm(x, weight=w, bias=b, training=True), [[3, 2, 4, 4], [2], [2]], False),
    ("batch_norm eval", lambda x, m, v: L.batch_norm(x, m, ops.add(ops.mul(v, v), 0.5)),
     [[3, 2, 4, 4], [2], [2]], False),
    ("layer_norm", lambda x, w, b: L.layer_norm(x, 6, w, b), [[4, 6], [6], [6]], False),
    ("attention", lambda x, q, k, v, o: L.multi_head_attention(x, q, k, v, o, 2), [[2, 5, 8]] + [[8, 8]] * 4, False),
    ("embedding", lambda w: L.embedding(np.array([[3, 0], [3, 1]]), w), [[4, 3]], False),
    ("gather", lambda x: L.gather(x, 1, np.array([[0, 2, 2], [1, 1, 0]])), [[2, 3]], False),
    ("scatter_add", lambda x, s: L.scatter_add(x, 1, np.array([[0, 2], [1, 1]]), s), [[2, 3], [2, 2]], False),
    ("masked_fill", lambda x: L.masked_fill(x, np.array([True, False, True]), -1.0), [[2, 3]], False),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_forward_and_backward_match_the_cpu(case, dtype):
    name, fn, shapes, positive = case
    if dtype == "float64":
        tlrs.cuda.set_matmul_precision("fp64")
    arrays = _inputs(shapes, seed=len(name), positive=positive)
    _close(_run(fn, arrays, dtype, "cpu"), _run(fn, arrays, dtype, DEV), dtype, name)


SMALL_MODELS = {
    "mlp": lambda dt: models.mlp(6, 8, 2, dtype=dt),
    "mlp_classifier": lambda dt: models.mlp_classifier(6, 8, 3, dtype=dt),
    "autoencoder": lambda dt: models.autoencoder(6, 3, dtype=dt),
    "two_conv_cnn": lambda dt: models.two_conv_cnn(1, 2, 3, 4, 8, 8, 3, 3, padding1=1, padding2=1, dtype=dt),
    "transformer_block": lambda dt: models.transformer_block(2, 3, 4, 2, 2, dtype=dt),
    "resnet18": lambda dt: models.resnet18_model(1, 8, 8, 3, width=2, dtype=dt),
}


def _samples(defn, dtype, batch=2, count=3):
    rng = np.random.default_rng(0)
    x_shape, y_shape = defn.input_shapes
    return [[tlrs.tensor(rng.normal(size=[batch] + list(x_shape)), dtype=dtype),
             tlrs.tensor(rng.normal(size=[batch] + list(y_shape)), dtype=dtype)] for _ in range(count)]


def _losses(model, dtype, device, steps=12):
    defn, _ = SMALL_MODELS[model](dtype)
    m = tlrs.instantiate_with_options(defn, dtype, Options().to_device(device))
    opt = tlrs.optim.adam_default(1e-2)
    state = m.init_optim(opt)
    data = _samples(defn, dtype)
    losses = []
    for step in range(steps):
        xs = data[step % len(data)]
        losses.append(m.forward(xs).item())
        state = m.step_with(opt, state, xs)
    assert all(p.device == ("cpu" if device == "cpu" else "cuda:0") for p in m.params())
    return np.array(losses), [p.numpy() for p in m.params()]


@pytest.mark.parametrize("model", list(SMALL_MODELS))
def test_training_on_cuda_tracks_the_cpu_loss_curve(model):
    cpu, _ = _losses(model, "float32", "cpu")
    dev, _ = _losses(model, "float32", DEV)
    assert np.all(np.isfinite(dev))
    np.testing.assert_allclose(dev, cpu, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("model", ["mlp_classifier", "two_conv_cnn"])
def test_repeated_cuda_runs_are_bit_identical(model):
    a_loss, a_params = _losses(model, "float32", DEV)
    b_loss, b_params = _losses(model, "float32", DEV)
    assert a_loss.tobytes() == b_loss.tobytes()
    for a, b in zip(a_params, b_params, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_init_plan_fills_on_the_device_with_the_cpu_values(dtype):
    plan = tlrs.init.Plan([[5, 7], [5]], [tlrs.init.FloatInit.kaiming_uniform(7, 3),
                                          tlrs.init.FloatInit.uniform(-0.5, 0.25, 11)])
    cpu = plan.materialise(dtype)
    dev = plan.materialise(dtype, DEV)
    for a, b in zip(cpu, dev, strict=True):
        assert b.device == "cuda:0"
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_dropout_on_the_device_equals_the_cpu_mask():
    x = np.random.default_rng(3).normal(size=[8, 16])
    for dtype in ("float32", "float64"):
        a = L.dropout(tlrs.tensor(x, dtype=dtype), 0.25, key=42)
        b = L.dropout(tlrs.tensor(x, dtype=dtype, device=DEV), 0.25, key=42)
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_fp32_precision_really_runs_sgemm_on_f64_tensors_with_fast_kernels():
    a, b = _inputs([[16, 32], [32, 8]], seed=5)
    cpu = (tlrs.tensor(a) @ tlrs.tensor(b)).numpy()
    with tlrs.fast_kernels():
        tlrs.cuda.set_matmul_precision("fp32")
        sgemm = (tlrs.tensor(a, device=DEV) @ tlrs.tensor(b, device=DEV)).numpy()
        tlrs.cuda.set_matmul_precision("fp64")
        dgemm = (tlrs.tensor(a, device=DEV) @ tlrs.tensor(b, device=DEV)).numpy()
    # With reference kernels the flag does not apply: f64 tensors fold in f64.
    tlrs.cuda.set_matmul_precision("fp32")
    reference = (tlrs.tensor(a, device=DEV) @ tlrs.tensor(b, device=DEV)).numpy()
    np.testing.assert_allclose(reference, cpu, rtol=1e-12, atol=1e-12)
    assert sgemm.dtype == np.float64
    assert not np.array_equal(sgemm, cpu)
    np.testing.assert_allclose(sgemm, cpu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dgemm, cpu, rtol=1e-12, atol=1e-12)


def test_mixing_devices_is_a_clear_error_and_cpu_scalars_are_fine():
    x = tlrs.tensor([1.0, 2.0], device=DEV)
    assert (x * 3.0).numpy().tolist() == [3.0, 6.0]
    with pytest.raises(tlrs.DeviceError, match="cuda:0"):
        ops.add(x, tlrs.tensor([1.0, 2.0]))


def test_cli_run_with_cuda_matches_the_cpu_run():
    """`tlrs run mlp_classifier --cuda` prints the CPU run's losses and accuracy (the child
    inherits TLRS_CUDA_EMULATOR when the emulator is on)."""
    import subprocess
    import sys

    def run(flag):
        p = subprocess.run([sys.executable, "-m", "tlrs", "run", "mlp_classifier", flag,
                            "--dtype", "float32"], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        return [line for line in p.stdout.splitlines() if "loss" in line or "accuracy" in line]

    def numbers(lines):
        import re
        return [float(v) for line in lines for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)]

    cpu, dev = run("--cpu"), run("--cuda")
    assert cpu and len(cpu) == len(dev)
    # GPU exp/log may differ from the CPU's in the last bit; printed values agree to 1e-3.
    np.testing.assert_allclose(numbers(dev), numbers(cpu), rtol=1e-3, atol=1e-4)


def test_a_cuda_module_saves_and_loads_with_its_optimizer_state(tmp_path):
    defn, _ = SMALL_MODELS["mlp_classifier"]("float32")
    opts = Options().to_device(DEV)
    m = tlrs.instantiate_with_options(defn, "float32", opts)
    opt = tlrs.optim.adam_default(1e-2)
    data = _samples(defn, "float32")
    state = m.train_with(opt, m.init_optim(opt), 3, data, log_every=0)
    path = tmp_path / "m.safetensors"
    m.save(str(path), state)
    back, back_state = tlrs.Module.load_checkpoint(str(path), defn, opts)
    assert all(p.device == "cuda:0" for p in back.params())
    for a, b in zip(m.params(), back.params(), strict=True):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    # Training resumes on the device from the loaded state exactly as from the live one.
    m.train_with(opt, state, 2, data, log_every=0)
    back.train_with(tlrs.optim.adam_default(1e-2), back_state, 2, data, log_every=0)
    for a, b in zip(m.params(), back.params(), strict=True):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_synchronize_waits_and_never_fails():
    y = ops.tanh(tlrs.tensor(np.ones([64, 64]), device=DEV))
    tlrs.cuda.synchronize()
    assert float(y.numpy()[0, 0]) == pytest.approx(np.tanh(1.0))


def test_constructors_place_tensors_on_the_device():
    tlrs.manual_seed(5)
    cpu = [tlrs.rand(3, 4), tlrs.randn(3, 4)]
    tlrs.manual_seed(5)
    dev = [tlrs.rand(3, 4, device=DEV), tlrs.randn(3, 4, device=DEV, requires_grad=True)]
    for a, b in zip(cpu, dev, strict=True):
        assert b.device == "cuda:0" and a.numpy().tobytes() == b.numpy().tobytes()
    assert dev[1].requires_grad and dev[1].is_leaf
    for t in (tlrs.arange(5, device=DEV), tlrs.zeros(2, 3, device=DEV), tlrs.ones(2, device=DEV),
              tlrs.full([2], 7.0, device=DEV), tlrs.tensor([1.0, 2.0], device=DEV)):
        assert t.device == "cuda:0"
    assert tlrs.arange(4, device=DEV).numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_cpu_and_cuda_methods_move_tensors_and_carry_gradients():
    x = tlrs.tensor([1.0, -2.0], requires_grad=True)
    y = x.cuda()
    assert y.device == "cuda:0" and y.cpu().device == "cpu"
    (g,) = tlrs.grad(ops.sum(ops.mul(y, y)).cpu(), [x])
    assert g.device == "cpu" and g.numpy().tolist() == [2.0, -4.0]


def test_batch_norm_updates_running_statistics_on_the_device():
    x = np.random.default_rng(9).normal(size=[4, 3, 5, 5])
    out = []
    for device in ("cpu", DEV):
        rm, rv = tlrs.zeros(3, device=device), tlrs.ones(3, device=device)
        L.batch_norm(tlrs.tensor(x, device=device), rm, rv, training=True)
        assert rm.device == rv.device == ("cpu" if device == "cpu" else "cuda:0")
        out.append((rm.numpy(), rv.numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12, atol=1e-12)


def test_repr_names_the_device():
    x = tlrs.tensor([1.0, 2.0], dtype="float32", device=DEV, requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', dtype=float32, requires_grad=True)"


PRODUCTS = [
    ("matmul", ops.matmul, [[5, 7], [7, 3]]),
    ("broadcast batch", ops.matmul, [[2, 1, 4, 6], [3, 6, 5]]),
    ("transposed view", lambda x, w: ops.matmul(x, w.T), [[4, 9], [6, 9]]),
    ("linear", ops.linear, [[3, 8], [5, 8], [5]]),
    ("long fold", ops.matmul, [[2, 700], [700, 3]]),
    # The tiled kernel (8 x 8 outputs per thread, at least 8 rows and columns): edges inside a
    # tile, transposed operands, a broadcast batch, k of 0 and 1.
    ("tiled edges", ops.matmul, [[17, 70], [70, 9]]),
    ("tiled, transposed A", lambda x, w: ops.matmul(x.T, w), [[40, 8], [40, 13]]),
    ("tiled, transposed B", lambda x, w: ops.matmul(x, w.T), [[3, 24, 33], [31, 33]]),
    ("tiled batch broadcast", ops.matmul, [[2, 1, 12, 5], [3, 5, 16]]),
    ("tiled, k = 1", ops.matmul, [[9, 1], [1, 10]]),
    ("tiled, k = 0", ops.matmul, [[9, 0], [0, 10]]),
    # The block kernel (128 x 128 outputs per block of 256 threads, k staged 8 at a time in
    # shared memory, from 128 rows and columns): edges inside a block, a k that is no multiple
    # of 8, either operand transposed, a broadcast batch.
    ("block edges", ops.matmul, [[130, 21], [21, 259]]),
    ("block, transposed A", lambda x, w: ops.matmul(x.T, w), [[19, 140], [19, 131]]),
    ("block, transposed B", lambda x, w: ops.matmul(x, w.T), [[2, 129, 12], [150, 12]]),
    ("block batch broadcast", ops.matmul, [[2, 1, 128, 9], [3, 9, 128]]),
    ("conv2d", lambda x, w, b: L.conv2d(x, w, b, stride=1, padding=1), [[2, 3, 6, 5], [4, 3, 3, 3], [4]]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", PRODUCTS, ids=[c[0] for c in PRODUCTS])
def test_reference_products_give_the_cpu_bits(case, dtype):
    """With reference kernels a CUDA product folds each output over k in index order (cu/nn.cu
    `gemm_exact_block`, `gemm_exact_tiled` and `gemm_exact`; cuBLAS serves fast kernels only), so products and what is built on them give
    the CPU's bits, forward and backward, at the tensors' own precision."""
    name, fn, shapes = case
    arrays = _inputs(shapes, seed=len(name))
    for cpu, dev in zip(_run(fn, arrays, dtype, "cpu"), _run(fn, arrays, dtype, DEV), strict=True):
        assert cpu.tobytes() == dev.tobytes(), name


def _name_the_device(p, x):
    return ops.sum(ops.tanh(ops.matmul(x[0].to("cuda"), p[0])) + p[1])


def _a_constant_on_the_device(p, x):
    c = tlrs.tensor(np.linspace(0.5, 1.5, 4), device="cuda")
    return ops.sum(ops.tanh(ops.matmul(x[0], p[0]) + p[1]) * c)


def _a_host_mask_moved(p, x):
    # A comparison's mask lives on the host; the loss moves it to the device by name.
    y = ops.matmul(x[0], p[0]) + p[1]
    return ops.sum(y * (y > 0).to("float64").to("cuda"))


@pytest.mark.parametrize("loss", [_name_the_device, _a_constant_on_the_device, _a_host_mask_moved])
def test_a_compiled_loss_may_name_its_device(loss):
    """The compiled backend traces the loss on the module's device, so device copies and
    constants the loss names replay as they ran (the copy is a recorded op); a frozen parameter's
    gradient is zeros on the device. Eager on CUDA is the oracle, bit for bit."""
    rng = np.random.default_rng(21)
    defn = tlrs.ModuleDef(param_shapes=[[3, 4], [4]], input_shapes=[[3]], loss=loss,
                          requires_grad=[True, False], init_params=[rng.normal(size=(3, 4)), rng.normal(size=4)])
    xs = [tlrs.tensor(rng.normal(size=(5, 3)))]
    got = {}
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, "float64", Options(backend=backend).to_device(DEV))
        grads = m.backward(xs)
        assert [g.device for g in grads] == ["cuda:0", "cuda:0"], backend
        assert not grads[1].numpy().any(), "a frozen parameter's gradient is zeros"
        m.step(0.1, xs)
        got[backend] = [m.forward(xs).numpy().tobytes()] + [t.numpy().tobytes() for t in [*grads, *m.params()]]
    assert got["compiled"] == got["eager"]
