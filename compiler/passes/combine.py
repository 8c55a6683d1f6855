"""combine: Triton's TritonCombineOps peepholes (addptr chains, selects, dot + add, and a
broadcast multiply summed over the middle axis as a tt.dot)."""
from __future__ import annotations

from compiler.dialects.arith import BINARY_OPS, SelectOp
from compiler.dialects.tt import (AddPtrOp, BroadcastOp, DotOp, ExpandDimsOp, ReduceOp,
                                  ReduceReturnOp, ReshapeOp)
from compiler.ir.attributes import StringAttr
from compiler.ir.core import Module, Value
from compiler.ir.types import f32

from .base import Pass, PassContext, register_pass
from .ir_utils import insert_new, is_constant, make_constant
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


#: The least M and N (Triton's bound) and K (tl.dot's own least K for 32-bit operands) of a
#: broadcast multiply-sum that becomes a tt.dot.
MIN_DOT_MN = 16
MIN_DOT_K = 16


def _is_sum_combiner(reduce_op) -> bool:
    """Whether a tt.reduce of one f32 operand combines by `arith.addf` of its two arguments."""
    if len(reduce_op.operands) != 1 or reduce_op.operands[0].type.scalar != f32:
        return False
    ops = reduce_op.regions[0].blocks[0].ops
    if len(ops) != 2 or not isinstance(ops[0], BINARY_OPS["addf"]) \
            or not isinstance(ops[1], ReduceReturnOp):
        return False
    args = reduce_op.regions[0].blocks[0].args
    return set(ops[0].operands) == set(args) and ops[1].operands[0] is ops[0].result


def _broadcast_along(value: Value, axis: int):
    """The tt.broadcast defining `value` when it broadcasts along `axis` only, else None."""
    op = value.owner_op
    if not isinstance(op, BroadcastOp):
        return None
    src, dst = op.src.type.shape, op.result.type.shape
    if all((a != b) == (i == axis) for i, (a, b) in enumerate(zip(src, dst))):
        return op
    return None


def _without_unit_dim(value: Value, axis: int, before, rewriter) -> Value:
    """`value` (a 3-D tensor whose dim `axis` is 1) as a 2-D one: the tensor expand_dims
    made it from, or a new tt.reshape dropping the dim."""
    op = value.owner_op
    if isinstance(op, ExpandDimsOp) and op.axis == axis:
        return op.src
    shape = value.type.shape[:axis] + value.type.shape[axis + 1:]
    reshape = insert_new(ReshapeOp, [value], [value.type.with_shape(shape)], {}, before)
    rewriter.notify_new(reshape)
    return reshape.result


class BroadcastMulSumToDot(RewritePattern):
    """sum(a[:, :, None] * b[None, :, :], axis=1) -> dot(a, b, 0) for f32 blocks of at least
    16x16 (M, N) and K >= 16: a [M, K, 1] value broadcast along its last axis times a
    [1, K, N] value broadcast along its first, summed by addf over K, is the matrix product,
    as Triton's combine rewrites it. The dot keeps fp32 products exactly (input precision
    ieee), as the multiply it replaces did; the sum's order of additions may differ."""

    name = "combine-broadcast-mul-sum"
    roots = (ReduceOp,)

    def rewrite(self, op, rewriter):
        src = op.operands[0]
        if src.type.rank != 3 or op.axis != 1 or not _is_sum_combiner(op):
            return False
        mul = src.owner_op
        if not isinstance(mul, BINARY_OPS["mulf"]):
            return False
        for lhs_value, rhs_value in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            lhs, rhs = _broadcast_along(lhs_value, 2), _broadcast_along(rhs_value, 0)
            if lhs is not None and rhs is not None:
                break
        else:
            return False
        m, k, n = src.type.shape
        if m < MIN_DOT_MN or n < MIN_DOT_MN or k < MIN_DOT_K:
            return False
        a = _without_unit_dim(lhs.src, 2, op, rewriter)
        b = _without_unit_dim(rhs.src, 0, op, rewriter)
        result_type = op.results[0].type
        zero = make_constant(0.0, result_type, op)       # a dense zero: DotAddToAccumulator
        dot = insert_new(DotOp, [a, b, zero], [result_type],   # folds a later add into it
                         {"inputPrecision": StringAttr("ieee")}, op)
        for new in (zero.owner_op, dot):
            rewriter.notify_new(new)
        rewriter.replace(op, [dot.result])
        return True


PATTERNS = [AddPtrChain(), SelectSameOperands(), DotAddToAccumulator(), BroadcastMulSumToDot()]


@register_pass
class Combine(Pass):
    """Triton-specific peepholes: folds chains of tt.addptr into one addptr of summed offsets,
    replaces a select between equal values by the value, folds an add into a tt.dot whose
    accumulator is zero, so the hardware's multiply-accumulate does the add, and turns a
    broadcast multiply summed over its middle axis into the tt.dot it spells."""

    name = "combine"
    stage = "ttir"

    def run(self, module: Module, ctx: PassContext):
        apply_patterns(module, PATTERNS, ctx)
