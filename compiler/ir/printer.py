"""The IR printer: writes modules as Triton's ttir/ttgir text, `loc(...)` aliases included.

Layout encodings become aliases at the top (`#blocked = #ttg.blocked<{...}>`), locations
become `#locN` aliases listed after the module, and values are named after the Python variable
their op's location names (`%offs`, `%offs_0`, ...) as Triton's output is. Each op's custom form
comes from its `syntax` object; ops without one print in MLIR's generic form.
"""
from __future__ import annotations

import re
import weakref
from functools import lru_cache

from .attributes import Attribute, DenseAttr, IntegerAttr, escape_string
from .context import Context, resolve
from .core import Block, Module, Operation, Region, Value
from .shape import module_shape
from .location import CallSiteLoc, FileLineCol, Location, NameLoc, UnknownLoc
from .types import TensorType, Type

INDENT = "  "


class Printer:
    """Holds the naming and alias state for printing one module."""

    def __init__(self):
        self.names: dict[Value, str] = {}    # value -> its name without the %
        self.used_names: set[str] = set()
        self.suffix_counter = 0
        self.next_number = 0
        self.layout_aliases: dict[object, str] = {}
        self.layout_prefix_counts: dict[str, int] = {}
        self.loc_aliases: dict[Location, str] = {}
        self.loc_order: list[Location] = []
        self.lines: list[tuple] = []         # (op or None, text with region marks)
        self.region_bodies: list[list] = []   # nested line lists, referenced by region marks
        self.type_texts: dict[Type, str] = {}

    # ---- names ------------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        name = base
        while name in self.used_names or name.isdigit():
            name = f"{base}_{self.suffix_counter}"
            self.suffix_counter += 1
        self.used_names.add(name)
        return name

    def _number(self) -> str:
        while str(self.next_number) in self.used_names:
            self.next_number += 1
        name = str(self.next_number)
        self.next_number += 1
        self.used_names.add(name)
        return name

    def name_op_results(self, op: Operation) -> None:
        if not op.results:
            return
        hint = op.results[0].name_hint or op.loc.name()
        if hint is None and not op.operands and "value" in op.attributes:   # a constant
            hint = constant_name(op)
        name = self._unique(hint) if hint else self._number()
        if len(op.results) == 1:
            self.names[op.results[0]] = name
        else:
            for r in op.results:
                self.names[r] = f"{name}#{r.index}"

    def name_block_args(self, block: Block) -> None:
        for arg in block.args:
            hint = arg.name_hint or arg.loc.name()
            self.names[arg] = self._unique(hint) if hint else self._number()

    def value(self, v: Value) -> str:
        """`%name` of a value already named (an undefined value prints as `%<<UNKNOWN>>`)."""
        return "%" + self.names.get(v, "<<UNKNOWN>>")

    def values(self, vs) -> str:
        return ", ".join(self.value(v) for v in vs)

    def result_group(self, op: Operation) -> str:
        """What stands before `=`: `%x` or `%x:3` for multi-result ops."""
        first = self.names[op.results[0]]
        if len(op.results) == 1:
            return "%" + first
        return "%" + first.split("#")[0] + f":{len(op.results)}"

    # ---- types and attributes ---------------------------------------------------------------
    def layout(self, encoding) -> str:
        """The alias of a layout encoding, created on first use."""
        key = encoding
        for dependency in getattr(encoding, "dependencies", ()):
            self.layout(dependency)
        if key not in self.layout_aliases:
            prefix = getattr(encoding, "alias_prefix", "layout")
            n = self.layout_prefix_counts.get(prefix, 0)
            self.layout_prefix_counts[prefix] = n + 1
            self.layout_aliases[key] = f"#{prefix}" + (str(n) if n else "")
        return self.layout_aliases[key]

    def type(self, t: Type) -> str:
        """A type's text (layouts by alias), computed once per print for equal types (they
        print alike; types hash once, `compiler.ir.immutable`). Types holding encodings
        (`print_with`) print them by alias."""
        text = self.type_texts.get(t)
        if text is None:
            print_with = getattr(t, "print_with", None)
            text = self.type_texts[t] = print_with(self) if print_with is not None else str(t)
        return text

    def types(self, ts) -> str:
        return ", ".join(self.type(t) for t in ts)

    def attr(self, a: Attribute) -> str:
        """An attribute's text; layout encodings print by alias."""
        if hasattr(a, "alias_prefix"):
            return self.layout(a)
        if isinstance(a, DenseAttr):            # standing alone, the splat needs its type
            return f"{a} : {self.type(a.type)}"
        return str(a)

    def attr_dict(self, attributes: dict, exclude=(), keyword: str = "") -> str:
        """` {a = 1 : i32, b}` for the attributes not in `exclude` ('' when none are left)."""
        items = []
        for key in sorted(attributes):
            if key in exclude:
                continue
            a = attributes[key]
            if type(a).__name__ == "UnitAttr":
                items.append(attr_key(key))
            else:
                items.append(f"{attr_key(key)} = {self.attr(a)}")
        if not items:
            return ""
        return f" {keyword}{{" + ", ".join(items) + "}"

    # ---- locations --------------------------------------------------------------------------
    def loc(self, location: Location) -> str:
        """`loc(#locN)` for an op or block argument."""
        return f"loc({self._loc_alias(location)})"

    def _loc_alias(self, location: Location) -> str:
        alias = self.loc_aliases.get(location)
        if alias is None:
            if isinstance(location, NameLoc):
                self._loc_alias(location.child)
            elif isinstance(location, CallSiteLoc):
                self._loc_alias(location.callee)
                self._loc_alias(location.caller)
            n = len(self.loc_order)
            alias = self.loc_aliases[location] = "#loc" + (str(n) if n else "")
            self.loc_order.append(location)
        return alias

    def loc_definition(self, location: Location) -> str:
        if isinstance(location, UnknownLoc):
            body = "unknown"
        elif isinstance(location, FileLineCol):
            body = f'"{escape_string(location.file)}":{location.line}:{location.col}'
        elif isinstance(location, NameLoc):
            body = f'"{escape_string(location.label)}"({self.loc_aliases[location.child]})'
        elif isinstance(location, CallSiteLoc):
            body = (f"callsite({self.loc_aliases[location.callee]} at "
                    f"{self.loc_aliases[location.caller]})")
        else:
            raise TypeError(f"unknown location {location!r}")
        return f"{self.loc_aliases[location]} = loc({body})"

    # ---- ops and regions --------------------------------------------------------------------
    def op(self, op: Operation, indent: int) -> None:
        self.name_op_results(op)
        pad = INDENT * indent
        lhs = f"{self.result_group(op)} = " if op.results else ""
        syntax = op.syntax
        if syntax is None:
            text = generic_form(self, op, indent)
        else:
            text = syntax.print(self, op, indent)
        self.lines.append((op, f"{pad}{lhs}{text} {self.loc(op.loc)}"))

    def region(self, region: Region, indent: int, print_entry_args: bool) -> str:
        """Print `{` + nested ops + `}`. The nested lines are kept aside and the returned text
        holds a mark in their place, so that `flatten` can number every op's line."""
        outer = self.lines
        self.lines = []
        for i, block in enumerate(region.blocks):
            if i == 0 and not print_entry_args:
                if block.args and not all(a in self.names for a in block.args):
                    self.name_block_args(block)
            else:
                self.name_block_args(block)
                args = ", ".join(f"{self.value(a)}: {self.type(a.type)} {self.loc(a.loc)}"
                                 for a in block.args)
                label = f"^bb{i}" + (f"({args})" if block.args else "")
                self.lines.append((None, INDENT * indent + f"{label}:"))
            for op in block.ops:
                self.op(op, indent + 1)
        self.region_bodies.append(self.lines)
        self.lines = outer
        return "{" + _REGION_MARK.format(len(self.region_bodies) - 1) + INDENT * indent + "}"

    def flatten(self, entries: list, out: list) -> None:
        """Expand region marks: append (op or None, line) pairs in output order to `out`."""
        for op, text in entries:
            pieces = _REGION_MARK_RE.split(text)
            out.append((op, pieces[0]))
            for i in range(1, len(pieces), 2):
                self.flatten(self.region_bodies[int(pieces[i])], out)
                out.append((None, pieces[i + 1]))


_REGION_MARK = "\x00R{}\x00"
_REGION_MARK_RE = re.compile("\x00R(\\d+)\x00")


@lru_cache(maxsize=4096)
def attr_key(key: str) -> str:
    """Attribute names with dots or dashes are quoted as MLIR does for non-identifiers."""
    if all(c.isalnum() or c in "_." for c in key) and not key[0].isdigit():
        return key
    return f'"{key}"'


def constant_name(op: Operation) -> str:
    """MLIR's names for constants: `%c16_i32`, `%true`, `%cst`."""
    value = op.attributes.get("value")
    if isinstance(value, IntegerAttr) and not isinstance(op.results[0].type, TensorType):
        if str(value.type) == "i1":
            return "true" if value.value else "false"
        v = value.value
        return f"c{v}_{value.type}" if v >= 0 else f"c{v}_{value.type}".replace("-", "_")
    return "cst"


def generic_form(p: Printer, op: Operation, indent: int) -> str:
    """MLIR's generic form: `"name"(%a) <{attrs}> ({...}) : (T) -> R`."""
    text = f'"{op.name}"({p.values(op.operands)})'
    props = p.attr_dict(op.attributes)
    if props:
        text += " <" + props.strip() + ">"
    if op.regions:
        regions = [p.region(r, indent, print_entry_args=True) for r in op.regions]
        text += " (" + ", ".join(regions) + ")"
    ins = p.types(v.type for v in op.operands)
    outs = [p.type(r.type) for r in op.results]
    out = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return f"{text} : ({ins}) -> {out}"


def print_module(module: Module, context: Context | None = None,
                 shape: list | None = None) -> str:
    """The module's text, Triton-style: layout aliases, the module, location aliases."""
    return print_module_with_printer(module, context, shape)[0]


def print_module_with_lines(module: Module, context: Context | None = None,
                            shape: list | None = None) -> tuple[str, dict]:
    """The module's text and, for every op in it, its 1-based line: `{op: line}`.
    `context` (the default when None) gives the fixed aliases the text may need."""
    text, op_lines, _ = print_module_with_printer(module, context, shape)
    return text, op_lines


#: The last print of each module: module -> (context, its shape then, (text, lines, printer)).
_LAST_PRINT: "weakref.WeakKeyDictionary[Module, tuple]" = weakref.WeakKeyDictionary()


def print_module_with_printer(module: Module, context: Context | None = None,
                              shape: list | None = None) -> tuple[str, dict, "Printer"]:
    """`print_module_with_lines`, plus the `Printer` (its value names and layout aliases), for
    tools that record what the text shows as data.

    A module printed again with nothing changed (an equal `module_shape`; pass `shape` when
    it is at hand) gets its last print back: a stage's last snapshot, its structure, its stage
    text and the lowering's line map are one print. The line map and the printer returned are
    shared with later callers: read them, do not change them."""
    ctx = resolve(context)
    shape = module_shape(module) if shape is None else shape
    last = _LAST_PRINT.get(module)
    if last is not None and last[0] is ctx and last[1] == shape:
        return last[2]
    printed = _print(module, ctx)
    _LAST_PRINT[module] = (ctx, shape, printed)
    return printed


def _print(module: Module, ctx: Context) -> tuple[str, dict, "Printer"]:
    p = Printer()
    for func in module.ops:
        p._loc_alias(func.loc)
    attrs = p.attr_dict(module.attributes, keyword="attributes ")
    for op in module.ops:
        p.op(op, 1)
    body: list = [(None, f"module{attrs} {{")]
    p.flatten(p.lines, body)
    body.append((None, f"}} {p.loc(module.loc)}"))
    header = [f"{alias} = {enc_text(p, enc)}" for enc, alias in p.layout_aliases.items()]
    body_text = "\n".join(line for _, line in body)
    for alias, definition in ctx.fixed_aliases().items():
        if alias in body_text:
            header.append(f"{alias} = {definition}")
    footer = [p.loc_definition(loc) for loc in p.loc_order]
    op_lines = {op: len(header) + i + 1 for i, (op, _) in enumerate(body) if op is not None}
    text = "\n".join(header + [body_text] + footer) + "\n"
    p.lines, p.region_bodies = [], []     # the text is made; the printer is kept for its names
    return text, op_lines, p


def enc_text(p: Printer, enc) -> str:
    """An encoding's definition, with nested encodings (a slice's parent) printed by alias."""
    printer = getattr(enc, "print_with", None)
    return printer(p) if printer else str(enc)


def print_op_standalone(op: Operation) -> str:
    """Print a single op (and its regions) without the module wrapper; for messages and tests."""
    p = Printer()
    _name_free_values(p, op)
    p.op(op, 0)
    out: list = []
    p.flatten(p.lines, out)
    return "\n".join(line for _, line in out)


def _name_free_values(p: Printer, op: Operation) -> None:
    defined: set[Value] = set()
    for nested in op.walk():
        defined.update(nested.results)
        for region in nested.regions:
            for block in region.blocks:
                defined.update(block.args)
    for nested in op.walk():
        for v in nested.operands:
            if v not in defined and v not in p.names:
                p.names[v] = p._unique(v.name_hint or "arg")
