"""A deliberately broken pass for the differential check and bisect tests: it swaps the
operands of every float subtraction (`a - b` becomes `b - a`), a miscompile the verifier cannot
see. `broken_pass(stage)` registers it for the duration of a `with` block only."""
from __future__ import annotations

from contextlib import contextmanager

from compiler.dialects import arith
from compiler.passes.base import PASSES, Pass
from compiler.passes.manager import load_all_passes

NAME = "swap-sub-operands"


class SwapSubOperands(Pass):
    """Swaps the operands of every arith.subf (deliberately wrong; tests only)."""

    name = NAME

    def run(self, module, ctx):
        for op in list(module.walk()):
            if isinstance(op, arith.BINARY_OPS["subf"]):
                a, b = op.operands
                op.set_operands([b, a])
                ctx.record_pattern("swap", op=op)


@contextmanager
def broken_pass(stage: str = "ttir"):
    """Register `swap-sub-operands` as a pass of `stage` inside the block."""
    load_all_passes()
    cls = type("SwapSubOperands" + stage.capitalize(), (SwapSubOperands,), {"stage": stage})
    PASSES[NAME] = cls
    try:
        yield NAME
    finally:
        PASSES.pop(NAME, None)
