"""Run a ttir kernel on numpy: the correctness oracle for the GPU backend.

`interpret(module, grid, args)` runs the kernel program instance by program instance over the
grid (x fastest, as CUDA orders blocks), each op on whole numpy arrays. Array arguments are
reached through virtual addresses (`interp.memory`), so masked and out-of-bounds accesses behave
as on the GPU except that an unmasked bad access raises an `InterpreterError` naming the op and
its source line instead of corrupting memory. Values keep their IR dtypes exactly (see
`interp.values`); ttgir modules run too (layouts are ignored).
"""
from __future__ import annotations

import numpy as np

from compiler.dialects.tt import PointerType
from compiler.ir.core import Block, Module, Operation
from compiler.ir.traits import Terminator
from compiler.ir.types import FloatType, IntegerType, TensorType

from .interp import control, elementwise, profile, tensor_ops, tma  # noqa: F401  (semantics)
from .interp.arguments import bind_arguments
from .interp.errors import InterpreterError, KernelAssertionError, NotVectorizable, OpError
from .interp.memory import Memory
from .interp.registry import SEMANTICS
from .interp.values import coercer

__all__ = ["interpret", "Interpreter", "InterpreterError", "KernelAssertionError"]

_VALUE_TYPES = (IntegerType, FloatType, PointerType, TensorType)


class Interpreter:
    """Executes one kernel launch: the current program id, memory, and the value of every SSA
    value in the current function frame."""

    def __init__(self, module: Module, memory: Memory, grid: tuple, stdout=None):
        self.module = module
        self.memory = memory
        self.grid = grid
        self.pid = (0, 0, 0)
        self.stdout = stdout
        self.env: dict = {}
        self.region_records: list | None = None   # tt.profile_* records (interp.profile)
        self._plans: dict[Operation, tuple] = {}

    # ---- launch ---------------------------------------------------------------------------------
    def launch(self, func: Operation, args: list) -> None:
        """Run `func` once per program id, z slowest and x fastest."""
        gx, gy, gz = self.grid
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    self.pid = (x, y, z)
                    self.call(func, args)

    def call(self, func: Operation, args: list) -> list:
        """Run a tt.func body in a fresh frame and return what its tt.return returns."""
        saved = self.env
        self.env = {}
        try:
            return self.run_block(func.regions[0].blocks[0], args)
        finally:
            self.env = saved

    # ---- blocks ---------------------------------------------------------------------------------
    def _plan(self, op: Operation) -> tuple:
        """(semantics function, a coercer per result or None) for `op`, cached."""
        plan = self._plans.get(op)
        if plan is None:
            fn = SEMANTICS.get(type(op))
            if fn is None:
                raise InterpreterError(f"the interpreter has no semantics for {op.name}", op,
                                       self.pid)
            opaque = getattr(fn, "opaque_results", False)
            types = [coercer(r.type) if isinstance(r.type, _VALUE_TYPES) and not opaque
                     else None for r in op.results]
            plan = (fn, types)
            self._plans[op] = plan
        return plan

    def run_block(self, block: Block, args: list) -> list:
        """Bind the block's arguments, run its ops, return its terminator's operand values."""
        env = self.env
        for arg, value in zip(block.args, args):
            env[arg] = value
        for op in block.ops:
            if not op.regions and op.has_trait(Terminator):
                return [env[v] for v in op.operands]
            try:
                fn, types = self._plan(op)
                out = fn(self, op, [env[v] for v in op.operands])
                if not types:
                    continue
                if len(types) == 1:
                    if isinstance(out, list):      # region ops return lists of results
                        out = out[0]
                    env[op.results[0]] = types[0](out) if types[0] is not None else out
                    continue
                for result, t, value in zip(op.results, types, out):
                    env[result] = t(value) if t is not None else value
            except (InterpreterError, NotVectorizable):
                raise
            except OpError as exc:
                raise InterpreterError(str(exc), op, self.pid) from None
            except Exception as exc:  # a bug here, reported where it happened
                raise InterpreterError(f"internal interpreter error: {type(exc).__name__}: "
                                       f"{exc}", op, self.pid) from exc
        return []


def find_kernel(module: Module, kernel_name: str | None) -> Operation:
    """The function to launch: `kernel_name`, or the module's only public tt.func."""
    funcs = module.functions()
    if kernel_name is not None:
        for func in funcs:
            if func.sym_name == kernel_name:
                return func
        raise InterpreterError(f"no function @{kernel_name} in the module; it has "
                               + ", ".join(f"@{f.sym_name}" for f in funcs))
    public = [f for f in funcs if getattr(f.attributes.get("sym_visibility"), "value",
                                          "public") == "public"]
    if len(public) != 1:
        raise InterpreterError(
            f"the module has {len(public)} public functions "
            f"({', '.join('@' + f.sym_name for f in public)}); pass kernel_name")
    return public[0]


def _normalize_grid(grid) -> tuple:
    from compiler.runtime.grid import grid_dims
    return grid_dims(grid)


def interpret(module: Module, grid, args: list, kernel_name: str | None = None,
              stdout=None, region_records: list | None = None) -> None:
    """Run the kernel of `module` over `grid` with `args` (in the kernel's parameter order).

    Pointer parameters take numpy arrays or torch CPU tensors, written in place (device arrays
    are staged through the host, see `interp.arguments`); scalar parameters take Python or
    numpy numbers. `stdout` receives tt.print output (default
    sys.stdout); `region_records`, when a list, receives the tt.profile_* records
    (`interp.profile`). Raises `InterpreterError` (or `KernelAssertionError`) on a bad launch,
    an unmasked out-of-bounds access or a failed assertion.
    """
    func = find_kernel(module, kernel_name)
    grid = _normalize_grid(grid)
    memory = Memory()
    values, writebacks = bind_arguments(func, list(args), memory)
    try:
        with np.errstate(all="ignore"):
            interpreter = Interpreter(module, memory, grid, stdout)
            interpreter.region_records = region_records
            interpreter.launch(func, values)
    finally:
        for writeback in writebacks:          # staged device arrays get what was written
            writeback()
