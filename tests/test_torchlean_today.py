"""TorchLean's newer runtime names and flags (its 2026-07 API) beside the seed's: `--device auto`,
the named future devices, `--show-backend`, `--k=v`, repeated flags, `ExecConfig.to_options`
refusing a device without a runtime profile, and the renamed instantiators."""

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import ops
from tlrs.config import FUTURE_DEVICES, ExecConfig, Options
from tlrs.errors import ArgError
from tlrs.instantiate import (
    forward_with_params,
    instantiate_configured,
    instantiate_float,
    instantiate_float_with_init,
    instantiate_float_with_plan,
)


def parse(*args):
    return ExecConfig.parse_and_strip(list(args))


def test_device_auto_picks_cuda_only_when_usable_and_says_so():
    cfg, rest = parse("--device", "auto", "x")
    assert rest == ["x"] and cfg.device_request == "auto"
    assert cfg.use_gpu == tlrs.cuda.is_available()
    line = next(x for x in cfg.log_lines() if "device:" in x)
    assert line == f"[tlrs] device: {'cuda' if cfg.use_gpu else 'cpu'} (auto: " + \
        ("CUDA is usable)" if cfg.use_gpu else "no usable CUDA device)")
    assert parse("--device=auto")[0].device_request == "auto"
    # a later device flag wins, as for the other spellings
    assert parse("--device", "auto", "--cpu")[0].device_request == ""


@pytest.mark.parametrize("name", FUTURE_DEVICES)
def test_named_future_devices_parse_then_refuse_with_torchleans_message(name):
    cfg, _ = parse(f"--device={name}", "--show-backend")
    assert cfg.device == name and not cfg.use_gpu
    assert any(f"device: {name}" in x for x in cfg.log_lines())
    with pytest.raises(ArgError) as err:
        cfg.to_options()
    assert str(err.value) == (f"device `{name}` has no maintained runtime profile; use a programmatic "
                              "backend profile")
    with pytest.raises(ArgError, match="no maintained runtime profile"):
        Options().to_device(name)


def test_an_unknown_device_still_names_every_choice():
    with pytest.raises(ArgError, match=r"unknown --device gpu \(supported: auto \| cpu \| cuda \| cuda:N \| rocm"):
        parse("--device", "gpu")


def test_show_backend_describes_the_run_and_is_stripped():
    cfg, rest = parse("--show-backend", "--fast-kernels", "y")
    assert cfg.show_backend and rest == ["y"]
    shown = [x for x in cfg.log_lines() if "show-backend" in x]
    assert shown == ["[tlrs] show-backend: eager backend on CPU: tlrs kernels; fast (FMA, within stated tolerances)"]
    plain, _ = parse("y")
    assert not any("show-backend" in x for x in plain.log_lines())


def test_flags_take_either_form_and_refuse_repeats():
    assert parse("--backend=compiled")[0].backend == parse("--backend", "compiled")[0].backend
    with pytest.raises(ArgError, match="duplicate flag"):
        parse("--backend", "eager", "--backend=compiled")


def test_run_with_show_backend_and_a_future_device(capsys):
    from tlrs.cli import main

    assert main(["run", "hello", "--show-backend", "--cpu"]) == 0
    out = capsys.readouterr().out
    assert "[tlrs] show-backend: eager backend on CPU" in out
    assert main(["run", "hello", "--device", "metal"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("device `metal` has no maintained runtime profile; use a programmatic backend profile")


def _defn(plan=None):
    return tlrs.ModuleDef([[3]], [[3]], lambda ps, xs: ops.sum(ps[0] * xs[0]),
                          init_params=None if plan else [np.array([1.0, 2.0, 3.0])], init_plan=plan)


def test_the_renamed_instantiators_are_the_seed_ones():
    x = [np.array([1.0, 1.0, 2.0])]
    a = instantiate_configured(_defn(), "float64", None)
    b = tlrs.instantiate_with_options(_defn(), "float64", None)
    assert a.forward(x).item() == b.forward(x).item() == 9.0
    plan = tlrs.init.Plan([[3]], [tlrs.init.FloatInit.uniform(-1.0, 1.0, 7)])
    p = instantiate_float_with_plan(_defn(plan), None, plan)
    q = tlrs.instantiate_float_with_runtime_plan_options(_defn(plan), None, plan)
    assert p.params()[0].numpy().tobytes() == q.params()[0].numpy().tobytes()
    r = instantiate_float_with_init(_defn(plan), None, [tlrs.init.FloatInit.uniform(-1.0, 1.0, 7)])
    assert r.params()[0].numpy().tobytes() == p.params()[0].numpy().tobytes()
    # instantiate_float: the runtime plan when the definition has one, else its initial values
    assert instantiate_float(_defn(plan)).params()[0].numpy().tobytes() == p.params()[0].numpy().tobytes()
    assert instantiate_float(_defn()).params()[0].numpy().tolist() == [1.0, 2.0, 3.0]


def test_forward_with_params_evaluates_another_definition_on_live_parameters():
    m = instantiate_float(_defn())
    other = tlrs.ModuleDef([[3]], [[3]], lambda ps, xs: ops.sum(ps[0] * ps[0] + xs[0]))
    got = forward_with_params(other, None, m.params(), [np.array([0.5, 0.5, 0.5])])
    assert got.item() == 1.0 + 4.0 + 9.0 + 1.5
    assert not got.requires_grad
