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

from .common import ANY, define_op, set_counts

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
        if not self.body.args or self.induction_var.type != lb.type:
            raise VerificationError(self, f"the induction variable must be of the bounds' type "
                                          f"{lb.type}")
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
    if not isinstance(term, YieldOp):
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
            if len(region.blocks) != 1 or region.blocks[0].args:
                raise VerificationError(self, "then and else regions hold one block without "
                                              "arguments")
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
        if len(self.regions) != 2 or any(len(r.blocks) != 1 for r in self.regions):
            raise VerificationError(self, "needs a before and an after region of one block each")
        before, after = (r.blocks[0] for r in self.regions)
        inits = [v.type for v in self.operands]
        results = [r.type for r in self.results]
        if [a.type for a in before.args] != inits:
            raise VerificationError(self, "the before region's arguments must have the initial "
                                          "values' types")
        cond = before.terminator
        if not isinstance(cond, ConditionOp):
            raise VerificationError(self, "before region must end in scf.condition")
        if not cond.operands or cond.operands[0].type != IntegerType(1):
            raise VerificationError(self, "scf.condition needs an i1 condition first")
        if [v.type for v in cond.operands[1:]] != results:
            raise VerificationError(self, "scf.condition must forward the results' types")
        if [a.type for a in after.args] != results:
            raise VerificationError(self, "the after region's arguments must have the results' "
                                          "types")
        _verify_yield(self, after, inits)


ConditionOp = define_op("ConditionOp", "scf.condition", Terminator(),
                        (TerminatorTrait, LayoutBarrier),
                        condition=operand(0), forwarded=variadic_operands(1))

set_counts([YieldOp], operands=ANY, results=0)
set_counts([ConditionOp], operands=(1, None), results=0)
set_counts([ForOp], operands=(3, None), results=ANY, regions=1)
set_counts([IfOp], operands=1, results=ANY, regions=2)
set_counts([WhileOp], operands=ANY, results=ANY, regions=2)
