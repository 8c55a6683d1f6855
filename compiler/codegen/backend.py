"""The backend interface: what a compilation target provides, independent of any vendor.

A backend object owns two things (as Triton's `BaseBackend` does): parsing and validating the
compile options for its target, and the ordered list of stages that turn a kernel into a
loadable binary (`add_stages` fills a dict of name -> stage callable, in order). Loading that
binary and querying the device belong to the runtime's driver (`compiler.runtime.driver`), as
Triton keeps its backend compiler apart from its driver. Backends register themselves with `@register_backend`; the
modules `compiler/codegen/*_backend.py` are imported on first lookup, so adding a target is one
new module. Nothing here names a vendor, an ISA or a driver.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import pkgutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar, Mapping

#: A stage: reads the previous stage's output from the compile state and writes its own.
StageFn = Callable[[Any], None]


class OptionError(ValueError, AssertionError):
    """A compile option with an unknown name, a wrong type or a value out of range. Also an
    AssertionError: Triton checks its options with asserts, and code written for it catches
    that (`num_warps=3` raises "must be a power of 2")."""


@dataclass(frozen=True)
class GPUTarget:
    """What code is generated for: the backend's name, its architecture (a number such as a
    compute capability, or a name), and the number of threads in a warp/wavefront."""

    backend: str
    arch: int | str
    warp_size: int


@dataclass(frozen=True)
class BackendOptions:
    """Options every backend understands. Backends subclass this to add their own fields;
    each field's `metadata["check"]` (optional) validates its value."""

    num_warps: int = dataclasses.field(default=4, metadata={
        "check": lambda v: v in (1, 2, 4, 8, 16, 32),
        "allowed": "a power of 2 from 1 to 32"})
    num_stages: int = dataclasses.field(default=3, metadata={
        "check": lambda v: 1 <= v <= 8, "allowed": "an integer from 1 to 8"})
    num_ctas: int = dataclasses.field(default=1, metadata={
        "check": lambda v: v == 1, "allowed": "1 (thread-block clusters are not supported yet)"})
    debug: bool = False
    enable_fp_fusion: bool = True


class BaseBackend(ABC):
    """A compilation target. Subclasses set `name`, `options_class` and `binary_ext`, and
    implement `default_target` and `add_stages`."""

    name: ClassVar[str] = ""
    options_class: ClassVar[type] = BackendOptions
    binary_ext: ClassVar[str] = "bin"
    priority: ClassVar[int] = 0       # which backend `get_backend()` picks when none is named

    def __init__(self, target: GPUTarget | None = None):
        self.target = target if target is not None else self.default_target()
        if self.target.backend != self.name:
            raise ValueError(f"backend '{self.name}' cannot compile for a "
                             f"'{self.target.backend}' target")

    # ---- target -------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def default_target(cls, requested: Any = None) -> GPUTarget:
        """The target to compile for: `requested` when given, else the backend's default
        (the runtime's driver says what the present device is)."""

    def get_target(self) -> GPUTarget:
        """The target this backend object compiles for."""
        return self.target

    # ---- options -------------------------------------------------------------------------
    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Names `parse_options` accepts."""
        return tuple(f.name for f in fields(cls.options_class))

    def parse_options(self, options: Mapping[str, Any] | None = None):
        """Validate `options` (name -> value) into this backend's frozen options dataclass.
        Unknown names, wrong types and bad values raise `OptionError` saying what is allowed."""
        options = dict(options or {})
        known = {f.name: f for f in fields(self.options_class)}
        unknown = [k for k in options if k not in known]
        if unknown:
            name = unknown[0]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise OptionError(f"unknown option '{name}' for the {self.name} backend{hint} "
                              f"(known: {', '.join(known)})")
        values = {}
        for name, value in options.items():
            values[name] = checked_value(known[name], value, self.name)
        values.update(self.target_options(values))
        return self.options_class(**values)

    def target_options(self, options: dict) -> dict:
        """Option values the target decides (e.g. the architecture), given the user's."""
        return {}

    # ---- stages and binaries ---------------------------------------------------------------
    @abstractmethod
    def add_stages(self, stages: dict[str, StageFn], options) -> None:
        """Fill `stages` with name -> stage callable, in compilation order."""

    def hash(self) -> str:
        """A string that changes when this backend's output would (part of the cache key)."""
        return f"{self.name}-{self.target.arch}-{self.target.warp_size}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target})"


def checked_value(field: dataclasses.Field, value: Any, backend: str) -> Any:
    """`value` converted to the field's type and checked; `OptionError` if it is wrong. Any
    options dataclass may use it (the compile driver checks its own fields with it too)."""
    expected = field.type if isinstance(field.type, type) else _type_from_name(field.type)
    if expected is bool:
        if not isinstance(value, bool):
            raise OptionError(f"option '{field.name}' takes True or False, not {value!r}")
    elif expected is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise OptionError(f"option '{field.name}' takes an integer, not {value!r}")
    elif expected is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise OptionError(f"option '{field.name}' takes a number, not {value!r}")
        value = float(value)
    elif expected is str:
        if not isinstance(value, str):
            raise OptionError(f"option '{field.name}' takes a string, not {value!r}")
    elif expected is dict:
        if not isinstance(value, dict):
            raise OptionError(f"option '{field.name}' takes a dict, not {value!r}")
    check = field.metadata.get("check")
    if check is not None and value is not None and not check(value):
        allowed = field.metadata.get("allowed", "a valid value")
        raise OptionError(f"option '{field.name}' = {value!r} is not allowed for the {backend} "
                          f"backend; it must be {allowed}")
    return value


def _type_from_name(annotation: str):
    """The type of a dataclass field annotated as a string (`from __future__ import
    annotations`); None (no type check) for unions and generics."""
    return {"int": int, "bool": bool, "float": float, "str": str,
            "dict": dict}.get(annotation)


# --------------------------------------------------------------------------------------------
# The registry of backends

BACKENDS: dict[str, type[BaseBackend]] = {}
_DISCOVERED = False


def register_backend(cls: type[BaseBackend]) -> type[BaseBackend]:
    """Class decorator: make a backend findable by its `name`."""
    if not cls.name:
        raise ValueError(f"backend class {cls.__name__} has no name")
    if cls.name in BACKENDS and BACKENDS[cls.name] is not cls:
        raise ValueError(f"two backends named '{cls.name}'")
    BACKENDS[cls.name] = cls
    return cls


def discover_backends() -> dict[str, type[BaseBackend]]:
    """Import every `compiler/codegen/*_backend.py` module (each registers its backend)."""
    global _DISCOVERED
    if not _DISCOVERED:
        package = importlib.import_module("compiler.codegen")
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.endswith("_backend"):
                importlib.import_module(f"compiler.codegen.{info.name}")
        _DISCOVERED = True
    return BACKENDS


def get_backend(name: str | None = None, target: GPUTarget | None = None) -> BaseBackend:
    """A backend object: by `name` (or `target.backend`), else the highest-priority one
    (compiling needs no device)."""
    backends = discover_backends()
    name = name or (target.backend if target is not None else None)
    if name is None:
        if not backends:
            raise LookupError("no compiler backends are registered")
        name = max(backends.values(), key=lambda cls: cls.priority).name
    if name not in backends:
        raise LookupError(f"unknown backend '{name}'; known: {', '.join(sorted(backends))}")
    return backends[name](target)
