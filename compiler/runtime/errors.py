"""Runtime errors in Triton's names (`triton.runtime.errors`): `InterpreterError` (a kernel failed
under the interpreter; ours, located at the op with file:line:col and caret), `OutOfResources`
(a launch needs more shared memory, registers or threads than the device has) and `PTXASError`
(ptxas rejected the PTX). All derive from `triton.TritonError`."""
from __future__ import annotations

from compiler.errors import TritonError
from compiler.runtime.interp.errors import InterpreterError, KernelAssertionError

__all__ = ["TritonError", "InterpreterError", "KernelAssertionError", "OutOfResources",
           "PTXASError"]


class OutOfResources(TritonError, ValueError):
    """A kernel needs more of a resource than the device has: `required` and `limit` in the
    resource's unit, `name` the resource ("shared memory", "registers", "threads"). Also a
    ValueError: the launch's configuration is what has to change."""

    def __init__(self, required: int, limit: int, name: str):
        self.required = required
        self.limit = limit
        self.name = name
        super().__init__(f"out of resource: {name}, required: {required}, hardware limit: "
                         f"{limit} (the device allows at most {limit}); reducing block sizes or "
                         f"`num_stages` may help")

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class PTXASError(TritonError):
    """ptxas failed on the generated PTX; the message holds its diagnostics."""
