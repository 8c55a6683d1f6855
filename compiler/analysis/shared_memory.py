"""Shared-memory needs of a ttgir function and a liveness-based allocation of them.

Two kinds of buffers, as in Triton's Allocation analysis:
  scratch  bytes an op needs only while it runs: a layout conversion goes through shared memory,
           a reduction or scan that crosses warps exchanges one partial result per warp, an
           atomic whose result is a scalar broadcasts it; live for that op alone;
  explicit `ttg.local_alloc` buffers, live from the alloc to their last use (a whole loop when
           used inside one it does not contain), following the views that read them later:
           `ttg.memdesc_index` slices of a multi-buffered (pipelined) allocation, transposed
           views (`ttg.memdesc_trans`), and the dots
           that read a `ttg.local_load`'s buffer themselves.
Buffers whose lifetimes overlap get disjoint offsets; others may share bytes. `scratch_bytes`
is the one formula the lowering and this analysis agree on.
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler.analysis.gather import warp_local_plan
from compiler.analysis.layout_propagation import threads_along, warps_along
from compiler.dialects.tt import (AtomicCASOp, AtomicRMWOp, DotOp, GatherOp, HistogramOp,
                                  PointerType, ReduceOp, ReshapeOp, ScanOp, TransOp)
from compiler.dialects.ttg import (MEMDESC_VIEWS, ConvertLayoutOp, LocalAllocOp, LocalLoadOp,
                                   MemDescType, NVMMASharedEncoding)
from compiler.dialects.ttng import TensormapCreateOp
from compiler.ir.core import Operation
from compiler.ir.traits import LoopLike, SharedMemoryScratch
from compiler.ir.types import FloatType, IntegerType, TensorType

ALIGNMENT = 16
#: a tensor map's bytes and the alignment `tensormap.replace` needs of one in shared memory
TENSOR_MAP_ALIGNMENT = 128


def byte_width(t) -> int:
    """Bytes one element of `t` takes in shared memory (pointers 8, i1 1)."""
    scalar = t.element if isinstance(t, (TensorType, MemDescType)) else t
    if isinstance(scalar, PointerType):
        return 8
    if isinstance(scalar, (IntegerType, FloatType)):
        return max(scalar.width // 8, 1)
    return 8


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _conversion_scratch(op: Operation) -> int:
    """A conversion's (or trans / reshape's) buffer: the whole tensor when its plan goes
    through shared memory (compiler.analysis.conversion), else nothing."""
    from .conversion import reshaped_in_source, tensor_plan, transposed_in_source
    from .layout_to_linear import to_linear_layout
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, TensorType) or src.encoding is None or dst.encoding is None:
        return 0
    target = None
    if isinstance(op, TransOp):
        target = transposed_in_source(to_linear_layout(dst.encoding, dst.shape),
                                      list(op.attributes["order"].values))
    elif isinstance(op, ReshapeOp):
        target = reshaped_in_source(to_linear_layout(dst.encoding, dst.shape), src.shape)
    try:
        return tensor_plan(src, dst, target).scratch_bytes
    except ValueError:
        return 0        # no plan: the lowering plans it again and reports why, at the op


def scratch_bytes(op: Operation) -> int:
    """Shared memory `op` needs while it runs (0 for most ops):
    convert_layout, trans, reshape: the whole tensor (numel * element bytes) when the
      conversion plan goes through shared memory, else 0;
    reduce / scan: when warps split the reduced axis, one value per warp per output element
      (numel of the result with the axis counted as the warps along it) for each operand;
    atomic_rmw / atomic_cas with a scalar result that is used: one element, to broadcast it to
      all threads (an unused one, a lock's release say, is not broadcast);
    gather: the whole source (it is written to shared memory and read at the indices);
    histogram: one i32 counter per bin;
    tensormap_create: the 128-byte tensor map it builds before copying it to global memory."""
    if not op.has_trait(SharedMemoryScratch):
        return 0
    if isinstance(op, (ConvertLayoutOp, TransOp, ReshapeOp)):
        return _conversion_scratch(op)
    if isinstance(op, (ReduceOp, ScanOp)):
        src = op.operands[0].type
        if not isinstance(src, TensorType) or src.encoding is None:
            return 0
        axis = op.attributes["axis"].value
        warps = warps_along(src.encoding, axis)
        if warps <= 1:
            return 0
        shape = list(src.shape)
        shape[axis] = warps
        return sum(_numel(shape) * byte_width(v.type) for v in op.operands)
    if isinstance(op, GatherOp):
        src = op.operands[0].type
        if warp_local_plan(src, op.results[0].type, op.axis) is not None:
            return 0                   # warp shuffles only
        return _numel(src.shape) * byte_width(src)
    if isinstance(op, TensormapCreateOp):
        return TENSOR_MAP_ALIGNMENT
    if isinstance(op, HistogramOp):
        return _numel(op.results[0].type.shape) * 4
    if isinstance(op, (AtomicRMWOp, AtomicCASOp)) and not isinstance(
            op.results[0].type, TensorType) and op.results[0].has_uses():
        return byte_width(op.results[0].type)
    return 0


def crosses_threads(op: Operation) -> bool:
    """Whether a reduce/scan combines values held by different lanes (uses shuffles)."""
    src = op.operands[0].type
    axis = op.attributes["axis"].value
    return threads_along(src.encoding, axis) > 1 or warps_along(src.encoding, axis) > 1


@dataclass
class Buffer:
    """One allocation: its owner op, size, live interval (op indices, inclusive), offset."""

    op: Operation
    size: int
    start: int
    end: int
    kind: str
    offset: int = -1
    align: int = ALIGNMENT

    def overlaps(self, other: "Buffer") -> bool:
        """Whether both buffers are alive at some op."""
        return self.start <= other.end and other.start <= self.end


#: alignment of buffers in a swizzled #ttg.nvmma_shared layout (wgmma's swizzle XORs address
#: bits 4-9, so the pattern must start on a 1024-byte boundary)
NVMMA_ALIGNMENT = 1024


def _align(n: int, alignment: int = ALIGNMENT) -> int:
    return (n + alignment - 1) // alignment * alignment


def buffer_alignment(t: MemDescType) -> int:
    """The byte alignment a shared buffer of type `t` needs."""
    enc = t.encoding
    if isinstance(enc, NVMMASharedEncoding) and enc.swizzling_byte_width:
        return NVMMA_ALIGNMENT
    return ALIGNMENT


def _number_ops(func: Operation) -> dict:
    """Program-order index of every op, and for region ops the index of their last nested op."""
    index: dict = {}
    last: dict = {}

    def visit(op):
        index[op] = len(index)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    visit(inner)
        last[op] = len(index) - 1

    for op in func.regions[0].blocks[0].ops:
        visit(op)
    return index, last


def _users_through_views(value) -> list:
    """(user, operand index) of a buffer, following the views that read it later: slices of a
    multi-buffered allocation (`ttg.memdesc_index`), transposed views (`ttg.memdesc_trans`)
    and `ttg.local_load`s whose only users are
    dots (the tensor-core lowering reads the buffer at the dot, not at the load)."""
    found = []
    for user, position in value.uses:
        found.append((user, position))
        if isinstance(user, MEMDESC_VIEWS):
            found += _users_through_views(user.results[0])
        elif isinstance(user, LocalLoadOp):
            found += [(dot, i) for dot, i in user.results[0].uses if isinstance(dot, DotOp)]
    return found


def _live_end(op: Operation, index: dict, last: dict) -> int:
    """Last op index at which `op`'s result is used, widened to whole loops that use it but do
    not define it (the value must survive every iteration)."""
    end = index[op]
    for result in op.results:
        for user, _ in _users_through_views(result):
            end = max(end, index[user])
            ancestor = user.parent_op
            while ancestor is not None and ancestor in index and not ancestor.is_ancestor_of(op):
                if ancestor.has_trait(LoopLike):
                    end = max(end, last[ancestor])
                ancestor = ancestor.parent_op
    return end


def buffers(func: Operation) -> list[Buffer]:
    """Every shared-memory buffer the function needs, with its live interval."""
    index, last = _number_ops(func)
    out = []
    for op in index:
        if isinstance(op, LocalAllocOp):
            t = op.results[0].type
            align = buffer_alignment(t)
            out.append(Buffer(op, _align(_numel(t.shape) * byte_width(t), align), index[op],
                              _live_end(op, index, last), "explicit", align=align))
            continue
        size = scratch_bytes(op)
        if size:
            align = TENSOR_MAP_ALIGNMENT if isinstance(op, TensormapCreateOp) else ALIGNMENT
            out.append(Buffer(op, _align(size, align), index[op], index[op], "scratch",
                              align=align))
    return out


def allocate(func: Operation) -> tuple[list[Buffer], int]:
    """Give every buffer an offset, biggest first, at the lowest address not used by a buffer
    live at the same time; returns the buffers and the total bytes needed."""
    bufs = buffers(func)
    placed: list[Buffer] = []
    for buf in sorted(bufs, key=lambda b: (-b.size, b.start)):
        offset = 0
        for other in sorted((p for p in placed if p.overlaps(buf)), key=lambda p: p.offset):
            if offset + buf.size <= other.offset:
                break
            offset = _align(max(offset, other.offset + other.size), buf.align)
        buf.offset = offset
        placed.append(buf)
    total = max((b.offset + b.size for b in bufs), default=0)
    return bufs, total
