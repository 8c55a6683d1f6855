"""IR attributes: the compile-time constants attached to operations, printed as MLIR prints them."""
from __future__ import annotations

import re

import math
import struct
from dataclasses import dataclass
from typing import Any

from .immutable import hash_once
from .types import FloatType, IntegerType, TensorType, Type


class Attribute:
    """Base class of all attributes."""


@hash_once
@dataclass(frozen=True)
class IntegerAttr(Attribute):
    """An integer with its type: `16 : i32`."""

    value: int
    type: Type

    def __str__(self) -> str:
        if self.type == IntegerType(1):
            return "true" if self.value else "false"
        return f"{self.value} : {self.type}"


def format_float(value: float, type_: Type | None = None) -> str:
    """Print a float as MLIR does: scientific notation, or hex when the decimal form is lossy."""
    if math.isinf(value) or math.isnan(value):
        return float_to_hex(value, type_)
    text = f"{value:.6e}"
    if float(text) != value:
        exact = repr(float(value))
        if "e" not in exact and "." not in exact:
            exact += ".0"
        text = exact if float(exact) == value else float_to_hex(value, type_)
    return text


def float_to_hex(value: float, type_: Type | None) -> str:
    """The bit pattern of `value` in `type_`'s width, as MLIR's `0xFF800000` form."""
    kind = type_.kind if isinstance(type_, FloatType) else "f32"
    if kind == "f64":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if kind == "f16":
        import numpy as np
        return "0x%04X" % int(np.array(value, dtype=np.float16).view(np.uint16))
    if kind == "bf16":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return "0x%04X" % (bits >> 16)
    return "0x%08X" % struct.unpack("<I", struct.pack("<f", value))[0]


def hex_to_float(text: str, type_: Type) -> float:
    """Inverse of `float_to_hex`."""
    bits = int(text, 16)
    kind = type_.kind if isinstance(type_, FloatType) else "f32"
    if kind == "f64":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if kind == "f16":
        import numpy as np
        return float(np.array(bits, dtype=np.uint16).view(np.float16))
    if kind == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def float_bits(value) -> bytes:
    """A float's bit pattern: what tells `-0.0` from `0.0` (equal as Python floats) and makes a
    NaN equal to itself, so float attributes compare as the constants they are."""
    return struct.pack("<d", float(value))


@hash_once
@dataclass(frozen=True)
class FloatAttr(Attribute):
    """A float with its type: `1.000000e+00 : f32`. Equal when the bits are (`float_bits`):
    CSE must not merge `-0.0` into `0.0`."""

    value: float
    type: Type

    def __eq__(self, other) -> bool:
        return type(other) is FloatAttr and self.type == other.type and \
            float_bits(self.value) == float_bits(other.value)

    def __hash__(self) -> int:
        return hash((float_bits(self.value), self.type))

    def __str__(self) -> str:
        return f"{format_float(self.value, self.type)} : {self.type}"


@hash_once
@dataclass(frozen=True)
class StringAttr(Attribute):
    """A quoted string."""

    value: str

    def __str__(self) -> str:
        return f'"{escape_string(self.value)}"'


#: Text that needs no escape: no backslash, quote or control character (tab is kept as is).
_PLAIN_STRING = re.compile(r'[^\\"\x00-\x08\x0a-\x1f\x7f]*')


def escape_string(text: str) -> str:
    """MLIR's string escapes: `\\\\`, `\\"`, `\\n`, and `\\XX` for other control characters."""
    if _PLAIN_STRING.fullmatch(text):        # the common case: nothing to escape
        return text
    out = []
    for c in text:
        if c == "\\" or c == '"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F:
            out.append("\\%02X" % ord(c))
        else:
            out.append(c)
    return "".join(out)


@hash_once
@dataclass(frozen=True)
class BoolAttr(Attribute):
    """`true` / `false`."""

    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class UnitAttr(Attribute):
    """An attribute whose presence is the information (printed as just its name)."""

    def __str__(self) -> str:
        return "unit"


@hash_once
@dataclass(frozen=True)
class DenseAttr(Attribute):
    """A splat tensor constant: every element equals `value`. `dense<0.000000e+00>`. Float
    splats are equal when their bits are (as `FloatAttr`)."""

    value: Any
    type: TensorType

    def _key(self) -> tuple:
        float_element = isinstance(self.type.element, FloatType)
        return float_bits(self.value) if float_element else self.value, self.type

    def __eq__(self, other) -> bool:
        return type(other) is DenseAttr and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        element = self.type.element
        if isinstance(element, FloatType):
            v = format_float(float(self.value), element)
        elif element == IntegerType(1):
            v = "true" if self.value else "false"
        else:
            v = str(int(self.value))
        return f"dense<{v}>"


@hash_once
@dataclass(frozen=True)
class ArrayAttr(Attribute):
    """A list of attributes: `[a, b]`."""

    values: tuple

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self.values)) + "]"


@hash_once
@dataclass(frozen=True)
class DenseArrayAttr(Attribute):
    """`array<i32: 1, 0>`: a list of plain integers."""

    values: tuple
    element: str = "i32"

    def __str__(self) -> str:
        if not self.values:
            return f"array<{self.element}>"
        return f"array<{self.element}: " + ", ".join(map(str, self.values)) + ">"


@hash_once
@dataclass(frozen=True)
class TypeAttr(Attribute):
    """A type used as an attribute (e.g. a function's type)."""

    type: Type

    def __str__(self) -> str:
        return str(self.type)


@hash_once
@dataclass(frozen=True)
class SymbolRefAttr(Attribute):
    """A reference to a symbol (function) by name: `@name`."""

    name: str

    def __str__(self) -> str:
        return symbol_text(self.name)


def symbol_text(name: str) -> str:
    """`@name`, quoted when the name is not a plain identifier (`@"a.b-c"`)."""
    import re
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name):
        return f"@{name}"
    return "@" + str(StringAttr(name))


def int_attr(value: int, width: int = 32) -> IntegerAttr:
    """Shorthand for an `iN` integer attribute."""
    return IntegerAttr(int(value), IntegerType(width))
