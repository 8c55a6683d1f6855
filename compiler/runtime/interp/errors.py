"""Errors the interpreter raises: each names the op, its source location and the program id."""
from __future__ import annotations

import linecache

from compiler.errors import TritonError
from compiler.ir.location import Location


class OpError(Exception):
    """Raised by an op's semantics with a bare message; the interpreter adds where it happened."""


class NotVectorizable(Exception):
    """Raised when a combine region cannot run on whole arrays (e.g. an scf.if on a tensor)."""


def source_excerpt(loc: Location) -> str:
    """The source line of `loc` with a caret under its column, or "" when the file is unknown."""
    pos = loc.file_line_col() if loc is not None else None
    if pos is None:
        return ""
    line = linecache.getline(pos.file, pos.line)
    if not line:
        return ""
    text = line.rstrip("\n")
    col = max(pos.col, 0)
    return f"\n    {text}\n    {' ' * col}^"


def format_error(loc: Location, op_name: str, pid: tuple | None, message: str) -> str:
    """`file:line:col: error: <op> in program (x, y, z): message`, then the source line and caret."""
    pos = loc.file_line_col() if loc is not None else None
    where = f"{pos}: " if pos is not None else ""
    program = f" in program {tuple(pid)}" if pid is not None else ""
    return f"{where}error: {op_name}{program}: {message}{source_excerpt(loc)}"


class InterpreterError(TritonError):
    """A kernel failed under the interpreter: bad access, bad argument or unsupported op
    (`triton.runtime.errors.InterpreterError`)."""

    def __init__(self, message: str, op=None, pid: tuple | None = None):
        loc = op.loc if op is not None else None
        name = op.name if op is not None else "launch"
        super().__init__(format_error(loc, name, pid, message) if op is not None else message)
        self.op = op
        self.pid = pid
        self.bare_message = message


class KernelAssertionError(InterpreterError, AssertionError):
    """A `tt.assert` failed (Triton's device_assert)."""
