"""The `scf` dialect: structured control flow (for, if, while) with `scf.yield` terminators."""
from __future__ import annotations

from compiler.ir.accessors import block, operand, variadic_operands
from compiler.ir.core import Operation, register_op
from compiler.ir.parser import OpParts
from compiler.ir.syntax import Syntax, Terminator
from compiler.ir.types import IntegerType
from compiler.ir.traits import LayoutBarrier, LoopLike, MayNotTerminate, SameOperandsAndResultLayout
from compiler.ir.traits import Terminator as TerminatorTrait
from compiler.ir.verifier_errors import VerificationError

from .common import define_op

YieldOp = define_op("YieldOp", "scf.yield", Terminator(),
                    (TerminatorTrait, SameOperandsAndResultLayout, LayoutBarrier),
                    values=variadic_operands(0))


def _result_types_text(p, op) -> str:
    if not op.results:
        return ""
    return " -> (" + p.types(r.type for r in op.results) + ")"


class _ForSyntax(Syntax):
    """`scf.for %i = %lb to %ub step %s iter_args(%a = %x) -> (T) : i32 { ... }`."""

    def print(self, p, op, indent):
        lb, ub, step, *inits = op.operands
        block = op.regions[0].blocks[0]
        p.name_block_args(block)
        iv, *iter_args = block.args
        text = f"{op.name} {p.value(iv)} = {p.value(lb)} to {p.value(ub)} step {p.value(step)}"
        if iter_args:
            pairs = ", ".join(f"{p.value(a)} = {p.value(x)}" for a, x in zip(iter_args, inits))
            text += f" iter_args({pairs})"
        text += _result_types_text(p, op)
        text += f"{p.attr_dict(op.attributes)} : {p.type(lb.type)} "
        return text + p.region(op.regions[0], indent, print_entry_args=False)

    def parse(self, ps, cls, num_results):
        iv_name = ps.value_name()
        ps.expect("=")
        lb = ps.operand()
        ps.expect("to")
        ub = ps.operand()
        ps.expect("step")
        step = ps.operand()
        names, inits = [], []
        if ps.keyword("iter_args"):
            ps.expect("(")
            while not ps.consume(")"):
                names.append(ps.value_name())
                ps.expect("=")
                inits.append(ps.operand())
                ps.consume(",")
        result_types = []
        if ps.consume("->"):
            result_types = ps._result_types()
        attrs = ps.attr_dict()
        ps.expect(":")
        iv_type = ps.type()
        from compiler.ir.location import UNKNOWN
        entry = [(iv_name, iv_type, UNKNOWN)] + [
            (n, t, UNKNOWN) for n, t in zip(names, result_types)]
        region = ps.region(entry_args=entry)
        return OpParts([lb, ub, step] + inits, result_types, attrs, [region])


@register_op
class ForOp(Operation):
    """`scf.for`: a counted loop; operands lb, ub, step, then the loop-carried initial values."""

    name = "scf.for"
    syntax = _ForSyntax()
    traits = (LoopLike, LayoutBarrier)
    lower_bound = operand(0)
    upper_bound = operand(1)
    step = operand(2)
    body = block(0)

    @property
    def induction_var(self):
        return self.body.args[0]

    init_args = variadic_operands(3)

    @property
    def iter_args(self):
        return self.body.args[1:]

    def verify_op(self):
        lb, ub, step = self.operands[:3]
        if not (lb.type == ub.type == step.type and isinstance(lb.type, IntegerType)):
            raise VerificationError(self, "bounds and step must be integers of one type")
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise VerificationError(self, "needs one region with one block")
        inits = self.init_args
        if len(self.iter_args) != len(inits) or len(self.results) != len(inits):
            raise VerificationError(self, "iter_args, initial values and results must agree")
        for a, x, r in zip(self.iter_args, inits, self.results):
            if not a.type == x.type == r.type:
                raise VerificationError(self, f"loop-carried value changes type: initial "
                                              f"{x.type}, in loop {a.type}, result {r.type}")
        _verify_yield(self, self.body, [r.type for r in self.results])


def _verify_yield(op, block, types):
    term = block.terminator
    if term is None or term.name != "scf.yield":
        raise VerificationError(op, "region must end in scf.yield")
    got = [v.type for v in term.operands]
    if got != list(types):
        raise VerificationError(op, f"scf.yield gives ({', '.join(map(str, got))}) but "
                                    f"({', '.join(map(str, types))}) is expected")


class _IfSyntax(Syntax):
    """`scf.if %c -> (T) { ... } else { ... }`."""

    def print(self, p, op, indent):
        text = f"{op.name} {p.value(op.operands[0])}{_result_types_text(p, op)}"
        text += p.attr_dict(op.attributes) + " " + p.region(op.regions[0], indent, False)
        if op.regions[1].blocks and (op.regions[1].blocks[0].ops or op.results):
            text += " else " + p.region(op.regions[1], indent, False)
        return text

    def parse(self, ps, cls, num_results):
        cond = ps.operand()
        result_types = []
        if ps.consume("->"):
            result_types = ps._result_types()
        attrs = ps.attr_dict()
        then = ps.region(entry_args=[])
        if ps.keyword("else"):
            other = ps.region(entry_args=[])
        else:
            from compiler.ir.core import Block, Region
            other = Region([Block()])
            other.blocks[0].append(YieldOp([], []))
        return OpParts([cond], result_types, attrs, [then, other])


@register_op
class IfOp(Operation):
    """`scf.if`: two regions (then, else) each ending in scf.yield of the results."""

    name = "scf.if"
    syntax = _IfSyntax()
    traits = (LayoutBarrier,)
    condition = operand(0)
    then_block = block(0)
    else_block = block(1)

    def verify_op(self):
        if self.operands[0].type != IntegerType(1):
            raise VerificationError(self, f"condition must be a scalar i1, got "
                                          f"{self.operands[0].type}")
        if len(self.regions) != 2:
            raise VerificationError(self, "needs a then and an else region")
        for region in self.regions:
            _verify_yield(self, region.blocks[0], [r.type for r in self.results])


@register_op
class WhileOp(Operation):
    """`scf.while`: a `before` region ending in scf.condition and an `after` region ending in
    scf.yield; printed in generic form."""

    name = "scf.while"
    syntax = None
    traits = (LoopLike, MayNotTerminate, LayoutBarrier)
    inits = variadic_operands(0)
    before = block(0)
    after = block(1)

    def verify_op(self):
        if len(self.regions) != 2:
            raise VerificationError(self, "needs a before and an after region")
        cond = self.regions[0].blocks[0].terminator
        if cond is None or cond.name != "scf.condition":
            raise VerificationError(self, "before region must end in scf.condition")
        if [v.type for v in cond.operands[1:]] != [r.type for r in self.results]:
            raise VerificationError(self, "scf.condition must forward the results' types")


ConditionOp = define_op("ConditionOp", "scf.condition", Terminator(),
                        (TerminatorTrait, LayoutBarrier),
                        condition=operand(0), forwarded=variadic_operands(1))
