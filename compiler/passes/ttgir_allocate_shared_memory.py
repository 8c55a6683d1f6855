"""allocate-shared-memory: place every shared-memory buffer at an offset."""
from __future__ import annotations

from compiler.analysis.shared_memory import allocate
from compiler.ir.attributes import int_attr
from compiler.ir.core import Module

from .base import Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR


@register_pass
class AllocateSharedMemory(Pass):
    """Computes the shared memory each op needs (scratch for layout conversions, reductions and
    scans across warps, scalar atomics; explicit ttg.local_alloc buffers) and, from their live
    ranges, gives each an offset so that buffers alive at the same time never overlap. Sets
    `allocation.offset` on each op that owns a buffer and the module attribute `ttg.shared` to
    the total bytes, as Triton's AllocateSharedMemory does; the launcher reserves that much."""

    name = "allocate-shared-memory"
    stage = "ttgir"
    requires = TTGIR
    establishes = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        total = 0
        for func in module.functions():
            bufs, size = allocate(func)
            for buf in bufs:
                buf.op.attributes["allocation.offset"] = int_attr(buf.offset)
                ctx.record_pattern(f"allocate {buf.kind} for {buf.op.name}")
            total = max(total, size)
        module.attributes["ttg.shared"] = int_attr(total)
