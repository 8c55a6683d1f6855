"""How many CTAs of a compiled kernel one SM holds at once, from its registers per thread, warps
and shared memory per CTA: the static occupancy that the CUDA occupancy calculator computes,
without a GPU. Used by bench/attention_loops.py to compare ours and Triton's configs.

The resource model per compute capability (SMResources) follows NVIDIA's published limits:
registers are allocated per warp in units of 256 and split over the SM's four sub-partitions
(a warp's registers live in one of them); every CTA also reserves 1 KB of shared memory on
sm_80 and later; shared memory is allocated in 128-byte units.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SMResources:
    """The per-SM limits of one compute capability."""
    registers: int = 65536              # 32-bit registers per SM
    register_unit: int = 256            # registers are allocated per warp in these units
    sub_partitions: int = 4             # register file quarters; a warp lives in one
    max_registers_per_thread: int = 255
    shared_bytes: int = 228 * 1024      # shared memory per SM (largest carveout)
    shared_per_block: int = 227 * 1024  # most one CTA may use (opt-in)
    reserved_per_block: int = 1024      # shared memory the driver keeps per CTA
    shared_unit: int = 128              # shared memory allocation granularity
    max_warps: int = 64
    max_ctas: int = 32
    warp_size: int = 32


SM_RESOURCES = {
    80: SMResources(shared_bytes=164 * 1024, shared_per_block=163 * 1024),
    86: SMResources(shared_bytes=100 * 1024, shared_per_block=99 * 1024, max_warps=48,
                    max_ctas=16),
    89: SMResources(shared_bytes=100 * 1024, shared_per_block=99 * 1024, max_warps=48,
                    max_ctas=24),
    90: SMResources(),
}


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def ctas_per_sm(registers: int, num_warps: int, shared_bytes: int, arch: int = 90) -> dict:
    """Resident CTAs per SM for a kernel using `registers` per thread, `num_warps` warps and
    `shared_bytes` of shared memory (static + dynamic) per CTA on sm_`arch`. Returns the limit
    each resource sets ("registers", "shared", "warps", "ctas"), the resulting "ctas_per_sm",
    "warps_per_sm", and "limited_by" (the resources that reach the minimum)."""
    if arch not in SM_RESOURCES:
        raise ValueError(f"no SM resource model for sm_{arch} (known: "
                         f"{', '.join(f'sm_{a}' for a in sorted(SM_RESOURCES))})")
    sm = SM_RESOURCES[arch]
    if not 0 < registers <= sm.max_registers_per_thread:
        raise ValueError(f"{registers} registers per thread: sm_{arch} allows 1 to "
                         f"{sm.max_registers_per_thread}")
    if num_warps <= 0:
        raise ValueError(f"num_warps must be positive, got {num_warps}")
    per_warp = _round_up(registers * sm.warp_size, sm.register_unit)
    warps_per_partition = (sm.registers // sm.sub_partitions) // per_warp
    warps_per_cta_per_partition = -(-num_warps // sm.sub_partitions)
    shared = _round_up(shared_bytes + sm.reserved_per_block, sm.shared_unit)
    limits = {
        "registers": warps_per_partition // warps_per_cta_per_partition,
        "shared": (sm.shared_bytes // shared if shared_bytes <= sm.shared_per_block else 0),
        "warps": sm.max_warps // num_warps,
        "ctas": sm.max_ctas,
    }
    best = min(limits.values())
    return {**limits, "ctas_per_sm": best, "warps_per_sm": best * num_warps,
            "limited_by": tuple(name for name, value in limits.items() if value == best)}
