"""Which thread, warp and register holds which element of a tensor in a distributed layout.

Every question about where elements live (`thread_elements`, `elements_per_thread`,
`element_owners`) is answered from the layout's linear layout (`compiler.analysis.
layout_to_linear`), registers in the linear layout's order, for every distributed layout alike.

What remains here besides: the `RegisterSlot` view of blocked layouts (and slices of them) and
of mma v2 accumulators and operands, which the FMA dot, the mma.sync lowering and the blocked
scan still read (`register_slots`, `mma_register_slots`; `has_slot_model` says which layouts
have one), and the mma.sync fragment constants (m16n8k8, k16, k32: kWidth 1, 2, 4). Blocked
registers run as Triton's: within a thread the `sizePerThread` elements first, dims
fastest-varying first (`order`), then the repetitions of the CTA tile, again `order` first;
this is also the linear layout's order.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding,
                                   SliceEncoding)

WARP_SIZE = 32


@dataclass(frozen=True)
class RegisterSlot:
    """One register of a thread: for each dim of the (root blocked) layout, the index inside
    `sizePerThread` and the repetition index of the CTA tile."""

    spt_index: tuple
    rep_index: tuple


def _product(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _split_index(index: int, sizes: tuple, order: tuple) -> list:
    """Split a flat index into per-dim digits, `order[0]` varying fastest."""
    digits = [0] * len(sizes)
    for dim in order:
        digits[dim] = index % sizes[dim]
        index //= sizes[dim]
    return digits


def repetitions(layout: BlockedEncoding, shape: tuple) -> tuple:
    """How many times the CTA tile repeats along each dim (at least 1)."""
    tile = layout.shape_per_cta_tile()
    return tuple(max(1, s // t) for s, t in zip(shape, tile))


@lru_cache(maxsize=None)
def _blocked_slots(layout: BlockedEncoding, shape: tuple) -> tuple:
    reps = repetitions(layout, shape)
    spt = layout.size_per_thread
    slots = []
    for rep in range(_product(reps)):
        rep_index = tuple(_split_index(rep, reps, layout.order))
        for inner in range(_product(spt)):
            slots.append(RegisterSlot(tuple(_split_index(inner, spt, layout.order)), rep_index))
    return tuple(slots)


def slice_root(layout):
    """The layout under a chain of slices (the layout itself when it is not a slice)."""
    while isinstance(layout, SliceEncoding):
        layout = layout.parent
    return layout


def has_slot_model(layout) -> bool:
    """Whether the layout has the `RegisterSlot` model here: a chain of slice layouts over a
    blocked root, or an mma v2 accumulator or operand."""
    return is_mma_family(layout) or isinstance(slice_root(layout), BlockedEncoding)


def _linear(layout, shape: tuple):
    from .layout_to_linear import to_linear_layout
    return to_linear_layout(layout, shape)


def register_slots(layout, shape: tuple) -> tuple:
    """The registers of one thread, in register order, as `RegisterSlot`s of the root layout.

    For a slice layout these are the parent's registers whose position along the sliced dim is
    0 (the others hold the same element again); the slots keep the parent's rank.
    """
    if isinstance(layout, BlockedEncoding):
        return _blocked_slots(layout, tuple(shape))
    if isinstance(layout, SliceEncoding):
        parent_shape = parent_shape_of(layout, shape)
        return tuple(s for s in register_slots(layout.parent, parent_shape)
                     if s.spt_index[layout.dim] == 0 and s.rep_index[layout.dim] == 0)
    if is_mma_family(layout):
        return mma_register_slots(layout, tuple(shape))
    raise NotImplementedError(f"layout {layout} is not supported by the layout helper yet")


def parent_shape_of(layout: SliceEncoding, shape: tuple) -> tuple:
    """The parent's shape of a sliced tensor: size 1 along the removed dim."""
    shape = list(shape)
    shape.insert(layout.dim, 1)
    return tuple(shape)


def root_blocked(layout) -> BlockedEncoding:
    """The blocked layout at the root of a chain of slice / dot-operand layouts."""
    while not isinstance(layout, BlockedEncoding):
        layout = layout.parent
    return layout


def root_dims(layout) -> list:
    """For each dim of a tensor in `layout`, the dim of the root blocked layout it is."""
    if isinstance(layout, BlockedEncoding):
        return list(range(layout.rank))
    if isinstance(layout, SliceEncoding):
        dims = root_dims(layout.parent)
        del dims[layout.dim]
        return dims
    if isinstance(layout, (DotOperandEncoding, NvidiaMmaEncoding)):
        return [0, 1]
    raise NotImplementedError(f"layout {layout} is not supported by the layout helper yet")


def slot_without(slot: RegisterSlot, dims) -> RegisterSlot:
    """The slot with its indices along the given root dims set to 0."""
    spt = tuple(0 if d in dims else v for d, v in enumerate(slot.spt_index))
    rep = tuple(0 if d in dims else v for d, v in enumerate(slot.rep_index))
    return RegisterSlot(spt, rep)


def elements_per_thread(layout, shape: tuple) -> int:
    """How many registers (elements, duplicates included) each thread holds."""
    return _linear(layout, tuple(shape)).in_dim_size("register")


@lru_cache(maxsize=None)
def equal_value_registers(layout, shape: tuple, constancy: tuple) -> tuple | None:
    """For a value constant over aligned blocks of `constancy` elements per dim (what axis info
    calls constancy), per register the lowest register of the same thread holding an element
    of the same block, so the same value; None when no register shares a block. Lanes and
    warps only XOR a thread offset into the coordinates, which moves every register of a
    thread by the same aligned amount, so thread 0's registers decide for all."""
    if any(c < 1 or c & (c - 1) for c in constancy) or all(c == 1 for c in constancy):
        return None
    ll = _linear(layout, tuple(shape))
    first: dict = {}
    out = []
    for r in range(ll.in_dim_size("register")):
        coords = ll.apply_tuple(register=r, lane=0, warp=0)
        block = tuple(x // c for x, c in zip(coords, constancy))
        out.append(first.setdefault(block, r))
    return tuple(out) if len(first) < len(out) else None


def thread_elements(layout, shape: tuple, warp: int, lane: int) -> list:
    """The coordinates each register of thread (warp, lane) holds, in register order: read
    from the layout's linear layout, for every distributed layout alike (worked out once per
    layout, shape and thread: the lowering asks for the same ones op after op)."""
    return list(_thread_elements(layout, tuple(shape), warp, lane))


@lru_cache(maxsize=4096)
def _thread_elements(layout, shape: tuple, warp: int, lane: int) -> tuple:
    ll = _linear(layout, shape)
    return tuple(ll.apply_tuple(register=r, lane=lane, warp=warp)
                 for r in range(ll.in_dim_size("register")))


def num_warps_of(layout) -> int:
    """The number of warps a distributed layout spreads over."""
    from compiler.dialects.ttg import LinearEncoding
    while isinstance(layout, (SliceEncoding, DotOperandEncoding)):
        layout = layout.parent
    if isinstance(layout, LinearEncoding):
        return 1 << len(layout.warp)
    return _product(layout.warps_per_cta)


def element_owners(layout, shape: tuple) -> dict:
    """{coords: [(warp, lane, register), ...]} for every element of the tensor."""
    owners: dict = {}
    for warp in range(num_warps_of(layout)):
        for lane in range(WARP_SIZE):
            for reg, coords in enumerate(thread_elements(layout, shape, warp, lane)):
                owners.setdefault(coords, []).append((warp, lane, reg))
    return owners


def describe(layout, shape: tuple) -> str:
    """A short human summary: elements per thread and the CTA tile."""
    if not has_slot_model(layout):
        return (f"{elements_per_thread(layout, shape)} elements/thread, linear layout, warps "
                f"{num_warps_of(layout)}")
    if is_mma_family(layout):
        k_width = getattr(layout, "k_width", 0) or F16_K_WIDTH
        return (f"{elements_per_thread(layout, shape)} elements/thread, mma.sync "
                f"m16n8k{mma_k(k_width)} tiles, warps {num_warps_of(layout)}")
    root = root_blocked(layout)
    return (f"{elements_per_thread(layout, shape)} elements/thread, CTA tile "
            f"{'x'.join(map(str, root.shape_per_cta_tile()))}, warps {num_warps_of(layout)}")


# ---- tensor-core layouts: mma.sync (Triton's MMA v2) ---------------------------------------------
# The operand's kWidth is how many of its elements one 32-bit register holds (32 / bits): 2 for
# f16/bf16 (m16n8k16), 1 for tf32 (m16n8k8), 4 for int8 (m16n8k32); the instruction's K is
# 8 * kWidth. PTX ISA, "Matrix Fragments for mma.m16n8k{8,16,32}": in lane `l`, with groupID
# g = l // 4 and threadID_in_group t = l % 4, and w = kWidth,
#   C/D (16x8, f32 or s32): c0,c1 at (g, 2t + {0,1}); c2,c3 at (g + 8, 2t + {0,1})
#   A (16 x 8w): register j of 4 holds w elements (g + 8 (j % 2), w t + 4w (j // 2) + {0..w-1})
#   B (8w x 8, k x n): register j of 2 holds w elements (k = w t + 4w j + {0..w-1}, n = g)
# Warps tile the tensor in a [16 * warpsPerCTA[0], 8 * warpsPerCTA[1]] CTA tile (warp id: dim 1
# fastest), repeated over the tensor. A thread's registers: per repetition (dim 1 fastest for the
# accumulator; for operands the K repetitions fastest), the instruction fragment in ISA order.
MMA_M, MMA_N = 16, 8
#: the kWidth of 16-bit operands, whose instruction (m16n8k16) has K = MMA_K
F16_K_WIDTH = 2
MMA_K = 8 * F16_K_WIDTH
#: operand element type -> (kWidth, accumulator types) of the mma.sync forms: m16n8k16 f16/bf16
#: (an f16 accumulator for f16 operands only, as PTX allows), m16n8k8 tf32 for fp32 operands,
#: m16n8k32 s8 for int8, accumulating in s32
MMA_V2_OPERANDS = {"f16": (2, ("f32", "f16")), "bf16": (2, ("f32",)), "f32": (1, ("f32",)),
                   "i8": (4, ("i32",))}


def mma_k(k_width: int) -> int:
    """The K of the mma.sync instruction whose operands pack `k_width` elements per register
    (m16n8k8 for tf32, m16n8k16 for f16/bf16, m16n8k32 for int8)."""
    return 8 * k_width


def is_mma_family(layout) -> bool:
    """Whether a layout is an mma v2 accumulator layout or a dot operand of one."""
    if isinstance(layout, DotOperandEncoding):
        layout = layout.parent
    return isinstance(layout, NvidiaMmaEncoding) and layout.version_major == 2


def mma_warp_coords(mma: NvidiaMmaEncoding, warp: int) -> tuple:
    """(warp index along M, warp index along N) of warp `warp`."""
    wm, wn = mma.warps_per_cta
    return (warp // wn) % wm, warp % wn


def mma_tile_strides(layout) -> tuple:
    """How far apart (per dim) consecutive repetitions of a warp's instruction tile are: the
    warps' CTA tile for the accumulator; for operands that along M (A) or N (B) and the
    instruction's K along K."""
    mma = layout.parent if isinstance(layout, DotOperandEncoding) else layout
    wm, wn = mma.warps_per_cta
    op_idx = getattr(layout, "op_idx", None)
    if op_idx is None:
        return MMA_M * wm, MMA_N * wn
    k = mma_k(layout.k_width or F16_K_WIDTH)
    return (MMA_M * wm, k) if op_idx == 0 else (k, MMA_N * wn)


def mma_repetitions(layout, shape: tuple) -> tuple:
    """How many instruction tiles each warp holds: (M reps, N reps) for the accumulator, (M reps,
    K reps) for operand A, (K reps, N reps) for operand B (at least 1 each)."""
    return tuple(max(1, s // t) for s, t in zip(shape, mma_tile_strides(layout)))


def _fragment(layout) -> list:
    """Per fragment register, its (dim 0, dim 1) offset inside one instruction tile, relative to
    the lane's (g, 2t) position for C, (g, w t) for A, or (w t, g) for B (w = kWidth)."""
    if isinstance(layout, NvidiaMmaEncoding):
        return [(0, 0), (0, 1), (8, 0), (8, 1)]
    w = layout.k_width or F16_K_WIDTH
    if layout.op_idx == 0:
        return [(8 * row, 4 * w * half + e) for half in range(2) for row in range(2)
                for e in range(w)]
    return [(4 * w * half + e, 0) for half in range(2) for e in range(w)]


@lru_cache(maxsize=None)
def mma_register_slots(layout, shape: tuple) -> tuple:
    """The registers of one thread of an mma accumulator / operand layout: `rep_index` is the
    instruction tile's repetition per dim, `spt_index` the fragment position (its offset pair)."""
    reps = mma_repetitions(layout, shape)
    slots = []
    rep_order = [(r0, r1) for r0 in range(reps[0]) for r1 in range(reps[1])]
    if isinstance(layout, DotOperandEncoding) and layout.op_idx == 1:
        rep_order = [(r0, r1) for r1 in range(reps[1]) for r0 in range(reps[0])]
    for rep in rep_order:
        for offset in _fragment(layout):
            slots.append(RegisterSlot(offset, rep))
    return tuple(slots)


def mma_slot_offset(layout, slot: RegisterSlot) -> tuple:
    """The constant (per dim) offset of a register from the thread's base coordinate."""
    strides = mma_tile_strides(layout)
    return tuple(r * s + o for r, s, o in zip(slot.rep_index, strides, slot.spt_index))
