"""LLVM values for "which element does this register of this thread hold": the thread's part of
each coordinate (computed once, in the kernel prologue, from the lane and warp ids) combined
with a constant per register, following `compiler.analysis.layouts` exactly.

Any distributed layout is indexed from its linear layout: a coordinate is the XOR of the lane
and warp bases of the id bits that are set, then of the register's constant. Blocked-rooted
layouts and mma v2 keep their affine emitters (same values as their linear layouts, checked by
tests/cpu/test_layout_to_linear.py), so their generated IR does not change."""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis import layouts
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, SliceEncoding

from .llvm_helpers import I1, i32


def _log2(n: int) -> int:
    return n.bit_length() - 1


def blocked_thread_positions(layout: BlockedEncoding) -> list:
    """Per dim: (lane shift, lane count, warp shift, warp count) in the lane id / warp id."""
    positions = []
    lane_shift = {}
    warp_shift = {}
    ls = ws = 0
    for d in layout.order:
        lane_shift[d], warp_shift[d] = ls, ws
        ls += _log2(layout.threads_per_warp[d])
        ws += _log2(layout.warps_per_cta[d])
    for d in range(layout.rank):
        positions.append((lane_shift[d], layout.threads_per_warp[d], warp_shift[d],
                          layout.warps_per_cta[d]))
    return positions


def _k_dim(layout: DotOperandEncoding) -> int:
    """The K dim of a dot operand: 1 for A (M x K), 0 for B (K x N)."""
    return 1 if layout.op_idx == 0 else 0


class LayoutIndexer:
    """Builds and caches index values of one kernel; `prologue` is a builder placed in the
    entry block, so the values dominate every use."""

    def __init__(self, prologue: ir.IRBuilder):
        self.prologue = prologue
        self._tid = None
        self._cache: dict = {}

    @property
    def tid(self):
        if self._tid is None:
            from .llvm_helpers import special_register
            self._tid = special_register(self.prologue, "tid.x")
        return self._tid

    def lane(self):
        return self._cached(("lane",), lambda b: b.and_(self.tid, i32(31)))

    def warp(self):
        return self._cached(("warp",), lambda b: b.lshr(self.tid, i32(5)))

    def _cached(self, key, make):
        if key not in self._cache:
            saved = self.prologue.debug_metadata
            self._cache[key] = make(self.prologue)
            self.prologue.debug_metadata = saved
        return self._cache[key]

    # ---- per-dim thread positions -----------------------------------------------------------
    def thread_pos(self, layout: BlockedEncoding, dim: int):
        """warp_d * threadsPerWarp_d + lane_d: the thread's index along `dim` in the CTA tile."""
        def make(b):
            lshift, lcount, wshift, wcount = blocked_thread_positions(layout)[dim]
            lane_d = b.and_(b.lshr(self.lane(), i32(lshift)), i32(lcount - 1))
            warp_d = b.and_(b.lshr(self.warp(), i32(wshift)), i32(wcount - 1))
            return b.add(b.mul(warp_d, i32(lcount)), lane_d)
        return self._cached(("pos", layout, dim), make)

    def thread_base(self, layout: BlockedEncoding, shape: tuple, dim: int):
        """(thread position * sizePerThread) mod shape along `dim`."""
        def make(b):
            spt = layout.size_per_thread[dim]
            base = b.mul(self.thread_pos(layout, dim), i32(spt))
            return b.and_(base, i32(shape[dim] - 1))
        return self._cached(("base", layout, tuple(shape), dim), make)

    # ---- coordinates of every register --------------------------------------------------------
    def coords(self, builder: ir.IRBuilder, layout, shape: tuple) -> list:
        """For each register of the thread, a list of i32 values (one per dim) of its element."""
        shape = tuple(shape)
        if not layouts.has_slot_model(layout):
            return self._linear_coords(builder, layout, shape)
        if layouts.is_mma_family(layout):
            return self._mma_coords(builder, layout, shape)
        root, root_shape, keep = self._root(layout, shape)
        tile = root.shape_per_cta_tile()
        out = []
        for slot in layouts.register_slots(layout, shape):
            coord = []
            for d in keep:
                if isinstance(layout, DotOperandEncoding) and d == _k_dim(layout):
                    coord.append(i32(slot.spt_index[d]))
                    continue
                offset = (slot.rep_index[d] * tile[d] + slot.spt_index[d]) % root_shape[d]
                base = self.thread_base(root, root_shape, d)
                coord.append(builder.add(base, i32(offset)) if offset else base)
            out.append(coord)
        return out

    # ---- any layout, from its linear layout ---------------------------------------------------
    def _id_term(self, b, id_value, bases, dim: int) -> tuple:
        """The part of coordinate `dim` that the bits of one id (lane or warp) contribute, and
        the mask of the bits it can have. Runs of bits with doubling bases become one
        shift-and-mask; other bits are selected and XORed."""
        terms, i = [], 0
        while i < len(bases):
            v = bases[i][dim]
            if not v:
                i += 1
                continue
            j = i + 1
            if v & (v - 1) == 0:
                while j < len(bases) and bases[j][dim] == v << (j - i):
                    j += 1
                field = b.and_(b.lshr(id_value, i32(i)) if i else id_value, i32((1 << (j - i)) - 1))
                shift = _log2(v)
                terms.append((b.shl(field, i32(shift)) if shift else field,
                              ((1 << (j - i)) - 1) << shift))
            else:
                bit = b.and_(b.lshr(id_value, i32(i)) if i else id_value, i32(1))
                terms.append((b.mul(bit, i32(v)), v))
            i = j
        return _combine(b, terms)

    def linear_thread_part(self, layout, shape: tuple, dim: int):
        """The lane and warp part of coordinate `dim` of every element of this thread."""
        def make(b):
            ll = to_linear_layout(layout, shape)
            terms = [t for t in (self._id_term(b, self.lane(), ll.bases("lane"), dim),
                                 self._id_term(b, self.warp(), ll.bases("warp"), dim))
                     if t is not None]
            return _combine(b, terms)
        return self._cached(("linear", layout, shape, dim), make)

    def _linear_coords(self, builder, layout, shape: tuple) -> list:
        out = []
        parts = [self.linear_thread_part(layout, shape, d) for d in range(len(shape))]
        for consts in layouts.thread_elements(layout, shape, 0, 0):
            coord = []
            for part, c in zip(parts, consts):
                if part is None:
                    coord.append(i32(c))
                elif not c:
                    coord.append(part[0])
                elif part[1] & c:
                    coord.append(builder.xor(part[0], i32(c)))
                else:
                    coord.append(builder.or_(part[0], i32(c)))
            out.append(coord)
        return out

    def _linear_owner(self, layout, shape: tuple):
        """unique_owner from the linear layout: of the threads holding an element, the one whose
        free (broadcast) lane and warp bits are all 0."""
        masks = to_linear_layout(layout, shape).free_variable_masks()
        lane_mask, warp_mask = masks["lane"], masks["warp"]
        if not lane_mask and not warp_mask:
            return None

        def make(b):
            pred = None
            for value, mask in ((self.lane(), lane_mask), (self.warp(), warp_mask)):
                if mask:
                    c = b.icmp_unsigned("==", b.and_(value, i32(mask)), i32(0))
                    pred = c if pred is None else b.and_(pred, c)
            return pred
        return self._cached(("owner", layout, shape), make)

    def mma_warp_offset(self, mma, dim: int):
        """Where the thread's warp starts along `dim` (0: M, 1: N) in the CTA tile of an mma
        layout: 16 * its M index or 8 * its N index (warp ids run along N first)."""
        wm, wn = mma.warps_per_cta

        def make(b):
            if dim == 0:
                warp_m = b.and_(b.lshr(self.warp(), i32(_log2(wn))), i32(wm - 1))
                return b.mul(warp_m, i32(layouts.MMA_M))
            return b.mul(b.and_(self.warp(), i32(wn - 1)), i32(layouts.MMA_N))
        return self._cached(("mma-warp", mma, dim), make)

    def mma_base(self, layout, dim: int):
        """The thread's base coordinate along `dim` in an mma accumulator / operand layout
        (`layouts.mma_thread_base` as LLVM values, computed once in the prologue)."""
        mma = layout.parent if isinstance(layout, DotOperandEncoding) else layout
        op_idx = getattr(layout, "op_idx", None)

        def make(b):
            lane = self.lane()
            group = b.lshr(lane, i32(2))
            pair = b.shl(b.and_(lane, i32(3)), i32(1))
            if (op_idx, dim) in ((0, 1), (1, 0)):
                return pair
            inner = group if dim == 0 or op_idx == 1 else pair
            return b.add(self.mma_warp_offset(mma, dim), inner)
        return self._cached(("mma", layout, dim), make)

    def _mma_coords(self, builder, layout, shape: tuple) -> list:
        tile = layouts.mma_tile_strides(layout)
        wraps = [s < t for s, t in zip(shape, tile)]
        out = []
        for slot in layouts.mma_register_slots(layout, shape):
            coord = []
            for d, off in enumerate(layouts.mma_slot_offset(layout, slot)):
                value = self.mma_base(layout, d)
                if off:
                    value = builder.add(value, i32(off))
                if wraps[d]:
                    value = builder.and_(value, i32(shape[d] - 1))
                coord.append(value)
            out.append(coord)
        return out

    def _mma_owner(self, layout, shape: tuple):
        """unique_owner for mma-family layouts: operand A is repeated in every warp along N, B in
        every warp along M; a tensor smaller than the CTA tile is not supported."""
        tile = layouts.mma_tile_strides(layout)
        if any(s < t for s, t in zip(shape, tile)):
            raise NotImplementedError(f"{layout} on a {shape} tensor (smaller than its tile)")
        mma = layout.parent if isinstance(layout, DotOperandEncoding) else layout
        wm, wn = mma.warps_per_cta
        op_idx = getattr(layout, "op_idx", None)
        if op_idx is None or (op_idx == 0 and wn == 1) or (op_idx == 1 and wm == 1):
            return None

        def make(b):
            if op_idx == 0:
                index = b.and_(self.warp(), i32(wn - 1))
            else:
                index = b.and_(b.lshr(self.warp(), i32(_log2(wn))), i32(wm - 1))
            return b.icmp_unsigned("==", index, i32(0))
        return self._cached(("owner", layout, shape), make)

    def _root(self, layout, shape):
        """The root blocked layout, its shape and which of its dims this tensor keeps."""
        if isinstance(layout, BlockedEncoding):
            return layout, shape, list(range(layout.rank))
        if isinstance(layout, SliceEncoding):
            root, root_shape, keep = self._root(layout.parent, layouts.parent_shape_of(layout, shape))
            removed = keep[layout.dim]
            return root, root_shape, [d for d in keep if d != removed]
        if isinstance(layout, DotOperandEncoding):
            k_dim = _k_dim(layout)
            parent_shape = list(shape)
            parent_shape[k_dim] = 1
            return layout.parent, tuple(parent_shape), [0, 1]
        raise NotImplementedError(f"layout {layout} is not supported by the lowering yet")

    # ---- which thread owns duplicated elements ----------------------------------------------
    def unique_owner(self, layout, shape: tuple):
        """An i1 that is true in exactly one of the threads holding each element (None when no
        two threads share an element), so duplicated elements are stored once."""
        shape = tuple(shape)
        if not layouts.has_slot_model(layout):
            return self._linear_owner(layout, shape)
        if layouts.is_mma_family(layout):
            return self._mma_owner(layout, shape)
        root, root_shape, keep = self._root(layout, shape)
        key = ("owner", layout, shape)
        if key in self._cache:
            return self._cache[key]
        conditions = []
        for d in range(root.rank):
            spt = root.size_per_thread[d]
            threads = root.threads_per_warp[d] * root.warps_per_cta[d]
            limit = 1 if d not in keep else max(1, root_shape[d] // spt)
            if limit < threads:
                conditions.append((d, limit))
        if not conditions:
            self._cache[key] = None
            return None

        def make(b):
            pred = None
            for d, limit in conditions:
                c = b.icmp_unsigned("<", self.thread_pos(root, d), i32(limit))
                pred = c if pred is None else b.and_(pred, c)
            return pred
        return self._cached(key, make)

    def unique_registers(self, layout, shape: tuple) -> list:
        """Register indices holding an element no earlier register of the thread holds."""
        seen = set()
        keep = []
        for reg, coords in enumerate(layouts.thread_elements(layout, shape, 0, 0)):
            if coords not in seen:
                seen.add(coords)
                keep.append(reg)
        return keep


def _combine(b, terms: list):
    """OR (disjoint bits) or XOR (overlapping bits) of (value, bit mask) terms; None if none."""
    if not terms:
        return None
    value, mask = terms[0]
    for v, m in terms[1:]:
        value = b.xor(value, v) if mask & m else b.or_(value, v)
        mask |= m
    return value, mask


def is_true(value) -> bool:
    """Whether an LLVM value is the constant `true`."""
    return isinstance(value, ir.Constant) and value.type == I1 and bool(value.constant)
