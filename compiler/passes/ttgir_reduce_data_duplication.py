"""reduce-data-duplication: stage dot-operand conversions through explicit shared memory."""
from __future__ import annotations

from compiler.analysis.layout_propagation import order_of
from compiler.dialects.ttg import (BlockedEncoding, ConvertLayoutOp, DotOperandEncoding,
                                   LocalAllocOp, LocalLoadOp,
                                   NvidiaMmaEncoding, SliceEncoding, SwizzledSharedEncoding)
from compiler.ir.core import Module
from compiler.dialects.ttg import MemDescType

from .base import Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR


def shared_layout_for(src_encoding, dot_encoding: DotOperandEncoding, shape: tuple = (),
                      element_bytes: int = 2) -> SwizzledSharedEncoding:
    """The shared layout a dot operand is staged in: the source's dim order; no swizzling for
    the FMA dot (blocked parent), whose threads read whole rows and columns. A tensor-core
    operand is read by ldmatrix, 8 rows of 16 bytes at a time: 16-byte groups (`vec`) are
    XOR-swizzled so those 8 rows fall in different banks, each phase covering 128 bytes of rows
    (Triton's rule for MMA v2 operands)."""
    order = order_of(src_encoding)
    if isinstance(dot_encoding.parent, NvidiaMmaEncoding):
        vec = max(1, 16 // element_bytes)
        row_bytes = shape[order[0]] * element_bytes
        per_phase = max(1, 128 // row_bytes)
        max_phase = max(1, 8 // per_phase)
        return SwizzledSharedEncoding(vec, per_phase, max_phase, tuple(order))
    return SwizzledSharedEncoding(1, 1, 1, tuple(order))


@register_pass
class ReduceDataDuplication(Pass):
    """A conversion into a #ttg.dot_op layout hands each thread a whole row of A or column of B,
    so most elements end up in many threads' registers. Like Triton, this pass makes such a
    conversion explicit: ttg.local_alloc writes the operand once to shared memory (in the
    source's dim order) and ttg.local_load reads it in the dot-operand layout, which lets later
    passes and the lowering treat the staging buffer as a real allocation. Conversions between
    ordinary distributed layouts are left alone."""

    name = "reduce-data-duplication"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        for op in [o for o in module.walk() if isinstance(o, ConvertLayoutOp)]:
            src, dst = op.operands[0].type, op.results[0].type
            if not isinstance(dst.encoding, DotOperandEncoding):
                continue
            if not isinstance(src.encoding, (BlockedEncoding, SliceEncoding)):
                continue
            shared = shared_layout_for(src.encoding, dst.encoding, src.shape,
                                       max(1, src.element.width // 8))
            mem = MemDescType(src.shape, src.element, shared, mutable=False)
            alloc = LocalAllocOp([op.operands[0]], [mem], {}, None, op.loc)
            load = LocalLoadOp([alloc.result], [dst], {}, None, op.loc)
            op.parent.insert_before(op, alloc)
            op.parent.insert_before(op, load)
            op.replace_with([load.result])
            ctx.record_pattern("stage dot operand through shared memory")
