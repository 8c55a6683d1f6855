"""Reductions and scans along one axis, in three levels as Triton lowers them:
inside a thread (registers along the axis), across the lanes of a warp (butterfly
`shfl.sync.bfly` for reductions, `shfl.sync.up/down` for scans), and across warps through shared
memory with barriers. The combine region is inlined at each step (multi-operand reductions such as
argmax combine tuples). Only lane and warp bits that map to distinct elements take part, so
tensors smaller than the layout's tile are not counted twice.

Reductions work on any distributed layout from its linear layout (`LinearAxis`). Scans on
blocked-rooted layouts use their geometry (`AxisGeometry`, RegisterSlot chunks); on any other
layout (mma accumulators and operands, `#ttg.linear`) they double over the bits of the axis
coordinate, whichever of register, lane or warp owns each (`_lower_scan_linear`).
"""
from __future__ import annotations

from compiler.dialects import tt
from compiler.analysis import layouts
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, SliceEncoding
from compiler.ir.types import TensorType

from .indices import blocked_thread_positions
from .llvm_helpers import (I32, barrier, byte_width, call_intrinsic, from_i32_words, i32,
                           shuffle_idx, shuffle_xor, to_i32_words)
from .lower_convert import flat_offset, shared_load, shared_store
from .lowering import LoweringError
from .registry import lowers


class AxisGeometry:
    """Where a scanned axis of a blocked-rooted layout lives in the thread id: which lane and
    warp bits move along it."""

    def __init__(self, ctx, layout, shape, axis):
        self.ctx = ctx
        self.layout = layout
        self.shape = tuple(shape)
        root, root_shape, keep = _blocked_root(layout, self.shape)
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


def _blocked_root(layout, shape):
    """The root blocked layout of a blocked-rooted layout, its shape and which of its dims
    this tensor keeps."""
    if isinstance(layout, BlockedEncoding):
        return layout, shape, list(range(layout.rank))
    if isinstance(layout, SliceEncoding):
        root, root_shape, keep = _blocked_root(layout.parent,
                                               layouts.parent_shape_of(layout, shape))
        removed = keep[layout.dim]
        return root, root_shape, [d for d in keep if d != removed]
    if isinstance(layout, DotOperandEncoding):
        parent_shape = list(shape)
        parent_shape[1 if layout.op_idx == 0 else 0] = 1
        return layout.parent, tuple(parent_shape), [0, 1]
    raise LoweringError(f"layout {layout} has no blocked root")


class LinearAxis:
    """The reduced axis of any distributed layout, read from its linear layout: registers are
    grouped by their coordinate off the axis; the lane bits whose bases move only along the axis
    (and reach elements the registers and earlier bits do not) are shuffled; such warp bits go
    through shared memory. Bases that move along the axis and another dim at once are not
    supported (no Triton encoding has them)."""

    def __init__(self, ctx, op, layout, shape, axis):
        self.ctx = ctx
        self.axis = axis
        ll = to_linear_layout(layout, tuple(shape))
        span = _Span()
        for vec in ll.bases("register"):
            self._check(op, layout, vec)
            if self._on_axis(vec):
                span.add(vec[axis])
        self.lane_offsets = [1 << i for i, vec in enumerate(ll.bases("lane"))
                             if self._check(op, layout, vec) and span.add(vec[axis])]
        self.warp_positions = [i for i, vec in enumerate(ll.bases("warp"))
                               if self._check(op, layout, vec) and span.add(vec[axis])]
        self.real_warps = 1 << len(self.warp_positions)
        self.groups: dict = {}
        seen = set()
        for reg, coords in enumerate(layouts.thread_elements(layout, tuple(shape), 0, 0)):
            if coords in seen:
                continue
            seen.add(coords)
            self.groups.setdefault(self.key(coords), []).append(reg)

    def _on_axis(self, vec) -> bool:
        return bool(vec[self.axis]) and not any(v for d, v in enumerate(vec) if d != self.axis)

    def _check(self, op, layout, vec) -> bool:
        """True if the basis moves along the axis only; False if it does not move along it."""
        if not vec[self.axis]:
            return False
        if not self._on_axis(vec):
            raise LoweringError(f"{op.name}: layout {layout} has a basis {list(vec)} that moves "
                                f"along axis {self.axis} and another dim at once")
        return True

    def key(self, coords) -> tuple:
        return tuple(c for d, c in enumerate(coords) if d != self.axis)

    def warp_index(self):
        """The warp's position along the axis: its axis bits, packed."""
        ix = self.ctx.indexer

        def make(b):
            pos = self.warp_positions
            if pos and pos == list(range(pos[0], pos[0] + len(pos))):
                return b.and_(b.lshr(ix.warp(), i32(pos[0])), i32((1 << len(pos)) - 1))
            index = None
            for j, p in enumerate(self.warp_positions):
                bit = b.and_(b.lshr(ix.warp(), i32(p)), i32(1))
                bit = b.shl(bit, i32(j)) if j else bit
                index = bit if index is None else b.or_(index, bit)
            return index if index is not None else i32(0)
        return ix._cached(("warp_axis_bits", tuple(self.warp_positions)), make)


class _Span:
    """A GF(2) span of ints; `add` returns whether the value was new (independent)."""

    def __init__(self):
        self.basis: dict = {}

    def add(self, value: int) -> bool:
        while value:
            top = value.bit_length() - 1
            if top not in self.basis:
                self.basis[top] = value
                return True
            value ^= self.basis[top]
        return False


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
    """`tt.reduce {axis}` on any distributed layout, read from its linear layout: in-thread
    over each register group, butterfly shuffles over the axis's lane bits, shared memory over
    its warp bits. The result is in the slice layout of the input."""
    t: TensorType = op.operands[0].type
    axis = op.attributes["axis"].value
    layout, shape = t.encoding, tuple(t.shape)
    region = op.regions[0]
    geo = LinearAxis(ctx, op, layout, shape, axis)
    inputs = [ctx.get(v) for v in op.operands]
    b = ctx.builder
    accs = {}
    for key, regs in geo.groups.items():
        acc = tuple(values[regs[0]] for values in inputs)
        for reg in regs[1:]:
            acc = _combine(ctx, region, acc, tuple(values[reg] for values in inputs))
        accs[key] = acc
    for offset in reversed(geo.lane_offsets):
        for key, acc in accs.items():
            other = tuple(shuffle_xor(b, v, offset) for v in acc)
            accs[key] = _combine(ctx, region, acc, other)
    result_shape = tuple(s for d, s in enumerate(shape) if d != axis)
    result_layout = SliceEncoding(axis, layout)
    if result_shape:
        keys = [tuple(c) for c in layouts.thread_elements(result_layout, result_shape, 0, 0)]
    else:
        keys = [()]
    missing = [k for k in keys if k not in accs]
    if missing:
        raise LoweringError(f"{op.name}: result registers {missing[:4]} of {result_layout} are "
                            f"not reduced by {layout}")
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
    if not layouts.has_slot_model(layout) or layouts.is_mma_family(layout):
        return _lower_scan_linear(ctx, op, region, layout, tuple(shape), axis, reverse)
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


def _scan_levels(op, layout, ll, shape, axis) -> list:
    """For each bit of the axis coordinate, low to high: (input dim, bit) of the one register,
    lane or warp basis that sets it."""
    owner: dict = {}
    span = _Span()
    for in_dim in ("register", "lane", "warp"):
        for i, vec in enumerate(ll.bases(in_dim)):
            v = vec[axis]
            if not v:
                continue
            if any(x for d, x in enumerate(vec) if d != axis) or v & (v - 1):
                raise LoweringError(f"{op.name}: layout {layout} has a basis {list(vec)} that "
                                    f"is not one step along axis {axis}")
            if span.add(v):
                owner[v.bit_length() - 1] = (in_dim, i)
    bits = shape[axis].bit_length() - 1
    if sorted(owner) != list(range(bits)):
        raise LoweringError(f"{op.name}: layout {layout} does not cover axis {axis} bit by bit")
    return [owner[k] for k in range(bits)]


def _lower_scan_linear(ctx, op, region, layout, shape: tuple, axis: int, reverse: bool):
    """tt.scan on any layout from its linear layout, by recursive doubling over the bits of the
    axis coordinate, low to high: after bit k every element holds the scan of its aligned block
    of 2**(k+1) elements (prefix) and the block's total; the partner block's total comes from
    another register, a lane (shuffle) or a warp (shared memory), whichever owns bit k."""
    ll = to_linear_layout(layout, shape)
    levels = _scan_levels(op, layout, ll, shape, axis)
    b = ctx.builder
    inputs = [ctx.get(v) for v in op.operands]
    coords = [tuple(c) for c in layouts.thread_elements(layout, shape, 0, 0)]
    index_of: dict = {}
    for r, c in enumerate(coords):
        index_of.setdefault(c, r)
    regs = sorted(set(index_of.values()))
    total = {r: tuple(values[r] for values in inputs) for r in regs}
    prefix = dict(total)
    for in_dim, bit in levels:
        step = ll.bases(in_dim)[bit]
        if in_dim == "register":
            total, prefix = _scan_register_level(ctx, region, coords, index_of, regs, axis, step,
                                                 reverse, total, prefix)
            continue
        id_value = ctx.indexer.lane() if in_dim == "lane" else ctx.indexer.warp()
        bit_set = b.icmp_unsigned("!=", b.and_(id_value, i32(1 << bit)), i32(0))
        later = b.not_(bit_set) if reverse else bit_set
        distinct = list({id(t): t for t in total.values()}.values())
        if in_dim == "lane":
            moved = {id(t): tuple(shuffle_xor(b, v, 1 << bit) for v in t) for t in distinct}
        else:
            moved = _exchange_with_warp(ctx, distinct, bit)
        merged = {id(t): _select_tuple(b, later, _combine(ctx, region, moved[id(t)], t),
                                       _combine(ctx, region, t, moved[id(t)])) for t in distinct}
        prefix = {r: _select_tuple(b, later, _combine(ctx, region, moved[id(total[r])], p), p)
                  for r, p in prefix.items()}
        total = {r: merged[id(t)] for r, t in total.items()}
    out = [list(values) for values in inputs]
    for r in regs:
        for k in range(len(out)):
            out[k][r] = prefix[r][k]
    _fill_duplicates(layout, shape, out)
    for result, values in zip(op.results, out):
        ctx.set(result, values)


def _scan_register_level(ctx, region, coords, index_of, regs, axis, step, reverse, total,
                         prefix):
    """One doubling step whose partner block lives in the same thread's registers."""
    new_total, new_prefix = {}, {}
    for r in regs:
        if r in new_total:
            continue
        partner = index_of[tuple(c ^ s for c, s in zip(coords[r], step))]
        upper = bool(coords[r][axis] & step[axis])
        first, second = (partner, r) if upper != reverse else (r, partner)
        merged = _combine(ctx, region, total[first], total[second])
        new_total[first] = new_total[second] = merged
        new_prefix[first] = prefix[first]
        new_prefix[second] = _combine(ctx, region, total[first], prefix[second])
    return new_total, new_prefix


def _exchange_with_warp(ctx, values: list, bit: int) -> dict:
    """{id(value tuple): the same tuple as held by warp `warp ^ (1 << bit)` (same lane)},
    through the op's scratch area, fenced by barriers on both sides."""
    b = ctx.builder
    lane, warp = ctx.indexer.lane(), ctx.indexer.warp()
    count = len(values)
    width = len(values[0])
    bases = [ctx.scratch(ctx.num_warps * 32 * count * 8, k * ctx.num_warps * 32 * count * 8)
             for k in range(width)]
    mine = b.mul(b.add(b.mul(warp, i32(32)), lane), i32(count))
    other_warp = b.xor(warp, i32(1 << bit))
    theirs = b.mul(b.add(b.mul(other_warp, i32(32)), lane), i32(count))
    barrier(b)
    for i, t in enumerate(values):
        for base, v in zip(bases, t):
            shared_store(ctx, base, b.add(mine, i32(i)), v)
    barrier(b)
    out = {}
    for i, t in enumerate(values):
        out[id(t)] = tuple(shared_load(ctx, base, b.add(theirs, i32(i)), v.type)
                           for base, v in zip(bases, t))
    return out


def _lane_broadcast_last(ctx, geo, total, reverse):
    """The inclusive total held by the last lane along the axis, in every lane."""
    if geo.real_lanes == 1:
        return total
    b = ctx.builder
    mask = (geo.real_lanes - 1) << geo.lane_shift
    lane = ctx.indexer.lane()
    last = 0 if reverse else mask
    src = b.or_(b.and_(lane, i32(~mask & 31)), i32(last))
    return tuple(shuffle_idx(b, v, src) for v in total)


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

