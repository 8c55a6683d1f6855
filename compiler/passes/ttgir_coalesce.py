"""coalesce: give each global memory access a layout that makes it wide and coalesced."""
from __future__ import annotations

from compiler.analysis.axis_info import AxisInfo, analyze
from compiler.analysis.layout_propagation import build_blocked, encoding_of
from compiler.dialects.scf import ConditionOp, YieldOp
from compiler.dialects.tt import AtomicCASOp, AtomicRMWOp, LoadOp, StoreOp
from compiler.ir.core import Module, Operation, Value
from compiler.ir.types import TensorType
from compiler.metadata import KernelMetadata

from .base import Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR
from .ttgir_rewrite import relayout_op

MEMORY_OPS = (LoadOp, StoreOp, AtomicRMWOp, AtomicCASOp)   # the ops that access global memory
ACCESS_BITS = 128


def contiguity_order(info: AxisInfo, rank: int) -> tuple:
    """Dims sorted by the pointers' contiguity, most contiguous first (ties keep the row-major
    order, last dim first)."""
    dims = list(reversed(range(rank)))
    return tuple(sorted(dims, key=lambda d: -info.contiguity[d]))


def _floor_pow2(n: int) -> int:
    power = 1
    while power * 2 <= n:
        power *= 2
    return power


def access_width(op: Operation, info: AxisInfo, order: tuple) -> int:
    """Elements one 128-bit access of `op` can move along dim `order[0]`: limited by the
    pointers' contiguity and alignment there, the access size and the tensor's extent (a power
    of two). This is what this op alone would want each thread to hold."""
    ptr_type = op.operands[0].type
    pointee = ptr_type.element.pointee
    bits = getattr(pointee, "width", 64)
    elem_bytes = max(bits // 8, 1)
    dim = order[0]
    alignment = max(info.divisibility[dim] // elem_bytes, 1)
    per_access = max(ACCESS_BITS // max(bits, 8), 1)
    return _floor_pow2(min(alignment, info.contiguity[dim], per_access, ptr_type.shape[dim]))


class _Components:
    """Union-find over the tensor values of a function: two values are in one component when
    some op (or region terminator) relates them, so memory ops whose data meets anywhere in
    the kernel end up together (Triton's multi-root slice)."""

    def __init__(self, func: Operation):
        self.parent: dict = {}
        for op in func.walk():
            values = [v for v in list(op.operands) + list(op.results)
                      if isinstance(v.type, TensorType)]
            if isinstance(op, (YieldOp, ConditionOp)) and op.parent_op is not None:
                values += [r for r in op.parent_op.results if isinstance(r.type, TensorType)]
            for region in op.regions:
                for block in region.blocks:
                    values += [a for a in block.args if isinstance(a.type, TensorType)]
            for v in values[1:]:
                self.union(values[0], v)

    def find(self, v: Value) -> Value:
        """The representative of `v`'s component."""
        root = v
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while v is not root:
            self.parent[v], v = root, self.parent.get(v, v)
        return root

    def union(self, a: Value, b: Value) -> None:
        """Put `a` and `b` in one component."""
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


@register_pass
class Coalesce(Pass):
    """For every tt.load, tt.store and atomic on a tensor of pointers, picks a blocked layout
    whose dim order follows the pointers' contiguity (from the axis-info analysis) and whose
    sizePerThread along the most contiguous dim gives 16-byte accesses where contiguity and
    alignment allow, so consecutive lanes touch consecutive addresses. As in Triton, memory
    ops of the same shape and dim order whose data meets (layer norm's loads of X, W, B and
    its store of Y) get one width, the widest any of them can use, so their values need no
    conversion between them; ops that write never take more than their own one access. The
    op's operands are converted into that layout and its result converted back;
    remove-layout-conversions then spreads the new layout to the surrounding code."""

    name = "coalesce"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        facts = KernelMetadata.from_ttgir(module, reader=self.name)
        num_warps, threads = facts.num_warps, facts.threads_per_warp
        for func in module.functions():
            info = analyze(func)
            ops = [op for op in func.walk() if isinstance(op, MEMORY_OPS)
                   and isinstance(op.operands[0].type, TensorType)]
            components = _Components(func)
            layouts = {op: self.choose_layout(op, info, ops, components, num_warps, threads)
                       for op in ops}
            for op in ops:
                layout = layouts[op]
                if layout == encoding_of(op.operands[0]):
                    ctx.record_pattern(f"keep layout of {op.name}")
                    continue
                relayout_op(op, [layout] * len(op.operands), [layout] * len(op.results))
                ctx.record_pattern(f"coalesce {op.name}")

    @staticmethod
    def choose_layout(op: Operation, info: dict, ops: list, components: _Components,
                      num_warps: int, threads: int):
        """The coalesced blocked layout for memory op `op`: its dim order from its pointers'
        contiguity, its width the widest access of the ops in `ops` that share its shape,
        order and component, capped by the elements each thread has (and, for ops that write,
        by its own access width)."""
        ptr = op.operands[0]
        shape = ptr.type.shape
        order = contiguity_order(info[ptr], len(shape))
        width = access_width(op, info[ptr], order)
        group = components.find(ptr)
        for other in ops:
            other_ptr = other.operands[0]
            if other is op or other_ptr.type.shape != shape or \
                    components.find(other_ptr) is not group or \
                    contiguity_order(info[other_ptr], len(shape)) != order:
                continue
            width = max(width, access_width(other, info[other_ptr], order))
        num_threads = num_warps * threads
        width = min(width, max(ptr.type.numel // num_threads, 1))
        if not isinstance(op, LoadOp):
            width = min(width, access_width(op, info[ptr], order))
        size = [1] * len(shape)
        size[order[0]] = _floor_pow2(width)
        return build_blocked(shape, tuple(size), order, num_warps, threads)
