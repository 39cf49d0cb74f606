"""PyTorch weights in and out: a torch `nn.Module` built like the tlrs model gives its
`state_dict()` to `Module.load_state_dict`, and both give the same outputs (PyTorch computes the
oracle); tlrs's `state_dict()` loads back into torch; errors in PyTorch's wording."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tlrs
from tlrs import models
from tlrs.config import Options
from tlrs.module import instantiate_with_options

# f32 forward of the same weights in two libraries: summation orders differ, so outputs agree
# to rounding (relative to the outputs' scale), not bit for bit.
TOL = 1e-5


class TorchMLP(nn.Module):
    def __init__(self, i: int, h: int, o: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(i, h), nn.Linear(h, o)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class TorchCNN(nn.Module):
    """two_conv_cnn(in_c=1, c1=4, c2=8, out_dim=10, 12x12, 3x3 kernels, 2x2 pools)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 8, 3)
        self.fc = nn.Linear(8 * 1 * 1, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.max_pool2d(torch.relu(self.conv1(x)), 2, 2)
        y = torch.max_pool2d(torch.relu(self.conv2(y)), 2, 2)
        return self.fc(torch.flatten(y, 1))


def _cases():
    mlp_defn, mlp_predict = models.mlp(6, 5, 3, dtype="float32")
    cnn_defn, cnn_predict = models.two_conv_cnn(1, 4, 8, 10, 12, 12, 3, 3, dtype="float32")
    return {
        "mlp": (mlp_defn, mlp_predict, lambda: TorchMLP(6, 5, 3), (4, 6)),
        "cnn": (cnn_defn, cnn_predict, TorchCNN, (4, 1, 12, 12)),
    }


def _module(defn):
    return instantiate_with_options(defn, "float32", Options())


def _close(a: np.ndarray, b: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(b).max()))
    assert float(np.abs(a - b).max()) <= TOL * scale


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_torch_weights_in_give_torch_outputs(name):
    defn, predict, make_torch, xshape = _cases()[name]
    torch.manual_seed(0)
    net = make_torch()
    m = _module(defn)
    result = m.load_state_dict(net.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = np.random.default_rng(1).standard_normal(xshape).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    got = predict(m.params(), tlrs.tensor(x)).numpy()
    _close(got, want)
    # The module holds copies: a later torch update does not reach it.
    before = m.params()[0].numpy().copy()
    with torch.no_grad():
        next(net.parameters()).add_(1.0)
    np.testing.assert_array_equal(m.params()[0].numpy(), before)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_tlrs_weights_out_load_into_torch(name):
    defn, predict, make_torch, xshape = _cases()[name]
    m = _module(defn)
    sd = m.state_dict()
    assert list(sd) == list(defn.param_names)
    net = make_torch()
    net.load_state_dict({k: torch.from_dlpack(v) for k, v in sd.items()})
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    x = np.random.default_rng(2).standard_normal(xshape).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    _close(predict(m.params(), tlrs.tensor(x)).numpy(), want)


def test_round_trip_through_torch_and_numpy_is_exact():
    defn, _, make_torch, _ = _cases()["mlp"]
    m = _module(defn)
    net = make_torch()
    m.load_state_dict(net.state_dict())
    back = {k: v.numpy() for k, v in m.state_dict().items()}
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(back[k], v.numpy())
    m64 = instantiate_with_options(models.mlp(6, 5, 3)[0], "float64", Options())
    m64.load_state_dict(back)
    for k, v in m64.state_dict().items():
        assert v.dtype == "float64"
        np.testing.assert_array_equal(v.numpy(), back[k].astype(np.float64))


def test_checkpoints_still_open_with_safetensors_torch(tmp_path):
    defn, _, make_torch, _ = _cases()["mlp"]
    m = _module(defn)
    m.load_state_dict(make_torch().state_dict())
    path = str(tmp_path / "m.safetensors")
    m.save(path)
    from safetensors.torch import load_file

    loaded = load_file(path)
    net = make_torch()
    net.load_state_dict({k: v for k, v in loaded.items() if k in dict(net.named_parameters())})
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())


def test_errors_in_pytorch_wording_and_nothing_half_loaded():
    defn, _, make_torch, _ = _cases()["mlp"]
    m = _module(defn)
    before = [p.numpy().copy() for p in m.params()]
    sd = dict(make_torch().state_dict())
    del sd["fc2.bias"]
    sd["extra.weight"] = torch.zeros(1)
    sd["fc1.weight"] = torch.zeros(5, 7)
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict(sd)
    assert str(err.value) == (
        "Error(s) in loading state_dict for Module:\n"
        '\tMissing key(s) in state_dict: "fc2.bias". \n'
        '\tUnexpected key(s) in state_dict: "extra.weight". \n'
        "\tsize mismatch for fc1.weight: copying a param with shape [5, 7] from checkpoint, "
        "the shape in current model is [5, 6].")
    for p, b in zip(m.params(), before, strict=True):
        np.testing.assert_array_equal(p.numpy(), b)


def test_non_strict_reports_keys_and_loads_the_rest():
    defn, _, make_torch, _ = _cases()["mlp"]
    m = _module(defn)
    net = make_torch()
    sd = {"fc1.weight": net.fc1.weight, "bn.running_mean": torch.zeros(3)}
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias", "fc2.weight", "fc2.bias"]
    assert result.unexpected_keys == ["bn.running_mean"]
    np.testing.assert_array_equal(m.params()[0].numpy(), net.fc1.weight.detach().numpy())


@pytest.mark.parametrize("bad, got", [
    (torch.zeros(5, 6, dtype=torch.int64), "int64"), (np.zeros((5, 6), np.int32), "int32"),
    ([[True] * 6] * 5, "bool"),
])
def test_non_float_values_are_refused(bad, got):
    m = _module(_cases()["mlp"][0])
    with pytest.raises(tlrs.DTypeError, match=f"load_state_dict: fc1.weight: expected a "
                                               f"floating-point array \\(float32 or float64\\), got {got}"):
        m.load_state_dict({"fc1.weight": bad}, strict=False)


def test_not_a_mapping():
    m = _module(_cases()["mlp"][0])
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>"):
        m.load_state_dict([1, 2])
