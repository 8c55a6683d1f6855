"""The lowering's one error: `LoweringError`, located at the op being lowered.

A lowering function raises `LoweringError("why")` without knowing where it is; the op walk
(`LoweringContext.lower_op`) locates it at the op: its Python position (file:line:col, the
source line and a caret when the file is readable), else its line in the printed ttgir, plus
the op's name and the types (layouts included) of its operands and results. Any other exception
escaping a lowering function is a compiler bug: the walk turns it into a located
`LoweringError` that says so (`internal=True`), with the original chained as its cause.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class OpSite:
    """Where an op is and what it works on, as a lowering error shows it."""

    op_name: str
    layouts: str                 # "tensor<...> , ... -> tensor<...>" (operand and result types)
    where: str                   # "file:line:col" (Python) or "kernel.ttgir:line"
    source: str = ""             # the source line and a caret under the column ("" if unknown)
    ttgir: str = ""              # "kernel.ttgir:line" (when `where` is the Python position)


def _types(values) -> str:
    return ", ".join(str(v.type) for v in values)


def op_layouts(op) -> str:
    """The op's operand and result types, encodings included: `a, b -> c`."""
    return f"{_types(op.operands) or '()'} -> {_types(op.results) or '()'}"


def _caret(text: str, col: int) -> str:
    return text.rstrip("\n") + "\n" + " " * max(col, 0) + "^"


def op_site(op, ttgir_file: str = "", ttgir_line: int | None = None,
            ttgir_text: str = "") -> OpSite:
    """The `OpSite` of `op`: its Python position when it has one, else its ttgir line."""
    ttgir = f"{ttgir_file}:{ttgir_line}" if ttgir_line is not None else ""
    position = op.loc.file_line_col()
    if position is not None:
        line = linecache.getline(position.file, position.line) if position.file else ""
        source = _caret(line, position.col) if line.strip() else ""
        return OpSite(op.name, op_layouts(op), f"{position.file}:{position.line}:{position.col}",
                      source, ttgir)
    source = ""
    lines = ttgir_text.splitlines()
    if ttgir_line is not None and 0 < ttgir_line <= len(lines):
        text = lines[ttgir_line - 1]
        source = _caret(text, len(text) - len(text.lstrip()))
    return OpSite(op.name, op_layouts(op), ttgir or "<unknown location>", source)


class LoweringError(Exception):
    """An op the lowering cannot handle (or, `internal`, a compiler bug met lowering it).

    `message` is the sentence; `site` (an `OpSite`, set by the op walk) says which op, its
    layouts and where it is. `str()` is `where: error: message`, the source line and a caret,
    then the op with its layouts."""

    def __init__(self, message: str, site: OpSite | None = None, internal: bool = False):
        self.message = message
        self.site = site
        self.internal = internal
        super().__init__(self.format())

    def format(self) -> str:
        """The message as users see it (see the class docstring)."""
        if self.site is None:
            return self.message
        site = self.site
        text = f"{site.where}: error: {self.message}"
        if site.source:
            text += "\n" + site.source
        if not self.internal:        # an internal error's sentence names them already
            text += f"\n  op: {site.op_name} ({site.layouts})"
        if site.ttgir:
            text += f"\n  ttgir: {site.ttgir}"
        return text

    def located(self, site: OpSite) -> "LoweringError":
        """This error at `site` (the innermost op wins: an already located error is kept)."""
        if self.site is not None:
            return self
        return LoweringError(self.message, site, self.internal)

    @classmethod
    def internal_error(cls, site: OpSite, error: BaseException) -> "LoweringError":
        """The error for an unexpected exception while lowering the op at `site`."""
        message = (f"internal error lowering {site.op_name} ({site.layouts}) at {site.where}: "
                   f"{type(error).__name__}: {error}. This is a compiler bug, not a problem "
                   f"with the kernel; please report it with the kernel's ttgir "
                   f"(TILE_KERNEL_DUMP=1 writes it)")
        return cls(message, site, internal=True)
