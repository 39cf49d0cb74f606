"""ExecConfig and Options: value parsers, the consumption order, the default-dtype
policy, `--device` as an alias, `to_options`, the five log lines, and the executability checks.
"""

import pytest

from tlrs.config import (
    Backend,
    ExecConfig,
    GpuMatmulPrecision,
    Options,
    parse_backend,
    parse_device,
    parse_fast_gpu_matmul_precision,
    requests_cuda,
)
from tlrs.dtype import FLOAT, FLOAT32, FLOAT32_FP32, DType
from tlrs.errors import ArgError

UNKNOWN_BACKEND = "unknown --backend {} (supported: eager | compiled)"
UNKNOWN_PRECISION = "unknown --fast-gpu-matmul-precision {} (supported: fp32 | fp64)"
DEVICES = "auto | cpu | cuda | cuda:N | rocm | metal | wasm | tpu | trainium | custom | external"
UNKNOWN_DEVICE = "unknown --device {} (supported: " + DEVICES + ")"
MISSING_DEVICE = "missing value after --device (supported: " + DEVICES + ")"
EXEC_LINE = (
    "[tlrs] Float32 mode: ieee754exec: executable IEEE-754 binary32 kernel"
    " (bit-level; includes NaN/Inf)"
)


def message(fn, *args) -> str:
    with pytest.raises(ArgError) as info:
        fn(*args)
    return str(info.value)


def parse(*args: str):
    return ExecConfig.parse_and_strip(list(args))


def parse_error(*args: str) -> str:
    return message(ExecConfig.parse_and_strip, list(args))


# --- value parsers ------------------------------------------------------------------------------

def test_parse_backend():
    assert parse_backend("eager") == "eager" and parse_backend("compiled") == "compiled"
    assert ExecConfig.parse_backend("compiled") is Backend.COMPILED
    for bad in ["Eager", "COMPILED", "", "jit", "--cuda"]:
        assert message(parse_backend, bad) == UNKNOWN_BACKEND.format(bad)


@pytest.mark.parametrize(
    "value,expected",
    [("fp32", "fp32"), ("float32", "fp32"), ("fp64", "fp64"), ("float64", "fp64"),
     ("double", "fp64")],
)
def test_parse_precision(value, expected):
    assert parse_fast_gpu_matmul_precision(value) == expected
    assert ExecConfig.parse_fast_gpu_matmul_precision(value) == expected


@pytest.mark.parametrize("value", ["tf32", "FP32", "f32", "float", "bf16", ""])
def test_parse_precision_rejects(value):
    assert message(parse_fast_gpu_matmul_precision, value) == UNKNOWN_PRECISION.format(value)


def test_parse_device():
    assert parse_device("cpu") == (False, 0)
    assert parse_device("cuda") == (True, 0)
    assert parse_device("cuda:0") == (True, 0)
    assert parse_device("cuda:3") == (True, 3)
    for bad in ["CPU", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1.0", "auto", "tpu", ""]:
        assert message(parse_device, bad) == UNKNOWN_DEVICE.format(bad)


# --- defaults and the default-dtype policy -------------------------------------------------------

def test_record_defaults():
    cfg = ExecConfig()
    assert (cfg.dtype, cfg.backend, cfg.use_gpu, cfg.fast_kernels) == (FLOAT, "eager", False, False)
    assert (cfg.fast_gpu_matmul_precision, cfg.device_index, cfg.device) == ("fp32", 0, "cpu")


def test_parser_defaults():
    cfg, rest = parse()
    assert rest == []
    assert cfg == ExecConfig(FLOAT32, Backend.EAGER, False, False, GpuMatmulPrecision.FP32, 0)


@pytest.mark.parametrize(
    "args,dtype",
    [
        (["--cuda"], FLOAT),
        (["--cuda", "--cpu"], FLOAT),  # --cpu wins the device, the raw --cuda still sets the dtype
        (["--cpu", "--cuda", "--cpu"], FLOAT),
        (["--cpu"], FLOAT32),
        (["--device=cuda"], FLOAT),
        (["--device", "cuda"], FLOAT),
        (["--device", "cuda:1"], FLOAT),
        (["--device=cuda:2", "--cpu"], FLOAT),
        (["--device", "cpu"], FLOAT32),
        (["--cuda=true"], FLOAT32),  # not the exact token
        (["--gpu"], FLOAT32),
        (["--cuda", "--dtype", "float32"], FLOAT32),  # an explicit dtype wins
        (["--float32-mode", "fp32", "--cuda"], FLOAT32_FP32),
    ],
)
def test_default_dtype_policy(args, dtype):
    assert parse(*args)[0].dtype == dtype


def test_default_policy_reads_the_raw_list():
    assert requests_cuda(["--out", "--cuda"])  # even as another flag's value
    assert requests_cuda(["--device", "cuda:7"])
    assert not requests_cuda(["--device"]) and not requests_cuda(["cuda", "--device=cpu"])
    # here --cuda is --backend's value: the policy still sees it, then --backend fails
    assert parse_error("--backend", "--cuda") == UNKNOWN_BACKEND.format("--cuda")


def test_default_policy_only_in_parse_and_strip():
    cfg, _ = ExecConfig.parse_and_strip_with_default_dtype(["--cuda"], FLOAT32)
    assert (cfg.dtype, cfg.use_gpu) == (FLOAT32, True)
    cfg, _ = ExecConfig.parse_and_strip_with_default_dtype([], FLOAT)
    assert cfg.dtype == FLOAT


# --- consumption order --------------------------------------------------------------------

def test_everything_consumed_and_rest_keeps_order():
    args = ["a", "--cuda", "b", "--backend=compiled", "c", "--fast-kernels", "d", "--dtype",
            "float", "--fast-gpu-matmul-precision", "double", "e", "--fast-kernels"]
    cfg, rest = parse(*args)
    assert rest == ["a", "b", "c", "d", "e"]
    assert cfg == ExecConfig(FLOAT, Backend.COMPILED, True, True, GpuMatmulPrecision.FP64, 0)


def test_backend_swallows_following_cuda():
    assert parse_error("--backend", "--cuda") == (
        "unknown --backend --cuda (supported: eager | compiled)"
    )


def test_dtype_swallows_following_flag():
    assert parse_error("--dtype", "--backend", "eager") == (
        "unknown --dtype --backend (supported: float | real | complex | fp32 | ieee754exec"
        " | f32:<mode> | c32:<mode>)"
    )


def test_first_error_wins_in_order():
    # dtype errors before backend errors
    assert parse_error("--backend", "x", "--dtype", "y").startswith("unknown --dtype y ")
    assert parse_error("--backend", "x", "--dtype") == "--dtype: expected a value"
    # backend before precision
    assert parse_error("--fast-gpu-matmul-precision", "tf32", "--backend", "x") == (
        UNKNOWN_BACKEND.format("x")
    )
    # precision before the device pass
    assert parse_error("--device", "tpu", "--fast-gpu-matmul-precision", "x") == (
        UNKNOWN_PRECISION.format("x")
    )
    # backend duplicate before precision value
    assert parse_error("--backend=eager", "--backend=eager", "--fast-gpu-matmul-precision=x") == (
        "--backend: duplicate flag"
    )


def test_value_flag_errors():
    assert parse_error("--backend") == "--backend: expected a value"
    assert parse_error("--backend", "eager", "--backend", "eager") == "--backend: duplicate flag"
    assert parse_error("--fast-gpu-matmul-precision") == (
        "--fast-gpu-matmul-precision: expected a value"
    )
    assert parse_error("--fast-gpu-matmul-precision=fp32", "--fast-gpu-matmul-precision=fp64") == (
        "--fast-gpu-matmul-precision: duplicate flag"
    )
    assert parse_error("--dtype", "f32", "--float32-mode", "fp32") == (
        "--dtype and --float32-mode are mutually exclusive (pick one)"
    )
    assert parse_error("--float32-mode", "fp64") == (
        "unknown float32 mode fp64 (supported: fp32 | ieee754exec)"
    )


@pytest.mark.parametrize(
    "args,use_gpu,index",
    [
        (["--cuda", "--cpu"], False, 0),
        (["--cpu", "--cuda"], True, 0),
        (["--cuda", "--cuda"], True, 0),
        (["--device", "cuda:3", "--cpu"], False, 0),
        (["--cpu", "--device=cuda:2"], True, 2),
        (["--device=cuda:2", "--cuda"], True, 0),
        (["--cuda", "--device", "cpu"], False, 0),
        (["--device=cuda:1", "--device", "cuda:4"], True, 4),
    ],
)
def test_last_device_choice_wins(args, use_gpu, index):
    cfg, rest = parse(*args)
    assert (cfg.use_gpu, cfg.device_index, rest) == (use_gpu, index, [])


def test_fast_kernels_repeats_and_unrecognised_forms_stay():
    cfg, rest = parse("--fast-kernels", "--fast-kernels")
    assert cfg.fast_kernels and rest == []
    cfg, rest = parse("--fast-kernels=0", "--cuda=true", "--cpu=1", "--device-x", "cuda")
    assert (cfg.fast_kernels, cfg.use_gpu) == (False, False)
    assert rest == ["--fast-kernels=0", "--cuda=true", "--cpu=1", "--device-x", "cuda"]


def test_tf32_is_off_unless_given():
    cfg, rest = parse("a", "--tf32", "b")
    assert cfg.tf32 and rest == ["a", "b"]
    cfg, rest = parse("--tf32=1")
    assert not cfg.tf32 and rest == ["--tf32=1"]
    assert not parse()[0].tf32


def test_device_errors():
    assert parse_error("--device") == MISSING_DEVICE
    assert parse_error("--cuda", "--device") == MISSING_DEVICE
    assert parse_error("--device", "tpu0") == UNKNOWN_DEVICE.format("tpu0")
    assert parse_error("--device=") == UNKNOWN_DEVICE.format("")
    assert parse_error("--device", "--cuda") == UNKNOWN_DEVICE.format("--cuda")


def test_device_value_is_consumed_with_the_flag():
    cfg, rest = parse("x", "--device", "cuda:1", "y")
    assert (cfg.use_gpu, cfg.device_index, cfg.device, rest) == (True, 1, "cuda:1", ["x", "y"])


def test_input_list_untouched():
    args = ["--cuda", "--backend", "compiled", "x"]
    ExecConfig.parse_and_strip(args)
    assert args == ["--cuda", "--backend", "compiled", "x"]


def test_proof_only_dtype_parses_then_fails_check():
    cfg, _ = parse("--dtype", "fp32")
    assert cfg.dtype == FLOAT32_FP32
    with pytest.raises(ArgError, match="proof-only"):
        cfg.dtype.check_runnable()


# --- construction, to_options, Options ------------------------------------------------------------

def test_construction_accepts_names():
    cfg = ExecConfig(dtype="f32", backend="compiled", fast_gpu_matmul_precision="double")
    assert (cfg.dtype, cfg.backend, cfg.fast_gpu_matmul_precision) == (FLOAT32, "compiled", "fp64")
    with pytest.raises(ArgError):
        ExecConfig(backend="jit")
    with pytest.raises(ValueError):
        ExecConfig(device_index=-1)
    with pytest.raises(TypeError):
        ExecConfig(dtype=None)


def test_to_options():
    cfg, _ = parse("--cuda", "--backend", "compiled", "--fast-kernels",
                   "--fast-gpu-matmul-precision", "fp64")
    opts = cfg.to_options(seed=17)
    assert (opts.backend, opts.seed) == ("compiled", 17)
    assert (opts.use_gpu, opts.fast_kernels) == (True, True)
    assert opts.fast_gpu_matmul_precision == "fp64"
    assert (opts.requires_grad_by_default, opts.track_gradients) == (True, True)
    assert ExecConfig().to_options().seed == 0
    assert parse("--device", "cuda:2")[0].to_options().device == "cuda:2"


def test_options_defaults():
    opts = Options()
    assert opts.backend == "eager"
    assert opts.requires_grad_by_default is True
    assert opts.seed == 0
    assert opts.fast_kernels is False
    assert opts.fast_gpu_matmul_precision == "fp32"
    assert opts.use_gpu is False
    assert opts.track_gradients is True
    assert (opts.device_index, opts.device) == (0, "cpu")


def test_options_device_and_validation():
    assert Options().to_device("cuda").device == "cuda"
    assert Options().to_device("cuda:1").device == "cuda:1"
    assert Options(use_gpu=True).to_device("cpu").use_gpu is False
    assert message(Options().to_device, "metal0") == UNKNOWN_DEVICE.format("metal0")
    assert Options(backend="compiled").backend is Backend.COMPILED
    with pytest.raises(ValueError):
        Options(seed=-1)
    with pytest.raises(TypeError):
        Options(seed=1.5)
    assert Options(seed=2**70).seed == 2**70


# --- log -----------------------------------------------------------------------------------

def test_log_default(capsys):
    parse()[0].log()
    assert capsys.readouterr().out.splitlines() == [
        EXEC_LINE,
        "[tlrs] backend: eager",
        "[tlrs] device: cpu",
        "[tlrs] fastKernels: false",
        "[tlrs] fastGpuMatmulPrecision: fp32",
    ]


def test_log_cuda_compiled(capsys):
    parse("--cuda", "--backend=compiled", "--fast-kernels",
          "--fast-gpu-matmul-precision", "double")[0].log()
    assert capsys.readouterr().out == (
        "[tlrs] dtype: float (IEEE-754 binary64)\n"
        "[tlrs] backend: compiled\n"
        "[tlrs] device: cuda\n"
        "[tlrs] fastKernels: true\n"
        "[tlrs] fastGpuMatmulPrecision: fp64\n"
    )


def test_log_complex_and_ordinal(capsys):
    parse("--dtype", "c32:fp32", "--device", "cuda:1")[0].log()
    assert capsys.readouterr().out.splitlines() == [
        "[tlrs] dtype: complex (complex over float32)",
        "[tlrs] Float32 mode: fp32: proof semantics (round-on-ℝ), finite-only; no NaN/Inf",
        "[tlrs] backend: eager",
        "[tlrs] device: cuda:1",
        "[tlrs] fastKernels: false",
        "[tlrs] fastGpuMatmulPrecision: fp32",
    ]


def test_dtype_is_a_dtype():
    assert isinstance(parse("--dtype", "double")[0].dtype, DType)
