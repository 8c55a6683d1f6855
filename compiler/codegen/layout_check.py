"""What the lowering assumes of a distributed layout, checked before an op is lowered.

The layout helpers (`compiler.analysis.layouts`, `compiler.codegen.indices`) take a layout's
fields at their word: per-dim lists as long as the tensor's rank, `order` a permutation,
power-of-two sizes whose lane and warp products are the module's threads per warp and warp
count, a tensor-core layout of a supported version. `layout_problem(encoding, shape, ...)`
says (in one sentence) which of these a tensor type breaks, or None; the op walk turns it into
a `LoweringError` at the op, instead of a ZeroDivisionError, IndexError or an endless loop deep
in the helpers. The verifier may check the same things earlier; this is the lowering's own guard.
"""
from __future__ import annotations

from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding,
                                   SliceEncoding, SwizzledSharedEncoding)

#: Registers (elements, duplicates included) one thread may hold for one tensor: far above any
#: real kernel (Triton spills long before), low enough that a typo cannot compile for minutes.
#: A thread may also not hold more than MAX_COPIES copies' worth of the whole tensor (a
#: sizePerThread far beyond the shape only duplicates elements, and makes LLVM's optimizer
#: crawl). Sixteen is the widest vector (128 bits of 1-byte elements) the coalesce pass gives a
#: layout, which a size-1 dim of the same layout repeats: `arange(0, 32)[:, None, None]` in a
#: [1, 1, 8] blocked layout (a 3-D uint16 store) holds 8 copies of each element, as in Triton.
MAX_REGISTERS_PER_THREAD = 1 << 14
MAX_COPIES = 16
#: mma versions the lowering knows (v2: mma.sync, v3: wgmma).
MMA_VERSIONS = (2, 3)


def _power_of_two(n) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 1 and n & (n - 1) == 0


def _product(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _per_dim(name: str, values, rank: int) -> str | None:
    if len(values) != rank:
        return f"{name} has {len(values)} entries for a rank-{rank} tensor"
    bad = [v for v in values if not _power_of_two(v)]
    if bad:
        return f"{name} = {list(values)} must hold powers of two (>= 1), not {bad[0]}"
    return None


def _warps_problem(warps_per_cta, num_warps: int) -> str:
    return (f"warpsPerCTA = {list(warps_per_cta)} spreads over {_product(warps_per_cta)} "
            f"warps but the kernel has {num_warps} (ttg.num-warps)")


def _register_problem(registers: int, shape: tuple, size_per_thread) -> str | None:
    """The register limit above, for a thread holding `registers` of a `shape` tensor."""
    numel = _product(shape)
    if registers > MAX_REGISTERS_PER_THREAD or registers > max(64, MAX_COPIES * numel):
        return (f"each thread would hold {registers} registers of this {numel}-element tensor; "
                f"sizePerThread = {list(size_per_thread)} is far too large for its shape")
    return None


def _blocked_problem(layout: BlockedEncoding, shape: tuple, num_warps: int,
                     threads_per_warp: int, count_registers: bool = True) -> str | None:
    rank = len(shape)
    for name, values in (("sizePerThread", layout.size_per_thread),
                         ("threadsPerWarp", layout.threads_per_warp),
                         ("warpsPerCTA", layout.warps_per_cta)):
        problem = _per_dim(name, values, rank)
        if problem:
            return problem
    if sorted(layout.order) != list(range(rank)):
        return f"order = {list(layout.order)} is not a permutation of the {rank} dims"
    if _product(layout.threads_per_warp) != threads_per_warp:
        return (f"threadsPerWarp = {list(layout.threads_per_warp)} has "
                f"{_product(layout.threads_per_warp)} lanes per warp, not {threads_per_warp}")
    if _product(layout.warps_per_cta) != num_warps:
        return _warps_problem(layout.warps_per_cta, num_warps)
    if not count_registers:
        return None
    tile = layout.shape_per_cta_tile()
    registers = _product(layout.size_per_thread) * _product(
        max(1, s // t) for s, t in zip(shape, tile))
    return _register_problem(registers, shape, layout.size_per_thread)


def shared_layout_problem(layout, shape: tuple) -> str | None:
    """Why a shared-memory buffer of `shape` in `layout` cannot be lowered, or None."""
    if not isinstance(layout, SwizzledSharedEncoding):
        return None
    rank = len(layout.order)
    if rank > len(shape) or sorted(layout.order) != list(range(rank)):
        return (f"order = {list(layout.order)} is not a permutation of the buffer's "
                f"{min(rank, len(shape))} dims")
    for name, value in (("vec", layout.vec), ("perPhase", layout.per_phase),
                        ("maxPhase", layout.max_phase)):
        if not _power_of_two(value):
            return f"{name} = {value} must be a power of two (>= 1)"
    return None


def layout_problem(layout, shape: tuple, num_warps: int, threads_per_warp: int = 32,
                   count_registers: bool = True) -> str | None:
    """Why a tensor of `shape` in `layout` cannot be lowered (one sentence), or None when the
    lowering's assumptions hold. Encodings this module does not know are left to the lowering.
    A slice's registers are counted on the slice itself (once its parents' fields are known
    good): the parent's sizePerThread along a sliced-away dim only repeats the same element."""
    shape = tuple(shape)
    bad = [d for d in shape if not _power_of_two(d)]
    if bad:
        return f"the tensor's shape {list(shape)} has a dim of {bad[0]}, not a power of two"
    if isinstance(layout, BlockedEncoding):
        return _blocked_problem(layout, shape, num_warps, threads_per_warp, count_registers)
    if isinstance(layout, SliceEncoding):
        if not (isinstance(layout.dim, int) and 0 <= layout.dim <= len(shape)):
            return f"slice dim = {layout.dim} is not a dim of its rank-{len(shape) + 1} parent"
        parent_shape = shape[:layout.dim] + (1,) + shape[layout.dim:]
        problem = layout_problem(layout.parent, parent_shape, num_warps, threads_per_warp,
                                 count_registers=False)
        if problem or not count_registers:
            return problem
        from compiler.analysis.layouts import elements_per_thread, slice_root
        root = slice_root(layout)
        if not isinstance(root, BlockedEncoding):
            return None
        return _register_problem(elements_per_thread(layout, shape), shape,
                                 root.size_per_thread)
    if isinstance(layout, DotOperandEncoding):
        if layout.op_idx not in (0, 1):
            return f"dot operand opIdx = {layout.op_idx} must be 0 (A) or 1 (B)"
        if not (isinstance(layout.k_width, int) and layout.k_width >= 0):
            return f"dot operand kWidth = {layout.k_width} must be a non-negative integer"
        if isinstance(layout.parent, NvidiaMmaEncoding) and not _power_of_two(layout.k_width):
            return (f"dot operand kWidth = {layout.k_width} of a tensor-core layout must be a "
                    f"power of two (mma.sync: 32 / operand bits, 1 for tf32, 2 for f16/bf16, "
                    f"4 for int8)")
        return layout_problem(layout.parent, shape, num_warps, threads_per_warp)
    if isinstance(layout, NvidiaMmaEncoding):
        if layout.version_major not in MMA_VERSIONS:
            return (f"nvidia_mma versionMajor = {layout.version_major} is not supported "
                    f"(known: {', '.join(map(str, MMA_VERSIONS))})")
        problem = _per_dim("warpsPerCTA", layout.warps_per_cta, len(shape))
        if problem:
            return problem
        if _product(layout.warps_per_cta) != num_warps:
            return _warps_problem(layout.warps_per_cta, num_warps)
        if not all(_power_of_two(d) for d in layout.instr_shape):
            return f"nvidia_mma instrShape = {list(layout.instr_shape)} must hold powers of two"
    return None
