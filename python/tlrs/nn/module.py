"""`tlrs.nn.Module`: the base class of layers and models, as `torch.nn.Module`.

Attributes are sorted on assignment, as in PyTorch: parameters (see parameter.py), buffers
(`register_buffer`) and submodules each go to their own ordered table, and the iterators
(`named_parameters`, `state_dict`, ...) walk those tables in registration order, recursing into
submodules, with PyTorch's dotted names.

Unlike `torch.Tensor`, a tlrs Tensor is never changed by an optimizer: a functional step
returns new tensors. Assigning one to an attribute that holds a parameter replaces the
parameter (it stays registered, a leaf, and keeps requiring a gradient).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Self

import numpy as np

from .. import _core
from .._core import Tensor
from .convert import convert_tensors, to_arguments
from .parameter import is_parameter, mark
from .state import IncompatibleKeys, load_state_dict

__all__ = ["Module"]

Buffer = Tensor | int  # int: a counter such as BatchNorm's num_batches_tracked (an int64 in torch)


def _forward_unimplemented(self: Module, *args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


class Module:
    """Base class for layers and models: subclasses set parameters, buffers and submodules as
    attributes in `__init__` (after `super().__init__()`) and define `forward`."""

    training: bool
    _parameters: dict[str, Tensor | None]
    _buffers: dict[str, Buffer | None]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Module | None]

    # Subclasses define forward with their own signature (torch's idiom).
    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self) -> None:
        # object.__setattr__: our __setattr__ needs these tables to exist.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---- attributes --------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Only reached when ordinary lookup fails: the tables hold the registered attributes.
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Tensor, Module)):
                raise AttributeError("cannot assign parameters or modules before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if is_parameter(value) or (name in params and (value is None or isinstance(value, Tensor))):
            self._forget(name, "_parameters")
            self._set_parameter(name, value)
        elif name in params:
            raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' (Tensor or None expected)")
        elif isinstance(value, Module):
            self._forget(name, "_modules")
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(Module or None expected)")
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, (Tensor, int)):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def _forget(self, name: str, keep: str) -> None:
        """Removes `name` from the instance and the tables other than `keep` before it is filed
        in `keep` (where it keeps its place in the order)."""
        self.__dict__.pop(name, None)
        if keep != "_parameters":
            self._parameters.pop(name, None)
        if keep != "_modules":
            self._modules.pop(name, None)
        self._buffers.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def _set_parameter(self, name: str, value: Tensor | None) -> None:
        old = self._parameters.get(name)
        if isinstance(value, Tensor) and value is not old:
            if not value.is_leaf:
                value = value.detach()  # a parameter is a leaf of the autograd graph
            if old is not None and old.requires_grad and not value.requires_grad:
                value.requires_grad = True  # an optimizer's new values replace a trained parameter
            mark(value)
        self._parameters[name] = value

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Adds a parameter (any tensor, or None for a missing optional one) under `name`."""
        _check_name("parameter", name)
        if name in self.__dict__ or name in self._buffers or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Tensor):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(Tensor or None required)")
        self._set_parameter(name, param)

    def register_buffer(self, name: str, tensor: Buffer | None, persistent: bool = True) -> None:
        """Adds a buffer: state that is not a parameter (running statistics). Persistent buffers
        are part of `state_dict`."""
        _check_name("buffer", name)
        if name in self.__dict__ or name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, (Tensor, int)):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a submodule under `name`."""
        _check_name("module", name)
        if name in self.__dict__ or name in self._parameters or name in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ("" is this module)."""
        mod: Module = self
        for part in target.split(".") if target else []:
            child = mod._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{part}`")
            mod = child
        return mod

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at a dotted path such as "encoder.fc1.weight"."""
        path, _, name = target.rpartition(".")
        param = self.get_submodule(path)._parameters.get(name)
        if param is None:
            raise AttributeError(f"`{name}` is not a parameter of `{path or type(self).__name__}`")
        return param

    # ---- iteration ---------------------------------------------------------------------------

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first; a module reached twice is listed once."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, _join(prefix, name), remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        """(dotted name, value) of one table over the modules; a tensor met twice (tied) is
        listed once, under its first name, as torch does."""
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None:
                    continue
                if isinstance(value, Tensor) and remove_duplicate:  # ints are values, never shared
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield _join(mod_prefix, name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Buffer]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Buffer]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state -------------------------------------------------------------------------------

    def state_dict(self, *, prefix: str = "", keep_vars: bool = False) -> OrderedDict[str, Any]:
        """Parameters and persistent buffers by dotted name (a tied tensor under every name, as
        torch): detached tlrs tensors (`keep_vars` keeps the parameters themselves), and int
        buffers as 0-d NumPy int64 arrays."""
        out: OrderedDict[str, Any] = OrderedDict()
        for key, owner, table, name in self._state_slots(prefix):
            value = getattr(owner, table)[name]
            if isinstance(value, int):
                out[key] = np.array(value, dtype=np.int64)
            else:
                out[key] = value if keep_vars else value.detach()
        return out

    def _state_slots(self, prefix: str = "") -> Iterator[tuple[str, Module, str, str]]:
        """(key, owning module, table, name) for every state_dict entry, shared ones repeated."""
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, self, "_parameters", name
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                yield prefix + name, self, "_buffers", name
        for name, module in self._modules.items():
            if module is not None:
                yield from module._state_slots(prefix + name + ".")

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copies values from any mapping of name -> array (torch tensors, NumPy arrays, tlrs
        tensors) into the parameters and buffers, converted to each one's dtype and device.
        All or nothing: on an error nothing is changed.

        Returns: (missing_keys, unexpected_keys). Raises: RuntimeError in PyTorch's wording:
        missing or unexpected keys (when `strict`), size mismatches; DTypeError: a value that
        is not floating point for a float tensor."""
        return load_state_dict(self, list(self._state_slots()), state_dict, strict)

    # ---- modes, conversion, gradients ----------------------------------------------------------

    def train(self, mode: bool = True) -> Self:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Self:
        return self.train(False)

    def apply(self, fn: Callable[[Module], Any]) -> Self:
        """Calls `fn` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the parameters' `.grad` (None; zeros with set_to_none=False)."""
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else _core.full(p.shape, 0.0, p.dtype, device=p.device)

    def to(self, *args: Any, dtype: Any = None, device: str | None = None) -> Self:
        """Converts float parameters and buffers to a dtype ('float32', 'float64', NumPy or torch
        dtypes) and/or moves them to a device ('cpu', 'cuda:0'): `to('float32')`,
        `to('cuda')`, `to(device=..., dtype=...)`. The new tensors replace the old ones
        everywhere (tied weights stay tied); gradients are dropped."""
        target, device = to_arguments(args, dtype, device)
        convert_tensors(self.modules(), target, device)
        return self

    def float(self) -> Self:
        """float32 parameters and buffers (torch's `float()`: binary32)."""
        return self.to(dtype="float32")

    def double(self) -> Self:
        """float64 parameters and buffers."""
        return self.to(dtype="float64")

    def cpu(self) -> Self:
        return self.to(device="cpu")

    def cuda(self, device: int | None = None) -> Self:
        return self.to(device=f"cuda:{device or 0}")

    # ---- printing ----------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The constructor arguments shown by repr (subclasses override)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(module).replace("\n", "\n  ")
                 for name, module in self._modules.items() if module is not None]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"


def modules_of(items: Iterable[Any]) -> list[Module]:
    """`items` checked to be modules (the containers' arguments)."""
    out = list(items)
    for m in out:
        if not isinstance(m, Module):
            raise TypeError(f"{type(m).__name__} is not a Module subclass")
    return out
