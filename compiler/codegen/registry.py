"""The table of op lowerings: `@lowers("arith.addf")` registers a function `(ctx, op) -> None`
that emits LLVM IR for one ttgir op and records its results with `ctx.set(...)`."""
from __future__ import annotations

from typing import Callable

LOWERINGS: dict[str, Callable] = {}


def lowers(*op_names: str):
    """Decorator: register the decorated function as the lowering of each named op."""
    def register(fn: Callable) -> Callable:
        for name in op_names:
            LOWERINGS[name] = fn
        return fn
    return register


def lowering_for(op_name: str) -> Callable | None:
    """The lowering function of an op name, importing every lowering module first."""
    from . import (lower_async, lower_control, lower_convert, lower_dot,  # noqa: F401
                   lower_elementwise, lower_memory, lower_misc, lower_reduce, lower_shape)
    return LOWERINGS.get(op_name)
