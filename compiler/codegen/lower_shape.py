"""Lowering of shape ops: splat, broadcast, expand_dims and make_range are register
re-indexing (no data moves between threads); reshape and trans go through shared memory."""
from __future__ import annotations

from compiler.dialects import tt
from compiler.analysis import layouts
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.ir.types import TensorType

from compiler.analysis.shared_memory import same_distribution

from .llvm_helpers import i32
from .lower_convert import exchange, row_major_strides
from .lowering import LoweringError
from .registry import lowers


def _count(t: TensorType) -> int:
    return layouts.elements_per_thread(t.encoding, t.shape)


@lowers(tt.SplatOp)
def lower_splat(ctx, op):
    """`tt.splat`: every register holds the scalar."""
    value = ctx.get(op.operands[0])[0]
    ctx.set(op.results[0], [value] * _count(op.results[0].type))


def _reindex(ctx, op, src: TensorType, dst: TensorType, zero_root_dims) -> None:
    """Each destination register takes the source register of the same slot with the given
    root dims zeroed (the dims along which the value is replicated)."""
    src_index = {}
    for i, slot in enumerate(layouts.register_slots(src.encoding, src.shape)):
        src_index.setdefault(layouts.slot_without(slot, zero_root_dims), i)
    values = ctx.get(op.operands[0])
    out = []
    for slot in layouts.register_slots(dst.encoding, dst.shape):
        key = layouts.slot_without(slot, zero_root_dims)
        if key not in src_index:
            raise LoweringError(f"{op.name}: layouts {src.encoding} and {dst.encoding} do not "
                                f"line up register by register")
        out.append(values[src_index[key]])
    ctx.set(op.results[0], out)


def _reindex_linear(ctx, op, src: TensorType, dst: TensorType, project) -> None:
    """Register re-indexing read from the linear layouts (for layouts without a RegisterSlot
    model): the lane and warp bases of both must agree once `project` maps a result coordinate
    to the operand's; each result register then takes the operand register that holds the
    projected element."""
    s_ll = to_linear_layout(src.encoding, tuple(src.shape))
    d_ll = to_linear_layout(dst.encoding, tuple(dst.shape))
    for in_dim in ("lane", "warp"):
        if [project(v) for v in d_ll.bases(in_dim)] != list(s_ll.bases(in_dim)):
            raise LoweringError(f"{op.name}: layouts {src.encoding} and {dst.encoding} spread "
                                f"the {in_dim}s differently; the values would have to move")
    src_of: dict = {}
    for i, coords in enumerate(layouts.thread_elements(src.encoding, tuple(src.shape), 0, 0)):
        src_of.setdefault(tuple(coords), i)
    values = ctx.get(op.operands[0])
    out = []
    for coords in layouts.thread_elements(dst.encoding, tuple(dst.shape), 0, 0):
        key = project(coords)
        if key not in src_of:
            raise LoweringError(f"{op.name}: no register of {src.encoding} holds element {key}")
        out.append(values[src_of[key]])
    ctx.set(op.results[0], out)


def _slot_models(*types) -> bool:
    return all(layouts.has_slot_model(t.encoding) for t in types)


@lowers(tt.BroadcastOp)
def lower_broadcast(ctx, op):
    """`tt.broadcast`: dims of size 1 repeat the register that holds them."""
    src, dst = op.operands[0].type, op.results[0].type
    if src.encoding != dst.encoding:
        raise LoweringError("tt.broadcast between different layouts")
    if not _slot_models(src, dst):
        ones = [d for d, s in enumerate(src.shape) if s == 1]
        _reindex_linear(ctx, op, src, dst,
                        lambda c: tuple(0 if d in ones else v for d, v in enumerate(c)))
        return
    dims = layouts.root_dims(dst.encoding)
    zero = {dims[d] for d, (s, t) in enumerate(zip(src.shape, dst.shape)) if s == 1 and t != 1}
    _reindex(ctx, op, src, dst, zero | {dims[d] for d, s in enumerate(src.shape) if s == 1})


@lowers(tt.ExpandDimsOp)
def lower_expand_dims(ctx, op):
    """`tt.expand_dims`: the operand's layout is a slice of the result's; same registers."""
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(dst, TensorType):
        ctx.set(op.results[0], ctx.get(op.operands[0]))
        return
    axis = op.attributes["axis"].value
    if not (isinstance(axis, int) and 0 <= axis < len(dst.shape)):
        raise LoweringError(f"axis = {axis} is not a dim of the rank-{len(dst.shape)} result")
    if not _slot_models(src, dst):
        _reindex_linear(ctx, op, src, dst,
                        lambda c: tuple(v for d, v in enumerate(c) if d != axis))
        return
    dims = layouts.root_dims(dst.encoding)
    _reindex(ctx, op, src, dst, {dims[axis]})


@lowers(tt.MakeRangeOp)
def lower_make_range(ctx, op):
    """`tt.make_range`: start + the element's coordinate, per register."""
    t = op.results[0].type
    start = op.attributes["start"].value
    b = ctx.builder
    out = []
    for coords in ctx.indexer.coords(b, t.encoding, t.shape):
        c = coords[0]
        out.append(b.add(c, i32(start)) if start else c)
    ctx.set(op.results[0], out)


@lowers(tt.ReshapeOp)
def lower_reshape(ctx, op):
    """`tt.reshape`: row-major re-flattening through shared memory."""
    src, dst = op.operands[0].type, op.results[0].type
    values = ctx.get(op.operands[0])
    if src.shape == dst.shape and same_distribution(src.encoding, dst.encoding, src.shape):
        ctx.set(op.results[0], list(values))
        return
    dst_strides = row_major_strides(dst.shape)
    src_strides = row_major_strides(src.shape)

    def to_src(b, coords):
        flat = None
        for c, s in zip(coords, dst_strides):
            term = c if s == 1 else b.mul(c, i32(s))
            flat = term if flat is None else b.add(flat, term)
        out = []
        for s, n in zip(src_strides, src.shape):
            out.append(b.urem(b.udiv(flat, i32(s)), i32(n)) if s != 1 else b.urem(flat, i32(n)))
        return out
    ctx.set(op.results[0], exchange(ctx, values, src, dst, to_src))


@lowers(tt.TransOp)
def lower_trans(ctx, op):
    """`tt.trans`: result element (i, j, ...) is operand element at the inverse permutation."""
    src, dst = op.operands[0].type, op.results[0].type
    order = list(op.attributes["order"].values)
    values = ctx.get(op.operands[0])

    def to_src(b, coords):
        out = [None] * len(order)
        for d, o in enumerate(order):
            out[o] = coords[d]
        return out
    ctx.set(op.results[0], exchange(ctx, values, src, dst, to_src))
