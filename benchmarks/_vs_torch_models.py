"""Models, data and op equivalents for benchmarks/vs_torch.py: each benchmark case as a tlrs
definition and as a PyTorch module doing the same computation on the same initial parameters,
the PyTorch counterpart of each tlrs op, and the recorder that wraps tlrs's ops to see which
ones an eager step calls (the per-op profile).

`torch` is never imported here: the functions that need it take the module as an argument, so a
tlrs process never loads PyTorch's thread pool.
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import _vs_torch_user_models as user
import numpy as np

import tlrs
from tlrs import models, ops

LR = 1e-3


@dataclass(frozen=True)
class Case:
    """One table row: `build()` gives the tlrs definition (float32), `batch` the leading batch axis
    of the sample (0: the definition's input already has its batch axis), `loss` "ce" (cross-
    entropy on one-hot rows, or on int64 class indices from `data`) or "mse", `torch_model(torch,
    defn)` the PyTorch module (parameters in tlrs's order, not yet loaded); `data()` the sample
    when the default one does not fit (int64 token ids and labels); `goals` per configuration,
    where they differ from vs_torch.GOALS."""

    title: str
    build: Callable[[], tlrs.ModuleDef]
    batch: int
    loss: str
    torch_model: Callable[[Any, tlrs.ModuleDef], Any]
    data: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None
    goals: dict[str, float] = field(default_factory=dict)


def deep_mlp() -> tlrs.ModuleDef:
    """784-512-512-10 from tlrs ops, as in benchmarks/train_step.py (copied, not imported: that
    module imports torch, which a tlrs worker must not load)."""
    shapes = [[512, 784], [512], [512, 512], [512], [10, 512], [10]]
    rng = np.random.default_rng(0)
    init = [tlrs.tensor(rng.normal(size=s) * 0.05, dtype="float32") for s in shapes]

    def loss(ps, xs):
        h = ops.relu(ops.linear(xs[0], ps[0], ps[1]))
        h = ops.relu(ops.linear(h, ps[2], ps[3]))
        return ops.cross_entropy(ops.linear(h, ps[4], ps[5]), xs[1])

    return tlrs.ModuleDef(shapes, [[784], [10]], loss, init_params=init)


def _mlp(dims: list[int]) -> Callable[[Any, tlrs.ModuleDef], Any]:
    def make(torch: Any, defn: tlrs.ModuleDef) -> Any:
        nn = torch.nn
        layers: list[Any] = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    return make


def torch_cnn(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """python/tlrs/models/cnn.py with (1, 8, 16, 10, 28, 28, 3, 3, padding1=1, padding2=1): conv
    3x3 p1 -> ReLU -> max-pool 2 -> conv 3x3 p1 -> ReLU -> max-pool 2 -> flatten (C, H, W) ->
    linear. Identical computation."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


def torch_attention(torch: Any, x: Any, wq: Any, wk: Any, wv: Any, wo: Any, heads: int) -> Any:
    """tlrs's multi_head_attention (rust/src/ops/attention.rs): x @ W{q,k,v} split into heads as
    column blocks, softmax(q k^T / sqrt(head_dim)) v, heads joined, @ Wo; no mask. The scores use
    PyTorch's fused scaled_dot_product_attention, as a PyTorch user would write it."""
    b, n, _ = x.shape
    hd = wq.shape[1] // heads

    def split(w: Any) -> Any:
        return (x @ w).view(b, n, heads, hd).transpose(1, 2)

    y = torch.nn.functional.scaled_dot_product_attention(split(wq), split(wk), split(wv))
    return y.transpose(1, 2).reshape(b, n, heads * hd) @ wo


def torch_transformer(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """python/tlrs/models/transformer.py: attention (no mask) then layer norm (eps 1e-6); no
    residual, no feed-forward. Parameters wq, wk, wv [d, h*hd], wo [h*hd, d], norm weight, bias."""
    nn = torch.nn
    shapes = [tuple(s) for s in defn.param_shapes]
    d_model, inner = shapes[0]
    heads = 4

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            for name, shape in zip(("wq", "wk", "wv", "wo"), shapes[:4]):
                setattr(self, name, nn.Parameter(torch.empty(shape)))
            self.norm = nn.LayerNorm(d_model, eps=1e-6)

        def forward(self, x: Any) -> Any:
            return self.norm(torch_attention(torch, x, self.wq, self.wk, self.wv, self.wo, heads))

    if inner % heads:
        raise ValueError(f"transformer: {inner} columns do not split into {heads} heads")
    return Block()


def torch_resnet18(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """python/tlrs/models/resnet.py mirrored layer for layer, with the same parameter names and
    order: conv layers with bias; stem conv 7x7 s2 p3 -> norm -> ReLU -> max-pool 3x3 s2 p1; four
    stages of two basic blocks (widths 64..512; the first block of stages 2-4: conv 3x3 s2 and a
    conv 1x1 s2 + norm projection); global average pool; linear head.
    What differs: tlrs's stateless per-image batch norm (mean and biased variance over H x W of
    each image and channel, eps 1e-6) is PyTorch's GroupNorm with one channel per group (the same
    formula; PyTorch has no "per-image batch norm"), and the global average pool is `mean(2, 3)`.
    The numbers agree to float32 rounding (the initial losses are compared in the output)."""
    nn = torch.nn
    in_c, width, classes = defn.param_shapes[0][1], defn.param_shapes[0][0], defn.param_shapes[-1][0]

    def conv(cin: int, cout: int, k: int, s: int, p: int) -> Any:
        return nn.Conv2d(cin, cout, k, stride=s, padding=p, bias=True)

    def norm(ch: int) -> Any:
        return nn.GroupNorm(ch, ch, eps=1e-6, affine=True)

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, down: bool) -> None:
            super().__init__()
            self.conv1, self.bn1 = conv(cin, cout, 3, 2 if down else 1, 1), norm(cout)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1, 1), norm(cout)
            self.downsample = nn.Sequential(conv(cin, cout, 1, 2, 0), norm(cout)) if down else None

        def forward(self, x: Any) -> Any:
            r = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(r + (x if self.downsample is None else self.downsample(x)))

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = conv(in_c, width, 7, 2, 3), norm(width)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            prev = width
            for stage in range(1, 5):
                ch = width << (stage - 1)
                setattr(self, f"layer{stage}", nn.Sequential(BasicBlock(prev, ch, stage > 1), BasicBlock(ch, ch, False)))
                prev = ch
            self.fc = nn.Linear(prev, classes)

        def forward(self, x: Any) -> Any:
            y = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            y = self.layer4(self.layer3(self.layer2(self.layer1(y))))
            return self.fc(y.mean(dim=(2, 3)))

    model = ResNet18()
    if [n for n, _ in model.named_parameters()] != list(defn.param_names or ()):
        raise ValueError("torch ResNet-18 parameter names differ from tlrs's")
    return model


def _mlp_def(batch: int) -> tuple[Callable[[], tlrs.ModuleDef], int]:
    return (lambda: models.mlp_classifier(784, 128, 10, dtype="float32")[0]), batch


# Models users bring (benchmarks/_vs_torch_user_models.py): tighter goals than the ready-made ones.
USER_GOALS = {"eager-ref": 1.0, "compiled-fast": 0.7}

CASES: dict[str, Case] = {
    "mlp-b1": Case("MLP 784-128-10, batch 1", *_mlp_def(1), "ce", _mlp([784, 128, 10]),
                   goals={"compiled-fast": 0.2}),
    "mlp-b32": Case("MLP 784-128-10, batch 32", *_mlp_def(32), "ce", _mlp([784, 128, 10])),
    "mlp-b128": Case("MLP 784-128-10, batch 128", *_mlp_def(128), "ce", _mlp([784, 128, 10])),
    "deep-mlp-b128": Case("MLP 784-512-512-10, batch 128", deep_mlp, 128, "ce", _mlp([784, 512, 512, 10])),
    "cnn-b32": Case("two-conv CNN 1x28x28, batch 32",
                    lambda: models.two_conv_cnn(1, 8, 16, 10, 28, 28, 3, 3, padding1=1, padding2=1,
                                                dtype="float32")[0], 32, "ce", torch_cnn),
    "transformer-b8": Case("transformer block d64 h4, batch 8",
                           lambda: models.transformer_block(8, 16, 64, 4, 16, dtype="float32")[0], 0, "mse",
                           torch_transformer),
    "resnet18-b8": Case("ResNet-18 3x64x64, batch 8",
                        lambda: models.resnet18_model(3, 64, 64, 10, dtype="float32")[0], 8, "ce",
                        torch_resnet18),
    "gpt2-b32": Case("char GPT 2 layers d128, batch 32", lambda: user.gpt_def(2), 0, "ce", user.torch_gpt,
                     user.gpt_sample, USER_GOALS),
    "gpt4-b32": Case("char GPT 4 layers d128, batch 32", lambda: user.gpt_def(4), 0, "ce", user.torch_gpt,
                     user.gpt_sample, USER_GOALS),
    "vit-b32": Case("ViT-tiny 3x32x32 d192 L6, batch 32", user.vit_def, 0, "ce", user.torch_vit,
                    user.vit_sample, USER_GOALS),
    "mixer-b32": Case("MLP-Mixer 3x32x32 d128 L6 b32", user.mixer_def, 0, "ce", user.torch_mixer,
                      user.vit_sample, USER_GOALS),
    # Beyond the table (`--cases more`): other batch sizes and image sizes of the same models.
    "more-resnet18-b32": Case("ResNet-18 3x32x32, batch 32",
                              lambda: models.resnet18_model(3, 32, 32, 10, dtype="float32")[0], 32, "ce",
                              torch_resnet18),
    "more-resnet18-b1": Case("ResNet-18 3x64x64, batch 1",
                             lambda: models.resnet18_model(3, 64, 64, 10, dtype="float32")[0], 1, "ce",
                             torch_resnet18),
    "more-cnn-b128": Case("two-conv CNN 1x28x28, batch 128",
                          lambda: models.two_conv_cnn(1, 8, 16, 10, 28, 28, 3, 3, padding1=1, padding2=1,
                                                      dtype="float32")[0], 128, "ce", torch_cnn),
    "more-mlp-b1024": Case("MLP 784-128-10, batch 1024", *_mlp_def(1024), "ce", _mlp([784, 128, 10])),
}

# The table's eleven rows (the default), and the further cases `--cases more` runs.
TABLE = [k for k in CASES if not k.startswith("more-")]
MORE = [k for k in CASES if k.startswith("more-")]


def find_case(name: str) -> str:
    """The case key for `name`: a key, or a unique prefix of one ("cnn", "resnet")."""
    if name in CASES:
        return name
    hits = [k for k in CASES if k.startswith(name)]
    if len(hits) != 1:
        raise SystemExit(f"unknown or ambiguous case {name!r}; choose from: {', '.join(CASES)}")
    return hits[0]


def sample(defn: tlrs.ModuleDef, case: Case) -> tuple[np.ndarray, np.ndarray]:
    """A fixed batch: the case's own `data()`, else `float_sample`."""
    if case.data is not None:
        return case.data()
    return float_sample(defn, case.batch, case.loss)


def float_sample(defn: tlrs.ModuleDef, batch: int, loss: str) -> tuple[np.ndarray, np.ndarray]:
    """A fixed batch (seed 1) for the definition's inputs with a leading `batch` axis (none for
    0): float32 standard-normal inputs with one-hot targets of random classes for a cross-entropy
    loss ("ce"), standard-normal targets for "mse"."""
    rng = np.random.default_rng(1)
    x_shape, y_shape = (list(s) for s in defn.input_shapes)
    lead = [batch] if batch else []
    x = rng.standard_normal(lead + x_shape, dtype=np.float32)
    if loss == "mse":
        return x, rng.standard_normal(lead + y_shape, dtype=np.float32)
    y = np.zeros(lead + y_shape, dtype=np.float32)
    rows = y.reshape(-1, y_shape[-1])
    rows[np.arange(rows.shape[0]), rng.integers(0, y_shape[-1], size=rows.shape[0])] = 1.0
    return x, y


def torch_module(torch: Any, case: Case, defn: tlrs.ModuleDef) -> Any:
    """The case's PyTorch module holding the tlrs definition's initial parameters."""
    model = case.torch_model(torch, defn)
    params = list(model.parameters())
    init = [p.numpy() for p in defn.initial_params()]
    if [tuple(p.shape) for p in params] != [a.shape for a in init]:
        raise ValueError(f"{case.title}: torch parameter shapes differ from tlrs's")
    with torch.no_grad():
        for p, a in zip(params, init):
            p.copy_(torch.from_numpy(np.array(a, dtype=np.float32, copy=True)))
    return model


def torch_loss(torch: Any, case: Case) -> Callable[[Any, Any], Any]:
    F = torch.nn.functional
    return F.mse_loss if case.loss == "mse" else F.cross_entropy  # probability targets: one-hot CE


# ---------------------------------------------------------------------------------------------
# The PyTorch counterpart of each tlrs op (same arguments, in tlrs's order), for the profile.


@dataclass
class TensorArg:
    """A recorded tensor argument: its values and whether it required grad in the step."""

    values: np.ndarray
    requires_grad: bool


def _per_image_norm(torch: Any, x: Any, w: Any = None, b: Any = None, eps: float = 1e-6) -> Any:
    x4 = x if x.dim() == 4 else x.unsqueeze(0)
    y = torch.nn.functional.group_norm(x4, x4.shape[1], w, b, eps)
    return y if x.dim() == 4 else y.squeeze(0)


def _reduce(method: str) -> Callable[..., Any]:
    def call(x: Any, dim: int | None = None, keepdim: bool = False) -> Any:
        out = getattr(x, method)() if dim is None else getattr(x, method)(dim, keepdim)
        return out.values if method == "max" and dim is not None else out

    return call


_REVERSED = {"__radd__": operator.add, "__rsub__": operator.sub, "__rmul__": operator.mul,
             "__rtruediv__": operator.truediv, "__rpow__": operator.pow}


def _tensor_method(name: str) -> Callable[..., Any]:
    if name in _REVERSED:
        op = _REVERSED[name]
        return lambda a, b: op(b, a)
    if name.startswith("__"):
        return getattr(operator, name.strip("_"))
    if name in ("sum", "mean", "max"):
        return _reduce(name)
    return lambda x, *a, **k: getattr(x, name)(*a, **k)


def torch_op(torch: Any, name: str) -> Callable[..., Any] | None:
    """PyTorch's version of the tlrs op `name` ("conv2d", "Tensor.__add__", ...), or None."""
    F = torch.nn.functional
    if name.startswith("Tensor."):
        return _tensor_method(name[len("Tensor."):])
    table: dict[str, Callable[..., Any]] = {
        "linear": F.linear, "conv2d": F.conv2d, "mse_loss": F.mse_loss, "matmul": torch.matmul,
        "max_pool2d": lambda x, k, stride=None, padding=0: F.max_pool2d(x, k, stride, padding),
        "avg_pool2d": lambda x, k, stride=None, padding=0: F.avg_pool2d(x, k, stride, padding),
        "global_avg_pool2d": lambda x: x.mean((-2, -1)),
        "batch_norm_per_image": lambda *a, **k: _per_image_norm(torch, *a, **k),
        "layer_norm": lambda x, shape, w=None, b=None, eps=1e-5: F.layer_norm(
            x, [shape] if isinstance(shape, int) else list(shape), w, b, eps),
        "multi_head_attention": lambda x, wq, wk, wv, wo, h, mask=None: torch_attention(torch, x, wq, wk, wv, wo, h),
        "cross_entropy": lambda x, t: F.cross_entropy(x, t if isinstance(t, torch.Tensor) else torch.as_tensor(t)),
        "reshape": torch.reshape, "flatten": torch.flatten, "permute": torch.permute,
        "transpose": torch.transpose, "softmax": torch.softmax, "log_softmax": torch.log_softmax,
        "index_select": lambda x, dim, idx: torch.index_select(x, dim, torch.as_tensor(idx)),
        "concat": lambda ts, dim=0: torch.cat(ts, dim), "cat": lambda ts, dim=0: torch.cat(ts, dim),
        "sum": _reduce("sum"), "mean": _reduce("mean"), "max": _reduce("max"),
        "pow": torch.pow, "clamp": torch.clamp,
        # torch.embedding takes (weight, input); F.gelu and F.scaled_dot_product_attention have
        # no torch.* twin.
        "embedding": F.embedding, "gelu": F.gelu, "scaled_dot_product_attention": F.scaled_dot_product_attention,
        "split": torch.split,
    }
    if name in table:
        return table[name]
    for space in (torch, F):  # elementwise ops share their names: add, relu, exp, gelu, ...
        fn = getattr(space, name, None)
        if callable(fn):
            return fn
    return None


def describe_arg(a: Any) -> str:
    """A compact form of one argument: a tensor's shape ("32x1x28x28"), else a short repr."""
    if isinstance(a, TensorArg):
        return "x".join(map(str, a.values.shape)) or "scalar"
    if isinstance(a, (list, tuple)) and a and all(isinstance(t, TensorArg) for t in a):
        return "[" + ", ".join(describe_arg(t) for t in a) + "]"
    text = repr(a)
    return text if len(text) <= 16 else text[:13] + "..."


# ---------------------------------------------------------------------------------------------
# Recording the ops of an eager step, for the profile.


TENSOR_METHODS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                  "__rtruediv__", "__matmul__", "__neg__", "__pow__", "__rpow__", "neg", "exp", "log", "sqrt",
                  "abs", "relu", "tanh", "sigmoid", "sum", "mean", "max", "reshape", "flatten", "permute",
                  "transpose", "softmax", "log_softmax", "matmul", "clamp", "pow"]


class Recorder:
    """Per (op, argument signature): calls, forward seconds, the first call's arguments (as
    values) and the unwrapped function; records only while `active`, outermost calls only."""

    def __init__(self) -> None:
        self.active, self.depth = False, 0
        self.stats: dict[tuple, list[float]] = {}
        self.calls: dict[tuple, tuple[str, Callable[..., Any], list[Any], dict[str, Any]]] = {}

    def add(self, label: str, fn: Callable[..., Any], a: tuple, k: dict[str, Any], dt: float) -> None:
        key = (label, tuple(signature(x) for x in a), tuple(sorted((n, signature(v)) for n, v in k.items())))
        s = self.stats.setdefault(key, [0, 0.0])
        s[0], s[1] = s[0] + 1, s[1] + dt
        if key not in self.calls:
            self.calls[key] = (label, fn, [capture(x) for x in a], {n: capture(v) for n, v in k.items()})


def signature(x: Any) -> Any:
    if isinstance(x, tlrs.Tensor):
        return ("T", tuple(x.shape), x.requires_grad)
    if isinstance(x, (list, tuple)):
        return tuple(signature(v) for v in x)
    if isinstance(x, np.ndarray):
        return ("nd", x.shape, str(x.dtype))
    return repr(x)


def capture(x: Any) -> Any:
    """An argument with tensors replaced by their values (picklable, rebuilt per framework)."""
    if isinstance(x, tlrs.Tensor):
        return TensorArg(np.array(x.detach().numpy(), copy=True), x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(capture(v) for v in x)
    return x


def wrapped(rec: Recorder, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*a: Any, **k: Any) -> Any:
        if not rec.active or rec.depth:
            return fn(*a, **k)
        rec.depth += 1
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            dt = time.perf_counter() - t0
            rec.depth -= 1
            rec.add(label, fn, a, k, dt)

    return call


def install_wrappers(rec: Recorder) -> Callable[[], None]:
    """Wraps every public function of tlrs.ops and tlrs.layer_ops and the Tensor operator
    methods; returns the function that restores the originals."""
    from tlrs import layer_ops

    saved: list[tuple[Any, str, Any]] = []
    targets = [(ops, n, n) for n in ops.__all__] + [(layer_ops, n, n) for n in layer_ops.__all__]
    targets += [(tlrs.Tensor, n, f"Tensor.{n}") for n in TENSOR_METHODS if hasattr(tlrs.Tensor, n)]
    for owner, name, label in targets:
        fn = getattr(owner, name)
        if callable(fn):
            saved.append((owner, name, fn))
            setattr(owner, name, wrapped(rec, label, fn))

    def restore() -> None:
        for owner, name, fn in reversed(saved):
            setattr(owner, name, fn)

    return restore


def build_args(call: tuple, make: Callable[[TensorArg], Any]) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """The recorded arguments with each TensorArg made by `make`, and the ones needing grad."""
    leaves: list[Any] = []

    def conv(x: Any) -> Any:
        if isinstance(x, TensorArg):
            t = make(x)
            if x.requires_grad:
                leaves.append(t)
            return t
        return type(x)(conv(v) for v in x) if isinstance(x, (list, tuple)) else x

    _, _, a, k = call
    return [conv(x) for x in a], {n: conv(v) for n, v in k.items()}, leaves
