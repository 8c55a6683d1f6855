"""Reusable printed forms for ops (the `syntax` of an op class), each with its parser.

An op class names one of these as its `syntax`; `print(p, op, indent)` returns the text after
`%r = `, and `parse(ps, cls, num_results)` reads it back into `OpParts`. Attributes that a form
does not show in its own way go into a trailing `{...}` dictionary, so no information is lost.
"""
from __future__ import annotations

from .attributes import Attribute, IntegerAttr, StringAttr
from .parser import OpParts, Parser
from .types import IntegerType, like


class Syntax:
    """Base class; subclasses implement `print` and `parse`."""

    def print(self, p, op, indent: int) -> str:
        raise NotImplementedError(f"{type(self).__name__}.print")

    def parse(self, ps: Parser, cls, num_results: int) -> OpParts:
        raise NotImplementedError(f"{type(self).__name__}.parse")


def _operands_then_attrs(ps: Parser) -> tuple[list, dict]:
    operands = ps.operand_list()
    return operands, ps.attr_dict()


def _print_typed_operands(p, op) -> str:
    """`name %a, %b {attrs} : Ta, Tb` (just `name {attrs}` without operands)."""
    if not op.operands:
        return op.name + p.attr_dict(op.attributes)
    types = p.types(v.type for v in op.operands)
    return f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : {types}"


def _parse_typed_operands(ps: Parser) -> tuple[list, dict]:
    """The operands and attributes of `_print_typed_operands`' form, types checked."""
    operands, attrs = _operands_then_attrs(ps)
    if operands:
        ps.expect(":")
        ps.skip_ws()
        pos = ps.pos
        ps.check_written_types(operands, ps.type_list(), pos)
    return operands, attrs


class SameType(Syntax):
    """`%a, %b {attrs} : T`: operands and (zero or one) result all of type T (arith.addi, math.exp)."""

    def print(self, p, op, indent):
        t = op.results[0].type if op.results else op.operands[0].type
        return f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : {p.type(t)}"

    def parse(self, ps, cls, num_results):
        operands, attrs = _operands_then_attrs(ps)
        ps.expect(":")
        t = ps.type()
        return OpParts(operands, [t] * num_results, attrs)


class Compare(Syntax):
    """`slt, %a, %b : T` with the predicate stored as the `predicate` string attribute; the
    predicate may also be written quoted (`"slt", %a, %b : T`), as Triton's tests write it."""

    def print(self, p, op, indent):
        pred = op.attributes["predicate"].value
        rest = p.attr_dict(op.attributes, exclude=("predicate",))
        return f"{op.name} {pred}, {p.values(op.operands)}{rest} : {p.type(op.operands[0].type)}"

    def parse(self, ps, cls, num_results):
        ps.skip_ws()
        pred = ps.string() if ps.at('"') else ps.identifier()
        ps.expect(",")
        operands, attrs = _operands_then_attrs(ps)
        ps.expect(":")
        pos = ps.pos
        t = ps.type()
        ps.check_written_types(operands, [t] * len(operands), pos)
        attrs["predicate"] = StringAttr(pred)
        return OpParts(operands, [like(t, IntegerType(1))], attrs)


class Convert(Syntax):
    """`%a {attrs} : T1 <sep> T2`: one operand, one result of another type (casts, splat, ...)."""

    def __init__(self, separator: str = "->"):
        self.separator = separator

    def print(self, p, op, indent):
        return (f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : "
                f"{p.type(op.operands[0].type)} {self.separator} {p.type(op.results[0].type)}")

    def parse(self, ps, cls, num_results):
        operands, attrs = _operands_then_attrs(ps)
        ps.expect(":")
        ps.skip_ws()
        pos = ps.pos
        ps.check_written_types(operands, ps.type_list(), pos)
        ps.expect(self.separator)
        return OpParts(operands, [ps.type()], attrs)


class OperandTypes(Syntax):
    """`%a, %b {attrs} : Ta, Tb` with the result type given by `result_of(operand_types, attrs)`.

    Used by tt.addptr (result = first operand's type), tt.load (result = pointee type),
    tt.store (no result).
    """

    def __init__(self, result_of, num_types: int | None = None):
        self.result_of = result_of
        self.num_types = num_types

    def print(self, p, op, indent):
        types = [v.type for v in op.operands]
        if self.num_types is not None:
            types = types[: self.num_types]
        return f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : {p.types(types)}"

    def parse(self, ps, cls, num_results):
        operands, attrs = _operands_then_attrs(ps)
        ps.expect(":")
        ps.skip_ws()
        pos = ps.pos
        types = ps.type_list()
        if len(types) in (len(operands), self.num_types):
            ps.check_written_types(operands[:len(types)], types, pos)
        elif self.num_types is None or len(types) > self.num_types:
            raise ps.error(f"{len(operands)} operands but {len(types)} types written", pos)
        result = self.result_of(types, attrs)
        return OpParts(operands, [result] if result is not None else [], attrs)


class AttrsThenType(Syntax):
    """`{attrs} : T` (tt.make_range) or `value : T` (arith.constant: `value` printed bare)."""

    def __init__(self, bare_attr: str | None = None):
        self.bare_attr = bare_attr

    def print(self, p, op, indent):
        t = p.type(op.results[0].type)
        if self.bare_attr:
            a = op.attributes[self.bare_attr]
            rest = p.attr_dict(op.attributes, exclude=(self.bare_attr,))
            text = str(a).rsplit(" : ", 1)[0] if isinstance(a, (IntegerAttr,)) or \
                type(a).__name__ == "FloatAttr" else str(a)
            return f"{op.name}{rest} {text} : {t}"
        return f"{op.name}{p.attr_dict(op.attributes)} : {t}"

    def parse(self, ps, cls, num_results):
        attrs = ps.attr_dict()
        if self.bare_attr:
            ps.skip_ws()
            if ps.at("dense<"):
                dense = ps.dense_attribute()
                attrs[self.bare_attr] = dense
                return OpParts([], [dense.type], attrs)
            for word, value in (("true", 1), ("false", 0)):
                if ps.keyword(word):
                    ps.expect(":")
                    t = ps.type()
                    attrs[self.bare_attr] = IntegerAttr(value, t)
                    return OpParts([], [t], attrs)
            from .parser import NUMBER
            raw = ps.match(NUMBER)
            if raw is None:
                raise ps.error("expected a constant value")
            ps.expect(":")
            t = ps.type()
            attrs[self.bare_attr] = ps.number_attr(raw, t)
            return OpParts([], [t], attrs)
        ps.expect(":")
        return OpParts([], [ps.type()], attrs)


class Terminator(Syntax):
    """`%a, %b : Ta, Tb` or nothing (tt.return, scf.yield, tt.reduce.return)."""

    def print(self, p, op, indent):
        return _print_typed_operands(p, op)

    def parse(self, ps, cls, num_results):
        operands, attrs = _parse_typed_operands(ps)
        return OpParts(operands, [], attrs)


class EnumThenType(Syntax):
    """`x : i32`: one attribute printed as a bare word from `values`, then the result type."""

    def __init__(self, attr: str, values: tuple):
        self.attr = attr
        self.values = values

    def print(self, p, op, indent):
        word = self.values[op.attributes[self.attr].value]
        rest = p.attr_dict(op.attributes, exclude=(self.attr,))
        return f"{op.name} {word}{rest} : {p.type(op.results[0].type)}"

    def parse(self, ps, cls, num_results):
        pos = ps.pos
        word = ps.identifier()
        if word not in self.values:
            raise ps.error(f"expected one of {', '.join(self.values)}", pos)
        attrs = ps.attr_dict()
        attrs[self.attr] = IntegerAttr(self.values.index(word), IntegerType(32))
        ps.expect(":")
        return OpParts([], [ps.type()], attrs)


def attribute_value(a: Attribute):
    """The plain Python value of a simple attribute."""
    return getattr(a, "value", a)


class TypedOperands(Syntax):
    """`%a, %b {attrs} : Ta, Tb` or `... : Ta, Tb -> R`: every operand's type written, then the
    result's when there is one (the TMA and mbarrier ops, whose operands differ in kind)."""

    def print(self, p, op, indent):
        text = _print_typed_operands(p, op)
        if op.results:
            text += f" -> {p.types(r.type for r in op.results)}"
        return text

    def parse(self, ps, cls, num_results):
        operands, attrs = _parse_typed_operands(ps)
        results = []
        if ps.at("->"):
            ps.expect("->")
            results = list(ps.type_list())
        return OpParts(operands, results, attrs)


class Indexed(Syntax):
    """`%src[%indices] {attrs} : (Ts, Ti) -> R`: a source read at an index tensor (tt.gather,
    in Triton's printed form)."""

    def print(self, p, op, indent):
        src, indices = op.operands
        return (f"{op.name} {p.value(src)}[{p.value(indices)}]{p.attr_dict(op.attributes)} : "
                f"({p.types([src.type, indices.type])}) -> {p.type(op.results[0].type)}")

    def parse(self, ps, cls, num_results):
        ps.skip_ws()
        src = ps.operand()
        ps.expect("[")
        ps.skip_ws()
        indices = ps.operand()
        ps.expect("]")
        attrs = ps.attr_dict()
        ps.expect(":")
        ps.expect("(")
        ps.skip_ws()
        pos = ps.pos
        ps.check_written_types([src, indices], ps._type_list_until(")"), pos)
        ps.expect("->")
        return OpParts([src, indices], [ps.type()], attrs)
