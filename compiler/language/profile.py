"""In-kernel profile scopes: `with tl.profile("name"):` and Proton's
`pl.enter_scope("name")` / `pl.exit_scope("name")` (`triton.profiler.language`).

Each becomes a `tt.profile_enter` / `tt.profile_exit` pair with one region id per scope name
(numbered in the order names first appear in the kernel). They cost nothing unless the kernel
is compiled with the `instrument-regions` pass (the profiler's `mode="instrumentation"`),
which times them with the regions it adds itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler.frontend.errors import SemanticError
from compiler.ir.attributes import IntegerAttr, StringAttr
from compiler.ir.types import IntegerType

from .core import builtin, constexpr


def _scope_name(name) -> str:
    value = name.value if isinstance(name, constexpr) else name
    if not isinstance(value, str) or not value:
        raise SemanticError(f"a profile scope needs a constant, non-empty string name, got "
                            f"{value!r}")
    return value


def _record(_sem, name: str, exiting: bool) -> None:
    """Emit the enter or exit record of scope `name`."""
    from compiler.dialects import tt
    ids = getattr(_sem, "profile_scope_ids", None)
    if ids is None:
        ids = _sem.profile_scope_ids = {}
    region = ids.setdefault(name, len(ids))
    _sem._op(tt.ProfileExitOp if exiting else tt.ProfileEnterOp, [], None,
             {"region": IntegerAttr(region, IntegerType(32)), "name": StringAttr(name),
              "kind": StringAttr("scope")})


@dataclass(frozen=True)
class ProfileScope:
    """What `tl.profile(name)` gives a kernel's `with` statement."""

    name: str

    def enter(self, _sem) -> None:
        """The record at the `with` block's start."""
        _record(_sem, self.name, exiting=False)

    def exit(self, _sem) -> None:
        """The record at the `with` block's end."""
        _record(_sem, self.name, exiting=True)


@builtin
def profile(_sem, name) -> constexpr:
    """`with tl.profile("name"): ...`: time the block as region `name` (instrumented kernels)."""
    return constexpr(ProfileScope(_scope_name(name)))


@builtin
def enter_scope(_sem, name) -> None:
    """Start region `name` (Proton's `pl.enter_scope`); close it with `exit_scope(name)`."""
    _record(_sem, _scope_name(name), exiting=False)


@builtin
def exit_scope(_sem, name) -> None:
    """End region `name` (Proton's `pl.exit_scope`)."""
    _record(_sem, _scope_name(name), exiting=True)
