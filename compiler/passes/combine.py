"""combine: Triton's TritonCombineOps peepholes (addptr chains, selects, dot + add)."""
from __future__ import annotations

from compiler.dialects.arith import BINARY_OPS, SelectOp
from compiler.dialects.tt import AddPtrOp, DotOp
from compiler.ir.core import Module

from .base import Pass, PassContext, register_pass
from .ir_utils import insert_new, is_constant
from .rewrite import RewritePattern, apply_patterns


class AddPtrChain(RewritePattern):
    """addptr(addptr(p, a), b) -> addptr(p, a + b) when a and b have one type, so address
    arithmetic happens once on integers."""

    name = "combine-addptr-chain"
    roots = (AddPtrOp,)

    def rewrite(self, op, rewriter):
        inner = op.ptr.owner_op
        if not isinstance(inner, AddPtrOp):
            return False
        ptr, a = inner.ptr, inner.offset
        b = op.offset
        if a.type != b.type:
            return False
        total = insert_new(BINARY_OPS["addi"], [a, b], [a.type], {}, op)
        new = insert_new(AddPtrOp, [ptr, total.result], [op.result.type], op.attributes, op)
        rewriter.notify_new(total)
        rewriter.notify_new(new)
        rewriter.replace(op, [new.result])
        return True


class SelectSameOperands(RewritePattern):
    """select(c, x, x) -> x."""

    name = "combine-select-same"
    roots = (SelectOp,)

    def rewrite(self, op, rewriter):
        if op.true_value is not op.false_value:
            return False
        rewriter.replace(op, [op.true_value])
        return True


class DotAddToAccumulator(RewritePattern):
    """dot(a, b, 0) + d -> dot(a, b, d): the add becomes the accumulator (only when the dot
    has no other user and its accumulator is a zero constant)."""

    name = "combine-dot-add"
    roots = (BINARY_OPS["addf"], BINARY_OPS["addi"])

    def rewrite(self, op, rewriter):
        for i in (0, 1):
            dot = op.operands[i].owner_op
            other = op.operands[1 - i]
            if (isinstance(dot, DotOp) and len(dot.result.uses) == 1
                    and is_constant(dot.c, 0) and other.type == dot.result.type):
                new = insert_new(DotOp, [dot.a, dot.b, other],
                                 [op.result.type], dot.attributes, op, loc=dot.loc)
                rewriter.notify_new(new)
                rewriter.replace(op, [new.result])
                return True
        return False


PATTERNS = [AddPtrChain(), SelectSameOperands(), DotAddToAccumulator()]


@register_pass
class Combine(Pass):
    """Triton-specific peepholes: folds chains of tt.addptr into one addptr of summed offsets,
    replaces a select between equal values by the value, and folds an add into a tt.dot whose
    accumulator is zero, so the hardware's multiply-accumulate does the add."""

    name = "combine"
    stage = "ttir"

    def run(self, module: Module, ctx: PassContext):
        apply_patterns(module, PATTERNS, ctx)
