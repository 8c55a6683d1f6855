"""Every `ttg` encoding as a `LinearLayout` for a given tensor shape, following Triton's rules.

Distributed encodings map (register, lane, warp, block) -> (dim0, dim1, ...); shared encodings
map (offset, block) -> (dim0, ...), where `offset` is the element's position in the buffer.
The CTA tile of an encoding is fitted to the tensor shape as Triton does: when the tile is
smaller, the registers (or offsets) repeat it, minor dim first in the encoding's order; when it
is larger, the bases that reach past the shape become zero, i.e. several threads or registers
hold the same element. Only one CTA per CGA exists here, so `block` has no bases.
"""
from __future__ import annotations

from functools import lru_cache

from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, LinearEncoding,
                                   NVMMASharedEncoding, NvidiaMmaEncoding, SliceEncoding,
                                   SwizzledSharedEncoding)

from .linear_layout import LinearLayout

REGISTER, LANE, WARP, BLOCK, OFFSET = "register", "lane", "warp", "block", "offset"
DISTRIBUTED_INS = (REGISTER, LANE, WARP, BLOCK)


class LayoutConversionError(ValueError):
    """An encoding that has no linear layout for this shape (or is not valid for it)."""


def out_dim_names(rank: int) -> list:
    """The standard output dims of a rank-`rank` tensor: dim0, dim1, ..."""
    return [f"dim{i}" for i in range(rank)]


def _log2(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise LayoutConversionError(f"sizes must be powers of two, got {n}")
    return n.bit_length() - 1


def identity_nd(in_dim: str, sizes, order) -> LinearLayout:
    """in_dim enumerates a block of `sizes` (per dim), dims `order[0]` fastest. The output dims
    are listed in `order`."""
    names = out_dim_names(len(sizes))
    layout = LinearLayout.empty()
    for d in order:
        layout = layout * LinearLayout.identity_1d(sizes[d], in_dim, names[d])
    return layout


def _trivial(in_dim: str, order) -> LinearLayout:
    """A layout with no bases whose output dims are listed in `order` (size 1 each)."""
    return identity_nd(in_dim, [1] * len(order), order)


def ensure_not_smaller(layout: LinearLayout, shape: dict, in_dim: str) -> LinearLayout:
    """Repeat the layout along `in_dim` until each output dim (in the layout's output order)
    covers `shape`."""
    for name in layout.out_dims:
        have, want = layout.out_dim_size(name), shape[name]
        if want > have:
            layout = layout * LinearLayout.identity_1d(want // have, in_dim, name)
    return layout


def ensure_not_larger(layout: LinearLayout, shape: dict) -> LinearLayout:
    """Zero the basis values that reach past `shape` (the elements wrap: broadcast)."""
    sizes = {n: min(layout.out_dim_size(n), shape[n]) for n in layout.out_dims}
    limits = [sizes[n] for n in layout.out_dims]
    bases = {d: [tuple(v if v < lim else 0 for v, lim in zip(vec, limits))
                 for vec in layout.bases(d)] for d in layout.in_dims}
    return LinearLayout(bases, sizes)


def fit_to_shape(cta: LinearLayout, shape, repeat_in: str) -> LinearLayout:
    """Fit a CTA layout to a tensor shape (repeat along `repeat_in`, then wrap), add the empty
    `block` dim and list the outputs as dim0, dim1, ..."""
    names = out_dim_names(len(shape))
    labeled = dict(zip(names, shape))
    for n in names:
        _log2(labeled[n])
    cta = ensure_not_larger(ensure_not_smaller(cta, labeled, repeat_in), labeled)
    return (cta * LinearLayout({BLOCK: []}, [])).transpose_outs(names)


def to_linear_layout(encoding, shape) -> LinearLayout:
    """The linear layout of `encoding` for a tensor (or buffer) of `shape`."""
    shape = tuple(int(s) for s in shape)
    return _convert(encoding, shape)


@lru_cache(maxsize=None)
def _convert(encoding, shape: tuple) -> LinearLayout:
    ranked = not isinstance(encoding, (LinearEncoding, NVMMASharedEncoding))
    if ranked and encoding.rank != len(shape):
        raise LayoutConversionError(f"{encoding} has rank {encoding.rank}, shape {list(shape)}")
    convert = _CONVERTERS.get(type(encoding))
    if convert is None:
        raise LayoutConversionError(f"no linear layout for {encoding}")
    return convert(encoding, shape)


# ---- distributed encodings ---------------------------------------------------------------------
def _blocked(enc: BlockedEncoding, shape) -> LinearLayout:
    cta = (identity_nd(REGISTER, enc.size_per_thread, enc.order)
           * identity_nd(LANE, enc.threads_per_warp, enc.order)
           * identity_nd(WARP, enc.warps_per_cta, enc.order))
    return fit_to_shape(cta, shape, REGISTER)


def _slice(enc: SliceEncoding, shape) -> LinearLayout:
    """The parent's layout on the shape with a 1 inserted at `dim`, that dim dropped, and the
    register bases that became zero removed (Triton keeps one register per distinct element
    along the registers)."""
    parent_shape = list(shape)
    parent_shape.insert(enc.dim, 1)
    parent = _convert(enc.parent, tuple(parent_shape))
    keep = [i for i in range(len(parent_shape)) if i != enc.dim]
    names = out_dim_names(len(shape))
    bases = {}
    for d in parent.in_dims:
        vecs = [tuple(vec[i] for i in keep) for vec in parent.bases(d)]
        if d == REGISTER:
            vecs = [v for v in vecs if any(v)]
        bases[d] = vecs
    return LinearLayout(bases, dict(zip(names, shape)))


def _mma_tile(tile_shape, k_width: int, order, rep_order) -> LinearLayout:
    """One warp's tile of an mma instruction (accumulator or operand): along order[0] (inner)
    k_width registers then 4 lanes; along order[1] (outer) 8 lanes then registers; then
    registers along inner again. Output dims listed in `rep_order` (the repetition order)."""
    names = out_dim_names(len(tile_shape))
    inner, outer = order[0], order[1]
    m, n = tile_shape[outer], tile_shape[inner]
    if m % 8 or n % (k_width * 4):
        raise LayoutConversionError(f"mma tile {list(tile_shape)} does not fit kWidth {k_width}")
    return (_trivial(REGISTER, rep_order)
            * LinearLayout.identity_1d(k_width, REGISTER, names[inner])
            * LinearLayout.identity_1d(4, LANE, names[inner])
            * LinearLayout.identity_1d(8, LANE, names[outer])
            * LinearLayout.identity_1d(m // 8, REGISTER, names[outer])
            * LinearLayout.identity_1d(n // (k_width * 4), REGISTER, names[inner]))


def _row_major(rank: int) -> list:
    return list(range(rank - 1, -1, -1))


def _mma_warp_order(mma: NvidiaMmaEncoding) -> list:
    """Warp ids run along the last dim first for mma v2 and along dim 0 first for v3 (the 4
    warps of a warp group stack along M)."""
    rank = mma.rank
    return _row_major(rank) if mma.version_major == 2 else list(range(rank))


def _check_mma(mma: NvidiaMmaEncoding, accumulator: bool):
    """mma v2 and v3 of any rank >= 2 (leading dims are batch dims of one instruction tile
    each), except a v3 accumulator, which wgmma makes rank 2 only (as in Triton)."""
    if mma.version_major not in (2, 3) or mma.rank < 2:
        raise LayoutConversionError(f"{mma}: only mma v2 and v3 are supported")
    if accumulator and mma.version_major == 3 and mma.rank != 2:
        raise LayoutConversionError(f"{mma}: an mma v3 (wgmma) accumulator has rank 2 "
                                    f"(its dot operands may have batch dims)")


def _mma_instr_tile(enc: NvidiaMmaEncoding) -> list:
    """The accumulator tile of one instruction, one size per dim: v2 writes its instrShape
    ([16, 8], or [1, 16, 8] with a batch dim), v3 its [M, N] of instrShape [M, N, K]."""
    if enc.version_major == 2:
        tile = list(enc.instr_shape[-2:])
    else:
        tile = list(enc.instr_shape[:2])
    return [1] * (enc.rank - 2) + tile


def _nvidia_mma(enc: NvidiaMmaEncoding, shape) -> LinearLayout:
    _check_mma(enc, accumulator=True)
    tile = _mma_instr_tile(enc)
    order = rep_order = _row_major(enc.rank)
    cta = _mma_tile(tile, 2, order, rep_order)
    warps = identity_nd(WARP, enc.warps_per_cta, _mma_warp_order(enc)).transpose_outs(
        cta.out_dims)
    return fit_to_shape(cta * warps, shape, REGISTER)


def _broadcast_along_k(in_dim: str, sizes, order, k_dim: int) -> LinearLayout:
    """in_dim spread over `sizes` in `order`, except that it is a broadcast along `k_dim`."""
    names = out_dim_names(len(sizes))
    layout = LinearLayout.empty()
    for d in order:
        make = LinearLayout.zeros_1d if d == k_dim else LinearLayout.identity_1d
        layout = layout * make(sizes[d], in_dim, names[d])
    return layout


def _dot_operand(enc: DotOperandEncoding, shape) -> LinearLayout:
    rank = len(shape)
    k_dim = rank - 1 if enc.op_idx == 0 else rank - 2
    parent = enc.parent
    if isinstance(parent, BlockedEncoding):
        return _fma_operand(enc, parent, shape, k_dim)
    if isinstance(parent, NvidiaMmaEncoding):
        return _mma_operand(enc, parent, shape, k_dim)
    raise LayoutConversionError(f"no linear layout for dot operands of {parent}")


def _fma_operand(enc, blocked: BlockedEncoding, shape, k_dim: int) -> LinearLayout:
    """FMA dot operand: each thread holds the parent's rows (A) or columns (B) and all of K;
    lanes and warps along K are broadcasts."""
    order = blocked.order
    per_thread = list(blocked.size_per_thread)
    per_thread[k_dim] = shape[k_dim]
    rep_names = [out_dim_names(len(shape))[d] for d in order]
    cta = (identity_nd(REGISTER, per_thread, order).transpose_outs(rep_names)
           * _broadcast_along_k(LANE, blocked.threads_per_warp, order, k_dim)
           .transpose_outs(rep_names)
           * _broadcast_along_k(WARP, blocked.warps_per_cta, order, k_dim)
           .transpose_outs(rep_names))
    return fit_to_shape(cta, shape, REGISTER)


def _mma_operand(enc, mma: NvidiaMmaEncoding, shape, k_dim: int) -> LinearLayout:
    """Tensor-core operand in registers: A as mma.m16n8k16's (or wgmma's) A fragment, B as
    mma.sync's B fragment; warps along K are broadcasts. kWidth = elements per 32-bit register
    pair along K (2 for 16-bit types)."""
    _check_mma(mma, accumulator=False)
    rank = len(shape)
    if not enc.k_width:
        raise LayoutConversionError(f"{enc}: dot operands of an mma layout need kWidth")
    if enc.op_idx == 1 and mma.version_major == 3:
        raise LayoutConversionError(f"{enc}: wgmma reads operand B from shared memory, not "
                                    f"registers")
    tile = [1] * rank
    if enc.op_idx == 0:
        tile[rank - 2], tile[rank - 1] = 16, enc.k_width * 8
    else:
        tile[rank - 2], tile[rank - 1] = enc.k_width * 8, 8
    k_fastest = [k_dim] + [d for d in _row_major(rank) if d != k_dim]
    cta = _mma_tile(tile, enc.k_width, k_fastest, k_fastest)
    warps = _broadcast_along_k(WARP, mma.warps_per_cta, _mma_warp_order(mma), k_dim)
    return fit_to_shape(cta * warps.transpose_outs(cta.out_dims), shape, REGISTER)


def _linear(enc: LinearEncoding, shape) -> LinearLayout:
    """The encoding's own bases, fitted to `shape` like any CTA layout: repeated along the
    registers where the shape is larger (dims in the order the bases first move along them),
    wrapped where it is smaller."""
    names = out_dim_names(len(shape))
    bases = {d: list(getattr(enc, d)) for d in DISTRIBUTED_INS}
    if any(len(vec) != len(shape) for vecs in bases.values() for vec in vecs):
        raise LayoutConversionError(f"{enc} does not have rank {len(shape)}")
    try:
        own = LinearLayout(bases, names)
    except ValueError as err:
        raise LayoutConversionError(f"{enc}: {err}") from None
    order = linear_order(own)
    cta = own.sublayout([REGISTER, LANE, WARP], [names[d] for d in order])
    block = own.sublayout([BLOCK], names)
    if any(any(v) for v in block.bases(BLOCK)):
        raise LayoutConversionError(f"{enc}: one CTA per CGA only (block bases must be empty)")
    return fit_to_shape(cta, shape, REGISTER)


def linear_order(layout: LinearLayout) -> list:
    """Dims of a distributed linear layout, fastest first: in the order the register, then
    lane, then warp bases first move along them; dims no basis moves along last, last dim
    first."""
    order = []
    for d in (REGISTER, LANE, WARP):
        for vec in layout.bases(d) if d in layout.in_dims else ():
            for dim, v in enumerate(vec):
                if v and dim not in order:
                    order.append(dim)
    rank = len(layout.out_dims)
    return order + [d for d in range(rank - 1, -1, -1) if d not in order]


# ---- shared encodings ----------------------------------------------------------------------------
def _swizzled_shared(enc: SwizzledSharedEncoding, shape) -> LinearLayout:
    """Offsets run along order[0] (columns), then rows; row r's columns are XORed with
    vec * ((r / perPhase) % maxPhase)."""
    rank = len(shape)
    names = out_dim_names(rank)
    if rank == 1:
        return fit_to_shape(LinearLayout.identity_1d(shape[0], OFFSET, names[0]), shape, OFFSET)
    col, row = enc.order[0], enc.order[1]
    cols, rows = shape[col], shape[row]
    bases = [(0, 1 << i) for i in range(_log2(cols))]
    for i in range(_log2(rows)):
        r = 1 << i
        bases.append((r, (enc.vec * ((r // enc.per_phase) % enc.max_phase)) % cols))
    cta = LinearLayout({OFFSET: bases}, {names[row]: rows, names[col]: cols})
    for d in enc.order[2:]:
        cta = cta * LinearLayout.identity_1d(shape[d], OFFSET, names[d])
    return fit_to_shape(cta, shape, OFFSET)


def _tma_block_shape(enc: NVMMASharedEncoding, shape) -> list:
    """The block one TMA copy moves: each dim at most 256, the contiguous dim exactly one
    swizzle row."""
    block = [min(s, 256) for s in shape]
    contig = 0 if enc.transposed else len(shape) - 1
    if enc.swizzling_byte_width:
        width = 8 * enc.swizzling_byte_width // enc.element_bit_width
        if block[contig] < width:
            raise LayoutConversionError(f"{enc}: shape {list(shape)} is narrower than one "
                                        f"{enc.swizzling_byte_width}-byte swizzle row")
        block[contig] = width
    return block


def _reshape_row_major(layout: LinearLayout, shape) -> LinearLayout:
    """Reshape the outputs to `shape` keeping the row-major flat index (last dim minor)."""
    names = list(layout.out_dims)
    new = out_dim_names(len(shape))
    flat = layout.transpose_outs(names[::-1])
    return flat.reshape_outs(list(zip(new, shape))[::-1]).transpose_outs(new)


def _nvmma_shared(enc: NVMMASharedEncoding, shape) -> LinearLayout:
    """8-row x (swizzle bytes) core matrices: 16-byte chunks of row r XORed with r % 8 (for
    128 bytes; 32 and 64 bytes repeat the pattern every 4 or 2 rows), then more rows, then the
    next swizzle-width column block."""
    rank = len(shape)
    names = out_dim_names(rank)
    if enc.swizzling_byte_width not in (0, 32, 64, 128):
        raise LayoutConversionError(f"{enc}: swizzle must be 0, 32, 64 or 128 bytes")
    tma = _tma_block_shape(enc, shape)
    labeled = dict(zip(names, shape))
    if enc.swizzling_byte_width == 0:
        layout = LinearLayout.empty()
        for d in reversed(range(rank)):
            layout = layout * LinearLayout.identity_1d(tma[d], OFFSET, names[d])
        layout = ensure_not_smaller(layout.transpose_outs(names), labeled, OFFSET)
        return fit_to_shape(layout, shape, OFFSET)
    if rank < 2:
        raise LayoutConversionError(f"{enc}: a swizzled layout needs rank >= 2")
    rows = 1
    for s in tma[:-1]:
        rows *= s
    collapsed = [rows, tma[-1]]
    if enc.transposed:
        collapsed.reverse()
    vec = 128 // enc.element_bit_width
    per_phase, max_phase = 128 // enc.swizzling_byte_width, enc.swizzling_byte_width // 16
    tile_cols = 8 * enc.swizzling_byte_width // enc.element_bit_width
    bases = [(0, c) for c in (1 << i for i in range(_log2(tile_cols)))]
    bases += [(r, vec * ((r // per_phase) % max_phase)) for r in (1, 2, 4)]
    two = out_dim_names(2)
    if collapsed[0] < 8 or collapsed[1] < tile_cols:
        raise LayoutConversionError(f"{enc}: shape {list(shape)} is smaller than one "
                                    f"8 x {tile_cols} core matrix")
    tile = LinearLayout({OFFSET: bases}, two)
    layout = ensure_not_smaller(tile, dict(zip(two, collapsed)), OFFSET)
    block_shape = list(tma)
    if enc.transposed:
        block_shape = block_shape[1:] + block_shape[:1]
    layout = _reshape_row_major(layout, block_shape)
    if enc.transposed:
        order = [rank - 1] + list(range(rank - 1))
        layout = _permute_dims(layout, order)
    layout = ensure_not_smaller(layout, labeled, OFFSET)
    return fit_to_shape(layout, shape, OFFSET)


def _permute_dims(layout: LinearLayout, order) -> LinearLayout:
    """The layout of the tensor transposed by `order` (result dim i = input dim order[i])."""
    names = out_dim_names(len(order))
    old = layout.out_dims
    bases = {d: [tuple(vec[order[i]] for i in range(len(order))) for vec in layout.bases(d)]
             for d in layout.in_dims}
    return LinearLayout(bases, {names[i]: layout.out_dim_size(old[order[i]])
                                for i in range(len(order))})


_CONVERTERS = {
    BlockedEncoding: _blocked,
    SliceEncoding: _slice,
    NvidiaMmaEncoding: _nvidia_mma,
    DotOperandEncoding: _dot_operand,
    LinearEncoding: _linear,
    SwizzledSharedEncoding: _swizzled_shared,
    NVMMASharedEncoding: _nvmma_shared,
}


def to_linear_encoding(layout: LinearLayout) -> LinearEncoding:
    """A distributed linear layout written as a `#ttg.linear` encoding."""
    if set(layout.in_dims) - set(DISTRIBUTED_INS):
        raise LayoutConversionError(f"{layout.in_dims} are not register/lane/warp/block")
    return LinearEncoding(*(tuple(layout.bases(d)) if d in layout.in_dims else ()
                            for d in DISTRIBUTED_INS))
