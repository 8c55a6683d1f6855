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

The pass also merges an immutable `local_alloc` of a value already staged with the same type
earlier in the same block (two dots reading one tile share one buffer).
"""
from __future__ import annotations

from compiler.dialects.tt import TransOp
from compiler.dialects.ttg import (LocalAllocOp, MemDescTransOp, MemDescType, transposed_memdesc,
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


def merge_duplicate_alloc(alloc: Operation, seen: dict, ctx: PassContext) -> bool:
    """An immutable `local_alloc %x` after another of the same `%x` and type in the same block
    reuses the first buffer (True when it was merged). accelerate-matmul stages each dot's
    operand on its own, so the Q tile that both loops of causal attention read was stored twice
    and held 32 KB more shared memory than Triton's kernel (enough to push 128x128 tiles at 3
    stages over the H200's limit)."""
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
    seen[key].append(alloc)
    return False


@register_pass
class OptimizeDotOperands(Pass):
    """Transposes a warp-group dot's shared operand as a view instead of in registers: a
    `ttg.local_alloc` of a `tt.trans` becomes a `ttg.memdesc_trans` of the untransposed
    tile's buffer, which wgmma reads with the other descriptor major-ness. No register
    round trip or layout conversion remains, and a descriptor-loaded tile (attention's K)
    is staged exactly as loaded, so the pipeliner ring-buffers it (Triton's
    OptimizeDotOperands). Duplicate immutable allocs of one value share the first buffer."""

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
