"""Dialects and the context they are loaded into (MLIR's `Dialect` / `MLIRContext`).

The IR core knows no dialect. A `Dialect` holds what one namespace (`tt`, `ttg`, `arith`, ...)
contributes: its op classes by name, the parsers of its types (`!tt.ptr<...>`) and attributes
(`#ttg.blocked<...>`), the module-level ops it allows, and fixed aliases that printed modules
define once (`#smem = #ttg.shared_memory`). A `Context` is a set of loaded dialects; the
parser, printer and verifier receive one. `default_context()` is the context the dialect
packages register into when they are imported (`compiler.dialects` loads all built-in ones).
"""
from __future__ import annotations

from typing import Callable, Iterator


class Dialect:
    """One namespace's ops, type and attribute syntaxes."""

    def __init__(self, name: str, doc: str = ""):
        self.name = name
        self.doc = doc
        self.ops: dict[str, type] = {}
        self.type_parsers: dict[str, Callable] = {}
        self.attribute_parsers: dict[str, Callable] = {}
        self.module_level_ops: list[type] = []
        self.fixed_aliases: dict[str, str] = {}
        self.module_checks: list[Callable] = []

    def register_op(self, cls: type) -> type:
        """Class decorator: make `cls` (its `name` starts with this dialect's) known here."""
        self.ops[cls.name] = cls
        return cls

    def register_type(self, mnemonic: str, parse: Callable) -> None:
        """`parse(parser)` reads the text after `!mnemonic` (from its `<`) and returns a Type."""
        self.type_parsers[mnemonic] = parse

    def register_attribute(self, mnemonic: str, parse: Callable) -> None:
        """`parse(parser)` reads the text after `#mnemonic` (from its `<`) and returns it."""
        self.attribute_parsers[mnemonic] = parse

    def allow_at_module_level(self, cls: type) -> None:
        """Ops of class `cls` may stand directly in a module (functions)."""
        self.module_level_ops.append(cls)

    def add_module_check(self, check: Callable) -> None:
        """`check(module)` runs after every op verified; it raises `VerificationError`."""
        self.module_checks.append(check)

    def add_fixed_alias(self, alias: str, definition: str) -> None:
        """`alias = definition` heads every printed module that uses `alias`."""
        self.fixed_aliases[alias] = definition

    def __repr__(self) -> str:
        return f"<dialect {self.name}: {len(self.ops)} ops>"


class Context:
    """The dialects a parse, print or verification may use; look-ups go through here."""

    def __init__(self, dialects=()):
        self.dialects: dict[str, Dialect] = {}
        self.ops: dict[str, type] = {}
        for d in dialects:
            self.load(d)

    def load(self, dialect: Dialect) -> Dialect:
        """Load `dialect` (again, after it gained ops: loading is idempotent)."""
        self.dialects[dialect.name] = dialect
        self.ops.update(dialect.ops)
        return dialect

    def dialect(self, name: str) -> Dialect:
        """The loaded dialect `name`, created empty and loaded when it is new."""
        if name not in self.dialects:
            self.load(Dialect(name))
        return self.dialects[name]

    def register_op(self, cls: type) -> type:
        """Register `cls` into the dialect its name's prefix names (`tt.reduce.return` -> tt)."""
        self.dialect(cls.name.split(".", 1)[0]).register_op(cls)
        self.ops[cls.name] = cls
        return cls

    def lookup_op(self, name: str) -> type | None:
        """The op class called `name`, or None when no loaded dialect defines it."""
        return self.ops.get(name)

    def type_parser(self, mnemonic: str) -> Callable | None:
        """The parser of `!mnemonic<...>` types (`tt.ptr`), if a dialect registered one."""
        return self._find(mnemonic, "type_parsers")

    def attribute_parser(self, mnemonic: str) -> Callable | None:
        """The parser of `#mnemonic<...>` attributes (`ttg.blocked`), if registered."""
        return self._find(mnemonic, "attribute_parsers")

    def _find(self, mnemonic: str, table: str) -> Callable | None:
        dialect = self.dialects.get(mnemonic.split(".", 1)[0])
        return getattr(dialect, table).get(mnemonic) if dialect is not None else None

    def fixed_aliases(self) -> dict[str, str]:
        """Every loaded dialect's fixed aliases, `{'#smem': '#ttg.shared_memory'}`."""
        out: dict[str, str] = {}
        for d in self.dialects.values():
            out.update(d.fixed_aliases)
        return out

    def module_checks(self) -> list[Callable]:
        """Every loaded dialect's whole-module checks (symbol uses, module attributes)."""
        return [c for d in self.dialects.values() for c in d.module_checks]

    def is_module_level(self, op) -> bool:
        """Whether `op` may stand directly in a module."""
        return any(isinstance(op, cls) for d in self.dialects.values()
                   for cls in d.module_level_ops)

    def all_ops(self) -> Iterator[type]:
        """Every registered op class, by name order."""
        for name in sorted(self.ops):
            yield self.ops[name]


_DEFAULT = Context()


def default_context() -> Context:
    """The context that the built-in dialects register into when imported."""
    return _DEFAULT


def resolve(context: Context | None) -> Context:
    """`context`, or the default one when None."""
    return _DEFAULT if context is None else context
