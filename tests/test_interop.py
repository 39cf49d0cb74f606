"""Zero-copy NumPy and DLPack: which conversions share memory (proven by addresses), which
copy and why, lifetimes (the consumer keeps the producer's buffer alive, and releases it), and
refusals. NumPy and PyTorch (CPU) are the other side; the CUDA cases run on the emulator."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import tlrs
import tlrs.cuda


def addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def released(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is None


# ---- NumPy ----

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_from_numpy_shares_a_c_contiguous_array(dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    t = tlrs.from_numpy(a)
    assert t.data_ptr() == addr(a)
    assert np.shares_memory(t.numpy(), a)
    assert t.dtype == dtype and t.shape == [3, 4]


def _grid() -> np.ndarray:
    return np.arange(24, dtype=np.float64).reshape(4, 6)


def _misaligned() -> np.ndarray:
    raw = b"\0" + np.arange(6, dtype=np.float64).tobytes()
    return np.frombuffer(raw, np.float64, 6, offset=1).reshape(2, 3)


@pytest.mark.parametrize("make, why", [
    (lambda: np.asfortranarray(_grid()), "Fortran order"),
    (lambda: _grid()[:, ::2], "a strided view"),
    (lambda: _grid().T, "a transposed view"),
    (_misaligned, "misaligned data"),
])
def test_from_numpy_copies_where_the_layout_requires(make, why):
    a = make()
    assert not a.flags.c_contiguous or not a.flags.aligned, why
    t = tlrs.from_numpy(a)
    assert t.data_ptr() != addr(a), why
    assert not np.shares_memory(t.numpy(), a)
    np.testing.assert_array_equal(t.numpy(), a)


def test_empty_and_zero_dim_arrays():
    e = np.zeros((0, 3), np.float32)
    assert tlrs.from_numpy(e).shape == [0, 3]
    s = np.array(2.5)
    t = tlrs.from_numpy(s)
    assert t.shape == [] and t.item() == 2.5 and t.data_ptr() == addr(s)


def test_writes_to_a_shared_array_are_seen_by_the_tensor():
    # The documented contract (docs/interop.md): as with torch.from_numpy, the tensor views the
    # array; results computed before the write keep their values (they are new buffers).
    a = np.ones(3)
    t = tlrs.from_numpy(a)
    doubled = t * 2.0
    a[0] = 10.0
    assert t.numpy().tolist() == [10.0, 1.0, 1.0]
    assert doubled.numpy().tolist() == [2.0, 2.0, 2.0]


def test_tensor_copies_and_from_numpy_keeps_the_array_alive():
    a = np.arange(4.0)
    copied = tlrs.tensor(a)
    assert copied.data_ptr() != addr(a)
    ref = weakref.ref(a)
    t = tlrs.from_numpy(a)
    del a
    assert not released(ref), "the tensor must keep the array alive"
    assert t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    del t
    assert released(ref), "the array is released with the last tensor over it"


def test_numpy_is_a_read_only_view_that_keeps_the_tensor_alive():
    t = tlrs.tensor([[1.0, 2.0], [3.0, 4.0]], dtype="float32") * 3.0
    v = t.numpy()
    assert addr(v) == t.data_ptr() == addr(t.numpy())
    assert not v.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0] = 0.0
    with pytest.raises(ValueError):
        v.setflags(write=True)
    del t
    gc.collect()
    np.testing.assert_array_equal(v, [[3.0, 6.0], [9.0, 12.0]])


def test_array_protocol_copies_only_when_asked_or_needed():
    t = tlrs.tensor([1.0, 2.0], dtype="float32")
    assert addr(np.asarray(t)) == t.data_ptr()
    c = np.array(t)
    assert addr(c) != t.data_ptr() and c.flags.writeable
    c[0] = 5.0
    assert t.numpy().tolist() == [1.0, 2.0]
    cast = np.asarray(t, dtype=np.float64)
    assert cast.dtype == np.float64 and cast.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="copy=False was given, but the array needs a conversion"):
        t.__array__(dtype="float64", copy=False)
    assert addr(t.__array__(copy=False)) == t.data_ptr()


def test_ops_autograd_and_checkpoints_on_borrowed_memory(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    ta, tb = tlrs.from_numpy(a, requires_grad=True), tlrs.from_numpy(b)
    assert ta.data_ptr() == addr(a)
    out = tlrs.ops.matmul(ta, tb)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)
    tlrs.ops.sum(out).backward()
    np.testing.assert_allclose(ta.grad.numpy(), np.ones((3, 2)) @ b.T, rtol=1e-12)
    path = str(tmp_path / "borrowed.safetensors")
    tlrs._core.save_safetensors(path, ["a"], [ta.detach()], {})
    from safetensors.numpy import load_file

    np.testing.assert_array_equal(load_file(path)["a"], a)


# ---- DLPack ----

def test_numpy_and_torch_arrays_come_in_without_copies():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tlrs.from_dlpack(a)
    assert t.data_ptr() == addr(a) and t.numpy().tolist() == a.tolist()
    x = torch.randn(3, 4, dtype=torch.float64)
    u = tlrs.from_dlpack(x)
    assert u.data_ptr() == x.data_ptr() and u.dtype == "float64"
    np.testing.assert_array_equal(u.numpy(), x.numpy())


def test_tlrs_tensors_go_out_without_copies_and_read_only():
    t = tlrs.tensor(np.arange(6.0).reshape(2, 3)) + 1.0
    n = np.from_dlpack(t)
    assert addr(n) == t.data_ptr() and not n.flags.writeable
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr() and tt.dtype == torch.float64
    np.testing.assert_array_equal(tt.numpy(), np.arange(6.0).reshape(2, 3) + 1.0)
    assert t.__dlpack_device__() == (1, 0)


def test_consumers_keep_the_producer_alive_and_release_it():
    a = np.arange(5.0)
    ref = weakref.ref(a)
    tt = torch.from_dlpack(tlrs.from_numpy(a))
    del a
    assert not released(ref)
    assert tt.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    del tt
    assert released(ref)
    # tlrs consuming torch: the torch tensor's memory stays valid after torch lets go.
    x = torch.arange(4, dtype=torch.float32) * 2
    t = tlrs.from_dlpack(x)
    del x
    gc.collect()
    assert t.numpy().tolist() == [0.0, 2.0, 4.0, 6.0]


def test_an_unconsumed_capsule_releases_its_tensor():
    a = np.ones(3)
    ref = weakref.ref(a)
    cap = tlrs.from_numpy(a).__dlpack__(max_version=(1, 0))
    del a
    assert not released(ref)
    del cap
    assert released(ref)


def test_strided_input_is_copied_and_copy_false_refuses():
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4).t()
    t = tlrs.from_dlpack(x)
    assert t.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    with pytest.raises(BufferError, match="copy=False was given, but the tensor needs a copy"):
        tlrs.from_dlpack(x, copy=False)
    y = torch.ones(2, dtype=torch.float32)
    assert tlrs.from_dlpack(y, copy=True).data_ptr() != y.data_ptr()


def test_capsule_forms_and_their_refusals():
    t = tlrs.tensor([1.0, 2.0])
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    assert tlrs.from_dlpack(legacy).data_ptr() == t.data_ptr()
    cap = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    tlrs.from_dlpack(cap)
    with pytest.raises(ValueError, match="already consumed"):
        tlrs.from_dlpack(cap)
    with pytest.raises(BufferError, match="stream must be None for a CPU tensor"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="export to device \\(2, 0\\) is not supported"):
        t.__dlpack__(dl_device=(2, 0))
    copied = np.from_dlpack(t, copy=True)
    assert addr(copied) != t.data_ptr() and copied.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("src, name", [
    (torch.ones(2, dtype=torch.float16), "float16"), (torch.ones(2, dtype=torch.int32), "int32"),
    (np.ones(2, np.complex64), "complex64"),
])
def test_other_inputs_are_refused_by_dtype(src, name):
    with pytest.raises(tlrs.DTypeError, match=f"expected a float32, float64, int64 or bool tensor, got {name}"):
        tlrs.from_dlpack(src)


@pytest.mark.parametrize("src, dtype", [
    (torch.arange(-3, 3), "int64"), (np.array([True, False, True]), "bool"),
    (torch.tensor([[2**62, -5], [7, 0]]), "int64"),
])
def test_int64_and_bool_cross_dlpack_both_ways(src, dtype):
    t = tlrs.from_dlpack(src)
    want = np.asarray(src)
    assert t.dtype == dtype and t.numpy().tolist() == want.tolist()
    back = torch.from_dlpack(t)
    assert str(back.dtype) == f"torch.{dtype}" and back.tolist() == want.tolist()


def test_bad_arguments():
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        tlrs.from_dlpack([1.0, 2.0])
    with pytest.raises(ValueError, match="the tensor is on cpu, not cuda:0"):
        tlrs.from_dlpack(np.ones(2), device="cuda:0")
    with pytest.raises(TypeError, match="max_version must be a \\(major, minor\\) tuple"):
        tlrs.tensor([1.0]).__dlpack__(max_version="1.0")


# ---- CUDA (the emulator in CI, a GPU in scripts/gpu-check.sh) ----

@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
def test_cuda_tensors_round_trip_without_copies():
    t = tlrs.tensor(np.arange(6.0).reshape(2, 3), device="cuda") * 2.0
    assert t.__dlpack_device__() == (2, 0)
    u = tlrs.from_dlpack(t)
    assert u.device == "cuda:0" and u.data_ptr() == t.data_ptr()
    del t
    gc.collect()
    np.testing.assert_array_equal((u + 1.0).numpy(), np.arange(6.0).reshape(2, 3) * 2.0 + 1.0)
    c = tlrs.from_dlpack(u, copy=True)
    assert c.data_ptr() != u.data_ptr() and c.numpy().tolist() == u.numpy().tolist()
    with pytest.raises(ValueError, match="the tensor is on cuda:0, not cpu"):
        tlrs.from_dlpack(u, device="cpu")
