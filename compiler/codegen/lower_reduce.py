"""Reductions and scans along one axis, in three levels as Triton lowers them:
inside a thread (registers along the axis), across the lanes of a warp (butterfly
`shfl.sync.bfly` for reductions, `shfl.sync.up/down` for scans), and across warps through shared
memory with barriers. The combine region is inlined at each step (multi-operand reductions such as
argmax combine tuples). Only lane and warp bits that map to distinct elements take part, so
tensors smaller than the layout's tile are not counted twice.
"""
from __future__ import annotations

from compiler.dialects import tt
from compiler.analysis import layouts
from compiler.dialects.ttg import SliceEncoding
from compiler.ir.types import TensorType

from .indices import blocked_thread_positions
from .llvm_helpers import (I32, barrier, byte_width, call_intrinsic, from_i32_words, i32,
                           shuffle_xor, to_i32_words)
from .lower_convert import flat_offset, shared_load, shared_store
from .registry import lowers


class AxisGeometry:
    """Where the reduced axis lives in the thread id: which lane and warp bits move along it."""

    def __init__(self, ctx, layout, shape, axis):
        self.ctx = ctx
        self.layout = layout
        self.shape = tuple(shape)
        root, root_shape, keep = ctx.indexer._root(layout, self.shape)
        self.root = root
        self.raxis = keep[axis]
        lshift, lcount, wshift, wcount = blocked_thread_positions(root)[self.raxis]
        spt = root.size_per_thread[self.raxis]
        extent = root_shape[self.raxis]
        self.lane_shift, self.warp_shift = lshift, wshift
        self.lane_bits = [i for i in range(lcount.bit_length() - 1) if spt << i < extent]
        tpw = lcount
        self.warp_bits = [i for i in range(wcount.bit_length() - 1) if (spt * tpw) << i < extent]
        self.real_lanes = 1 << len(self.lane_bits)
        self.real_warps = 1 << len(self.warp_bits)

    def lane_index(self):
        """The thread's lane position along the axis (real bits only)."""
        ix = self.ctx.indexer
        return ix._cached(("lane_axis", self.root, self.raxis, self.real_lanes),
                          lambda b: b.and_(b.lshr(ix.lane(), i32(self.lane_shift)),
                                           i32(self.real_lanes - 1)))

    def warp_index(self):
        """The thread's warp position along the axis (real bits only)."""
        ix = self.ctx.indexer
        return ix._cached(("warp_axis", self.root, self.raxis, self.real_warps),
                          lambda b: b.and_(b.lshr(ix.warp(), i32(self.warp_shift)),
                                           i32(self.real_warps - 1)))


def _combine(ctx, region, acc: tuple, value: tuple) -> tuple:
    return tuple(ctx.lower_region_inline(region, list(acc) + list(value)))


def _groups(layout, shape, raxis) -> dict:
    """{slot with the axis zeroed: [register indices along the axis, in register order]}; a
    register repeating an element already in its group is left out (it would count twice)."""
    slots = layouts.register_slots(layout, shape)
    coords = layouts.thread_elements(layout, shape, 0, 0)
    groups: dict = {}
    seen: dict = {}
    for reg, slot in enumerate(slots):
        key = layouts.slot_without(slot, {raxis})
        if coords[reg] in seen.setdefault(key, set()):
            continue
        seen[key].add(coords[reg])
        groups.setdefault(key, []).append(reg)
    return groups


def _reg_axis_coord(layout, shape, reg, axis) -> int:
    return layouts.thread_elements(layout, shape, 0, 0)[reg][axis]


@lowers(tt.ReduceOp)
def lower_reduce(ctx, op):
    """`tt.reduce {axis}`: in-thread, butterfly shuffles, then shared memory across warps."""
    axis = op.attributes["axis"].value
    region = op.regions[0]
    t: TensorType = op.operands[0].type
    layout, shape = t.encoding, t.shape
    geo = AxisGeometry(ctx, layout, shape, axis)
    inputs = [ctx.get(v) for v in op.operands]
    b = ctx.builder

    accs = {}
    for key, regs in _groups(layout, shape, geo.raxis).items():
        acc = tuple(values[regs[0]] for values in inputs)
        for reg in regs[1:]:
            acc = _combine(ctx, region, acc, tuple(values[reg] for values in inputs))
        accs[key] = acc

    for bit in reversed(geo.lane_bits):
        offset = 1 << (geo.lane_shift + bit)
        for key, acc in accs.items():
            other = tuple(shuffle_xor(b, v, offset) for v in acc)
            accs[key] = _combine(ctx, region, acc, other)

    result_layout = SliceEncoding(axis, layout)
    result_shape = tuple(s for d, s in enumerate(shape) if d != axis)
    keys = [layouts.slot_without(s, {geo.raxis})
            for s in layouts.register_slots(result_layout, result_shape)] if result_shape \
        else [next(iter(accs))]
    if geo.real_warps > 1:
        accs = _across_warps(ctx, op, region, geo, accs, keys, result_layout, result_shape)
    outputs = [accs[k] for k in keys]
    for i, result in enumerate(op.results):
        ctx.set(result, [out[i] for out in outputs])


def _across_warps(ctx, op, region, geo, accs, keys, result_layout, result_shape):
    """Each warp writes its partial results; after a barrier every thread combines them."""
    b = ctx.builder
    numel = 1
    for s in result_shape:
        numel *= s
    if result_shape:
        coords = ctx.indexer.coords(b, result_layout, result_shape)
        offsets = [flat_offset(b, c, result_shape) for c in coords]
    else:
        offsets = [i32(0)]
    bases, offset_bytes = [], 0
    for r in op.results:
        bases.append(ctx.scratch(numel * geo.real_warps * max(4, byte_width(r.type)), offset_bytes))
        offset_bytes += (numel * geo.real_warps * max(4, byte_width(r.type)) + 15) // 16 * 16
    warp = geo.warp_index()
    barrier(b)
    for key, off in zip(keys, offsets):
        slot = b.add(b.mul(off, i32(geo.real_warps)), warp)
        for base, v in zip(bases, accs[key]):
            shared_store(ctx, base, slot, v)
    barrier(b)
    out = {}
    for key, off in zip(keys, offsets):
        first = b.mul(off, i32(geo.real_warps))
        acc = None
        for w in range(geo.real_warps):
            slot = b.add(first, i32(w)) if w else first
            value = tuple(shared_load(ctx, base, slot, v.type) for base, v in zip(bases, accs[key]))
            acc = value if acc is None else _combine(ctx, region, acc, value)
        out[key] = acc
    return out


# ---- scans -------------------------------------------------------------------------------------
def _shuffle_dir(b, value, delta: int, up: bool):
    name = "llvm.nvvm.shfl.sync.up.i32" if up else "llvm.nvvm.shfl.sync.down.i32"
    clamp = 0 if up else 31
    words = [call_intrinsic(b, name, I32, [i32(-1), w, i32(delta), i32(clamp)])
             for w in to_i32_words(b, value)]
    return from_i32_words(b, words, value.type)


def _shuffle_idx(b, value, lane):
    words = [call_intrinsic(b, "llvm.nvvm.shfl.sync.idx.i32", I32, [i32(-1), w, lane, i32(31)])
             for w in to_i32_words(b, value)]
    return from_i32_words(b, words, value.type)


def _select_tuple(b, cond, a: tuple, c: tuple) -> tuple:
    return tuple(b.select(cond, x, y) for x, y in zip(a, c))


@lowers(tt.ScanOp)
def lower_scan(ctx, op):
    """`tt.scan {axis, reverse}`: inclusive scan; chunk scans in each thread, a shuffle scan of
    chunk totals across lanes, warp totals through shared memory, tile repetitions in order."""
    axis = op.attributes["axis"].value
    reverse_attr = op.attributes.get("reverse")
    reverse = bool(reverse_attr.value) if reverse_attr is not None else False
    region = op.regions[0]
    t: TensorType = op.operands[0].type
    layout, shape = t.encoding, t.shape
    geo = AxisGeometry(ctx, layout, shape, axis)
    inputs = [ctx.get(v) for v in op.operands]
    b = ctx.builder
    slots = layouts.register_slots(layout, shape)
    out = [list(values) for values in inputs]
    lane_ax = geo.lane_index()
    warp_ax = geo.warp_index()
    if reverse:
        lane_ax = b.sub(i32(geo.real_lanes - 1), lane_ax)
        warp_ax = b.sub(i32(geo.real_warps - 1), warp_ax)

    groups = _groups(layout, shape, geo.raxis)
    for key, regs in groups.items():
        regs = sorted(regs, key=lambda r: _reg_axis_coord(layout, shape, r, axis), reverse=reverse)
        chunks: dict = {}
        for r in regs:
            chunks.setdefault(slots[r].rep_index[geo.raxis], []).append(r)
        carry = None
        for rep in sorted(chunks, reverse=reverse):
            chunk = chunks[rep]
            vals = [tuple(out[k][r] for k in range(len(out))) for r in chunk]
            for i in range(1, len(vals)):
                vals[i] = _combine(ctx, region, vals[i - 1], vals[i])
            total = vals[-1]
            # inclusive scan of chunk totals across the lanes of the axis
            for bit in range(len(geo.lane_bits)):
                delta = 1 << (geo.lane_shift + geo.lane_bits[bit])
                moved = tuple(_shuffle_dir(b, v, delta, not reverse) for v in total)
                ok = b.icmp_unsigned(">=", lane_ax, i32(1 << bit))
                total = _select_tuple(b, ok, _combine(ctx, region, moved, total), total)
            if geo.real_lanes > 1:
                delta = 1 << geo.lane_shift
                prefix = tuple(_shuffle_dir(b, v, delta, not reverse) for v in total)
                ok = b.icmp_unsigned(">", lane_ax, i32(0))
                vals = [_select_tuple(b, ok, _combine(ctx, region, prefix, v), v) for v in vals]
            tile_total = _lane_broadcast_last(ctx, geo, total, reverse)
            if geo.real_warps > 1:
                vals, tile_total = _scan_warps(ctx, region, geo, vals, tile_total, warp_ax,
                                               reverse)
            if carry is not None:
                vals = [_combine(ctx, region, carry, v) for v in vals]
                tile_total = _combine(ctx, region, carry, tile_total)
            carry = tile_total
            for r, v in zip(chunk, vals):
                for k in range(len(out)):
                    out[k][r] = v[k]
    _fill_duplicates(layout, shape, out)
    for result, values in zip(op.results, out):
        ctx.set(result, values)


def _lane_broadcast_last(ctx, geo, total, reverse):
    """The inclusive total held by the last lane along the axis, in every lane."""
    if geo.real_lanes == 1:
        return total
    b = ctx.builder
    mask = (geo.real_lanes - 1) << geo.lane_shift
    lane = ctx.indexer.lane()
    last = 0 if reverse else mask
    src = b.or_(b.and_(lane, i32(~mask & 31)), i32(last))
    return tuple(_shuffle_idx(b, v, src) for v in total)


def _scan_warps(ctx, region, geo, vals, tile_total, warp_ax, reverse):
    """Warp totals through shared memory: each warp adds the totals of the warps before it
    along the axis (the scratch area is reused by every call: barriers fence it on both sides).

    `warp_ax` is the warp's position in scan order (mirrored for reverse scans); slots are
    indexed by the full warp id so warps at other positions across the axis do not collide."""
    b = ctx.builder
    bases = []
    offset = 0
    num_warps = ctx.num_warps
    for v in tile_total:
        size = num_warps * 32 * 8
        bases.append(ctx.scratch(size, offset))
        offset += size
    lane = ctx.indexer.lane()
    warp = ctx.indexer.warp()
    axis_mask = (geo.real_warps - 1) << geo.warp_shift
    others = b.and_(warp, i32(~axis_mask & (num_warps - 1)))
    barrier(b)
    slot = b.add(b.mul(warp, i32(32)), lane)
    for base, v in zip(bases, tile_total):
        shared_store(ctx, base, slot, v)
    barrier(b)
    prefix = has = whole = None
    for w in range(geo.real_warps):
        position = geo.real_warps - 1 - w if reverse else w
        source = b.or_(others, i32(position << geo.warp_shift))
        s = b.add(b.mul(source, i32(32)), lane)
        value = tuple(shared_load(ctx, base, s, v.type) for base, v in zip(bases, tile_total))
        if w < geo.real_warps - 1:
            before = b.icmp_unsigned(">", warp_ax, i32(w))
            if prefix is None:
                prefix, has = value, before
            else:
                prefix = _select_tuple(b, before, _combine(ctx, region, prefix, value), prefix)
                has = b.or_(has, before)
        whole = value if whole is None else _combine(ctx, region, whole, value)
    new_vals = [_select_tuple(b, has, _combine(ctx, region, prefix, v), v) for v in vals]
    return new_vals, whole


def _fill_duplicates(layout, shape, out) -> None:
    """Registers that repeat an element take the scanned value of its first register."""
    coords = layouts.thread_elements(layout, shape, 0, 0)
    first = {}
    for reg, c in enumerate(coords):
        first.setdefault(c, reg)
    for reg, c in enumerate(coords):
        if first[c] != reg:
            for values in out:
                values[reg] = values[first[c]]

