"""The IR parser: reads the text the printer writes back into a `Module`.

A recursive-descent reader over characters (MLIR's type syntax, `1024xi32`, does not tokenize
cleanly). Alias definitions (`#blocked = ...` before the module, `#locN = loc(...)` after it)
are collected first so that uses may precede definitions. Ops with a custom form are parsed by
their class's `syntax` object; `"quoted.name"(...)` ops use MLIR's generic form.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .attributes import (ArrayAttr, Attribute, BoolAttr, DenseArrayAttr, DenseAttr, FloatAttr,
                         IntegerAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr, hex_to_float)
from .core import OP_REGISTRY, Block, Module, Operation, Region, Value
from .location import UNKNOWN, CallSiteLoc, FileLineCol, Location, NameLoc
from .types import (FloatType, FunctionType, IntegerType, MemDescType, PointerType,
                    TensorType, Type)

ENCODING_PARSERS: dict = {}
"""Maps an encoding's dialect name (`ttg.blocked`) to `fn(parser) -> encoding`; dialects fill it."""


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


class Parser:
    """Parses one module's text; see module docstring."""

    def __init__(self, text: str, source_name: str = "<ir>"):
        self.text = text
        self.pos = 0
        self.source_name = source_name
        self.layout_aliases: dict[str, object] = {}
        self.loc_texts: dict[str, str] = {}
        self.loc_cache: dict[str, Location] = {}
        self.scopes: list[dict[str, Value]] = [{}]

    # ---- low level --------------------------------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> ParseError:
        return ParseError(message, self.text, self.pos if pos is None else pos, self.source_name)

    def skip_ws(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                break

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
        self.skip_ws()
        if not self.at('"'):
            raise self.error("expected a string")
        self.pos += 1
        out = []
        while self.text[self.pos] != '"':
            c = self.text[self.pos]
            if c == "\\":
                nxt = self.text[self.pos + 1]
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
                self.pos += 2
            else:
                out.append(c)
                self.pos += 1
        self.pos += 1
        return "".join(out)

    def integer(self) -> int:
        tok = self.match(re.compile(r"[-+]?\d+"))
        if tok is None:
            raise self.error("expected an integer")
        return int(tok)

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

    def define(self, name: str, value) -> None:
        self.scopes[-1][name] = value

    def define_value(self, name: str, value: Value) -> None:
        """Bind a parsed name to a value and keep the name as the value's printing hint."""
        self.define(name, value)
        if not name.isdigit():
            value.name_hint = name

    # ---- types ------------------------------------------------------------------------------
    def type(self) -> Type:
        self.skip_ws()
        if self.consume("!tt.ptr<"):
            pointee = self.type()
            space = 1
            if self.consume(","):
                space = self.integer()
            self.expect(">")
            return PointerType(pointee, space)
        if self.consume("tensor<"):
            shape, element = self._shape_and_element()
            encoding = None
            if self.consume(","):
                encoding = self.encoding_ref()
            self.expect(">")
            return TensorType(tuple(shape), element, encoding)
        if self.consume("!ttg.memdesc<"):
            shape, element = self._shape_and_element()
            self.expect(",")
            encoding = self.encoding_ref()
            self.expect(",")
            self.expect("#smem")
            mutable = False
            if self.consume(","):
                self.expect("mutable")
                mutable = True
            self.expect(">")
            return MemDescType(tuple(shape), element, encoding, mutable)
        if self.at("("):
            self.expect("(")
            ins = self._type_list_until(")")
            self.expect("->")
            outs = self._result_types()
            return FunctionType(tuple(ins), tuple(outs))
        m = self.match(re.compile(r"(i\d+|bf16|f16|f32|f64|f8E4M3FN|f8E5M2)\b"))
        if m is None:
            raise self.error("expected a type")
        if m.startswith("i"):
            return IntegerType(int(m[1:]))
        return FloatType(m)

    def _shape_and_element(self):
        shape = []
        while True:
            self.skip_ws()
            m = re.compile(r"(\d+)x").match(self.text, self.pos)
            if not m:
                break
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
        m = self.match(re.compile(r"#[A-Za-z_][A-Za-z0-9_.]*"))
        if m is None:
            raise self.error("expected a layout like #blocked")
        if m in self.layout_aliases:
            return self.layout_aliases[m]
        if m[1:] in ENCODING_PARSERS:
            return ENCODING_PARSERS[m[1:]](self)
        raise self.error(f"unknown layout {m}", start)

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
            items = []
            if not self.consume("]"):
                items.append(self.attribute())
                while self.consume(","):
                    items.append(self.attribute())
                self.expect("]")
            return ArrayAttr(tuple(items))
        if self.consume("array<"):
            element = self.match(re.compile(r"i\d+"))
            values = []
            if self.consume(":"):
                values.append(self.integer())
                while self.consume(","):
                    values.append(self.integer())
            self.expect(">")
            return DenseArrayAttr(tuple(values), element)
        if self.at("@"):
            return SymbolRefAttr(self.symbol_name())
        if self.at("dense<"):
            return self.dense_attribute()
        if self.at("#"):
            return self.encoding_ref()
        num = self.match(NUMBER)
        if num is not None:
            type_ = IntegerType(64)
            if self.consume(":"):
                type_ = self.type()
            return self.number_attr(num, type_)
        return TypeAttr(self.type())

    def number_attr(self, num: str, type_: Type) -> Attribute:
        if isinstance(type_, FloatType):
            if num.lower().startswith("0x"):
                return FloatAttr(hex_to_float(num, type_), type_)
            return FloatAttr(float(num), type_)
        return IntegerAttr(int(num, 0), type_)

    def dense_attribute(self) -> DenseAttr:
        self.expect("dense<")
        self.skip_ws()
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
            value = raw == "true"
        elif isinstance(t.element, FloatType):
            value = hex_to_float(raw, t.element) if raw.lower().startswith("0x") else float(raw)
        else:
            value = int(raw, 0)
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
        self.skip_ws()
        if self.at("#loc"):
            alias = self.match(re.compile(r"#loc\d*"))
            return self.resolve_loc(alias)
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
            line = self.integer()
            self.expect(":")
            col = self.integer()
            return FileLineCol(label, line, col)
        self.expect("(")
        child = self._loc_body()
        self.expect(")")
        return NameLoc(label, child)

    def resolve_loc(self, alias: str) -> Location:
        if alias in self.loc_cache:
            return self.loc_cache[alias]
        if alias not in self.loc_texts:
            raise self.error(f"undefined location alias {alias}")
        sub = Parser(self.loc_texts[alias], self.source_name)
        sub.loc_texts, sub.loc_cache = self.loc_texts, self.loc_cache
        loc = sub._loc_body()
        self.loc_cache[alias] = loc
        return loc

    # ---- ops, blocks, regions ---------------------------------------------------------------
    def region(self, entry_args: list | None = None) -> Region:
        """`{ ops }` with optional `^bbN(args):` labels; `entry_args` are (name, type, loc)."""
        self.expect("{")
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
            if self.at("^"):
                block = region.add_block(Block())
                self.match(re.compile(r"\^[A-Za-z0-9_]+"))
                if self.consume("("):
                    while not self.consume(")"):
                        name = self.value_name()
                        self.expect(":")
                        t = self.type()
                        loc = self.location()
                        self.define_value(name, block.add_argument(t, loc))
                        self.consume(",")
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
                count = self.integer()
            self.expect("=")
        else:
            count = 0
        if self.at('"'):
            name = self.string()
            cls = OP_REGISTRY.get(name, Operation)
            parts = parse_generic(self)
        else:
            name_pos = self.pos
            name = self.identifier()
            cls = OP_REGISTRY.get(name)
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
                self.define_value(result_name, op.results[0])
            else:
                self.define(result_name, list(op.results))
                if not result_name.isdigit():
                    op.results[0].name_hint = result_name
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
    if ps.at("(") and ps._paren_region():
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


def _paren_region(self) -> bool:
    save = self.pos
    self.expect("(")
    ok = self.at("{")
    self.pos = save
    return ok


Parser._paren_region = _paren_region


def parse_module(text: str, source_name: str = "<ir>") -> Module:
    """Parse a whole module (the printer's output, or a hand-written file in the same syntax)."""
    import compiler.dialects  # noqa: F401  (registers the ops)

    ps = Parser(text, source_name)
    _collect_aliases(ps)
    ps.skip_ws()
    # Layout aliases come first: `#name = #ttg....`
    while ps.at("#"):
        line_end = text.find("\n", ps.pos)
        alias = ps.match(re.compile(r"#[A-Za-z_][A-Za-z0-9_]*"))
        ps.expect("=")
        if ps.at("loc("):
            ps.pos = len(text) if line_end < 0 else line_end
            continue
        if alias == "#smem":
            ps.expect("#ttg.shared_memory")
            continue
        ps.layout_aliases[alias] = ps.encoding_ref()
    if not ps.keyword("module"):
        raise ps.error("expected 'module'")
    attrs = {}
    if ps.keyword("attributes"):
        attrs = ps.attr_dict()
    module = Module(attrs)
    ps.expect("{")
    while not ps.consume("}"):
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
    for m in re.finditer(r"^(#loc\d*) = loc\((.*)\)\s*$", ps.text, re.M):
        ps.loc_texts[m.group(1)] = m.group(2)
