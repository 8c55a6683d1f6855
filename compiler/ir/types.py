"""The builtin IR types: integers, floats, tensors (with an optional layout encoding), functions.

Dialects add their own types (`!tt.ptr<...>`, `!ttg.memdesc<...>`) and register their syntax in
a `compiler.ir.context.Dialect`. A type whose printed form contains other types or encodings
defines `print_with(printer)` so that nested encodings print by alias.

Integers are signless as in MLIR; signedness lives in the front end's dtypes and in the choice of
op (`arith.divsi` vs `arith.divui`). Types are immutable and compare by value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .immutable import hash_once


class Type:
    """Base class of all IR types."""

    @property
    def scalar(self) -> "Type":
        """The element type of a tensor, or the type itself."""
        return self

    @property
    def is_tensor(self) -> bool:
        return False

    @property
    def is_int(self) -> bool:
        return False

    @property
    def is_float(self) -> bool:
        return False

    @property
    def is_ptr(self) -> bool:
        return False


@hash_once
@dataclass(frozen=True)
class IntegerType(Type):
    """A signless integer of `width` bits; i1 is the boolean type."""

    width: int

    @property
    def is_int(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"i{self.width}"


FLOAT_WIDTHS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "f8E4M3FN": 8, "f8E5M2": 8}


@hash_once
@dataclass(frozen=True)
class FloatType(Type):
    """A floating-point type named as MLIR names it: f16, bf16, f32, f64 (and the fp8 kinds)."""

    kind: str

    @property
    def width(self) -> int:
        return FLOAT_WIDTHS[self.kind]

    @property
    def is_float(self) -> bool:
        return True

    def __str__(self) -> str:
        return self.kind


@hash_once
@dataclass(frozen=True)
class TensorType(Type):
    """`tensor<AxBxT[, #layout]>`: a block of values; `encoding` is a ttgir layout or None."""

    shape: tuple
    element: Type
    encoding: Any = None

    @property
    def scalar(self) -> Type:
        return self.element

    @property
    def is_tensor(self) -> bool:
        return True

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def rank(self) -> int:
        return len(self.shape)

    def with_encoding(self, encoding: Any) -> "TensorType":
        return TensorType(self.shape, self.element, encoding)

    def with_element(self, element: Type) -> "TensorType":
        return TensorType(self.shape, element, self.encoding)

    def with_shape(self, shape: tuple) -> "TensorType":
        return TensorType(tuple(shape), self.element, self.encoding)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        enc = f", {self.encoding}" if self.encoding is not None else ""
        return f"tensor<{dims}{self.element}{enc}>"

    def print_with(self, printer) -> str:
        """The printed form with the encoding written by its alias (`#blocked`)."""
        dims = "".join(f"{d}x" for d in self.shape)
        enc = f", {printer.layout(self.encoding)}" if self.encoding is not None else ""
        return f"tensor<{dims}{printer.type(self.element)}{enc}>"


@hash_once
@dataclass(frozen=True)
class FunctionType(Type):
    """The type of a function: argument types and result types."""

    inputs: tuple
    results: tuple

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.results))
        return f"({ins}) -> ({outs})"


i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")


def like(t: Type, element: Type) -> Type:
    """A type of `t`'s shape (scalar or tensor, same layout) with another element type."""
    return t.with_element(element) if isinstance(t, TensorType) else element


def shape_of(t: Type) -> tuple:
    """The shape of a tensor type, `()` for a scalar."""
    return t.shape if isinstance(t, TensorType) else ()
