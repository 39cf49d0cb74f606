"""The module API (the reference's `ScalarModule`): instantiation, and forward, backward and
updates dispatched to the eager or the compiled backend. Definitions are in module_def.py, the
training loops in module_training.py, checkpoints in module_checkpoint.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _core, optim
from ._core import Graph, Plan, Tensor
from .autograd import grad, no_grad
from .cast import cast_params
from .compiled import CompiledLoss
from .config import Backend, Options
from .errors import DTypeError, ShapeError
from .kernels import kernel_settings
from .module_checkpoint import TrainProgress, load_for_module, save_module
from .module_def import (
    ModuleDef,
    _check_plan,
    _check_shapes,
    _show,
    format_float,
)
from .module_training import (
    Record,
    Update,
    check_finite_losses,
    check_optimizer,
    clipped_update,
    train_eager,
    train_native,
)
from .tensor import tensor

__all__ = [
    "Module", "ModuleDef", "TrainProgress", "check_finite_losses", "format_float", "instantiate_float_with_runtime_init_options",
    "instantiate_float_with_runtime_plan_options", "instantiate_with_options",
]

Inputs = Sequence[Any]


def _check_defn(defn: Any, where: str) -> None:
    if not isinstance(defn, ModuleDef):
        raise TypeError(f"{where}: expected a tlrs ModuleDef, got {type(defn).__name__}")


def _check_options(opts: Options) -> None:
    """Refuse what cannot run: a CUDA device that is not usable here."""
    if not isinstance(opts, Options):
        raise TypeError(f"expected tlrs Options, got {type(opts).__name__}")
    if opts.use_gpu:
        # Raises CudaUnavailableError (naming the missing library or device) when unusable.
        _core.full([], 0.0, "float64", device=opts.device)


class Module:
    """A live module (the reference's `ScalarModule`): current parameters plus the definition.

    It follows its `Options`: forward, backward and updates run with exactly its kernel settings
    (`fast_kernels`, `fast_gpu_matmul_precision`, `tf32`) on the calling thread, whatever that
    thread's own settings are, and restore them afterwards.
    Args: defn: the definition (loss, shapes, flags, names); params: the initial tensors, already
    in the module's dtype (float32 or float64, one for all); opts: runtime options (default
    `Options()`). Prefer the `instantiate_*` functions.
    Raises: ValueError: parameters of the wrong count or shape;
    DTypeError: mixed or unsupported dtypes; CudaUnavailableError: `opts.use_gpu` where CUDA
    cannot be used.
    """

    def __init__(
        self, defn: ModuleDef, params: Sequence[Tensor], opts: Options | None = None
    ) -> None:
        _check_defn(defn, "Module")
        self.opts = Options() if opts is None else opts
        _check_options(self.opts)
        self.defn = defn
        params = list(params)
        first = params[0] if params else None
        self.dtype: str = first.dtype if isinstance(first, Tensor) else "float64"
        self._params: list[Tensor] = []
        self.set_params(params)
        self._compiled: CompiledLoss | None = None
        if self.opts.backend is Backend.COMPILED:
            self._compiled = CompiledLoss(defn.loss, defn.param_shapes, defn.input_shapes, self.dtype,
                                          defn.input_dtypes, self.opts.device)

    @property
    def requires_grad(self) -> tuple[bool, ...]:
        """Per-parameter flags; parameters with False are never updated."""
        return tuple(self.defn.requires_grad or ())

    @property
    def param_names(self) -> tuple[str, ...]:
        """The parameters' names, in order (used by `save`)."""
        return tuple(self.defn.param_names or ())

    def params(self) -> list[Tensor]:
        """The current parameter values, in order (tensors of their own: a later update leaves
        them as they are)."""
        return self._shared_params()

    def _shared_params(self) -> list[Tensor]:
        # New handles on the same buffers: the module's own tensor objects never leave it, so
        # `_sgd_step` may update them in place exactly when no handed-out tensor shares a buffer.
        return [p.detach() for p in self._params]

    def set_params(self, ps: Sequence[Tensor]) -> None:
        """Replace every parameter value.

        Raises: ValueError: a wrong count; ShapeError: a wrong shape; DTypeError: a dtype other
        than the module's or a non-Tensor.
        """
        ps, want = list(ps), len(self.defn.param_shapes)
        if len(ps) != want:
            raise ValueError(f"set_params: expected {want} tensors, got {len(ps)}")
        for i, p in enumerate(ps):
            if not isinstance(p, Tensor):
                raise DTypeError(
                    f"set_params: parameter {i} must be a Tensor, got {type(p).__name__}")
            if p.dtype != self.dtype:
                raise DTypeError(
                    f"set_params: parameter {i} has dtype {p.dtype}, expected {self.dtype}")
        _check_shapes(ps, self.defn.param_shapes, "set_params: parameter")
        self._params = [p.detach().to(self.opts.device) for p in ps]

    def _inputs(self, xs: Inputs) -> list[Tensor]:
        shapes = self.defn.input_shapes
        if isinstance(xs, (Tensor, np.ndarray)) or len(xs) != len(shapes):
            count = "a single tensor" if isinstance(xs, (Tensor, np.ndarray)) else f"{len(xs)}"
            raise ValueError(
                f"expected {len(shapes)} inputs with shapes {_show(shapes)}, got {count}")
        out = []
        kinds = self.defn.input_dtypes or [None] * len(shapes)
        for i, (x, s, kind) in enumerate(zip(xs, shapes, kinds, strict=True)):
            want = kind or self.dtype
            if not isinstance(x, Tensor):
                arr = np.asarray(x)
                if want == "int64" and arr.dtype.kind not in "iu":
                    raise DTypeError(f"input {i}: expected integer values (token ids, labels), got {arr.dtype}")
                x = tensor(arr, dtype=want)
            if x.dtype != want:
                raise DTypeError(f"input {i} has dtype {x.dtype}, expected {want}"
                                 + ("" if kind else " (the module's dtype)"))
            if kind == "int64":
                out.append(x)  # index operands stay on the host (the ops read them there)
                continue
            x = x.to(self.opts.device)
            got = tuple(x.shape)
            if got != s and (len(got) != len(s) + 1 or got[1:] != s):
                raise ShapeError(f"input {i} has shape {list(got)}, expected {list(s)} "
                                 "(optionally with a leading batch axis)")
            out.append(x)
        return out

    def _loss(self, params: list[Tensor], xs: Inputs) -> Tensor:
        loss = self.defn.loss(params, self._inputs(xs))
        if not isinstance(loss, Tensor) or list(loss.shape) != []:
            got = list(loss.shape) if isinstance(loss, Tensor) else type(loss).__name__
            raise ValueError(f"the loss must return a scalar Tensor (shape []), got {got}")
        return loss

    def forward(self, xs: Inputs) -> Tensor:
        """The scalar loss for inputs `xs` (parameters unchanged).

        Raises: ValueError/ShapeError: wrong input count or shape; DTypeError: wrong input dtype.
        """
        if self._compiled is not None:
            graph, xs_t = self._graph(xs)
            with self._settings():
                return graph.evaluate(self._params, xs_t, self.opts.fast_kernels)
        with self._settings(), no_grad():
            return self._loss(self._shared_params(), xs)

    def _graph(self, xs: Inputs) -> tuple[Graph, list[Tensor]]:
        """The compiled backend's graph for the shapes of inputs `xs`, and `xs` as checked
        tensors (what `forward` and `_value_and_grads` replay there)."""
        assert self._compiled is not None
        xs_t = self._inputs(xs)
        return self._compiled.graph_for([x.shape for x in xs_t]), xs_t

    def _value_and_grads(self, xs: Inputs) -> tuple[Tensor, list[Tensor]]:
        """(loss, one gradient per parameter); frozen parameters get zeros."""
        if self._compiled is not None:
            graph, xs_t = self._graph(xs)
            with self._settings():
                return graph.loss_and_grads(self._params, list(self.requires_grad), xs_t,
                                            self.opts.fast_kernels)
        leaves = []
        for p, flag in zip(self._params, self.requires_grad, strict=True):
            leaf = p.detach()
            if flag:
                leaf.requires_grad = True
            leaves.append(leaf)
        with self._settings():
            loss = self._loss(leaves, xs)
            tracked = [q for q, flag in zip(leaves, self.requires_grad, strict=True) if flag]
            found = iter(grad(loss, tracked, allow_unused=True)
                         if tracked and loss.requires_grad else [])
        grads = [next(found, None) if flag else None for flag in self.requires_grad]
        # Zeros only where no gradient came (frozen or unused parameters): building one per
        # parameter every step cost a ResNet-18 step a pass over 44 MB.
        return loss.detach(), [
            _core.full(list(p.shape), 0.0, self.dtype, device=self.opts.device) if g is None else g
            for p, g in zip(self._params, grads, strict=True)]

    def _settings(self) -> Any:
        """This module's kernel settings (fast CPU kernels, GPU matmul precision, TF32) on the
        calling thread for the duration of a call, whatever the thread's own settings are."""
        return kernel_settings(self.opts.fast_kernels,
                               str(self.opts.fast_gpu_matmul_precision) == "fp64", self.opts.tf32)

    def backward(self, xs: Inputs) -> list[Tensor]:
        """d(loss)/d(param) for each parameter, in order; zeros for `requires_grad=False` ones.

        Raises: as `forward`.
        """
        return self._value_and_grads(xs)[1]

    def step(self, lr: float, xs: Inputs) -> None:
        """One built-in SGD update `p <- p - lr*g` of the trainable parameters.

        Raises: as `forward`.
        """
        self._sgd_step(lr, self._value_and_grads(xs)[1])

    def _sgd_step(self, lr: float, grads: list[Tensor]) -> None:
        # `p - lr*g` in one native pass per parameter, into the parameter's own buffer unless a
        # tensor handed out earlier (`params()`, `state_dict()`, a NumPy view) still shares it.
        hyper = {"lr": float(lr)}
        with self._settings():
            for p, g, flag in zip(self._params, grads, self.requires_grad, strict=True):
                if flag:
                    _core.optim_update_("sgd", hyper, 1, p, g, [])

    def init_optim(self, opt: optim.Optimizer) -> optim.OptimState:
        """`opt.init` on the current parameters."""
        check_optimizer(opt, "init_optim")
        return opt.init(self._params)

    def step_with(
        self, opt: optim.Optimizer, state: optim.OptimState, xs: Inputs
    ) -> optim.OptimState:
        """One update by `opt` from the gradients at `xs`; returns the new optimizer state.

        Raises: as `forward`, and ValueError: a state of another optimizer or shape.
        """
        return self._optim_step(opt, state, self._value_and_grads(xs)[1])

    def _optim_step(
        self, opt: optim.Optimizer, state: optim.OptimState, grads: list[Tensor]
    ) -> optim.OptimState:
        check_optimizer(opt, "step")
        if not isinstance(state, optim.OptimState):
            raise TypeError(f"step: expected an OptimState, got {type(state).__name__}")
        with self._settings():
            self._params, state = opt.step(state, self._params, grads, self.requires_grad)
        return state

    def train_sgd(
        self, lr: float, steps: int, samples: Sequence[Inputs], log_every: int = 1
    ) -> None:
        """`steps` SGD updates cycling through `samples`, printing `step N: loss=<v>` (the loss
        before the update) when `log_every` divides N (never when it is 0).

        Raises: ValueError: `trainCycleSGD: empty dataset`, negative counts, or input errors.
        """
        self._run_loop(samples, steps, log_every, "trainCycleSGD", lambda: optim.sgd(lr), None,
                       lambda _, grads: self._sgd_step(lr, grads))

    def train_with(self, opt: optim.Optimizer, state: optim.OptimState, steps: int,
                   samples: Sequence[Inputs], log_every: int = 1,
                   check_finite: bool = False) -> optim.OptimState:
        """As `train_sgd` with `opt`; returns the final optimizer state.

        Ctrl-C raises `tlrs.Interrupted` as in `train_steps`.
        Raises: ValueError: `trainCycleOptim: empty dataset`, negative counts, or input errors;
        NonFiniteLossError (with `check_finite`): a NaN or infinite loss, after its step.
        """
        out = self._run_loop(samples, steps, log_every, "trainCycleOptim", lambda: opt, state,
                             lambda st, grads: self._optim_step(opt, st, grads), check_finite)[0]
        assert isinstance(out, optim.OptimState)
        return out

    def train_steps(self, opt: optim.Optimizer, state: optim.OptimState,
                    batches: Sequence[Inputs], check_finite: bool = False,
                    record: Record | None = None, *, clip: float | None = None,
                    lrs: Sequence[float] | None = None, accumulate: int = 1
                    ) -> tuple[optim.OptimState, list[float]]:
        """One update by `opt` per batch, in order, printing nothing; returns the new state and
        each step's loss before its update (the loss its gradients came from: one forward per
        step). The compiled backend runs all of them in one native call.

        Ctrl-C raises `tlrs.Interrupted` (a KeyboardInterrupt) between two whole steps: the
        module holds the last completed step's parameters, the exception its optimizer state
        (`.state`) and losses (`.losses`). `record(state, losses)`, when given, is called inside
        each update's commit (each step; once per native call on the compiled backend) with
        the new state and the new steps' losses, so a signal never separates the parameters
        from what it saw.
        Raises: ValueError: an empty `batches`, a state of another optimizer, or input errors;
        NonFiniteLossError (with `check_finite`): a NaN or infinite loss, after its step.

        `clip`: each step's trainable gradients are scaled to joint 2-norm at most `clip`
        (`tlrs.nn.clip_grad_norm`, PyTorch's `clip_grad_norm_` formula); `lrs`: the learning
        rate of each step (one per batch, e.g. a schedule's `get_last_lr()` sequence). Both run
        inside the compiled backend's native loop too, with the eager loop's bits.
        `accumulate` k: each step averages the losses and gradients of k consecutive batches
        (a left fold, then one division by k), so `batches` holds k per step.
        """
        if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
            raise ValueError(f"train_steps: accumulate must be a positive int, got {accumulate!r}")
        if len(batches) % accumulate:
            raise ValueError(f"train_steps: {len(batches)} batches do not make whole steps of {accumulate}")
        steps = len(batches) // accumulate
        if clip is not None and not (isinstance(clip, (int, float)) and clip > 0):
            raise ValueError(f"train_steps: clip must be a positive max norm, got {clip!r}")
        if lrs is not None and len(lrs) < steps:
            raise ValueError(f"train_steps: expected a learning rate per step ({steps}), got {len(lrs)}")
        if lrs is not None and "lr" not in opt.hyper:
            raise ValueError(f"train_steps: a learning-rate schedule needs an optimizer with an lr, got {opt!r}")
        if clip is None and lrs is None and accumulate == 1:
            return self._run_loop(batches, len(batches), 0, "train_steps", lambda: opt, state,
                                  lambda st, grads: self._optim_step(opt, st, grads), check_finite,
                                  record)
        if self._compiled is not None:
            return self._train_native(batches, steps, 0, "train_steps", opt, state, check_finite,
                                      record, clip=clip, lrs=lrs, accumulate=accumulate)
        update = clipped_update(self, opt, clip, lrs)
        return train_eager(self, batches, steps, 0, "train_steps", update, state, check_finite, record,
                           accumulate)

    def _run_loop(self, samples: Sequence[Inputs], steps: int, log_every: int, name: str,
                  native_opt: Callable[[], optim.Optimizer], state: Any, update: Update,
                  check_finite: bool = False, record: Record | None = None
                  ) -> tuple[Any, list[float]]:
        """The training loops' one eager/compiled switch: the compiled backend runs
        `native_opt()` in its native loop (`_train_native`), the eager backend calls
        `update(state, grads)` after each step's gradients (`_train`)."""
        if self._compiled is not None:
            return self._train_native(samples, steps, log_every, name, native_opt(), state,
                                      check_finite, record)
        return self._train(samples, steps, log_every, name, update, state, check_finite, record)

    def _train_native(self, samples: Sequence[Inputs], steps: int, log_every: int, name: str,
                      opt: optim.Optimizer, state: Any, check_finite: bool = False,
                      record: Record | None = None, *, clip: float | None = None,
                      lrs: Sequence[float] | None = None, accumulate: int = 1
                      ) -> tuple[optim.OptimState, list[float]]:
        """`module_training.train_native` on this module."""
        return train_native(self, samples, steps, log_every, name, opt, state, check_finite, record,
                            clip, lrs, accumulate)

    def _train(self, samples: Sequence[Inputs], steps: int, log_every: int, name: str,
               update: Update, state: Any, check_finite: bool = False,
               record: Record | None = None) -> tuple[Any, list[float]]:
        """`module_training.train_eager` on this module."""
        return train_eager(self, samples, steps, log_every, name, update, state, check_finite, record)

    def mean_loss(self, samples: Sequence[Inputs]) -> Tensor:
        """The mean loss over `samples` (a left fold from 0, then divided by the count), a scalar.

        Raises: ValueError: `meanLoss: empty dataset`, or input errors.
        """
        samples = list(samples)
        if not samples:
            raise ValueError("meanLoss: empty dataset")
        total = _core.full([], 0.0, self.dtype, device=self.opts.device)
        for xs in samples:
            total = total + self.forward(xs)
        return total / _core.full([], float(len(samples)), self.dtype)

    def state_dict(self) -> dict[str, Tensor]:
        """The parameters by name, in order, as tlrs tensors (`np.asarray(v)` and
        `torch.from_dlpack(v)` read them without a copy on the CPU)."""
        return dict(zip(self.param_names, self._shared_params(), strict=True))

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> Any:
        """Replace parameters from any mapping of name -> array (NumPy, PyTorch tensors, tlrs
        tensors, anything with `__dlpack__` or `__array__`); see tlrs/interop/state_dict.py.

        Returns: `(missing_keys, unexpected_keys)` as PyTorch's `IncompatibleKeys`.
        Raises: RuntimeError in PyTorch's wording: missing or unexpected keys (when `strict`),
        size mismatches; DTypeError: a value that is not floating point.
        """
        from .interop.state_dict import load_state_dict

        return load_state_dict(self, state_dict, strict)

    def export_onnx(self, path: str, example_inputs: Any, **options: Any) -> None:
        """Write the traced forward (`defn.predict`) as an ONNX model; see
        tlrs/interop/onnx_export.py for the options and the op mapping."""
        from .interop.onnx_export import export_module

        export_module(self, path, example_inputs, **options)

    def save(self, path: str, optim_state: optim.OptimState | None = None,
             progress: TrainProgress | None = None, *, format: str = "safetensors") -> None:
        """Write a safetensors checkpoint atomically: parameters by name, in order, the optimizer
        state if given, the run's progress if given (what an exact resume needs: see
        `TrainProgress`), and the options, dtype, shapes, flags and a checksum as metadata.
        `format="torchlean"` writes TorchLean's parameter file instead (the parameters by
        position, exact bits; tlrs/interop/torchlean_params.py), also atomically.

        Raises: CheckpointError: the file cannot be written (the target is left untouched);
        ValueError: optimizer state not aligned with the parameters, an unknown format, or
        optimizer state/progress with `format="torchlean"`.
        """
        save_module(self, path, optim_state, progress, format)

    @classmethod
    def load(cls, path: str, defn: ModuleDef, opts: Options | None = None, *,
             dtype: str | None = None) -> Module:
        """The module of `load_checkpoint` (raising as it does), without the optimizer state."""
        return cls.load_checkpoint(path, defn, opts, dtype=dtype)[0]

    @classmethod
    def load_checkpoint(cls, path: str, defn: ModuleDef, opts: Options | None = None, *,
                        dtype: str | None = None) -> tuple[Module, optim.OptimState | None]:
        """(module, optimizer state or None) from a checkpoint `save` wrote, or from a TorchLean
        parameter file (told by its content: JSON; parameters by position, no optimizer state).

        Args: defn: supplies the loss; parameters, names, flags and options (unless `opts` is
        given) come from the file (for a TorchLean file names and flags come from `defn`);
        dtype: a TorchLean file's module dtype, float64 (default: TorchLean's `Float`) or
        float32 (rounded as TorchLean's float32 runs load); a safetensors checkpoint has its own.
        Raises: CheckpointError: a missing, truncated, corrupt or foreign file (nothing is
        returned partially), or a `dtype` other than a safetensors checkpoint's; ValueError:
        shapes that differ from `defn`'s (ShapeError for a TorchLean file, naming the parameter).
        """
        module, state, _ = cls.load_training(path, defn, opts, dtype=dtype)
        return module, state

    @classmethod
    def load_training(cls, path: str, defn: ModuleDef, opts: Options | None = None, *,
                      dtype: str | None = None
                      ) -> tuple[Module, optim.OptimState | None, TrainProgress | None]:
        """As `load_checkpoint`, with the run's progress (None when `save` got none)."""
        defn, params, saved, state, progress = load_for_module(path, defn, dtype)
        return cls(defn, params, saved if opts is None else opts), state, progress


def instantiate_with_options(defn: ModuleDef, cast: Any, opts: Options | None) -> Module:
    """A module from the definition's initial values, cast to the module's dtype.

    Args: cast: `'float64'`/`'float32'` (or another spelling, or a `DType`); the reference's
    scalar cast `float`/`numpy.float64` (binary64) or `numpy.float32` (binary32); or a callable:
    a function of tensors (kept when it returns a Tensor of the same shape), else applied to each
    scalar of each initial tensor (to the whole array at once where that gives an array of the
    same shape); opts: runtime options (None: defaults).
    Raises: ValueError: a cast that changes shapes; DTypeError: an unknown
    dtype name or mixed dtypes; CudaUnavailableError: `opts.use_gpu` where CUDA cannot be
    used.
    """
    _check_defn(defn, "instantiate_with_options")
    opts = Options() if opts is None else opts
    _check_options(opts)
    return Module(defn, cast_params(defn.initial_params(), defn.param_shapes, cast), opts)


def instantiate_float_with_runtime_plan_options(
    defn: ModuleDef, opts: Options | None, plan: Plan
) -> Module:
    """A binary64 module whose parameters come from `plan` (`defn.init_params` is ignored).

    Raises: ValueError: a plan built for other shapes, or as `instantiate_with_options`.
    """
    _check_defn(defn, "instantiate_float_with_runtime_plan_options")
    opts = Options() if opts is None else opts
    _check_options(opts)
    _check_plan(plan, defn.param_shapes)
    # On CUDA the plan fills the parameters on the device itself (no host copy).
    return Module(defn, list(plan.materialise("float64", opts.device)), opts)


def instantiate_float_with_runtime_init_options(defn: ModuleDef, opts: Options | None,
                                                inits: Sequence[Any]) -> Module:
    """As the plan variant, with a plain list of `FloatInit` (one per parameter).

    Raises: ValueError: `torch.runtimeInit: initializer list longer/shorter than parameter list`
    (and the flat-length message), or as `instantiate_with_options`.
    """
    _check_defn(defn, "instantiate_float_with_runtime_init_options")
    plan = Plan([list(s) for s in defn.param_shapes], list(inits))
    return instantiate_float_with_runtime_plan_options(defn, opts, plan)
