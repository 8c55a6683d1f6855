"""global-scratch-allocation: place each `ttg.global_scratch_alloc` in the program's slice of the
kernel's global scratch buffer.

Every program (CTA) of a launch owns `ttg.global_scratch_memory_size` bytes of one buffer the
launch allocates (program p's slice starts at p * size, p the linear program id); this pass
gives each alloc its offset in the slice (`ttg.global_scratch_memory_offset`, aligned as it
asks) and sets the module's `ttg.global_scratch_memory_size` and
`ttg.global_scratch_memory_alignment`, which the lowering (an extra kernel parameter) and the
launch read, as Triton's pass of the same name does. Allocations are not reused: each keeps
its bytes for the whole kernel (a tensor map the TMA unit may still read).
"""
from __future__ import annotations

from compiler.dialects.ttg import GlobalScratchAllocOp
from compiler.ir.attributes import int_attr
from compiler.ir.core import Module

from .base import Pass, PassContext, register_pass
from .requirements import TTGIR

#: module attributes this pass sets (the launch reads them through `KernelMetadata`)
SIZE_ATTR = "ttg.global_scratch_memory_size"
ALIGNMENT_ATTR = "ttg.global_scratch_memory_alignment"
OFFSET_ATTR = "ttg.global_scratch_memory_offset"


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


@register_pass
class GlobalScratchAllocation(Pass):
    """Gives every `ttg.global_scratch_alloc` its offset in the program's slice of global
    scratch memory and records the slice's size and alignment on the module."""

    name = "global-scratch-allocation"
    stage = "ttgir"
    requires = TTGIR

    def run(self, module: Module, ctx: PassContext) -> None:
        size, alignment = 0, 1
        for func in module.functions():
            for op in func.walk():
                if not isinstance(op, GlobalScratchAllocOp):
                    continue
                align = op.attributes["alignment"].value
                offset = _align(size, align)
                op.attributes[OFFSET_ATTR] = int_attr(offset)
                size = offset + op.attributes["nbytes"].value
                alignment = max(alignment, align)
                ctx.record_pattern(f"global scratch: {op.attributes['nbytes'].value} bytes at "
                                   f"offset {offset}", op=op)
        if size:
            module.attributes[SIZE_ATTR] = int_attr(_align(size, alignment))
            module.attributes[ALIGNMENT_ATTR] = int_attr(alignment)
