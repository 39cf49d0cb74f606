"""Containers: `Sequential`, `ModuleList`, `ModuleDict` (torch.nn's names and behaviour;
children are named "0", "1", ... or by their keys)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from .module import Module, modules_of

__all__ = ["ModuleDict", "ModuleList", "Sequential"]


def _index(i: int, n: int, what: str) -> int:
    """`i` as an index into n children, negative counting from the end."""
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i % n



def _renumber(container: Module, items: list[Module | None]) -> None:
    """`items` as the container's children "0", "1", ... (torch renumbers after a deletion)."""
    container._modules.clear()
    for i, module in enumerate(items):
        container._modules[str(i)] = module

class Sequential(Module):
    """Calls its modules in order, each on the previous one's output.

    `Sequential(m0, m1, ...)` names them "0", "1", ...; `Sequential(OrderedDict(name=m))` keeps
    the names."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules_of(args)):
                self.add_module(str(i), module)

    @overload
    def __getitem__(self, idx: int) -> Module: ...
    @overload
    def __getitem__(self, idx: slice) -> Sequential: ...
    def __getitem__(self, idx: int | slice) -> Module | Sequential:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return type(self)(OrderedDict(items[idx]))
        return items[_index(idx, len(items), "Sequential")][1]  # type: ignore[return-value]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx: int) -> None:
        items = list(self._modules.values())
        del items[_index(idx, len(items), "Sequential")]
        _renumber(self, items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ... (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    @overload
    def __getitem__(self, idx: int) -> Module: ...
    @overload
    def __getitem__(self, idx: slice) -> ModuleList: ...
    def __getitem__(self, idx: int | slice) -> Module | ModuleList:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return type(self)(m for m in items[idx] if m is not None)
        return items[_index(idx, len(items), "ModuleList")]  # type: ignore[return-value]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int) -> None:
        items = list(self._modules.values())
        del items[_index(idx, len(items), "ModuleList")]
        _renumber(self, items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), modules_of([module])[0])
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules_of(modules):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, modules_of([module])[0])
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m


class ModuleDict(Module):
    """An ordered mapping of names to modules, registered as children under their names."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        module = self._modules[key]
        assert module is not None
        return module

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, modules_of([module])[0])

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> list[str]:
        return list(self._modules)

    def values(self) -> list[Module]:
        return [m for m in self._modules.values() if m is not None]

    def items(self) -> list[tuple[str, Module]]:
        return [(k, m) for k, m in self._modules.items() if m is not None]

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()
