"""The IR parser: reads the text the printer writes back into a `Module`.

A recursive-descent reader over characters (MLIR's type syntax, `1024xi32`, does not tokenize
cleanly). Alias definitions (`#blocked = ...` before the module, `#locN = loc(...)` after it)
are collected first so that uses may precede definitions. Ops, dialect types (`!ns.name<...>`)
and dialect attributes (`#ns.name<...>`) are looked up in the `Context` the parser is given;
ops with a custom form are parsed by their class's `syntax` object, `"quoted.name"(...)` ops
use MLIR's generic form. Every malformed input raises `ParseError` with file:line:col, the
line and a caret: nesting is bounded (`MAX_NESTING`) and numbers are range-checked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from .attributes import (ArrayAttr, Attribute, BoolAttr, DenseArrayAttr, DenseAttr, FloatAttr,
                         IntegerAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr, hex_to_float)
from .context import Context, resolve
from .core import Block, Module, Operation, Region, Value
from .location import UNKNOWN, CallSiteLoc, FileLineCol, Location, NameLoc
from .types import FLOAT_WIDTHS, FloatType, FunctionType, IntegerType, TensorType, Type

MAX_NESTING = 64
"""How deep regions, types, attributes and locations may nest before the parser refuses."""
MAX_INT_DIGITS = 40
"""Longer integer literals are refused (no type of ours holds them)."""
MAX_INT_WIDTH = 128
MAX_DIM = 1 << 31


class ParseError(Exception):
    """A syntax error in IR text, with line and column."""

    def __init__(self, message: str, text: str, pos: int, source_name: str = "<ir>"):
        line = text.count("\n", 0, pos) + 1
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        col = pos - start + 1
        snippet = text[start:end]
        super().__init__(f"{source_name}:{line}:{col}: error: {message}\n{snippet}\n"
                         + " " * (col - 1) + "^")
        self.line, self.col, self.bare_message = line, col, message
        self.source_name = source_name


@dataclass
class ParsedSource:
    """Where a parsed module came from: its text and the offset of every op parsed from it,
    so that the verifier can point at the op's line (`Module.parsed_from`)."""

    text: str
    source_name: str
    positions: WeakKeyDictionary = field(default_factory=WeakKeyDictionary)
    module_pos: int = 0

    def locate(self, op) -> int | None:
        """The offset in `text` where `op` was written (None: not parsed from it); the
        `module` keyword's for None (a module-level problem)."""
        return self.module_pos if op is None else self.positions.get(op)


@dataclass
class OpParts:
    """What a syntax's `parse` hands back to build an op with."""

    operands: list = field(default_factory=list)
    result_types: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.\-]*")
BARE_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
VALUE_NAME = re.compile(r"%[A-Za-z0-9_$.\-]+")
NUMBER = re.compile(r"[-+]?(0x[0-9A-Fa-f]+|\d+\.\d*(e[-+]?\d+)?|\d+e[-+]?\d+|\d+|inf|nan)")
INTEGER = re.compile(r"[-+]?\d+")
ALIAS_NAME = re.compile(r"#[A-Za-z_][A-Za-z0-9_.]*")
LOC_ALIAS = re.compile(r"#loc\d*")
DIALECT_TYPE = re.compile(r"![A-Za-z_][A-Za-z0-9_.]*")
BUILTIN_SCALAR = re.compile(r"(i\d+|bf16|f16|f32|f64|f8E4M3FN|f8E5M2)\b")
DIM = re.compile(r"(\d+)x")
WHITESPACE = re.compile(r"(?:[ \t\r\n]+|//[^\n]*)*")
STRING_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


class Parser:
    """Parses one module's text; see module docstring."""

    def __init__(self, text: str, source_name: str = "<ir>", context: Context | None = None):
        self.text = text
        self.pos = 0
        self.source_name = source_name
        self.context = resolve(context)
        self.layout_aliases: dict[str, object] = {}
        self.loc_offsets: dict[str, int] = {}       # `#locN` -> offset of its `loc(` body
        self.loc_cache: dict[str, Location] = {}
        self.loc_resolving: set[str] = set()
        self.scopes: list[dict[str, Value]] = [{}]
        self.depth = 0
        self.source = ParsedSource(text, source_name)

    def nested(self, what: str, parse, *args):
        """`parse(*args)` one level of nesting deeper (a region, a type inside a type, a
        nested location); refused beyond `MAX_NESTING` levels."""
        if self.depth >= MAX_NESTING:
            raise self.error(f"{what} nested deeper than {MAX_NESTING} levels")
        self.depth += 1
        try:
            return parse(*args)
        finally:
            self.depth -= 1

    # ---- low level --------------------------------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> ParseError:
        return ParseError(message, self.text, self.pos if pos is None else pos, self.source_name)

    def skip_ws(self) -> None:
        """Move past blanks and `//` comments."""
        self.pos = WHITESPACE.match(self.text, self.pos).end()

    def at(self, s: str) -> bool:
        self.skip_ws()
        return self.text.startswith(s, self.pos)

    def consume(self, s: str) -> bool:
        if self.at(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.consume(s):
            found = self.text[self.pos:self.pos + 20].split("\n")[0]
            raise self.error(f"expected '{s}', found '{found}'")

    def match(self, pattern: re.Pattern) -> str | None:
        self.skip_ws()
        m = pattern.match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def identifier(self) -> str:
        name = self.match(IDENT)
        if name is None:
            raise self.error("expected an identifier")
        return name

    def keyword(self, word: str) -> bool:
        """Consume `word` if it stands next as a whole word."""
        self.skip_ws()
        m = BARE_IDENT.match(self.text, self.pos)
        if m and m.group(0) == word:
            self.pos = m.end()
            return True
        return False

    def symbol_name(self) -> str:
        """`@name` or `@"quoted.name"` (MLIR quotes symbols that are not identifiers)."""
        self.expect("@")
        if self.text.startswith('"', self.pos):
            return self.string()
        return self.identifier()

    def string(self) -> str:
        """A quoted string with MLIR's escapes: `\\n`, `\\t`, `\\"`, `\\\\` and `\\XX` (hex)."""
        self.skip_ws()
        if not self.at('"'):
            raise self.error("expected a string")
        start = self.pos
        text, n = self.text, len(self.text)
        self.pos += 1
        out = []
        while self.pos < n and text[self.pos] != '"':
            c = text[self.pos]
            if c == "\n":
                raise self.error("unterminated string (it runs to the end of the line)", start)
            if c != "\\":
                out.append(c)
                self.pos += 1
                continue
            nxt = text[self.pos + 1:self.pos + 2]
            if nxt in STRING_ESCAPES:
                out.append(STRING_ESCAPES[nxt])
                self.pos += 2
            elif re.fullmatch(r"[0-9A-Fa-f]{2}", text[self.pos + 1:self.pos + 3]):
                out.append(chr(int(text[self.pos + 1:self.pos + 3], 16)))
                self.pos += 3
            else:
                raise self.error(f"unknown escape '\\{nxt}' in a string", self.pos)
        if self.pos >= n:
            raise self.error("unterminated string", start)
        self.pos += 1
        return "".join(out)

    def integer(self) -> int:
        """A decimal integer literal of at most `MAX_INT_DIGITS` digits."""
        self.skip_ws()
        start = self.pos
        tok = self.match(INTEGER)
        if tok is None:
            raise self.error("expected an integer")
        if len(tok.lstrip("+-")) > MAX_INT_DIGITS:
            raise self.error(f"integer literal longer than {MAX_INT_DIGITS} digits", start)
        return int(tok)

    def bounded_integer(self, low: int, high: int, what: str) -> int:
        """An integer in [low, high]; `what` names it in the error."""
        self.skip_ws()
        start = self.pos
        value = self.integer()
        if not low <= value <= high:
            raise self.error(f"{what} {value} is out of range [{low}, {high}]", start)
        return value

    # ---- values -----------------------------------------------------------------------------
    def value_name(self) -> str:
        tok = self.match(VALUE_NAME)
        if tok is None:
            raise self.error("expected a value name like %x")
        return tok[1:]

    def operand(self) -> Value:
        start = self.pos
        name = self.value_name()
        index = None
        if self.text.startswith("#", self.pos):
            self.pos += 1
            index = self.integer()
        for scope in reversed(self.scopes):
            if name in scope:
                v = scope[name]
                if index is not None:
                    if not isinstance(v, list):
                        raise self.error(f"%{name} has a single result", start)
                    if not 0 <= index < len(v):
                        raise self.error(f"%{name} has {len(v)} results; #{index} is not one",
                                         start)
                    return v[index]
                if isinstance(v, list):
                    raise self.error(f"%{name} has {len(v)} results; write %{name}#N", start)
                return v
        raise self.error(f"use of undefined value %{name}", start)

    def operand_list(self) -> list[Value]:
        """Zero or more comma-separated operands (stops at anything that is not `%`)."""
        values = []
        if not self.at("%"):
            return values
        values.append(self.operand())
        while self.at(",") and self._comma_then("%"):
            self.expect(",")
            values.append(self.operand())
        return values

    def _comma_then(self, s: str) -> bool:
        save = self.pos
        self.expect(",")
        ok = self.at(s)
        self.pos = save
        return ok

    def check_written_types(self, operands: list, types, pos: int) -> None:
        """The types a custom form writes for its operands are the operands' own types."""
        types = list(types)
        if len(types) != len(operands):
            raise self.error(f"{len(operands)} operands but {len(types)} types written", pos)
        for index, (v, t) in enumerate(zip(operands, types)):
            if v.type != t:
                raise self.error(f"operand #{index} has type {v.type}, but {t} is written", pos)

    def paren_region(self) -> bool:
        """Whether `(` opens a list of regions (`({...})`) rather than something else."""
        save = self.pos
        self.expect("(")
        ok = self.at("{")
        self.pos = save
        return ok

    def define(self, name: str, value, pos: int | None = None) -> None:
        """Bind `%name` in the innermost scope; a name may be defined once (SSA)."""
        if any(name in scope for scope in self.scopes):
            raise self.error(f"redefinition of %{name}", pos)
        self.scopes[-1][name] = value

    def define_value(self, name: str, value: Value, pos: int | None = None) -> None:
        """Bind a parsed name to a value and keep the name as the value's printing hint."""
        self.define(name, value, pos)
        if not name.isdigit():
            value.name_hint = name

    # ---- types ------------------------------------------------------------------------------
    def type(self) -> Type:
        """A builtin type (`i32`, `tensor<...>`, `(T) -> R`) or a dialect's `!ns.name<...>`."""
        return self.nested("types", self._type)

    def _type(self) -> Type:
        self.skip_ws()
        start = self.pos
        if self.at("!"):
            mnemonic = self.match(DIALECT_TYPE)
            parse = self.context.type_parser(mnemonic[1:]) if mnemonic else None
            if parse is None:
                raise self.error(f"unknown type '{mnemonic or '!'}'", start)
            return parse(self)
        if self.consume("tensor<"):
            shape, element = self.shape_and_element()
            encoding = None
            if self.consume(","):
                encoding = self.encoding_ref()
            self.expect(">")
            return TensorType(tuple(shape), element, encoding)
        if self.at("("):
            self.expect("(")
            ins = self._type_list_until(")")
            self.expect("->")
            outs = self._result_types()
            return FunctionType(tuple(ins), tuple(outs))
        m = self.match(BUILTIN_SCALAR)
        if m is None:
            raise self.error("expected a type")
        if m.startswith("i"):
            width = int(m[1:]) if len(m) < 8 else MAX_INT_WIDTH + 1
            if not 1 <= width <= MAX_INT_WIDTH:
                raise self.error(f"integer width must be 1 to {MAX_INT_WIDTH}", start)
            return IntegerType(width)
        return FloatType(m)

    def shape_and_element(self) -> tuple[list, Type]:
        """`AxBx...T` inside `tensor<...>` or a dialect's shaped type."""
        shape = []
        while True:
            self.skip_ws()
            m = DIM.match(self.text, self.pos)
            if not m:
                break
            if len(m.group(1)) > 12 or int(m.group(1)) > MAX_DIM:
                raise self.error(f"dimension {m.group(1)} is larger than {MAX_DIM}")
            shape.append(int(m.group(1)))
            self.pos = m.end()
        return shape, self.type()

    def _type_list_until(self, close: str) -> list[Type]:
        types = []
        if self.consume(close):
            return types
        types.append(self.type())
        while self.consume(","):
            types.append(self.type())
        self.expect(close)
        return types

    def _result_types(self) -> list[Type]:
        if self.consume("("):
            return self._type_list_until(")")
        return [self.type()]

    def type_list(self) -> list[Type]:
        """One or more comma-separated types."""
        types = [self.type()]
        while self.consume(","):
            types.append(self.type())
        return types

    def encoding_ref(self):
        """A layout given by alias (`#blocked`) or written inline (`#ttg.blocked<{...}>`)."""
        self.skip_ws()
        start = self.pos
        m = self.match(ALIAS_NAME)
        if m is None:
            raise self.error("expected a layout like #blocked")
        if m in self.layout_aliases:
            return self.layout_aliases[m]
        parse = self.context.attribute_parser(m[1:])
        if parse is None:
            raise self.error(f"unknown layout {m}", start)
        return self.nested("attributes", parse, self)

    # ---- attributes -------------------------------------------------------------------------
    def attribute(self) -> Attribute:
        self.skip_ws()
        if self.at('"'):
            return StringAttr(self.string())
        if self.keyword("true"):
            return BoolAttr(True)
        if self.keyword("false"):
            return BoolAttr(False)
        if self.keyword("unit"):
            return UnitAttr()
        if self.at("["):
            self.expect("[")
            return ArrayAttr(tuple(self.nested("attributes", self._array_items)))
        if self.consume("array<"):
            element = self.match(re.compile(r"i\d+\b"))
            if element is None:
                raise self.error("expected an integer element type like i32 in array<...>")
            values = []
            if self.consume(":"):
                values.append(self.int_of_width(int(element[1:]) if len(element) < 6 else 999))
                while self.consume(","):
                    values.append(self.int_of_width(int(element[1:]) if len(element) < 6
                                                    else 999))
            self.expect(">")
            return DenseArrayAttr(tuple(values), element)
        if self.at("@"):
            return SymbolRefAttr(self.symbol_name())
        if self.at("dense<"):
            return self.dense_attribute()
        if self.at("#"):
            return self.encoding_ref()
        start = self.pos
        num = self.match(NUMBER)
        if num is not None:
            type_ = IntegerType(64)
            if self.consume(":"):
                type_ = self.type()
            return self.number_attr(num, type_, start)
        return TypeAttr(self.type())

    def _array_items(self) -> list:
        items = []
        if not self.consume("]"):
            items.append(self.attribute())
            while self.consume(","):
                items.append(self.attribute())
            self.expect("]")
        return items

    def int_of_width(self, width: int) -> int:
        """An integer literal that fits an `i{width}` (signed or unsigned reading)."""
        self.skip_ws()
        start = self.pos
        value = self.integer()
        self.check_int_range(value, width, start)
        return value

    def check_int_range(self, value: int, width: int, pos: int) -> None:
        """Refuse `value` unless an `i{width}` can hold it (signed or unsigned reading)."""
        if not 1 <= width <= MAX_INT_WIDTH:
            raise self.error(f"integer width must be 1 to {MAX_INT_WIDTH}", pos)
        if not -(1 << (width - 1)) <= value < (1 << width):
            raise self.error(f"{value} does not fit in i{width}", pos)

    def number_attr(self, num: str, type_: Type, pos: int | None = None) -> Attribute:
        """The attribute of literal `num` of type `type_` (range-checked)."""
        pos = self.pos if pos is None else pos
        if isinstance(type_, FloatType):
            return FloatAttr(self.float_value(num, type_, pos), type_)
        if not isinstance(type_, IntegerType):
            raise self.error(f"a number needs an integer or float type, not {type_}", pos)
        if len(num.lstrip("+-")) > MAX_INT_DIGITS:
            raise self.error(f"integer literal longer than {MAX_INT_DIGITS} digits", pos)
        try:
            value = int(num, 0)
        except ValueError:
            raise self.error(f"'{num}' is not an integer of type {type_}", pos) from None
        self.check_int_range(value, type_.width, pos)
        return IntegerAttr(value, type_)

    def float_value(self, num: str, type_: FloatType, pos: int) -> float:
        """A float literal: decimal, `inf`/`nan`, or MLIR's hex bit pattern of `type_`'s width."""
        if num.lower().lstrip("+-").startswith("0x"):
            digits = num.lstrip("+-")[2:]
            if num[0] in "+-" or len(digits) > FLOAT_WIDTHS[type_.kind] // 4:
                raise self.error(f"hex float {num} is wider than {type_}", pos)
            if type_.kind not in ("f16", "bf16", "f32", "f64"):
                raise self.error(f"hex floats of {type_} are not supported", pos)
            return hex_to_float(num, type_)
        if len(num) > 400:
            raise self.error("float literal too long", pos)
        return float(num)

    def dense_attribute(self) -> DenseAttr:
        self.expect("dense<")
        self.skip_ws()
        start = self.pos
        if self.keyword("true"):
            raw = "true"
        elif self.keyword("false"):
            raw = "false"
        else:
            raw = self.match(NUMBER)
            if raw is None:
                raise self.error("expected a splat value in dense<...>")
        self.expect(">")
        self.expect(":")
        t = self.type()
        if not isinstance(t, TensorType):
            raise self.error("dense<...> needs a tensor type")
        if raw in ("true", "false"):
            if t.element != IntegerType(1):
                raise self.error(f"dense<{raw}> needs an i1 tensor, not {t}", start)
            value = raw == "true"
        elif isinstance(t.element, (FloatType, IntegerType)):
            value = self.number_attr(raw, t.element, start).value
        else:
            raise self.error(f"dense<...> of {t.element} is not supported", start)
        return DenseAttr(value, t)

    def attr_dict(self) -> dict[str, Attribute]:
        """An optional `{name = attr, flag, ...}`."""
        attrs: dict[str, Attribute] = {}
        if not self.at("{") or self._looks_like_region():
            return attrs
        self.expect("{")
        if self.consume("}"):
            return attrs
        while True:
            key = self.string() if self.at('"') else self.identifier()
            if self.consume("="):
                attrs[key] = self.attribute()
            else:
                attrs[key] = UnitAttr()
            if not self.consume(","):
                break
        self.expect("}")
        return attrs

    def _looks_like_region(self) -> bool:
        """After `{`: an attribute entry (`name =`, `name,`, `name}`) or the start of a region."""
        save = self.pos
        self.expect("{")
        self.skip_ws()
        entry = re.compile(r'("[^"]*"|[A-Za-z_][A-Za-z0-9_.$\-]*)\s*([=,}])').match(self.text,
                                                                                   self.pos)
        is_region = not self.at("}") and entry is None
        self.pos = save
        return is_region

    # ---- locations --------------------------------------------------------------------------
    def location(self) -> Location:
        """An optional trailing `loc(...)`; `unknown` when absent."""
        if not self.keyword("loc"):
            return UNKNOWN
        self.expect("(")
        loc = self._loc_body()
        self.expect(")")
        return loc

    def _loc_body(self) -> Location:
        return self.nested("locations", self._loc_body_unbounded)

    def _loc_body_unbounded(self) -> Location:
        self.skip_ws()
        if self.at("#loc"):
            start = self.pos
            return self.resolve_loc(self.match(LOC_ALIAS), start)
        if self.keyword("unknown"):
            return UNKNOWN
        if self.keyword("callsite"):
            self.expect("(")
            callee = self._loc_body()
            self.expect("at")
            caller = self._loc_body()
            self.expect(")")
            return CallSiteLoc(callee, caller)
        label = self.string()
        if self.consume(":"):
            line = self.bounded_integer(0, 1 << 31, "line")
            self.expect(":")
            col = self.bounded_integer(0, 1 << 31, "column")
            return FileLineCol(label, line, col)
        self.expect("(")
        child = self._loc_body()
        self.expect(")")
        return NameLoc(label, child)

    def resolve_loc(self, alias: str, use_pos: int) -> Location:
        """The location `alias` stands for, parsed where it is defined (errors point there)."""
        if alias in self.loc_cache:
            return self.loc_cache[alias]
        if alias not in self.loc_offsets:
            raise self.error(f"undefined location alias {alias}", use_pos)
        if alias in self.loc_resolving:
            raise self.error(f"location alias {alias} refers to itself", use_pos)
        saved = self.pos
        self.loc_resolving.add(alias)
        self.pos = self.loc_offsets[alias]
        try:
            loc = self._loc_body()
            self.expect(")")
        finally:
            self.loc_resolving.discard(alias)
            self.pos = saved
        self.loc_cache[alias] = loc
        return loc

    # ---- ops, blocks, regions ---------------------------------------------------------------
    def region(self, entry_args: list | None = None) -> Region:
        """`{ ops }` with optional `^bbN(args):` labels; `entry_args` are (name, type, loc)."""
        self.expect("{")
        return self.nested("regions", self._region_body, entry_args)

    def _region_body(self, entry_args: list | None) -> Region:
        self.scopes.append({})
        region = Region()
        block = None
        if entry_args is not None:
            block = region.add_block(Block())
            for name, type_, loc in entry_args:
                arg = block.add_argument(type_, loc)
                if name is not None:
                    self.define_value(name, arg)
        while not self.consume("}"):
            if self.pos >= len(self.text):
                raise self.error("expected '}' to close the region")
            if self.at("^"):
                block = region.add_block(Block())
                if self.match(re.compile(r"\^[A-Za-z0-9_]+")) is None:
                    raise self.error("expected a block label like ^bb1")
                if self.consume("("):
                    while not self.consume(")"):
                        name_pos = self.pos
                        name = self.value_name()
                        self.expect(":")
                        t = self.type()
                        loc = self.location()
                        self.define_value(name, block.add_argument(t, loc), name_pos)
                        if not self.consume(","):
                            self.expect(")")
                            break
                self.expect(":")
                continue
            if block is None:
                block = region.add_block(Block())
            block.append(self.operation())
        self.scopes.pop()
        return region

    def operation(self) -> Operation:
        self.skip_ws()
        start = self.pos
        result_name, count = None, 1
        if self.at("%"):
            result_name = self.value_name()
            if self.text.startswith(":", self.pos):
                self.pos += 1
                count = self.bounded_integer(1, 1 << 16, "result count")
            self.expect("=")
        else:
            count = 0
        if self.at('"'):
            name = self.string()
            cls = self.context.lookup_op(name) or Operation
            parts = parse_generic(self)
            generic = getattr(cls, "generic_attributes", None)
            if generic is not None:     # MLIR's generic spelling of an attribute (an enum's number)
                parts.attributes = generic(parts.attributes, lambda m: self.error(m, start))
        else:
            name_pos = self.pos
            name = self.identifier()
            cls = self.context.lookup_op(name)
            if cls is None:
                raise self.error(f"unknown operation '{name}'", name_pos)
            if cls.syntax is None:
                raise self.error(f"'{name}' has no custom form; write it in generic form", name_pos)
            parts = cls.syntax.parse(self, cls, count)
        loc = self.location()
        op = cls.__new__(cls)
        Operation.__init__(op, parts.operands, parts.result_types, parts.attributes,
                           parts.regions, loc)
        if cls is Operation:
            op.name = name
        if len(op.results) != count:
            raise self.error(f"'{name}' defines {len(op.results)} results but the text "
                             f"names {count}", start)
        if result_name is not None:
            if count == 1:
                self.define_value(result_name, op.results[0], start)
            else:
                self.define(result_name, list(op.results), start)
                if not result_name.isdigit():
                    op.results[0].name_hint = result_name
        self.source.positions[op] = start
        return op


def parse_generic(ps: Parser) -> OpParts:
    """MLIR's generic op form: `(%a) <{attrs}> ({regions}) {attrs} : (T) -> R`."""
    parts = OpParts()
    ps.expect("(")
    parts.operands = ps.operand_list()
    ps.expect(")")
    if ps.consume("<"):
        parts.attributes.update(ps.attr_dict())
        ps.expect(">")
    if ps.at("(") and ps.paren_region():
        ps.expect("(")
        parts.regions.append(ps.region())
        while ps.consume(","):
            parts.regions.append(ps.region())
        ps.expect(")")
    parts.attributes.update(ps.attr_dict())
    ps.expect(":")
    fn = ps.type()
    if not isinstance(fn, FunctionType):
        raise ps.error("expected a function type (T...) -> R")
    parts.result_types = list(fn.results)
    return parts


def parse_module(text: str, source_name: str = "<ir>", context: Context | None = None) -> Module:
    """Parse a whole module (the printer's output, or a hand-written file in the same syntax)
    with the ops, types and attributes of `context` (the default context when None)."""
    ps = Parser(text, source_name, context)
    try:
        module = _parse_module(ps)
    except ParseError:
        raise
    except (RecursionError, IndexError, KeyError, TypeError, ValueError, OverflowError,
            AttributeError, ZeroDivisionError) as err:
        # A dialect syntax that trusted its input too far: still a located message.
        raise ps.error(f"malformed input ({type(err).__name__}: {err})") from None
    module.parsed_from = ps.source
    return module


def _parse_module(ps: Parser) -> Module:
    text = ps.text
    fixed_aliases = ps.context.fixed_aliases()
    _collect_aliases(ps)
    ps.skip_ws()
    # Layout aliases come first: `#name = #ttg....`
    while ps.at("#"):
        line_end = text.find("\n", ps.pos)
        alias = ps.match(re.compile(r"#[A-Za-z_][A-Za-z0-9_]*"))
        if alias is None:
            raise ps.error("expected an alias name like #blocked")
        ps.expect("=")
        if ps.at("loc("):
            ps.pos = len(text) if line_end < 0 else line_end
            continue
        if alias in fixed_aliases:
            ps.expect(fixed_aliases[alias])
            continue
        ps.layout_aliases[alias] = ps.encoding_ref()
    ps.skip_ws()
    ps.source.module_pos = ps.pos
    if not ps.keyword("module"):
        raise ps.error("expected 'module'")
    attrs = {}
    if ps.keyword("attributes"):
        attrs = ps.attr_dict()
    module = Module(attrs)
    ps.expect("{")
    while not ps.consume("}"):
        if ps.pos >= len(text):
            raise ps.error("expected '}' to close the module")
        module.append(ps.operation())
    module.loc = ps.location()
    ps.skip_ws()
    while ps.pos < len(text):
        if not ps.at("#"):
            raise ps.error("unexpected text after the module")
        line_end = text.find("\n", ps.pos)
        ps.pos = len(text) if line_end < 0 else line_end
        ps.skip_ws()
    return module


def _collect_aliases(ps: Parser) -> None:
    """Note where each `#locN = loc(...)` line's body starts; it is parsed on first use."""
    for m in re.finditer(r"^(#loc\d*) = loc\((.*)\)\s*$", ps.text, re.M):
        if m.group(1) in ps.loc_offsets:
            raise ps.error(f"location alias {m.group(1)} is defined twice", m.start(1))
        ps.loc_offsets[m.group(1)] = m.start(2)
