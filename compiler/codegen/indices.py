"""LLVM values for "which element does this register of this thread hold": the thread's part of
each coordinate (computed once, in the kernel prologue, from the lane and warp ids) combined
with a constant per register, following `compiler.analysis.layouts` exactly.

Every distributed layout is indexed from its linear layout (compiler.analysis.layout_to_linear):
a coordinate is the XOR of the lane and warp bases of the id bits that are set, then of the
register's constant. Runs of id bits with doubling bases become one shift-and-mask, and parts
with disjoint bits are added (as the per-layout emitters this replaces did), so blocked and mma
layouts get the same kind of arithmetic as before; swizzled bases use XOR."""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis import layouts
from compiler.analysis.layout_to_linear import LayoutConversionError, to_linear_layout
from compiler.dialects.ttg import BlockedEncoding

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


class LayoutIndexer:
    """Builds and caches index values of one kernel; `prologue` is a builder placed in the
    entry block, so the values dominate every use."""

    def __init__(self, prologue: ir.IRBuilder, num_warps: int | None = None):
        self.prologue = prologue
        self.num_warps = num_warps
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

    # ---- coordinates of every register --------------------------------------------------------
    def coords(self, builder: ir.IRBuilder, layout, shape: tuple) -> list:
        """For each register of the thread (in `layouts.thread_elements` order), a list of i32
        values (one per dim) of its element: the thread's lane and warp part of each coordinate
        (from the linear layout, computed once in the prologue) combined with the register's
        constant part."""
        shape = tuple(shape)
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
                    coord.append(builder.add(part[0], i32(c)))
            out.append(coord)
        return out

    # ---- any layout, from its linear layout ---------------------------------------------------
    def _id_term(self, b, id_value, bases, dim: int) -> tuple:
        """The part of coordinate `dim` that the bits of an id contribute (bit i of the id adds
        bases[i] by XOR), and the mask of the bits it can have. Runs of bits with doubling
        bases become one shift-and-mask; other bits are selected and XORed."""
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
                shifted = b.lshr(id_value, i32(i)) if i else id_value
                field = b.and_(shifted, i32((1 << (j - i)) - 1))
                shift = _log2(v)
                terms.append((b.shl(field, i32(shift)) if shift else field,
                              ((1 << (j - i)) - 1) << shift))
            else:
                bit = b.and_(b.lshr(id_value, i32(i)) if i else id_value, i32(1))
                terms.append((b.mul(bit, i32(v)), v))
            i = j
        return _combine(b, terms)

    def linear_thread_part(self, layout, shape: tuple, dim: int):
        """The lane and warp part of coordinate `dim` of every element of this thread, and the
        mask of its possible bits (None when the lanes and warps do not move along `dim`). The
        thread id's bits are the lane's (5 bits) then the warp's, so a run of bases that goes
        on from the lanes into the warps is one field of the thread id."""
        def make(b):
            ll = to_linear_layout(layout, shape)
            lanes = list(ll.bases("lane"))
            if len(lanes) != 5:
                raise LayoutConversionError(f"{layout} has {1 << len(lanes)} lanes per warp, "
                                            f"not 32")
            warps = ll.in_dim_size("warp")
            if self.num_warps is not None and warps != self.num_warps:
                raise LayoutConversionError(f"{layout} spreads over {warps} warps but the "
                                            f"kernel has {self.num_warps}")
            return self._id_term(b, self.tid, lanes + list(ll.bases("warp")), dim)
        return self._cached(("linear", layout, shape, dim), make)

    def thread_term(self, ll, dim: int = 0):
        """The lane and warp part of output `dim` of any linear layout over (register, lane,
        warp, ...), as (i32 value, mask of its possible bits), or None when the lanes and warps
        do not move it; computed once in the prologue. The thread id's low 5 bits are the lane
        and the rest the warp, so the lane bases are padded to 5."""
        def make(b):
            lanes = list(ll.bases("lane")) if "lane" in ll.in_dims else []
            width = len(ll.out_dims)
            lanes += [(0,) * width] * (5 - len(lanes))
            warps = list(ll.bases("warp")) if "warp" in ll.in_dims else []
            return self._id_term(b, self.tid, lanes + warps, dim)
        return self._cached(("term", ll, dim), make)

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

    # ---- which thread owns duplicated elements ----------------------------------------------
    def unique_owner(self, layout, shape: tuple):
        """An i1 that is true in exactly one of the threads holding each element (None when no
        two threads share an element), so duplicated elements are stored once: of the threads
        holding an element, the one whose free (broadcast) lane and warp bits are all 0."""
        shape = tuple(shape)
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
    """The XOR of (value, bit mask) terms (an add where their bits are disjoint); None if
    there are none."""
    if not terms:
        return None
    value, mask = terms[0]
    for v, m in terms[1:]:
        value = b.xor(value, v) if mask & m else b.add(value, v)
        mask |= m
    return value, mask


def is_true(value) -> bool:
    """Whether an LLVM value is the constant `true`."""
    return isinstance(value, ir.Constant) and value.type == I1 and bool(value.constant)
