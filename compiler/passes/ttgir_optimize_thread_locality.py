"""optimize-thread-locality: keep reductions inside warps when a conversion is paid anyway."""
from __future__ import annotations

from compiler.dialects.tt import ReduceOp
from compiler.dialects.ttg import BlockedEncoding, ConvertLayoutOp, SliceEncoding
from compiler.ir.core import Module, Operation
from compiler.ir.types import TensorType

from .base import Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR
from .ttgir_rewrite import insert_convert, insert_convert_after, set_encoding


def warps_off_axis(layout: BlockedEncoding, shape: tuple, axis: int) -> BlockedEncoding | None:
    """`layout` with no warp split along `axis`: its warps go to the other dims, fastest dim
    first, as far as each dim has room for them without holding copies. None when the other
    dims cannot take them all or nothing would change."""
    if layout.warps_per_cta[axis] == 1:
        return None
    total = 1
    for w in layout.warps_per_cta:
        total *= w
    wpc = [1] * len(shape)
    left = total
    others = [d for d in layout.order if d != axis]
    for d in others:
        room = max(shape[d] // (layout.size_per_thread[d] * layout.threads_per_warp[d]), 1)
        take = 1
        while take * 2 <= min(room, left):
            take *= 2
        wpc[d] = take
        left //= take
    if left != 1:
        return None
    return BlockedEncoding(layout.size_per_thread, layout.threads_per_warp, tuple(wpc),
                           layout.order)


@register_pass
class OptimizeThreadLocality(Pass):
    """A reduction whose operand's layout splits the reduced axis across warps must exchange
    partial results through shared memory behind a barrier. When that operand is produced by a
    ttg.convert_layout (so a shared-memory round trip is paid anyway), this pass converts into
    a layout whose warps sit on the other dims instead, keeping the reduction inside each warp
    (shuffles only); the smaller reduced result is converted back if its users need the old
    layout. Reductions without such a conversion, or whose other dims cannot hold all warps,
    are left as they are, and the pass then records nothing."""

    name = "optimize-thread-locality"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        for op in [o for o in module.walk() if isinstance(o, ReduceOp)]:
            if self._rewrite(op):
                ctx.record_pattern("keep reduction within warps")

    @staticmethod
    def _rewrite(op: Operation) -> bool:
        operand = op.operands[0]
        producer = operand.owner_op
        t = operand.type
        if not isinstance(producer, ConvertLayoutOp) or len(op.operands) != 1:
            return False
        if not isinstance(t.encoding, BlockedEncoding):
            return False
        axis = op.attributes["axis"].value
        better = warps_off_axis(t.encoding, t.shape, axis)
        if better is None:
            return False
        source = producer.operands[0]
        op.set_operand(0, source if source.type.encoding == better
                       else insert_convert(source, better, op))
        result = op.results[0]
        if isinstance(result.type, TensorType):
            old = result.type.encoding
            users = list(result.uses)
            set_encoding(result, SliceEncoding(axis, better))
            if users:
                back = insert_convert_after(result, old, op.loc)
                for user, index in users:
                    user.set_operand(index, back)
        if not producer.results[0].uses:
            producer.erase()
        return True
