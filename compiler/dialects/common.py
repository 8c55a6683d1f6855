"""Shared pieces for dialect definitions: op-class factory and common verifier checks."""
from __future__ import annotations

from compiler.ir.accessors import is_accessor
from compiler.ir.context import Dialect, default_context
from compiler.ir.core import Operation, register_op
from compiler.ir.types import IntegerType, TensorType, shape_of
from compiler.ir.verifier_errors import VerificationError


def dialect(name: str) -> Dialect:
    """The built-in dialect `name` of the default context (made on first use)."""
    return default_context().dialect(name)


def define_op(class_name: str, op_name: str, syntax, traits=(), verify=None, doc: str = "",
              base: type[Operation] = Operation, **accessors):
    """Create and register an op class from a declaration (for ops with no code of their own).

    `traits` are trait classes (compiler.ir.traits); keyword arguments are named accessors
    (`ptr=operand(0)`, `axis=attr("axis")`, compiler.ir.accessors); `base` is the class to
    derive from (a family's shared base, such as arith's binary ops)."""
    namespace = {"name": op_name, "syntax": syntax, "traits": tuple(traits),
                 "__doc__": doc or f"`{op_name}`."}
    if verify is not None:
        namespace["verify_op"] = verify
    for key, accessor in accessors.items():
        if not is_accessor(accessor):
            raise TypeError(f"define_op({op_name!r}): {key}= must be an accessor, got {accessor!r}")
        namespace[key] = accessor
    return register_op(type(class_name, (base,), namespace))


def expect_operands(op: Operation, count: int) -> None:
    """The op has exactly `count` operands."""
    if len(op.operands) != count:
        raise VerificationError(op, f"expects {count} operands, got {len(op.operands)}")


def verify_same_type(op: Operation) -> None:
    """All operands and results have one type (elementwise binary/unary ops)."""
    types = [v.type for v in op.operands] + [r.type for r in op.results]
    if any(t != types[0] for t in types):
        raise VerificationError(op, "operands and result must have the same type, got "
                                + ", ".join(str(t) for t in types))


def verify_same_shape(op: Operation) -> None:
    """All operands and results have one shape (and, for tensors, one layout)."""
    values = list(op.operands) + list(op.results)
    shapes = [shape_of(v.type) for v in values]
    if any(s != shapes[0] for s in shapes):
        raise VerificationError(op, "operands and results must have the same shape, got "
                                + ", ".join(str(v.type) for v in values))
    encodings = {v.type.encoding for v in values if isinstance(v.type, TensorType)}
    if len(encodings) > 1:
        raise VerificationError(op, "operands and results must have the same layout, got "
                                + ", ".join(str(v.type) for v in values))


def verify_int_operands(op: Operation) -> None:
    """Every operand is an integer (or a tensor of integers)."""
    for v in op.operands:
        if not isinstance(v.type.scalar, IntegerType):
            raise VerificationError(op, f"expects integer operands, got {v.type}")


def verify_float_operands(op: Operation) -> None:
    """Every operand is a float (or a tensor of floats)."""
    for v in op.operands:
        if not v.type.scalar.is_float:
            raise VerificationError(op, f"expects floating-point operands, got {v.type}")


def chain(*checks):
    """One verifier running several checks in order."""
    def verify(op):
        for check in checks:
            check(op)
    return verify


def set_counts(classes, operands=None, results=None, regions=0) -> None:
    """Declare how many operands, results and regions ops of `classes` have (an int, or a
    (min, max) pair with max None for no bound); the verifier checks them first."""
    for cls in classes if isinstance(classes, (list, tuple)) else [classes]:
        cls.operand_count, cls.result_count, cls.region_count = operands, results, regions


def set_attribute_kinds(classes, **kinds) -> None:
    """Declare attributes that ops of `classes` must carry, by name and Attribute class."""
    for cls in classes if isinstance(classes, (list, tuple)) else [classes]:
        cls.attribute_kinds = dict(kinds)


ANY = (0, None)
"""Any number (of operands, results)."""


def verify_cast_kinds(source_kind: str, result_kind: str, width_order: str = ""):
    """A cast verifier: operand scalar is `source_kind` ('int'/'float'), the result's
    `result_kind`; `width_order` '<' (extension) or '>' (truncation) compares bit widths."""
    def kind_ok(t, kind):
        return t.is_int if kind == "int" else t.is_float

    def verify(op):
        src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
        if not kind_ok(src, source_kind) or not kind_ok(dst, result_kind):
            raise VerificationError(op, f"casts {source_kind} to {result_kind}, got "
                                        f"{op.operands[0].type} to {op.results[0].type}")
        if width_order == "<" and not src.width < dst.width:
            raise VerificationError(op, f"must widen: {src} to {dst}")
        if width_order == ">" and not src.width > dst.width:
            raise VerificationError(op, f"must narrow: {src} to {dst}")
    return verify


def dot_types_text(p, op) -> str:
    """The ` : A * B -> R` tail dot-like ops print (tt.dot, ttng.warp_group_dot)."""
    a, b = op.operands[0], op.operands[1]
    return f" : {p.type(a.type)} * {p.type(b.type)} -> {p.type(op.results[0].type)}"


def parse_dot_types(ps):
    """Read the ` : A * B -> R` tail of a dot-like op; the result type R (the operand types
    are the operands' own)."""
    ps.expect(":")
    ps.type()
    ps.expect("*")
    ps.type()
    ps.expect("->")
    return ps.type()
