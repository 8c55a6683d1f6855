"""A CPU model of shared-memory bank conflicts, computed from linear layouts.

Shared memory has 32 banks of 4 bytes. A warp's access of V bytes per lane is served in phases:
all 32 lanes at once for V <= 4, half-warps for V = 8, quarter-warps for V = 16 (lanes in id
order). Within a phase, lanes that touch different 4-byte words of one bank are serialized; lanes
reading the same word share it. So a phase takes as many wavefronts as the largest number of
distinct words any bank holds, and an access has `wavefronts - phases` conflicts (0 is ideal).

The accessing threads are given by a distributed layout (register, lane, warp) -> tensor
coordinates and the buffer by a shared layout offset -> coordinates; their composition gives
each register's element offset, from which every lane's address follows. Warps are alike (a
warp's bits only add the same offset to all its lanes), so warp 0 is counted.
"""
from __future__ import annotations

from .conversion import (BANK_BYTES, LANE, MAX_VECTOR_BYTES, REGISTER, WARP_BYTES, SharedSwizzle,
                         flat_bases, unique_registers, _xor_of)
from .linear_layout import LinearLayout

WARP_LANES = 32


def offsets_layout(distributed: LinearLayout, shared: LinearLayout) -> LinearLayout:
    """(register, lane, warp, block) -> element offset in a buffer laid out by `shared`
    (offset -> coordinates, a bijection over the same tensor)."""
    return distributed.compose(shared.invert())


def vector_bits(offsets: LinearLayout, elem_bytes: int) -> tuple:
    """The register bits that make up one vector access: register bit vector_bits[k] moves the
    offset by 2**k, and no other basis touches those low offset bits (up to 16 bytes)."""
    regs = flat_bases(offsets, REGISTER)
    threads = [v for d in offsets.in_dims if d != REGISTER for v in flat_bases(offsets, d)]
    chosen: list = []
    while elem_bytes << (len(chosen) + 1) <= MAX_VECTOR_BYTES:
        k = len(chosen)
        if (1 << k) not in regs:
            break
        j = regs.index(1 << k)
        others = [v for i, v in enumerate(regs) if i not in chosen and i != j] + threads
        if any(v & ((1 << (k + 1)) - 1) for v in others):
            break
        chosen.append(j)
    return tuple(chosen)


def access_conflicts(offsets: LinearLayout, elem_bytes: int, vec_bits: tuple = ()) -> list:
    """Extra wavefronts (bank conflicts) of each access a warp makes to read or write its
    registers at `offsets` ((register, lane, ...) -> element offset), `vec_bits` registers per
    vector: one count per access, in register order of the accesses' first registers."""
    vec_mask = sum(1 << b for b in vec_bits)
    regs = flat_bases(offsets, REGISTER)
    lanes = flat_bases(offsets, LANE)
    vec_bytes = elem_bytes << len(vec_bits)
    per_phase = WARP_LANES if vec_bytes <= BANK_BYTES else WARP_BYTES // vec_bytes
    counts = []
    for r in unique_registers(offsets):
        if r & vec_mask:
            continue
        base = _xor_of(regs, r)
        wavefronts = phases = 0
        for start in range(0, WARP_LANES, per_phase):
            banks: dict = {}
            for lane in range(start, start + per_phase):
                address = (base ^ _xor_of(lanes, lane)) * elem_bytes
                for word in range(address // BANK_BYTES,
                                  (address + vec_bytes - 1) // BANK_BYTES + 1):
                    banks.setdefault(word % (WARP_BYTES // BANK_BYTES), set()).add(word)
            wavefronts += max(len(words) for words in banks.values())
            phases += 1
        counts.append(wavefronts - phases)
    return counts


def layout_conflicts(distributed: LinearLayout, shared: LinearLayout, elem_bytes: int,
                     vectorize: bool = True) -> list:
    """Conflicts per access when `distributed` registers are stored to (or loaded from) a
    buffer laid out by `shared`, with the widest vectors the maps allow (or scalar)."""
    offsets = offsets_layout(distributed, shared)
    vec = vector_bits(offsets, elem_bytes) if vectorize else ()
    return access_conflicts(offsets, elem_bytes, vec)


def conversion_conflicts(src: LinearLayout, dst: LinearLayout, swizzle: SharedSwizzle,
                         elem_bytes: int) -> dict:
    """{"store": [...], "load": [...]}: conflicts per access of a conversion through shared
    memory laid out by `swizzle`, with its vector widths."""
    return {"store": access_conflicts(swizzle.offsets_of(src), elem_bytes, swizzle.src_vec_bits),
            "load": access_conflicts(swizzle.offsets_of(dst), elem_bytes, swizzle.dst_vec_bits)}
