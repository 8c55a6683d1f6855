"""accelerate-matmul: move `tt.dot`s onto tensor cores: mma.sync m16n8k16 (MMA v2) before
Hopper, warp-group wgmma (MMA v3, `compiler.passes.mma_v3`) on sm_90."""
from __future__ import annotations

from compiler.analysis.layouts import MMA_K, MMA_M, MMA_N
from compiler.dialects.tt import DotOp
from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding
from compiler.ir.core import Module, Operation
from compiler.ir.types import FloatType, TensorType
from compiler.metadata import KernelMetadata

from .base import Option, Pass, PassContext, register_pass
from .mma_v3 import accelerate_v3, split_tf32x3, uses_wgmma, wgmma_kind
from .requirements import SHARED_ALLOCATED, TTGIR
from .ttgir_rewrite import fold_converts, relayout_op

#: operand element types mma.sync m16n8k16 takes here
MMA_INPUTS = ("f16", "bf16")
#: the accumulator types it writes for each (PTX: an f16 accumulator for f16 operands only)
MMA_ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",)}


def warps_per_tile(shape: tuple, num_warps: int) -> tuple | None:
    """Triton's warpsPerTileV2: give warps to M or N, whichever has more instruction tiles per
    warp, until all `num_warps` are placed. Warps past a small shape's tiles compute copies
    (the layout replicates the tensor over them); None when the warps' tile does not divide
    the shape."""
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if shape[0] // (MMA_M * wm) >= shape[1] // (MMA_N * wn) and wm < shape[0] // MMA_M:
            wm *= 2
        else:
            wn *= 2
    if not (_tiles(shape[0], MMA_M * wm) and _tiles(shape[1], MMA_N * wn)):
        return None
    return wm, wn


def _tiles(size: int, tile: int) -> bool:
    """Whether the warps' tile divides a dim, or (replicated warps) the dim divides the tile."""
    return size % tile == 0 or tile % size == 0


def _element_name(t) -> str:
    element = t.element
    return str(element) if isinstance(element, FloatType) else ""


def mma_encoding_for(op: Operation, num_warps: int) -> NvidiaMmaEncoding | None:
    """The MMA v2 accumulator layout a `tt.dot` can use, or None when it must stay on FMA: fp32
    (even where tf32 is allowed), integer and fp8 operands, an accumulator other than f32 (or
    f16 for f16 operands), a blocked layout missing, or M/N/K not multiples of 16/8/16 the
    warps can tile."""
    a, b, c = op.operands
    if not all(isinstance(v.type, TensorType) for v in (a, b, c)):
        return None
    if not isinstance(c.type.encoding, BlockedEncoding) or len(c.type.shape) != 2:
        return None
    if _element_name(a.type) not in MMA_INPUTS or _element_name(a.type) != _element_name(b.type):
        return None
    if _element_name(c.type) not in MMA_ACCUMULATORS[_element_name(a.type)]:
        return None
    m, n = c.type.shape
    k = a.type.shape[1]
    if m % MMA_M or n % MMA_N or k % MMA_K:
        return None
    warps = warps_per_tile((m, n), num_warps)
    if warps is None:
        return None
    return NvidiaMmaEncoding(2, 0, warps, (MMA_M, MMA_N))


@register_pass
class AccelerateMatmul(Pass):
    """Rewrites each tt.dot that tensor cores can compute into a tensor-core accumulator
    layout. Before sm_90, and on sm_90 for dots too small for wgmma (f16/bf16 operands, an f32
    accumulator or f16 for f16 operands, M, N, K multiples of 16, 8, 16):
    the #ttg.nvidia_mma v2 layout with #ttg.dot_op<{parent = #mma, kWidth = 2}> operands, as
    Triton's AccelerateMatmul does for sm_80. On sm_90 (f16/bf16, tf32 for fp32 inputs, fp8;
    M a multiple of 64 per warp group): a ttng.warp_group_dot with a v3 accumulator and its
    operands in #ttg.nvmma_shared buffers (A may stay in registers when it is computed, as p in
    attention). Conversions are inserted around the dot; remove-layout-conversions then
    carries the accumulator through loops. Other dots stay on FMA."""

    name = "accelerate-matmul"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)
    options_spec = (Option("compute-capability", int, 0,
                           "target capability, e.g. 90 (default: the compile option arch; "
                           "0: the module's ttg.target)",
                           check=lambda v: v == 0 or 70 <= v <= 120,
                           allowed="0 or a compute capability such as 80 or 90",
                           from_compile="arch"),)

    def run(self, module: Module, ctx: PassContext) -> None:
        metadata = KernelMetadata.from_ttgir(module, reader=self.name)
        num_warps = metadata.num_warps
        # the pass option, else the module's ttg.target (set from the compile option arch)
        target = metadata.target
        capability = self.options["compute-capability"] or (target.arch if target else 80)
        changed = False
        dots = []
        for op in [o for o in module.walk() if isinstance(o, DotOp)]:
            if uses_wgmma(capability) and op.input_precision == "tf32x3" and \
                    wgmma_kind(op) == "tf32":
                dots += split_tf32x3(op, ctx)
            else:
                dots.append(op)
        for op in dots:
            if uses_wgmma(capability) and accelerate_v3(op, num_warps, ctx):
                changed = True
                continue
            mma = mma_encoding_for(op, num_warps)
            if mma is None:
                continue
            relayout_op(op, [DotOperandEncoding(0, mma, 2), DotOperandEncoding(1, mma, 2), mma],
                        [mma])
            ctx.record_pattern("tt.dot -> mma.sync m16n8k16 (MMA v2)", op=op)
            changed = True
        if changed:
            fold_converts(module, ctx)
