"""ONNX export (tlrs/interop/onnx_export.py, onnx_ops.py): every ready-made model and a set of
forwards covering the op mapping, run by onnxruntime and compared with tlrs at the traced batch
and at other batch sizes; hand-built IR for the ops a Python forward never records, compared
with NumPy; refusals, the missing-package message, the atomic write and `tlrs export onnx`.

Tolerance: max |tlrs - onnxruntime| <= TOL[dtype] * max(1, max |tlrs|), with TOL 1e-5 for
float32 and 1e-12 for float64.
"""

import dataclasses
import itertools
import os
import stat
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import tlrs
from cli_helpers import assert_one_error
from tlrs import models, ops
from tlrs.cli import main
from tlrs.cli.commands import DEFAULT_MODELS
from tlrs.interop import onnx_export
from tlrs.interop.onnx_export import BatchDim, Node, OnnxExportError, OnnxUnavailableError
from tlrs.interop.onnx_ops import build_model

TOL = {"float32": 1e-5, "float64": 1e-12}
EXAMPLE_BATCH = 4
# The traced batches (2, 3), the example's, a single sample and a larger one.
CHECK_BATCHES = (2, 3, EXAMPLE_BATCH, 1, 7)

# Every constructor of tlrs.models.MODEL_CONSTRUCTORS at small sizes; cnn2 with a rectangular
# pooling window, which the model builds from index_select and maximum.
SMALL = {
    "mlp": lambda dt: models.mlp(5, 8, 3, dtype=dt),
    "mlp_classifier": lambda dt: models.mlp_classifier(6, 8, 4, dtype=dt),
    "softmax_regression": lambda dt: models.softmax_regression(6, 3, dtype=dt),
    "autoencoder": lambda dt: models.autoencoder(6, 3, dtype=dt),
    "two_conv_cnn": lambda dt: models.two_conv_cnn(2, 3, 4, 3, 8, 8, 3, 3, 1, 1, 1, 1, dtype=dt),
    "cnn2": lambda dt: models.cnn2(1, 2, 3, 2, 8, 6, 3, 3, 1, 1, 1, 1, 2, 1, dtype=dt),
    "transformer_block": lambda dt: models.transformer_block(2, 3, 8, 2, 4, dtype=dt),
    # 64x48 keeps the last stage at 2x1: at 1x1, per-image batch norm would zero every input.
    "resnet18_model": lambda dt: models.resnet18_model(3, 64, 48, 3, width=4, dtype=dt),
}
# onnxruntime's CPU provider has no float64 kernels for Conv, AveragePool or Erf.
NO_DOUBLE_KERNELS = {"two_conv_cnn", "cnn2", "resnet18_model"}


def sample(shape, batch, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal([batch, *shape]).astype(dtype)


def session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def assert_close(ref, got, dtype):
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    err = float(np.abs(ref.astype(np.float64) - got).max())
    assert err <= TOL[dtype] * max(1.0, float(np.abs(ref).max())), err


def assert_parity(module, predict, shape, dtype, path):
    """Export at the example batch, then compare onnxruntime with tlrs at every CHECK_BATCHES
    (the tolerance of the model's dtype; the output's dtype must match tlrs's too)."""
    module.export_onnx(str(path), sample(shape, EXAMPLE_BATCH, dtype))
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sess = session(path)
    for batch in CHECK_BATCHES:
        x = sample(shape, batch, dtype, seed=batch)
        ref = predict(module.params(), tlrs.tensor(x)).numpy()
        assert_close(ref, sess.run(None, {"x": x})[0], dtype)
    assert np.ptp(ref, axis=0).max() > 0.01, "the output hardly depends on the input: the check would be vacuous"


def module_export(module, path, example, **options):
    module.export_onnx(str(path), example, **options)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    return model


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def small_model(name, dtype):
    """The model with random parameters (the initial biases are zeros, and ResNet's initial
    output is all zeros, which would hide differences)."""
    defn, predict = SMALL[name](dtype)
    rng = np.random.default_rng(11)
    defn = dataclasses.replace(defn, init_params=[rng.uniform(-0.5, 0.5, s) for s in defn.param_shapes])
    return tlrs.instantiate_with_options(defn, dtype, None), predict, defn.input_shapes[0]


def test_every_model_constructor_is_covered():
    assert set(SMALL) == set(models.MODEL_CONSTRUCTORS)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_model_float32_matches_onnxruntime_at_any_batch(name, tmp_path):
    module, predict, shape = small_model(name, "float32")
    assert_parity(module, predict, shape, "float32", tmp_path / "m.onnx")


@pytest.mark.parametrize("name", sorted(set(SMALL) - NO_DOUBLE_KERNELS))
def test_model_float64_matches_onnxruntime_at_any_batch(name, tmp_path):
    module, predict, shape = small_model(name, "float64")
    assert_parity(module, predict, shape, "float64", tmp_path / "m.onnx")


@pytest.mark.parametrize("name", sorted(NO_DOUBLE_KERNELS))
def test_conv_model_float64_is_valid_onnx(name, tmp_path):
    module, _, shape = small_model(name, "float64")
    model = module_export(module, tmp_path / "m.onnx", sample(shape, 2, "float64"))
    elem = onnx.TensorProto.DOUBLE
    assert [v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.output)] == [elem, elem]


def test_names_and_a_dynamic_batch_axis(tmp_path):
    module, _, _ = small_model("mlp", "float32")
    model = module_export(module, tmp_path / "m.onnx", tlrs.tensor(sample([5], 3, "float32")))
    assert [i.name for i in model.graph.input] == ["x"] and [o.name for o in model.graph.output] == ["y"]
    assert dims(model.graph.input[0]) == ["batch", 5] and dims(model.graph.output[0]) == ["batch", 3]
    names = {t.name for t in model.graph.initializer}
    assert set(module.param_names) <= names
    weight = next(t for t in model.graph.initializer if t.name == "fc1.weight")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weight), module.params()[0].numpy())


def test_static_batch_fixes_the_example_batch(tmp_path):
    module, predict, _ = small_model("mlp", "float32")
    x = sample([5], 3, "float32")
    model = module_export(module, tmp_path / "m.onnx", [x], dynamic_batch=False)
    assert dims(model.graph.input[0]) == [3, 5] and dims(model.graph.output[0]) == [3, 3]
    sess = session(tmp_path / "m.onnx")
    assert_close(predict(module.params(), tlrs.tensor(x)).numpy(), sess.run(None, {"x": x})[0], "float32")
    with pytest.raises(Exception, match="dimensions"):
        sess.run(None, {"x": sample([5], 2, "float32")})


def test_a_newer_opset(tmp_path):
    module, predict, _ = small_model("autoencoder", "float32")
    model = module_export(module, tmp_path / "m.onnx", sample([6], 2, "float32"), opset=21)
    assert [o.version for o in model.opset_import] == [21]
    x = sample([6], 5, "float32")
    assert_close(predict(module.params(), tlrs.tensor(x)).numpy(), session(tmp_path / "m.onnx").run(None, {"x": x})[0],
                 "float32")


# Forwards on x [B, 4] covering the op mapping (p: parameters of the shapes given with them).

def smooth_ops(p, x):
    return ops.gelu(x) + ops.erf(x * p[0])


def elementwise_ops(p, x):
    y = ops.softplus(x * 30.0) + ops.silu(x) + ops.leaky_relu(x, 0.2) + ops.elu(x, 1.5)
    y = y + ops.hardtanh(x, -0.5, 0.25) + ops.log1p(ops.abs(x)) + ops.expm1(x) + ops.rsqrt(ops.abs(x) + 1.0)
    y = y + ops.pow(ops.abs(x), 1.5) + ops.clamp(x, None, 0.3) + ops.clamp(x, -0.2, None) + ops.clamp(x, -0.1, 0.1)
    y = y + ops.maximum(x, p[0]) + ops.minimum(x, p[0]) + ops.neg(ops.exp(x)) + ops.log(ops.sigmoid(x))
    return y + ops.tanh(ops.sqrt(ops.relu(x))) + 1.5 ** x - x / (p[0] * p[0] + 1.0)


def table_ops(p, x):
    # No divisor is 0 here (the parity check needs finite outputs); the special values are
    # test_floor_divide_gives_tlrs_bits's.
    y = ops.gelu(x, approximate="tanh") + ops.softplus(x, 2.0, 1.5) + ops.softplus(x * 3.0, -0.5, 4.0)
    y = y + ops.trunc(x * 3.0) + ops.floor(x * 3.0) + ops.floor_divide(x * 7.0, p[0] * p[0] + 0.25)
    return y + ops.floor_divide(x * -4.0, p[0] - 2.0)


def layout_ops(p, x):
    b = x.shape[0]
    stats = ops.sum(x, 1, True) + ops.mean(x, 1, True) - ops.max(x, 1, True) + ops.sum(x) + ops.mean(x) + ops.max(x)
    cat = ops.index_select(ops.concat([x, stats, ops.slice(x, 1, 1, 3)], 1), 1, [6, 0, 2, 2])
    r = ops.reshape(ops.permute(ops.reshape(cat, [b, 2, 2]), [0, 2, 1]), [b, 4])
    r = ops.log_softmax(r, 1) + ops.softmax(r, 0) + ops.slice(x, 0, 0, b)
    return ops.matmul(r, p[0]) + ops.transpose(ops.matmul(p[1], ops.transpose(r, 0, 1)), 0, 1)


def index_ops(p, x):
    # Row-independent indices and masks: exported once and expanded to the batch at run time.
    b = x.shape[0]
    g = ops.gather(x, 1, np.tile([[3, 0]], (b, 1)))
    s = ops.scatter_add(x * p[0], 1, np.tile([[1, 1]], (b, 1)), g)
    return ops.masked_fill(s, np.array([True, False, False, True]), -2.0) + ops.embedding([[1, 0]], p[1]).sum()


def image_ops(p, x):
    im = ops.reshape(x, [x.shape[0], 1, 2, 2])
    y = ops.avg_pool2d(im, 2, 1, 1) + ops.max_pool2d(im, 2, 1, 1)
    y = ops.conv2d(y, ops.reshape(p[0], [1, 1, 2, 2]), None, 1, 0)
    return ops.reshape(y.to("float64"), [x.shape[0], 4])  # a cast: the output is float64


def norm_ops(p, x):
    # Layer norm with γ and β per position, over one axis and over two.
    b = x.shape[0]
    z = ops.layer_norm(ops.reshape(x, [b, 2, 2]), [2, 2], ops.reshape(p[0], [2, 2]), None)
    return ops.layer_norm(x, 4, p[0], p[1]) + ops.reshape(z, [b, 4])


OP_FORWARDS = {
    "smooth": (smooth_ops, [[4]], ["float32"]),
    "elementwise": (elementwise_ops, [[4]], ["float32", "float64"]),
    "table": (table_ops, [[4]], ["float32", "float64"]),
    "layout": (layout_ops, [[4, 4], [4, 4]], ["float32", "float64"]),
    "index": (index_ops, [[4], [3, 2]], ["float32", "float64"]),
    "image": (image_ops, [[4]], ["float32"]),
    "norm": (norm_ops, [[4], [4]], ["float32", "float64"]),
}


def forward_module(predict, shapes, dtype, input_shape=(4,)):
    rng = np.random.default_rng(7)
    defn = tlrs.ModuleDef(param_shapes=shapes, input_shapes=[list(input_shape)],
                          loss=lambda p, inputs: ops.sum(predict(p, inputs[0])),
                          init_params=[rng.uniform(-1, 1, s) for s in shapes],
                          param_names=[f"p{i}" for i in range(len(shapes))], predict=predict)
    return tlrs.instantiate_with_options(defn, dtype, None)


def linear_module(predict, dtype="float32"):
    return forward_module(predict, [[3, 4], [3]], dtype)


@pytest.mark.parametrize("name,dtype", [(n, dt) for n, (_, _, dts) in OP_FORWARDS.items() for dt in dts])
def test_op_mapping_matches_onnxruntime(name, dtype, tmp_path):
    predict, shapes, _ = OP_FORWARDS[name]
    assert_parity(forward_module(predict, shapes, dtype), predict, [4], dtype, tmp_path / "m.onnx")


def test_ops_a_forward_never_records_match_numpy(tmp_path):
    # broadcast_to, to_device and sum_to_shape come from gradients, so the IR is built by hand:
    # x [B, 1, 3] -> [B, 2, 3] -> summed to [2, 1] -> [2B, 2, 3] -> reshaped to [B, 12].
    b1, b2 = BatchDim(1), BatchDim(2)
    ir = [Node("input", [b1, 1, 3], "float64", index=0),
          Node("op", [b1, 2, 3], "float64", op="broadcast_to", inputs=[0]),
          Node("op", [b1, 2, 3], "float64", op="to_device", inputs=[1]),
          Node("op", [2, 1], "float64", op="sum_to_shape", inputs=[2]),
          Node("op", [b2, 2, 3], "float64", op="broadcast_to", inputs=[3]),
          Node("op", [b1, 12], "float64", op="reshape", inputs=[4])]
    model = build_model(ir, 5, [], [], 18)
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 4):
        x = sample([1, 3], batch, "float64")
        summed = np.broadcast_to(x, (batch, 2, 3)).sum(axis=0).sum(axis=1, keepdims=True)
        ref = np.broadcast_to(summed, (2 * batch, 2, 3)).reshape(batch, 12)
        assert_close(ref, sess.run(None, {"x": x})[0], "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_and_trunc_give_tlrs_bits(dtype):
    # Every pair of special values (b == 0, signed zeros, infinities, NaN) and a spread of
    # ordinary ones: the exported algorithm is exact step for step, so the bits match.
    special = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 7.0, -7.0, 1e-30, np.inf, -np.inf, np.nan]
    sa, sb = (m.ravel() for m in np.meshgrid(special, special))
    rng = np.random.default_rng(5)
    a = np.concatenate([sa, rng.uniform(-50, 50, 200)]).astype(dtype)
    b = np.concatenate([sb, rng.uniform(-5, 5, 200)]).astype(dtype)
    ir = [Node("input", [1, len(a)], dtype, index=0),
          Node("const", [len(b)], dtype, value=b),
          Node("op", [1, len(a)], dtype, op="floor_divide", inputs=[0, 1]),
          Node("op", [1, len(a)], dtype, op="trunc", inputs=[2]),
          Node("op", [1, len(a)], dtype, op="trunc", inputs=[0]),
          Node("op", [1, len(a)], dtype, op="add", inputs=[3, 4])]
    model = build_model(ir, 5, [], [], 18)
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = (ops.trunc(ops.floor_divide(tlrs.tensor(a), tlrs.tensor(b))) + ops.trunc(tlrs.tensor(a))).numpy()
    got = sess.run(None, {"x": a[None, :]})[0][0]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    kind = np.uint32 if dtype == "float32" else np.uint64
    assert np.array_equal(got[~nan].view(kind), want[~nan].view(kind))


def test_every_recorded_op_has_an_onnx_form_or_a_documented_refusal():
    from tlrs.interop.onnx_ops import EMITTERS, REFUSED

    recorded = set(tlrs._core._recorded_ops())
    # The table's ops are recorded ops too (the list comes from each op's record, op.rs).
    assert {name for name, *_ in tlrs._core._elementwise_table()} <= recorded
    for name in sorted(recorded):
        assert name in EMITTERS or name in REFUSED, f"{name}: add an emitter to onnx_ops.py or a reason to REFUSED"
    stale = sorted((set(EMITTERS) | set(REFUSED)) - recorded)
    assert not stale, f"onnx_ops.py maps ops no record has: {stale}"


def test_an_output_axis_of_twice_the_batch(tmp_path):
    def stacked(p, x):
        return ops.concat([x, x * ops.sum(p[1])], 0)

    module = linear_module(stacked)
    model = module_export(module, tmp_path / "m.onnx", sample([4], 3, "float32"))
    assert dims(model.graph.output[0]) == ["2*batch", 4]
    sess = session(tmp_path / "m.onnx")
    for batch in (1, 5):
        x = sample([4], batch, "float32", seed=batch)
        assert_close(stacked(module.params(), tlrs.tensor(x)).numpy(), sess.run(None, {"x": x})[0], "float32")


# Refusals.

def test_refuses_an_op_without_onnx_form_naming_it(tmp_path):
    def loss_as_output(p, x):
        return ops.cross_entropy(ops.linear(x, p[0], p[1]), np.arange(x.shape[0]) % 3)

    for dynamic in (True, False):
        with pytest.raises(OnnxExportError, match=r"op `cross_entropy` \(node %\d+\) has no ONNX form"):
            linear_module(loss_as_output).export_onnx(str(tmp_path / "m.onnx"), sample([4], 2, "float32"),
                                                      dynamic_batch=dynamic)
    assert not os.listdir(tmp_path)


def test_refuses_an_index_that_depends_on_the_batch_unless_static(tmp_path):
    def per_row(p, x):
        return ops.gather(x, 1, (np.arange(x.shape[0]) % 4)[:, None])

    module = linear_module(per_row)
    with pytest.raises(OnnxExportError, match=r"op `gather` \(node %\d+\) differs between the traces at batch 2 and 3 "
                                              r"\(attribute index of shape \[2, 1\] vs of shape \[3, 1\]\)"):
        module.export_onnx(str(tmp_path / "m.onnx"), sample([4], 3, "float32"))
    x = sample([4], 3, "float32")
    module.export_onnx(str(tmp_path / "m.onnx"), x, dynamic_batch=False)
    assert_close(per_row(module.params(), tlrs.tensor(x)).numpy(), session(tmp_path / "m.onnx").run(None, {"x": x})[0],
                 "float32")


def test_refuses_a_dim_that_is_not_a_multiple_of_the_batch(tmp_path):
    def one_more_row(p, x):
        return ops.concat([x, ops.reshape(p[0], [3, 4])], 0)

    with pytest.raises(OnnxExportError, match=r"op `concat` \(node %\d+\) .*shape \[5, 4\] vs \[6, 4\]\): every dim "
                                              r"must be fixed or a multiple of the batch size"):
        linear_module(one_more_row).export_onnx(str(tmp_path / "m.onnx"), sample([4], 2, "float32"))


def test_refuses_values_baked_into_the_trace(tmp_path):
    calls = itertools.count()

    def drifting(p, x):
        return ops.linear(x, p[0], p[1]) + float(next(calls))

    for dynamic, why in ((True, "baked into the trace"), (False, "predict is not deterministic")):
        with pytest.raises(OnnxExportError, match=rf"the const \(node %\d+\) differs .*{why}"):
            linear_module(drifting).export_onnx(str(tmp_path / "m.onnx"), sample([4], 2, "float32"),
                                                dynamic_batch=dynamic)


def test_refuses_a_module_without_predict_and_bad_options(tmp_path):
    defn = tlrs.ModuleDef(param_shapes=[[2]], input_shapes=[[2]], loss=lambda p, i: ops.sum(p[0] * i[0]))
    path = str(tmp_path / "m.onnx")
    with pytest.raises(OnnxExportError, match="has no `predict"):
        tlrs.instantiate_with_options(defn, "float32", None).export_onnx(path, sample([2], 2, "float32"))
    module, _, _ = small_model("mlp", "float32")
    for options, text in (({"opset": 17}, "opset must be an integer from 18"), ({"opset": True}, "got True")):
        with pytest.raises(OnnxExportError, match=text):
            module.export_onnx(path, sample([5], 2, "float32"), **options)
    for example in (np.float32(1.0), np.zeros([0, 5], np.float32)):
        with pytest.raises(OnnxExportError, match="leading, non-empty batch axis"):
            module.export_onnx(path, example)
    with pytest.raises(tlrs.TraceError, match="tracing predict raised ShapeError"):
        module.export_onnx(path, sample([6], 2, "float32"))
    assert not os.listdir(tmp_path)


def test_missing_onnx_package_is_a_clear_import_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError
    module, _, _ = small_model("mlp", "float32")
    with pytest.raises(ImportError, match=r"export_onnx needs the onnx package: install tlrs\[onnx\]") as info:
        module.export_onnx(str(tmp_path / "m.onnx"), sample([5], 2, "float32"))
    assert isinstance(info.value, OnnxUnavailableError)
    code = main(["export", "onnx", "mlp", str(tmp_path / "m.onnx")])
    assert_one_error(capsys.readouterr().err, code, "export: export_onnx needs the onnx package")
    assert not os.listdir(tmp_path)


# The atomic write.

def test_a_failed_write_leaves_the_target_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")
    module, _, _ = small_model("mlp", "float32")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx_export.os, "replace", fail)
    with pytest.raises(OSError, match="No space left on device") as info:
        module.export_onnx(str(target), sample([5], 2, "float32"))
    assert info.value.filename == str(target)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["m.onnx"]


def test_a_refused_export_leaves_the_target_and_a_good_one_replaces_it(tmp_path):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")
    with pytest.raises(OnnxExportError):
        linear_module(lambda p, x: ops.cross_entropy(x, [0, 1])).export_onnx(
            str(target), sample([4], 2, "float32"), dynamic_batch=False)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["m.onnx"]
    module, _, _ = small_model("mlp", "float32")
    module.export_onnx(str(target), sample([5], 2, "float32"))
    assert onnx.load(str(target)).graph.output[0].name == "y" and os.listdir(tmp_path) == ["m.onnx"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~umask  # the usual permissions


def test_a_missing_folder_is_named(tmp_path):
    module, _, _ = small_model("mlp", "float32")
    path = str(tmp_path / "nosuch" / "m.onnx")
    with pytest.raises(FileNotFoundError) as info:
        module.export_onnx(path, sample([5], 2, "float32"))
    assert info.value.filename == path


# `tlrs export onnx`.

@pytest.mark.parametrize("name", sorted(DEFAULT_MODELS))
def test_cli_exports_every_default_model(name, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    assert main(["export", "onnx", name, str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {path}: {name} (float32), ONNX opset 18, ") and "batch axis dynamic" in out
    defn = DEFAULT_MODELS[name]()
    module = tlrs.instantiate_with_options(defn, "float32", None)
    x = sample(defn.input_shapes[0], 3, "float32")
    if defn.input_dtypes[0] == "int64":  # gpt: token ids below its vocabulary
        x = np.random.default_rng(3).integers(0, defn.param_shapes[0][0], x.shape)
    assert_close(defn.predict(module.params(), tlrs.tensor(x)).numpy(), session(path).run(None, {"x": x})[0], "float32")


def test_cli_float64_with_a_fixed_batch(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    assert main(["export", "onnx", "mlp", str(path), "--dtype", "float64", "--batch", "2"]) == 0
    assert "batch axis 2" in capsys.readouterr().out
    model = onnx.load(str(path))
    assert dims(model.graph.input[0]) == [2, 7]
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE


@pytest.mark.parametrize("args,text", [
    (["nosuch"], "export: unknown model 'nosuch' (known: autoencoder, cnn, gpt, mlp"),
    (["mlp", "--dtype", "float16"], "export: --dtype: expected float64 or float32, got `float16`"),
    (["mlp", "--batch", "-1"], "export: --batch: expected a size from 0 to"),
    (["resnet", "--batch", "60000"], "of activations, more than the"),
    (["mlp", "--batch", "x"], "Invalid value for '--batch'"),
])
def test_cli_bad_model_or_arguments(args, text, tmp_path, capsys):
    code = main(["export", "onnx", args[0], str(tmp_path / "m.onnx"), *args[1:]])
    assert_one_error(capsys.readouterr().err, code, text)
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("args,text", [
    (["export", "tflite", "mlp", "m.onnx"], "export: unknown format 'tflite' (known: onnx)"),
    (["export", "onnx", "mlp"], "Missing argument 'OUT'"),
    (["export", "onnx", "mlp", "/nonexistent-folder/m.onnx"], "/nonexistent-folder/m.onnx: No such file or directory"),
])
def test_cli_bad_format_or_paths(args, text, capsys):
    code = main(args)
    assert_one_error(capsys.readouterr().err, code, text)


def test_cli_exit_code_in_a_subprocess(tmp_path):
    res = subprocess.run([sys.executable, "-m", "tlrs", "export", "onnx", "nosuch", str(tmp_path / "m.onnx")],
                         capture_output=True, text=True, timeout=60)
    assert_one_error(res.stderr, res.returncode, "export: unknown model 'nosuch'")
    assert res.stdout == ""


def test_int64_token_ids_are_a_graph_input(tmp_path):
    """The tlrs.nn GPT exported with int64 token ids as `x` (Gather from the embedding by the
    graph's ids): onnxruntime's logits match tlrs's at other batches and other ids."""
    from tlrs import nn
    from tlrs.models.nn_transformers import GPT, GPTConfig, lm_loss

    tlrs.manual_seed(4)
    model = GPT(GPTConfig(vocab=11, block=6, d_model=16, heads=2, layers=1, dtype="float32"))
    defn = nn.to_module_def(model, lm_loss, [[2, 6], [2, 6]], input_dtypes=["int64", "int64"])
    module = tlrs.instantiate_with_options(defn, "float32", None)
    ids = np.random.default_rng(0).integers(0, 11, (EXAMPLE_BATCH, 6))
    model_proto = module_export(module, tmp_path / "gpt.onnx", ids)
    assert model_proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64
    sess = session(tmp_path / "gpt.onnx")
    for batch in CHECK_BATCHES:
        x = np.random.default_rng(batch).integers(0, 11, (batch, 6))
        ref = module.defn.predict(module.params(), tlrs.tensor(x)).numpy()
        assert_close(ref, sess.run(None, {"x": x})[0], "float32")
    assert np.ptp(ref, axis=0).max() > 1e-3  # far above the 1e-5 tolerance: the ids matter


def test_comparisons_export_as_bool_tensors(tmp_path):
    """eq/ne/lt/le/gt/ge become ONNX comparisons (ne: Not(Equal)), a float32 operand against a
    float64 one compares in float64, and their casts back to floats follow; int64 against a
    float is refused by name."""
    def predict(p, x):
        h = x * p[0]
        q = p[0].to("float32")
        terms = [(h > 0.0), (h == p[0]), (h != p[0]), (h < p[0]), (h <= 0.25), (h >= q)]
        out = h
        for t in terms:
            out = out + t.to("float64")
        return out

    defn = tlrs.ModuleDef(param_shapes=[[4]], input_shapes=[[4]], loss=lambda p, i: ops.sum(predict(p, i[0])),
                          predict=predict, init_params=[np.array([0.5, -1.0, 1.0, 0.25])])
    module = tlrs.instantiate_with_options(defn, "float64", None)
    example = np.array([[1.0, 1.0, 1.0, 1.0], [-1.0, 2.0, 0.0, 1.0], [np.nan, 1.0, 1.0, 0.5]])
    module_export(module, tmp_path / "cmp.onnx", example)
    sess = session(tmp_path / "cmp.onnx")
    for x in (example, np.array([[2.0, -1.0, 0.5, 1.0]])):
        ref = predict(module.params(), tlrs.tensor(x)).numpy()
        got = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(np.isnan(ref), np.isnan(got))
        np.testing.assert_allclose(ref[~np.isnan(ref)], got[~np.isnan(got)], rtol=0, atol=0)

    # int64 inputs compare too (a Python float meets them as an int64 constant).
    def by_ids(p, ids):
        return p[0] * (ids > 2.5).to("float64") + (ids == 1).to("float64")

    defn = tlrs.ModuleDef(param_shapes=[[4]], input_shapes=[[4]], loss=lambda p, i: ops.sum(by_ids(p, i[0])),
                          predict=by_ids, init_params=[np.array([0.5, -1.0, 1.0, 0.25])])
    module = tlrs.instantiate_with_options(defn, "float64", None)
    ids = np.array([[0, 1, 2, 3], [4, 3, 1, 0]])
    module_export(module, tmp_path / "ids.onnx", ids)
    ref = by_ids(module.params(), tlrs.tensor(ids)).numpy()
    np.testing.assert_array_equal(session(tmp_path / "ids.onnx").run(None, {"x": ids})[0], ref)
