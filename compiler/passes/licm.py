"""licm: loop-invariant code motion out of scf.for loops."""
from __future__ import annotations

from compiler.dialects.scf import ForOp
from compiler.dialects.tt import LoadOp
from compiler.ir.core import Module, Operation
from compiler.ir.traits import CallLike, MemoryWrite, Terminator

from .base import Option, Pass, PassContext, register_pass
from .ir_utils import constant_value, defined_outside, has_side_effects, is_pure


def _writes_memory(loop: Operation) -> bool:
    return any(op.has_trait(MemoryWrite) or op.has_trait(CallLike)
               for op in loop.walk() if op is not loop)


def _runs_at_least_once(loop: Operation) -> bool:
    lb, ub = constant_value(loop.lower_bound), constant_value(loop.upper_bound)
    return lb is not None and ub is not None and lb < ub


def _hoistable(op: Operation, loop: Operation, may_hoist_loads: bool) -> bool:
    if op.has_trait(Terminator) or op.regions:
        return False
    if not all(defined_outside(v, loop) for v in op.operands):
        return False
    if is_pure(op):
        return True
    return (may_hoist_loads and isinstance(op, LoadOp) and not has_side_effects(op))


@register_pass
class LICM(Pass):
    """Moves ops that compute the same value in every iteration of an scf.for out in front of
    the loop, so they run once. Pure ops whose operands come from outside the loop move; a load
    moves only when nothing in the loop writes memory (a store or atomic might alias it) and the
    loop is known to run at least once (so the hoisted load cannot fault where the loop would
    not have loaded). Inner loops go first, so values can climb several levels."""

    name = "licm"
    stage = "ttir"
    options_spec = (Option("hoist-loads", bool, True, "hoist loads from loops without writes"),)

    def run(self, module: Module, ctx: PassContext):
        for loop in list(module.walk("post")):
            if not isinstance(loop, ForOp) or loop.parent is None:
                continue
            may_hoist_loads = (self.options["hoist-loads"] and not _writes_memory(loop)
                               and _runs_at_least_once(loop))
            for op in list(loop.body.ops):
                if _hoistable(op, loop, may_hoist_loads):
                    op.move_before(loop)
                    ctx.record_pattern("hoist " + op.name, op=op, source=f"{__name__}.LICM")
