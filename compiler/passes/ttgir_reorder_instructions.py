"""reorder-instructions: move conversions and shared-memory traffic next to where they matter."""
from __future__ import annotations

from compiler.dialects.ttg import ConvertLayoutOp, LocalAllocOp, LocalLoadOp
from compiler.ir.core import Module, Operation
from compiler.ir.traits import MemoryWrite

from .base import Pass, PassContext, register_pass
from .requirements import TTGIR

SINKABLE = (ConvertLayoutOp, LocalLoadOp)


def _first_user_in_block(op: Operation) -> Operation | None:
    """The earliest op of `op`'s block that uses its results (directly or inside its regions);
    None when some use lies outside the block."""
    block = op.parent
    first = None
    for result in op.results:
        for user, _ in result.uses:
            anchor = user
            while anchor is not None and anchor.parent is not block:
                anchor = anchor.parent_op
            if anchor is None:
                return None
            if first is None or block.ops.index(anchor) < block.ops.index(first):
                first = anchor
    return first


def _writes_between(block, start: int, end: int) -> bool:
    return any(o.has_trait(MemoryWrite) for o in block.ops[start + 1:end])


@register_pass
class ReorderInstructions(Pass):
    """Shortens live ranges, conservatively and within one block, as Triton's pass does:
    a ttg.convert_layout or ttg.local_load moves down to just before its first user (so the
    converted copy is not held in registers meanwhile; a local_load never moves past a memory
    write), and a ttg.local_alloc that copies registers into shared memory moves up to just
    after the value's definition (so the registers can be freed early). Ops whose results are
    used in other blocks stay put."""

    name = "reorder-instructions"
    stage = "ttgir"
    requires = TTGIR

    def run(self, module: Module, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if op.parent is None:
                continue
            if isinstance(op, SINKABLE):
                self._sink(op, ctx)
            elif isinstance(op, LocalAllocOp) and op.src is not None:
                self._hoist_alloc(op, ctx)

    @staticmethod
    def _sink(op: Operation, ctx: PassContext) -> None:
        user = _first_user_in_block(op)
        if user is None:
            return
        block = op.parent
        here, there = block.ops.index(op), block.ops.index(user)
        if there == here + 1:
            return
        if isinstance(op, LocalLoadOp) and _writes_between(block, here, there):
            return
        op.move_before(user)
        ctx.record_pattern(f"sink {op.name} to its first user")

    @staticmethod
    def _hoist_alloc(op: Operation, ctx: PassContext) -> None:
        value = op.operands[0]
        block = op.parent
        producer = value.owner_op
        if producer is None or producer.parent is not block:
            return
        here, there = block.ops.index(op), block.ops.index(producer)
        if here == there + 1:
            return
        op.move_before(block.ops[there + 1])
        ctx.record_pattern("hoist ttg.local_alloc next to its operand")
