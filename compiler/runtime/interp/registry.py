"""The table from op name to its semantics, filled by the `semantics` decorator.

A semantics function is called as `fn(ctx, op, values)`: `ctx` is the running `Interpreter`
(memory, program id, region execution), `op` the operation and `values` its operands' current
values. It returns the op's result (one value), a list of results, or None for no results.
"""
from __future__ import annotations

from typing import Callable

SEMANTICS: dict[str, Callable] = {}


def semantics(*names: str):
    """Register the decorated function as the semantics of the ops called `names`."""
    def register(fn: Callable) -> Callable:
        for name in names:
            SEMANTICS[name] = fn
        return fn
    return register
