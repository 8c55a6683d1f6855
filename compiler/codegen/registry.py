"""The table of op lowerings: `@lowers(arith.BINARY_OPS["addf"])` registers a function
`(ctx, op) -> None` that emits LLVM IR for ops of that class and records their results with
`ctx.set(...)`. The table is keyed by op class, never by name."""
from __future__ import annotations

from typing import Callable

from compiler.ir.core import Operation

LOWERINGS: dict[type[Operation], Callable] = {}


def lowers(*op_classes: type[Operation]):
    """Decorator: register the decorated function as the lowering of each op class given."""
    for cls in op_classes:
        if not (isinstance(cls, type) and issubclass(cls, Operation)):
            raise TypeError(f"lowers() takes op classes, got {cls!r}")

    def register(fn: Callable) -> Callable:
        for cls in op_classes:
            LOWERINGS[cls] = fn
        return fn
    return register


def lowering_for(op_class: type[Operation]) -> Callable | None:
    """The lowering function of an op class, importing every lowering module first."""
    from . import (lower_async, lower_control, lower_convert, lower_dot,  # noqa: F401
                   lower_elementwise, lower_gather, lower_memory, lower_misc, lower_profile,
                   lower_reduce, lower_shape, lower_tma, lower_wgmma)
    return LOWERINGS.get(op_class)
