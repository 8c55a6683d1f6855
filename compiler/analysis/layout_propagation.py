"""Layout construction and inference for the ttgir passes.

Builds Triton-style blocked layouts for a shape (threads and warps spread fastest dim first),
and says how a layout flows through an op: which result layout an op gives for an operand
layout (forward) and which operand layout an op needs for a wanted result layout (backward).
The passes that assign, coalesce and clean up layouts all ask these questions here, so the rules
live in one place. Which thread holds which element is `compiler.analysis.layouts` (helper D2).
"""
from __future__ import annotations

from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, LinearEncoding,
                                   NvidiaMmaEncoding, SliceEncoding)
from compiler.dialects.tt import ExpandDimsOp, ReduceOp, TransOp
from compiler.ir.core import Operation, Value
from compiler.ir.traits import Elementwise, SameOperandsAndResultLayout, SameOperandsAndResultType
from compiler.ir.types import TensorType, Type


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def build_blocked(shape: tuple, size_per_thread: tuple, order: tuple, num_warps: int,
                  threads_per_warp: int = 32) -> BlockedEncoding:
    """A blocked layout with the given per-thread tile and dim order: lanes, then warps, are
    given to dims fastest-first (`order[0]` first) up to what each dim can use; what is left
    over goes to the slowest dim, as Triton's default layouts do."""
    rank = len(shape)
    tpw = [1] * rank
    wpc = [1] * rank
    lanes_left, warps_left = threads_per_warp, num_warps
    threads_left = threads_per_warp * num_warps
    lanes_used, warps_used = 1, 1
    for i in order[:-1]:
        room = max(1, shape[i] // size_per_thread[i])
        threads_here = max(1, min(threads_left, room))
        tpw[i] = max(1, min(threads_here, lanes_left))
        wpc[i] = max(1, min(threads_here // tpw[i], warps_left))
        lanes_left //= tpw[i]
        warps_left //= wpc[i]
        threads_left //= threads_here
        lanes_used *= tpw[i]
        warps_used *= wpc[i]
    last = order[-1]
    tpw[last] = threads_per_warp // lanes_used
    wpc[last] = num_warps // warps_used
    return BlockedEncoding(tuple(size_per_thread), tuple(tpw), tuple(wpc), tuple(order))


def default_order(rank: int) -> tuple:
    """Dims fastest-varying first: the last dim is the contiguous one (row-major)."""
    return tuple(reversed(range(rank)))


def default_blocked(shape: tuple, num_warps: int, threads_per_warp: int = 32) -> BlockedEncoding:
    """Triton's default layout for a shape: one element per thread per tile, row-major order."""
    rank = len(shape)
    return build_blocked(tuple(shape), (1,) * rank, default_order(rank), num_warps,
                         threads_per_warp)


def encoding_of(value_or_type) -> object | None:
    """The layout of a tensor value or type (None for scalars and plain tensors)."""
    t = value_or_type.type if isinstance(value_or_type, Value) else value_or_type
    return t.encoding if isinstance(t, TensorType) else None


def with_encoding(t: Type, encoding) -> Type:
    """`t` in layout `encoding` (scalars are returned unchanged)."""
    return t.with_encoding(encoding) if isinstance(t, TensorType) else t


def order_of(encoding) -> tuple:
    """Dims of a distributed layout, fastest-varying first."""
    if isinstance(encoding, BlockedEncoding):
        return encoding.order
    if isinstance(encoding, SliceEncoding):
        parent = order_of(encoding.parent)
        return tuple(d if d < encoding.dim else d - 1 for d in parent if d != encoding.dim)
    if isinstance(encoding, DotOperandEncoding):
        # A operands run along K (dim 1) fastest, B operands along N (dim 1) too.
        return order_of(encoding.parent)
    if isinstance(encoding, NvidiaMmaEncoding):
        return default_order(encoding.rank)
    if isinstance(encoding, LinearEncoding):
        # the order the register, then lane, then warp bases first move along the dims (as
        # layout_to_linear.linear_order); dims no basis moves along last, last dim first
        order = []
        for bases in (encoding.register, encoding.lane, encoding.warp):
            for vec in bases:
                order += [dim for dim, v in enumerate(vec) if v and dim not in order]
        return tuple(order + [d for d in range(encoding.rank - 1, -1, -1) if d not in order])
    raise TypeError(f"no dim order for layout {encoding}")


def size_per_thread_of(encoding) -> tuple:
    """Contiguous elements a thread holds along each dim (1s where unknown)."""
    if isinstance(encoding, BlockedEncoding):
        return encoding.size_per_thread
    if isinstance(encoding, SliceEncoding):
        parent = size_per_thread_of(encoding.parent)
        return parent[:encoding.dim] + parent[encoding.dim + 1:]
    return (1,) * encoding.rank


def warps_along(encoding, axis: int) -> int:
    """How many warps a distributed layout spreads along `axis` (1 when none or unknown)."""
    if isinstance(encoding, BlockedEncoding):
        return encoding.warps_per_cta[axis]
    if isinstance(encoding, SliceEncoding):
        return warps_along(encoding.parent, axis if axis < encoding.dim else axis + 1)
    if isinstance(encoding, NvidiaMmaEncoding):
        return encoding.warps_per_cta[axis]
    return 1


def threads_along(encoding, axis: int) -> int:
    """How many lanes of a warp a distributed layout spreads along `axis`."""
    if isinstance(encoding, BlockedEncoding):
        return encoding.threads_per_warp[axis]
    if isinstance(encoding, SliceEncoding):
        return threads_along(encoding.parent, axis if axis < encoding.dim else axis + 1)
    return 1


def permute_blocked(encoding: BlockedEncoding, order: tuple) -> BlockedEncoding:
    """The layout of `tt.trans(x, order)` when x has layout `encoding`: the same threads hold
    the same elements, with dims renamed (result dim i is source dim order[i])."""
    inverse = [0] * len(order)
    for new, old in enumerate(order):
        inverse[old] = new
    return BlockedEncoding(tuple(encoding.size_per_thread[o] for o in order),
                           tuple(encoding.threads_per_warp[o] for o in order),
                           tuple(encoding.warps_per_cta[o] for o in order),
                           tuple(inverse[d] for d in encoding.order))


def reshaped_encoding(encoding, src_shape: tuple, dst_shape: tuple):
    """The layout of a row-major `tt.reshape` to `dst_shape` of a tensor of `src_shape` held in
    `encoding` in which every thread keeps its elements (no data moves): a `#ttg.linear`
    encoding (None when `encoding` has no linear form)."""
    from compiler.analysis.conversion import reshaped_in_source
    from compiler.analysis.layout_to_linear import to_linear_encoding, to_linear_layout
    try:
        layout = to_linear_layout(encoding, tuple(src_shape))
        return to_linear_encoding(reshaped_in_source(layout, tuple(dst_shape)))
    except Exception:           # no linear form for this encoding: the caller keeps its default
        return None


def transposed_encoding(encoding, shape: tuple, order: tuple):
    """The layout of `tt.trans(x, order)` when x (of `shape`) has layout `encoding`, with the
    same threads holding the same elements: a blocked layout stays blocked (`permute_blocked`),
    others become `#ttg.linear` (None when `encoding` has no linear form)."""
    if isinstance(encoding, BlockedEncoding):
        return permute_blocked(encoding, tuple(order))
    from compiler.analysis.layout_to_linear import (_permute_dims, to_linear_encoding,
                                                    to_linear_layout)
    try:
        return to_linear_encoding(_permute_dims(to_linear_layout(encoding, tuple(shape)),
                                                tuple(order)))
    except Exception:
        return None


def is_elementwise(op: Operation) -> bool:
    """Ops that apply one scalar function element by element (all tensors share a layout)."""
    return op.has_trait(Elementwise) or op.has_trait(SameOperandsAndResultType)


def passes_layout_through(op: Operation) -> bool:
    """Ops whose every tensor operand and result share one layout, so any layout can be pushed
    through them (given their operands are moved to it too)."""
    return is_elementwise(op) or op.has_trait(SameOperandsAndResultLayout)


def result_encoding(op: Operation, operand_encoding) -> object | None:
    """Forward rule: the layout of `op`'s tensor results when its tensor operands have layout
    `operand_encoding`; None when the op fixes its own layout (dot, convert, reductions to
    scalars) or cannot take that layout."""
    if passes_layout_through(op):
        return operand_encoding
    if isinstance(op, ReduceOp):
        if not isinstance(op.results[0].type, TensorType):
            return None
        return SliceEncoding(op.attributes["axis"].value, operand_encoding)
    if isinstance(op, ExpandDimsOp):
        if isinstance(operand_encoding, SliceEncoding) and \
                operand_encoding.dim == op.attributes["axis"].value:
            return operand_encoding.parent
        return None
    if isinstance(op, TransOp) and isinstance(operand_encoding, BlockedEncoding):
        return permute_blocked(operand_encoding, op.attributes["order"].values)
    return None


def operand_encoding(op: Operation, wanted) -> object | None:
    """Backward rule: the layout `op`'s tensor operands need so that its result has layout
    `wanted`; None when no operand layout gives it."""
    if passes_layout_through(op):
        return wanted
    if isinstance(op, ExpandDimsOp):
        return SliceEncoding(op.attributes["axis"].value, wanted)
    if isinstance(op, ReduceOp):
        axis = op.attributes["axis"].value
        if isinstance(wanted, SliceEncoding) and wanted.dim == axis:
            return wanted.parent
        return None
    if isinstance(op, TransOp) and isinstance(wanted, BlockedEncoding):
        order = op.attributes["order"].values
        inverse = [0] * len(order)
        for new, old in enumerate(order):
            inverse[old] = new
        return permute_blocked(wanted, tuple(inverse))
    return None


def can_hold(encoding, shape: tuple) -> bool:
    """Whether a layout fits a tensor of `shape` at all (rank matches; make_range needs 1-D)."""
    return encoding is not None and encoding.rank == len(shape)
