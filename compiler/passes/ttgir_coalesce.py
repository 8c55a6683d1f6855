"""coalesce: give each global memory access a layout that makes it wide and coalesced."""
from __future__ import annotations

from compiler.analysis.axis_info import AxisInfo, analyze
from compiler.analysis.layout_propagation import build_blocked, encoding_of
from compiler.ir.core import Module, Operation
from compiler.ir.types import TensorType

from .base import Pass, PassContext, register_pass
from .ttgir_rewrite import relayout_op

MEMORY_OPS = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas")
ACCESS_BITS = 128


def contiguity_order(info: AxisInfo, rank: int) -> tuple:
    """Dims sorted by the pointers' contiguity, most contiguous first (ties keep the row-major
    order, last dim first)."""
    dims = list(reversed(range(rank)))
    return tuple(sorted(dims, key=lambda d: -info.contiguity[d]))


def elements_per_access(op: Operation, info: AxisInfo, order: tuple, num_threads: int) -> int:
    """How many elements each thread should hold along the fastest dim: enough for one
    128-bit access where the pointers' contiguity and alignment allow, but no more than the
    tensor has per thread (and, for ops that write, no more than one access)."""
    ptr_type = op.operands[0].type
    pointee = ptr_type.element.pointee
    bits = getattr(pointee, "width", 64)
    elem_bytes = max(bits // 8, 1)
    dim = order[0]
    alignment = max(info.divisibility[dim] // elem_bytes, 1)
    per_access = max(ACCESS_BITS // max(bits, 8), 1)
    width = min(alignment, info.contiguity[dim], per_access, ptr_type.shape[dim])
    per_thread = max(ptr_type.numel // num_threads, 1)
    width = min(width, per_thread)
    power = 1
    while power * 2 <= width:
        power *= 2
    return power


@register_pass
class Coalesce(Pass):
    """For every tt.load, tt.store and atomic on a tensor of pointers, picks a blocked layout
    whose dim order follows the pointers' contiguity (from the axis-info analysis) and whose
    sizePerThread along the most contiguous dim gives 16-byte accesses where contiguity and
    alignment allow, so consecutive lanes touch consecutive addresses. The op's operands are
    converted into that layout and its result converted back; remove-layout-conversions then
    spreads the new layout to the surrounding code."""

    name = "coalesce"
    stage = "ttgir"

    def run(self, module: Module, ctx: PassContext) -> None:
        num_warps = module.attributes["ttg.num-warps"].value
        threads = module.attributes["ttg.threads-per-warp"].value
        for func in module.functions():
            info = analyze(func)
            for op in list(func.walk()):
                if op.name not in MEMORY_OPS or not isinstance(op.operands[0].type, TensorType):
                    continue
                layout = self.choose_layout(op, info[op.operands[0]], num_warps, threads)
                if layout == encoding_of(op.operands[0]):
                    ctx.record_pattern(f"keep layout of {op.name}")
                    continue
                relayout_op(op, [layout] * len(op.operands), [layout] * len(op.results))
                ctx.record_pattern(f"coalesce {op.name}")

    @staticmethod
    def choose_layout(op: Operation, info: AxisInfo, num_warps: int, threads: int):
        """The coalesced blocked layout for memory op `op` whose pointers have `info`."""
        shape = op.operands[0].type.shape
        order = contiguity_order(info, len(shape))
        width = elements_per_access(op, info, order, num_warps * threads)
        size = [1] * len(shape)
        size[order[0]] = width
        return build_blocked(shape, tuple(size), order, num_warps, threads)
