"""optimize-dot-operands: a transposed tile that a warp-group dot reads from shared memory is
transposed as a view of the buffer, not in registers.

accelerate-matmul stages a wgmma operand as `ttg.local_alloc(tt.trans(%x))`: `%x` (attention's
K block, `desc_k.load(...).T`) is transposed in registers, which costs a layout conversion
through shared memory, and then stored. Both orders address the same bytes when the buffer is
written untransposed and read through a transposed view, so the pair becomes
`ttg.memdesc_trans(ttg.local_alloc(%x))` with the alloc's layout the view's seen the other way
(`ttg.transposed_shared`); wgmma then reads the view with the other descriptor major-ness, and
the operand bytes sit where they did before, so a type wgmma reads only K-major (tf32, fp8,
int8) is still read K-major. The buffer now holds the loaded tile as it was loaded: a
descriptor load's TMA box lands in it directly, so the pipeliner copies K into a ring like V
(Triton's OptimizeDotOperands, whose transpose-fusing pattern this is).

The pass also merges an immutable `local_alloc` of a value already staged earlier in the same
block, with the same type or, for a 16-bit tile only dots read, another nvmma_shared layout
(two dots reading one tile, one of them transposed, share one buffer).
"""
from __future__ import annotations

from compiler.dialects.tt import TransOp
from compiler.dialects.ttg import (LocalAllocOp, MemDescTransOp, MemDescType,
                                   NVMMASharedEncoding, replace_buffer, transposed_memdesc,
                                   transposed_shared)
from compiler.dialects.ttng import WarpGroupDotOp
from compiler.ir.attributes import DenseArrayAttr
from compiler.ir.core import Module, Operation

from .base import Pass, PassContext, register_pass
from .ir_utils import insert_new
from .requirements import SHARED_ALLOCATED, TTGIR


def reads_for_dots(user: Operation) -> bool:
    """Whether a user of a buffer is a warp-group dot or a `ttg.memdesc_trans` view that only
    warp-group dots read (the reads wgmma's descriptors make)."""
    return isinstance(user, WarpGroupDotOp) or \
        isinstance(user, MemDescTransOp) and only_dots_read(user.results[0])


def only_dots_read(buffer) -> bool:
    """Whether `buffer` has users and every one `reads_for_dots`."""
    users = buffer.users()
    return bool(users) and all(reads_for_dots(user) for user in users)


def _inverse(order) -> tuple:
    inverse = [0] * len(order)
    for view_dim, dim in enumerate(order):
        inverse[dim] = view_dim
    return tuple(inverse)


def fuse_transpose(alloc: Operation, ctx: PassContext) -> bool:
    """`local_alloc(tt.trans %x)` read only by warp-group dots -> `memdesc_trans(local_alloc
    %x)`; False (nothing changed) when the pair does not have that shape or the layout
    cannot be viewed transposed."""
    if alloc.src is None or not only_dots_read(alloc.results[0]):
        return False
    trans = alloc.src.owner_op
    if not isinstance(trans, TransOp) or len(trans.results[0].uses) != 1:
        return False
    t: MemDescType = alloc.results[0].type
    order = tuple(trans.order)
    encoding = transposed_shared(t.encoding, _inverse(order))
    if encoding is None:
        return False
    source = trans.operands[0]
    stored = MemDescType(tuple(source.type.shape), t.element, encoding, t.mutable)
    if transposed_memdesc(stored, order) != t:
        return False
    new_alloc = insert_new(LocalAllocOp, [source], [stored], dict(alloc.attributes), alloc,
                           alloc.loc)
    view = insert_new(MemDescTransOp, new_alloc.results, [t],
                      {"order": DenseArrayAttr(order)}, alloc, trans.loc)
    alloc.results[0].replace_all_uses_with(view.results[0])
    alloc.erase()
    trans.erase()
    ctx.record_pattern("local_alloc(tt.trans) -> memdesc_trans(local_alloc)", op=view)
    return True


def _copy_friendly(source_type, t: MemDescType) -> tuple:
    """How well a tile in `source_type`'s register layout is stored into a buffer of type `t`
    (larger is better): first whether the buffer's contiguous dim is the registers' (so the
    copy, cp.async included, moves whole vectors; `ttgir_pipeline.copy_bytes`), then the
    swizzle width (wider: fewer bank conflicts on wgmma's reads)."""
    order = getattr(source_type.encoding, "order", None)
    same = order is not None and order[0] == t.encoding.order[0]
    return (same, t.encoding.swizzling_byte_width)


def _can_share(first: Operation, alloc: Operation) -> bool:
    """Whether two immutable allocs of one 16-bit tile in different nvmma_shared layouts can be
    one buffer: only warp-group dots read each (directly or through `ttg.memdesc_trans`), and
    wgmma reads a 16-bit operand in either major-ness, so any of the two layouts serves every
    reader (tf32, fp8 and int8 operands must stay K-major, so those are left alone)."""
    a, b = first.results[0].type, alloc.results[0].type
    return (isinstance(a.encoding, NVMMASharedEncoding) and
            isinstance(b.encoding, NVMMASharedEncoding) and
            a.shape == b.shape and a.element == b.element and a.element.width == 16 and
            only_dots_read(first.results[0]) and only_dots_read(alloc.results[0]))


def merge_duplicate_alloc(alloc: Operation, seen: dict, ctx: PassContext) -> bool:
    """An immutable `local_alloc %x` after another of the same `%x` in the same block reuses the
    first buffer (True when it was merged). accelerate-matmul stages each dot's operand on its
    own, so the Q tile that both loops of causal attention read was stored twice and held 32 KB
    more shared memory than Triton's kernel (enough to push 128x128 tiles at 3 stages over the
    H200's limit). Two allocs in different nvmma_shared layouts merge too when `_can_share`:
    the kept buffer takes the layout `_copy_friendly` prefers and the `ttg.memdesc_trans` views
    on it are re-derived. Tutorial 06's backward reads its Q^T tile (dK/dV loop) and K^T tile
    (dQ loop) once as a dot operand and once transposed; two buffers meant two stores of the
    tile every iteration and a load the pipeliner could not ring-buffer (it copies a load with
    one alloc), where Triton copies the tile once, asynchronously, into one ring."""
    t = alloc.results[0].type
    if alloc.src is None or not isinstance(t, MemDescType) or t.mutable:
        return False
    key = (id(alloc.parent), id(alloc.src))
    for first in seen.setdefault(key, []):
        if first.results[0].type == t:
            alloc.results[0].replace_all_uses_with(first.results[0])
            alloc.erase()
            ctx.record_pattern("duplicate local_alloc -> the first one", op=first)
            return True
        if _can_share(first, alloc):
            kept = max((first.results[0].type, t),
                       key=lambda m: _copy_friendly(alloc.src.type, m))
            first.results[0].type = kept
            replace_buffer(first.results[0], first.results[0])
            replace_buffer(alloc.results[0], first.results[0])
            alloc.erase()
            ctx.record_pattern("local_alloc in another nvmma layout -> the first one", op=first)
            return True
    seen[key].append(alloc)
    return False


@register_pass
class OptimizeDotOperands(Pass):
    """Transposes a warp-group dot's shared operand as a view instead of in registers: a
    `ttg.local_alloc` of a `tt.trans` becomes a `ttg.memdesc_trans` of the untransposed
    tile's buffer, which wgmma reads with the other descriptor major-ness. No register
    round trip or layout conversion remains, and a descriptor-loaded tile (attention's K)
    is staged exactly as loaded, so the pipeliner ring-buffers it (Triton's
    OptimizeDotOperands). Duplicate immutable allocs of one value share the first buffer,
    also across nvmma_shared layouts when only 16-bit dots read them."""

    name = "optimize-dot-operands"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, LocalAllocOp) and op.parent is not None:
                fuse_transpose(op, ctx)
        seen: dict = {}
        for op in list(module.walk()):
            if isinstance(op, LocalAllocOp) and op.parent is not None:
                merge_duplicate_alloc(op, seen, ctx)
