"""The table from op class to its semantics, filled by the `semantics` decorator.

A semantics function is called as `fn(ctx, op, values)`: `ctx` is the running `Interpreter`
(memory, program id, region execution), `op` the operation and `values` its operands' current
values. It returns the op's result (one value), a list of results, or None for no results.
Results are coerced to their IR types, except those of functions registered with
`opaque_results=True` (a tensor map behind a `!tt.ptr<i8>`, which is no address).
"""
from __future__ import annotations

from typing import Callable

from compiler.ir.core import Operation

SEMANTICS: dict[type[Operation], Callable] = {}


def semantics(*op_classes: type[Operation], opaque_results: bool = False):
    """Register the decorated function as the semantics of the ops of `op_classes`; with
    `opaque_results` its results are kept as they are (not coerced to their IR types)."""
    for cls in op_classes:
        if not (isinstance(cls, type) and issubclass(cls, Operation)):
            raise TypeError(f"semantics() takes op classes, got {cls!r}")

    def register(fn: Callable) -> Callable:
        fn.opaque_results = opaque_results
        for cls in op_classes:
            SEMANTICS[cls] = fn
        return fn
    return register
