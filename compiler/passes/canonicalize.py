"""canonicalize: constant folding, algebraic identities, splat/broadcast folding and dead
control flow, applied by the greedy pattern driver until nothing more fires."""
from __future__ import annotations

from compiler.dialects.arith import BINARY_OPS, CAST_OPS, CmpFOp, CmpIOp, ConstantOp, SelectOp
from compiler.dialects.scf import ForOp, IfOp
from compiler.dialects.tt import BroadcastOp, ExpandDimsOp, ReshapeOp, SplatOp
from compiler.ir.core import OP_REGISTRY, Operation
from compiler.ir.traits import Commutative

from .base import Pass, PassContext, register_pass
from .constant_folding import fold_binary, fold_cast, fold_compare
from .ir_utils import constant_attr, constant_value, insert_new, is_constant
from .rewrite import RewritePattern, Rewriter, apply_patterns

BINARY_CLASSES = tuple(BINARY_OPS.values())
CAST_CLASSES = tuple(CAST_OPS.values())


def replace_with_constant(op: Operation, number, rewriter: Rewriter) -> bool:
    """Replace one-result `op` by a constant of its result type holding `number`."""
    new = ConstantOp([], [op.result.type], {"value": constant_attr(number, op.result.type)},
                     None, op.loc)
    op.parent.insert_before(op, new)
    rewriter.notify_new(new)
    rewriter.replace(op, [new.result])
    return True


class FoldBinary(RewritePattern):
    """arith binary op of two constants -> constant."""

    name = "fold-constant-binary"
    roots = BINARY_CLASSES

    def rewrite(self, op, rewriter):
        a, b = (constant_value(v) for v in op.operands)
        if a is None or b is None:
            return False
        folded = fold_binary(_mnemonic(op), a, b, op.result.type)
        return folded is not None and replace_with_constant(op, folded, rewriter)


class FoldCompare(RewritePattern):
    """arith.cmpi / cmpf of two constants -> i1 constant."""

    name = "fold-constant-compare"
    roots = (CmpIOp, CmpFOp)

    def rewrite(self, op, rewriter):
        a, b = (constant_value(v) for v in op.operands)
        if a is None or b is None:
            return False
        folded = fold_compare(type(op), op.predicate, a, b, op.lhs.type)
        return folded is not None and replace_with_constant(op, folded, rewriter)


class FoldCast(RewritePattern):
    """arith cast of a constant -> constant of the new type."""

    name = "fold-constant-cast"
    roots = CAST_CLASSES

    def rewrite(self, op, rewriter):
        value = constant_value(op.operands[0])
        if value is None:
            return False
        folded = fold_cast(_mnemonic(op), value, op.src.type, op.result.type)
        return folded is not None and replace_with_constant(op, folded, rewriter)


# Identities: (op, constant on the right that makes `x op c == x`).
RIGHT_IDENTITY = {BINARY_OPS[mnemonic]: unit for mnemonic, unit in (
    ("addi", 0), ("subi", 0), ("muli", 1), ("divsi", 1), ("divui", 1), ("ori", 0), ("xori", 0),
    ("shli", 0), ("shrsi", 0), ("shrui", 0), ("mulf", 1.0), ("divf", 1.0))}
# Absorbing constants: `x op c == c` (ints only: x * 0.0 is not 0.0 for NaN or -0.0).
ABSORBING = {BINARY_OPS["muli"]: 0, BINARY_OPS["andi"]: 0}


def _mnemonic(op: Operation) -> str:
    """The op's name within its dialect (`addi` for `arith.addi`): the constant folder's key."""
    return op.name.split(".", 1)[1]


class AlgebraicIdentity(RewritePattern):
    """x+0, x-0, x*1, x/1, x|0, x^0, x<<0 -> x (either side for commutative ops)."""

    name = "fold-identity"
    roots = tuple(RIGHT_IDENTITY)

    def rewrite(self, op, rewriter):
        unit = RIGHT_IDENTITY[type(op)]
        x, c = op.operands
        if is_constant(c, unit):
            rewriter.replace(op, [x])
            return True
        if op.has_trait(Commutative) and is_constant(x, unit):
            rewriter.replace(op, [c])
            return True
        return False


class AbsorbingConstant(RewritePattern):
    """x*0 and x&0 -> 0 for integers."""

    name = "fold-absorbing"
    roots = tuple(ABSORBING)

    def rewrite(self, op, rewriter):
        zero = ABSORBING[type(op)]
        for v in op.operands:
            if is_constant(v, zero):
                rewriter.replace(op, [v])
                return True
        return False


class SelfInverse(RewritePattern):
    """x-x and x^x -> 0; x&x, x|x, max(x,x), min(x,x) -> x (integers)."""

    name = "fold-same-operands"
    to_zero = (BINARY_OPS["subi"], BINARY_OPS["xori"])
    roots = to_zero + tuple(BINARY_OPS[n] for n in ("andi", "ori", "maxsi", "minsi", "maxui",
                                                    "minui"))

    def rewrite(self, op, rewriter):
        a, b = op.operands
        if a is not b:
            return False
        if isinstance(op, self.to_zero):
            return replace_with_constant(op, 0, rewriter)
        rewriter.replace(op, [a])
        return True


class ConstantToRight(RewritePattern):
    """Commutative op with a constant on the left: swap it to the right, MLIR's canonical
    order (so later patterns and CSE see one form)."""

    name = "constant-to-right"
    roots = tuple(cls for cls in BINARY_CLASSES if cls.class_has_trait(Commutative))

    def rewrite(self, op, rewriter):
        a, b = op.operands
        if constant_value(a) is None or constant_value(b) is not None:
            return False
        op.set_operands([b, a])
        rewriter.notify_changed(op)
        return True


class SplatConstant(RewritePattern):
    """tt.splat of a scalar constant -> dense tensor constant."""

    name = "splat-of-constant"
    roots = (SplatOp,)

    def rewrite(self, op, rewriter):
        value = constant_value(op.src)
        return value is not None and replace_with_constant(op, value, rewriter)


class ReshapeConstant(RewritePattern):
    """broadcast / expand_dims / reshape of a dense splat constant -> a constant of the new
    shape (every element is still the same number)."""

    name = "reshape-of-constant"
    roots = (BroadcastOp, ExpandDimsOp, ReshapeOp)

    def rewrite(self, op, rewriter):
        value = constant_value(op.operands[0])
        return value is not None and replace_with_constant(op, value, rewriter)


class FoldBroadcastOfSplat(RewritePattern):
    """broadcast(splat x) and expand_dims(splat x) -> splat x at the final shape."""

    name = "splat-through-broadcast"
    roots = (BroadcastOp, ExpandDimsOp, ReshapeOp)

    def rewrite(self, op, rewriter):
        src = op.src.owner_op
        if not isinstance(src, SplatOp):
            return False
        new = insert_new(SplatOp, [src.operands[0]], [op.result.type], {}, op)
        rewriter.notify_new(new)
        rewriter.replace(op, [new.result])
        return True


class IdentityBroadcast(RewritePattern):
    """broadcast / reshape to the operand's own type -> the operand."""

    name = "identity-broadcast"
    roots = (BroadcastOp, ReshapeOp)

    def rewrite(self, op, rewriter):
        if op.operands[0].type != op.result.type:
            return False
        rewriter.replace(op, [op.operands[0]])
        return True


class BroadcastOfBroadcast(RewritePattern):
    """broadcast(broadcast x) -> broadcast x."""

    name = "broadcast-of-broadcast"
    roots = (BroadcastOp,)

    def rewrite(self, op, rewriter):
        src = op.src.owner_op
        if not isinstance(src, BroadcastOp):
            return False
        op.set_operand(0, src.operands[0])
        rewriter.notify_changed(op)
        rewriter.worklist.push(src)
        return True


class SelectConstantCondition(RewritePattern):
    """arith.select with a constant (scalar or splat) condition -> the chosen operand."""

    name = "select-constant-condition"
    roots = (SelectOp,)

    def rewrite(self, op, rewriter):
        cond = constant_value(op.condition)
        if cond is None:
            return False
        rewriter.replace(op, [op.true_value if cond else op.false_value])
        return True


def inline_block_before(block, anchor: Operation, rewriter: Rewriter, mapping=None) -> list:
    """Move `block`'s ops (all but its terminator) before `anchor`, replacing block arguments by
    `mapping`'s values; returns the terminator's operands."""
    for arg, value in (mapping or {}).items():
        arg.replace_all_uses_with(value)
    term = block.terminator
    for op in list(block.ops[:-1]):
        op.move_before(anchor)
        rewriter.notify_new(op)
    results = list(term.operands)
    return results


class DeadIfArm(RewritePattern):
    """scf.if with a constant condition -> the taken arm's ops, inlined."""

    name = "if-constant-condition"
    roots = (IfOp,)

    def rewrite(self, op, rewriter):
        cond = constant_value(op.condition)
        if cond is None:
            return False
        results = inline_block_before(op.then_block if cond else op.else_block, op, rewriter)
        rewriter.replace(op, results)
        return True


class ZeroTripLoop(RewritePattern):
    """scf.for whose constant bounds give no iteration -> its initial values."""

    name = "for-zero-trips"
    roots = (ForOp,)

    def rewrite(self, op, rewriter):
        lb, ub = constant_value(op.lower_bound), constant_value(op.upper_bound)
        if lb is None or ub is None or lb < ub:
            return False
        rewriter.replace(op, list(op.init_args))
        return True


PATTERNS = [FoldBinary(), FoldCompare(), FoldCast(), AlgebraicIdentity(), AbsorbingConstant(),
            SelfInverse(), ConstantToRight(), SplatConstant(), ReshapeConstant(),
            FoldBroadcastOfSplat(), IdentityBroadcast(), BroadcastOfBroadcast(),
            SelectConstantCondition(), DeadIfArm(), ZeroTripLoop()]


@register_pass
class Canonicalize(Pass):
    """Simplifies the IR with local rewrite patterns until none applies: folds arithmetic on
    constants (scalars and splats), applies identities such as x+0 and x*1, turns splats of
    constants into dense constants, folds splat/broadcast chains, and removes scf.if arms and
    selects whose condition is constant. Later passes then see one canonical form."""

    name = "canonicalize"
    stage = "ttir"

    def run(self, module, ctx: PassContext):
        apply_patterns(module, PATTERNS + op_patterns(), ctx)


def op_patterns() -> list[RewritePattern]:
    """The patterns op classes offer through `canonicalization_patterns()`, after the
    generic ones above (each class's own, rooted at that class by the class itself)."""
    return [pattern for cls in OP_REGISTRY.values() for pattern in cls.canonicalization_patterns()]
