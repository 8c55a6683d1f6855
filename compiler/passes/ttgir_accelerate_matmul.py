"""accelerate-matmul: move `tt.dot`s onto tensor cores: mma.sync (MMA v2: m16n8k16 for f16/bf16;
m16n8k8 for tf32 and m16n8k32 for int8 behind the `mma_v2_tf32_int8` option) before Hopper and
for dots wgmma cannot take, warp-group wgmma (MMA v3, `compiler.passes.mma_v3`) on sm_90."""
from __future__ import annotations

from compiler.analysis.layouts import MMA_M, MMA_N, MMA_V2_OPERANDS, mma_k
from compiler.dialects.tt import DotOp
from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding
from compiler.ir.core import Module, Operation
from compiler.ir.types import TensorType
from compiler.metadata import KernelMetadata

from .base import Option, Pass, PassContext, register_pass
from .mma_v3 import accelerate_v3, split_tf32x3, uses_wgmma, wgmma_kind
from .requirements import SHARED_ALLOCATED, TTGIR
from .ttgir_rewrite import fold_converts, relayout_op

#: the operand types behind the `mma_v2_tf32_int8` option (off: they stay on FMA)
NARROW_INPUTS = ("f32", "i8")
#: the first capability with mma.sync m16n8k8 tf32 and m16n8k32 s8 (Ampere)
NARROW_MIN_ARCH = 80


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


def mma_k_width(op: Operation, narrow: bool) -> int | None:
    """The kWidth of a tt.dot's operands on mma.sync, or None when it has no form here: f16 and
    bf16 (2); with `narrow`, fp32 unless the dot asks for "ieee" precision (1, tf32) and int8
    (4). Both operands must have the same element type."""
    a, b = op.operands[0].type, op.operands[1].type
    name = str(a.element)
    if name != str(b.element) or name not in MMA_V2_OPERANDS:
        return None
    if name in NARROW_INPUTS and not narrow:
        return None
    if name == "f32" and op.input_precision == "ieee":
        return None
    return MMA_V2_OPERANDS[name][0]


def mma_encoding_for(op: Operation, num_warps: int,
                     narrow: bool = False) -> tuple[NvidiaMmaEncoding, int] | None:
    """The MMA v2 accumulator layout a `tt.dot` can use and its operands' kWidth, or None when
    it must stay on FMA: operand types without an mma.sync form (`mma_k_width`), an
    accumulator type the form does not write, a blocked layout missing, or M/N/K not multiples
    of 16/8/the instruction's K that the warps can tile."""
    a, b, c = op.operands
    if not all(isinstance(v.type, TensorType) for v in (a, b, c)):
        return None
    if not isinstance(c.type.encoding, BlockedEncoding) or len(c.type.shape) != 2:
        return None
    k_width = mma_k_width(op, narrow)
    if k_width is None or str(c.type.element) not in MMA_V2_OPERANDS[str(a.type.element)][1]:
        return None
    m, n = c.type.shape
    k = a.type.shape[1]
    if m % MMA_M or n % MMA_N or k % mma_k(k_width):
        return None
    warps = warps_per_tile((m, n), num_warps)
    if warps is None:
        return None
    return NvidiaMmaEncoding(2, 0, warps, (MMA_M, MMA_N)), k_width


@register_pass
class AccelerateMatmul(Pass):
    """Rewrites each tt.dot that tensor cores can compute into a tensor-core accumulator
    layout. Before sm_90, and on sm_90 for dots too small for wgmma (f16/bf16 operands, an f32
    accumulator or f16 for f16 operands, M, N, K multiples of 16, 8, 16):
    the #ttg.nvidia_mma v2 layout with #ttg.dot_op<{parent = #mma, kWidth = 2}> operands, as
    Triton's AccelerateMatmul does for sm_80; with the mma-v2-tf32-int8 option on sm_80+ also
    fp32 (tf32, kWidth 1, K a multiple of 8; tf32x3 as three tf32 dots) and int8 (kWidth 4, an
    i32 accumulator, K a multiple of 32). On sm_90 (f16/bf16, tf32 for fp32 inputs, fp8;
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
                           from_compile="arch"),
                    Option("mma-v2-tf32-int8", bool, True,
                           "tf32 and int8 dots on mma.sync where wgmma cannot take them "
                           "(sm_80+; off: FMA)", from_compile="mma_v2_tf32_int8"))

    def run(self, module: Module, ctx: PassContext) -> None:
        metadata = KernelMetadata.from_ttgir(module, reader=self.name)
        num_warps = metadata.num_warps
        # the pass option, else the module's ttg.target (set from the compile option arch)
        target = metadata.target
        capability = self.options["compute-capability"] or (target.arch if target else 80)
        narrow = self.options["mma-v2-tf32-int8"] and capability >= NARROW_MIN_ARCH
        changed = False
        dots = []
        for op in [o for o in module.walk() if isinstance(o, DotOp)]:
            if op.input_precision != "tf32x3" or str(op.operands[0].type.element) != "f32":
                dots.append(op)
            elif (uses_wgmma(capability) and wgmma_kind(op) == "tf32") or \
                    (narrow and mma_encoding_for(op, num_warps, narrow) is not None):
                dots += split_tf32x3(op, ctx)
            else:
                dots.append(op)
        for op in dots:
            if uses_wgmma(capability) and accelerate_v3(op, num_warps, ctx):
                changed = True
                continue
            choice = mma_encoding_for(op, num_warps, narrow)
            if choice is None:
                continue
            mma, k_width = choice
            relayout_op(op, [DotOperandEncoding(0, mma, k_width),
                             DotOperandEncoding(1, mma, k_width), mma], [mma])
            ctx.record_pattern(f"tt.dot -> mma.sync m16n8k{mma_k(k_width)} (MMA v2)", op=op)
            changed = True
        if changed:
            fold_converts(module, ctx)
