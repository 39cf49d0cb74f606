"""Complex tensors (tlrs.complex, `--dtype complex`): values against NumPy, the documented
formulas bit for bit against the same IEEE operations done in NumPy, principal branches,
gradients against finite differences and PyTorch's convention, NumPy and safetensors (C64)
round trips, CUDA against the CPU, and the refusals."""

import os
import sys

import numpy as np
import pytest
import torch

import tlrs
from tlrs import complex as C

sys.path.insert(0, os.path.dirname(__file__))
from cli_helpers import assert_one_error, run_cli  # noqa: E402

TOL = {"complex64": 2e-6, "complex128": 1e-14}


def rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def close(got, want, dtype):
    got = got.numpy() if hasattr(got, "numpy") else got
    assert got.dtype == np.dtype(dtype) and got.shape == np.shape(want)
    err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
    assert err <= TOL[dtype], err


UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "conj": np.conj}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_values_match_numpy(dtype):
    a, b = rand((3, 4), dtype, 0), rand((3, 4), dtype, 1)
    za, zb = tlrs.tensor(a), tlrs.tensor(b)
    assert isinstance(za, tlrs.ComplexTensor) and za.dtype == dtype
    for got, want in [(za + zb, a + b), (za - zb, a - b), (za * zb, a * b), (za / zb, a / b), (-za, -a),
                      (za @ zb.T, a @ b.T), (za.sum(), a.sum()), (za.sum(0), a.sum(0)), (za.mean(1), a.mean(1)),
                      (2.5 * za, 2.5 * a), (za - 1j, a - 1j), (1 / za, 1 / a), (za[1:, ::2], a[1:, ::2]),
                      (za.reshape(4, 3).transpose(0, 1), a.reshape(4, 3).T), (C.stack([za, zb]), np.stack([a, b]))]:
        close(got, want, dtype)
    for name, f in UNARY.items():
        close(getattr(za, name)(), f(a), dtype)
    comp = np.float32 if dtype == "complex64" else np.float64
    np.testing.assert_allclose(za.abs().numpy(), np.abs(a).astype(comp), rtol=TOL[dtype])
    np.testing.assert_allclose(za.angle().numpy(), np.angle(a).astype(comp), rtol=TOL[dtype], atol=TOL[dtype])
    real = tlrs.tensor(b.real)  # a real operand: promoted with a zero imaginary part
    close(za * real, a * b.real, dtype)
    close(real + za, b.real + a, dtype)


def test_mul_and_div_are_torchleans_formulas_each_operation_rounded_once():
    """complex64: (ac - bd) + (ad + bc)i and ((ac + bd) + (bc - ad)i) / (c² + d²), each binary32
    operation rounded once — the same operations done in NumPy float32 give the same bits."""
    a, b = rand(2000, "complex64", 2), rand(2000, "complex64", 3)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    f32 = np.float32
    mul_re, mul_im = f32(ar * br) - f32(ai * bi), f32(ar * bi) + f32(ai * br)
    den = f32(br * br) + f32(bi * bi)
    div_re, div_im = f32(f32(ar * br) + f32(ai * bi)) / den, f32(f32(ai * br) - f32(ar * bi)) / den
    zm, zd = tlrs.tensor(a) * tlrs.tensor(b), tlrs.tensor(a) / tlrs.tensor(b)
    for got, want in [(zm.real, mul_re), (zm.imag, mul_im), (zd.real, div_re), (zd.imag, div_im)]:
        assert got.numpy().view(np.uint32).tolist() == want.astype(np.float32).view(np.uint32).tolist()


def test_principal_branches_where_torchlean_approximates():
    """log keeps the argument and sqrt is the principal root for non-real z (TorchLean returns a
    real for both); signed zeros and the negative real axis as NumPy."""
    z = np.array([-4 + 0j, complex(-4, -0.0), 1j, -1j, 3 + 4j, -3 - 4j, 0j, complex(-0.0, 0.0), 1e-30 - 2j,
                  complex(0.0, -0.0), -2.5 + 1e-20j])
    t = tlrs.tensor(z)
    with np.errstate(divide="ignore"):
        want_log, want_sqrt = np.log(z), np.sqrt(z)
    got_log, got_sqrt = t.log().numpy(), t.sqrt().numpy()
    np.testing.assert_allclose(got_sqrt, want_sqrt, rtol=1e-15, atol=0)
    assert np.signbit(got_sqrt.imag).tolist() == np.signbit(want_sqrt.imag).tolist()
    assert np.array_equal(got_log.real, want_log.real)  # -inf at 0 included
    np.testing.assert_allclose(got_log.imag, want_log.imag, rtol=1e-15, atol=0)
    assert np.signbit(got_log.imag).tolist() == np.signbit(want_log.imag).tolist()


def _loss(z, w):
    y = (z * w + z.exp() / (w + 2.0)).log() + (z @ w.T).sqrt().sum(1, keepdim=True) * 0.1
    return y.abs().sum() + y.angle().mean() + (y.conj() * w).real.sum()


def test_gradients_match_finite_differences():
    z0, w0 = rand((2, 3), "complex128", 4), rand((2, 3), "complex128", 5)
    z, w = tlrs.tensor(z0, requires_grad=True), tlrs.tensor(w0, requires_grad=True)
    loss = _loss(z, w)
    loss.backward()
    h = 1e-6
    for x0, grad, which in ((z0, z.grad.numpy(), "z"), (w0, w.grad.numpy(), "w")):
        for idx in np.ndindex(x0.shape):
            for unit, part in ((1.0, grad.real), (1j, grad.imag)):
                plus, minus = x0.copy(), x0.copy()
                plus[idx] += unit * h
                minus[idx] -= unit * h
                args = {"z": (plus, w0), "w": (z0, plus)}[which]
                args_m = {"z": (minus, w0), "w": (z0, minus)}[which]
                fd = (_loss(*map(tlrs.tensor, args)).item() - _loss(*map(tlrs.tensor, args_m)).item()) / (2 * h)
                assert abs(part[idx] - fd) <= 1e-6 * max(1.0, abs(fd)), (which, idx, unit, part[idx], fd)


def test_gradients_follow_pytorchs_convention():
    """z.grad = dL/d(re z) + i dL/d(im z), as torch's complex autograd gives for a real loss."""
    z0, w0 = rand((2, 3), "complex128", 6), rand((2, 3), "complex128", 7)
    z, w = tlrs.tensor(z0, requires_grad=True), tlrs.tensor(w0, requires_grad=True)
    _loss(z, w).backward()
    tz, tw = torch.tensor(z0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    ty = (tz * tw + tz.exp() / (tw + 2.0)).log() + (tz @ tw.T).sqrt().sum(1, keepdim=True) * 0.1
    (ty.abs().sum() + ty.angle().mean() + (ty.conj() * tw).real.sum()).backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-14)
    gz, gw = C.grad(_loss(z, w), [z, w])
    assert gz.numpy().tolist() == z.grad.numpy().tolist() and gw.numpy().tolist() == w.grad.numpy().tolist()


def test_numpy_round_trips_exactly():
    a = rand(7, "complex64", 8)
    a[0] = complex(np.nan, -0.0)
    a[1] = complex(-np.inf, 1e-45)
    back = tlrs.tensor(a).numpy()
    assert back.dtype == np.complex64 and back.view(np.uint32).tolist() == a.view(np.uint32).tolist()
    b = rand(3, "complex128", 9)
    assert tlrs.tensor(b).numpy().tobytes() == b.tobytes()
    assert tlrs.tensor(b, dtype="complex64").dtype == "complex64"
    assert tlrs.tensor([1 + 2j]).dtype == "complex128"  # Python complex: binary64 parts, as tlrs's float
    assert tlrs.tensor(np.array([1.0, 2.0]), dtype="complex64").numpy().tolist() == [1 + 0j, 2 + 0j]


def test_safetensors_c64_both_ways(tmp_path):
    from safetensors.numpy import load_file, save_file

    a = rand((2, 3), "complex64", 10)
    a[0, 0] = complex(np.nan, -0.0)
    path = tmp_path / "c.safetensors"
    C.save({"z": tlrs.tensor(a), "r": tlrs.tensor(np.arange(3.0))}, path, {"note": "complex"})
    theirs = load_file(str(path))
    assert theirs["z"].dtype == np.complex64 and theirs["z"].view(np.uint32).tolist() == a.view(np.uint32).tolist()
    assert theirs["r"].tolist() == [0.0, 1.0, 2.0]
    ours, meta = C.load(path)
    assert meta == {"note": "complex"} and ours["z"].numpy().view(np.uint32).tolist() == a.view(np.uint32).tolist()
    save_file({"w": a[::-1].copy()}, str(tmp_path / "w.safetensors"))
    assert C.load(tmp_path / "w.safetensors")[0]["w"].numpy().tobytes() == a[::-1].tobytes()
    with pytest.raises(tlrs.DTypeError, match="safetensors stores complex64"):
        C.save({"z": tlrs.tensor(a.astype(np.complex128))}, tmp_path / "x.safetensors")
    with pytest.raises(tlrs.CheckpointError, match="w is complex64 .C64.; read it with tlrs.complex.load"):
        tlrs._core.load_safetensors(str(tmp_path / "w.safetensors"))
    assert sorted(os.listdir(tmp_path)) == ["c.safetensors", "w.safetensors"]


def test_refusals_name_what_was_expected():
    z = tlrs.tensor(rand(3, "complex64", 11))
    with pytest.raises(tlrs.DTypeError, match="complex operands of one dtype"):
        _ = z + tlrs.tensor(rand(3, "complex128", 12))
    with pytest.raises(tlrs.DTypeError, match="float32 real operand for complex64"):
        _ = z * tlrs.tensor(np.ones(3))
    with pytest.raises(tlrs.AutogradError, match="only for a real scalar output"):
        tlrs.tensor(rand(3, "complex64", 13), requires_grad=True).sum().backward()
    with pytest.raises(TypeError, match="expected a ComplexTensor, a Tensor or a number"):
        _ = z + "1"
    assert not hasattr(z, "relu")
    with pytest.raises(TypeError):  # no order
        _ = z < z
    with pytest.raises(TypeError, match="unsupported operand"):
        _ = tlrs.tensor([1.0]) + "1"  # a real tensor's operators still refuse what is no operand


@pytest.mark.parametrize("model,op", [("mlp", "relu"), ("transformer", "softmax"), ("gpt", "attention_softmax")])
def test_commands_refuse_complex_naming_the_op(capsys, model, op):
    code, out, err = run_cli(capsys, model, "--dtype", "complex", "--steps", "1")
    assert_one_error(err, code, f"tlrs run {model}: --dtype complex: the model uses {op}, which has no complex meaning")
    assert "mean_loss" not in out


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
def test_cuda_gives_the_cpus_values():
    """Components on the device: arithmetic, products and the transcendentals (exp's cos and
    sin, log's and angle's atan2: libm's algorithms on the device) are the CPU's bits on the
    emulator (whose products fold as the CPU's); on a GPU, whose products are cuBLAS's, the test
    allows rounding."""
    a, b = rand((3, 4), "complex64", 14), rand((4, 2), "complex64", 15)
    cpu = [tlrs.tensor(a), tlrs.tensor(b)]
    dev = [z.to("cuda") for z in cpu]
    assert dev[0].device.startswith("cuda")
    exact = os.environ.get("TLRS_CUDA_EMULATOR") == "1"
    for f in (lambda x, y: x[:, :2] * y[:3], lambda x, y: x[:, :2] / y[:3], lambda x, y: x @ y):
        c, d = f(*cpu).numpy(), f(*dev).to("cpu").numpy()
        if exact:
            assert c.view(np.uint32).tolist() == d.view(np.uint32).tolist()
        else:
            np.testing.assert_allclose(d, c, rtol=1e-5, atol=1e-6)
    for f in (lambda x: x.exp(), lambda x: x.log(), lambda x: x.sqrt(), lambda x: x.angle()):
        c, d = f(cpu[0]).numpy(), f(dev[0]).to("cpu").numpy()
        if exact:
            assert c.view(np.uint32).tolist() == d.view(np.uint32).tolist()
        else:
            np.testing.assert_allclose(d, c, rtol=1e-6, atol=1e-6)
