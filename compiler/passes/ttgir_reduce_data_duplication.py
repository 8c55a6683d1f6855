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
    operand is XOR-swizzled so that the rows one read touches fall in different banks, each
    phase covering 128 bytes of rows (Triton's rule for MMA v2 operands):
    - K contiguous: ldmatrix reads 8 rows (M or N) of 16 bytes, so 16-byte groups (`vec`) over
      8 phases;
    - K not contiguous: a read covers the K extent of one mma step (8 rows of 16-bit, read by
      ldmatrix.trans; 4 of 32-bit and 16 of 8-bit, read one element per thread, a quad's lanes
      on consecutive rows) by 8 elements along M or N (the lanes' groupIDs), so 8-element
      groups over that many phases. A 32-bit operand with 16-byte groups over 8 phases would put
      its 4 K rows on the same 8 banks (4-way conflicts)."""
    order = order_of(src_encoding)
    if isinstance(dot_encoding.parent, NvidiaMmaEncoding):
        rank = len(order)
        k_dim = rank - 1 if dot_encoding.op_idx == 0 else rank - 2
        row_bytes = shape[order[0]] * element_bytes
        per_phase = max(1, 128 // row_bytes)
        if order[0] == k_dim:
            vec, rows_read = max(1, 16 // element_bytes), 8
        else:
            vec, rows_read = 8, max(1, 16 // element_bytes)
        max_phase = max(1, rows_read // per_phase)
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
