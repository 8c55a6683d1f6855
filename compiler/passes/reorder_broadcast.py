"""reorder-broadcast: do elementwise math before splats and broadcasts, on fewer elements."""
from __future__ import annotations

from compiler.dialects.tt import BroadcastOp, SplatOp
from compiler.ir.core import Module, Operation, Value
from compiler.ir.traits import Elementwise, Pure
from compiler.ir.types import TensorType

from .base import Pass, PassContext, register_pass
from .ir_utils import constant_value, insert_new, make_constant
from .rewrite import RewritePattern, apply_patterns


def _movable(op: Operation) -> bool:
    return (op.has_trait(Elementwise) and op.has_trait(Pure) and len(op.results) == 1
            and not op.regions and isinstance(op.result.type, TensorType) and op.operands)


def _splat_source(v: Value):
    """The scalar a splat-like value repeats: ("splat", scalar) or ("const", number)."""
    src = v.owner_op
    if isinstance(src, SplatOp):
        return ("splat", src.src)
    number = constant_value(v)
    if number is not None and isinstance(v.type, TensorType):
        return ("const", number)
    return None


class ElementwiseBeforeSplat(RewritePattern):
    """f(splat a, splat b) -> splat f(a, b) (dense constants count as splats)."""

    name = "move-splat-after-elementwise"

    def rewrite(self, op, rewriter):
        if not _movable(op):
            return False
        sources = [_splat_source(v) for v in op.operands]
        if any(s is None for s in sources) or all(s[0] == "const" for s in sources):
            return False    # all-constant is canonicalize's job (constant folding)
        scalars = []
        for v, (kind, what) in zip(op.operands, sources):
            if kind == "splat":
                scalars.append(what)
            else:
                made = make_constant(what, v.type.element, op)
                rewriter.notify_new(made.owner_op)
                scalars.append(made)
        scalar_op = insert_new(type(op), scalars, [op.result.type.element], op.attributes, op)
        splat = insert_new(SplatOp, [scalar_op.result], [op.result.type], {}, op)
        rewriter.notify_new(scalar_op)
        rewriter.notify_new(splat)
        rewriter.replace(op, [splat.result])
        return True


class ElementwiseBeforeBroadcast(RewritePattern):
    """f(broadcast x, broadcast y) -> broadcast f(x, y) when x and y have one shape (splat or
    constant operands are re-made at that smaller shape)."""

    name = "move-broadcast-after-elementwise"

    def rewrite(self, op, rewriter):
        if not _movable(op):
            return False
        broadcasts = [v.owner_op for v in op.operands
                      if isinstance(v.owner_op, BroadcastOp)]
        if not broadcasts:
            return False
        small = broadcasts[0].operands[0].type.shape
        if any(b.operands[0].type.shape != small for b in broadcasts):
            return False
        if any(_splat_source(v) is None for v in op.operands
               if not isinstance(v.owner_op, BroadcastOp)):
            return False
        operands = []
        for v in op.operands:
            src = v.owner_op
            if isinstance(src, BroadcastOp):
                operands.append(src.operands[0])
                continue
            splat = _splat_source(v)
            small_type = v.type.with_shape(small)
            if splat[0] == "splat":
                made = insert_new(SplatOp, [splat[1]], [small_type], {}, op).result
            else:
                made = make_constant(splat[1], small_type, op)
            rewriter.notify_new(made.owner_op)
            operands.append(made)
        small_op = insert_new(type(op), operands, [op.result.type.with_shape(small)],
                              op.attributes, op)
        wide = insert_new(BroadcastOp, [small_op.result], [op.result.type], {}, op)
        rewriter.notify_new(small_op)
        rewriter.notify_new(wide)
        rewriter.replace(op, [wide.result])
        return True


PATTERNS = [ElementwiseBeforeSplat(), ElementwiseBeforeBroadcast()]


@register_pass
class ReorderBroadcast(Pass):
    """Moves splats and broadcasts after the elementwise ops that consume them: f(splat a,
    splat b) becomes splat f(a, b), and f(broadcast x, broadcast y) becomes broadcast f(x, y).
    The math then runs on a scalar or the small tensor instead of the full block."""

    name = "reorder-broadcast"
    stage = "ttir"

    def run(self, module: Module, ctx: PassContext):
        apply_patterns(module, PATTERNS, ctx, erase_dead=True)
