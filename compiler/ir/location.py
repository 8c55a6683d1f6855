"""Source locations carried by every IR operation (MLIR's `loc(...)`).

Four kinds, as in MLIR: a file:line:col position, a name attached to another location (the
front end names values after the Python variable they were assigned to), a call site (an
inlined op: where the callee's op was and where the call was) and `unknown`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .immutable import hash_once


class Location:
    """Base class of all locations."""

    def file_line_col(self) -> "FileLineCol | None":
        """The innermost file:line:col position this location refers to, if any."""
        return None

    def name(self) -> str | None:
        """The value name this location carries (a `NameLoc`), if any."""
        return None


@hash_once
@dataclass(frozen=True)
class UnknownLoc(Location):
    """A location for ops that have no source position (e.g. constants made by a pass)."""


@hash_once
@dataclass(frozen=True)
class FileLineCol(Location):
    """A position in a source file; line and column are 1-based like MLIR's (column may be 0)."""

    file: str
    line: int
    col: int

    def file_line_col(self) -> "FileLineCol":
        return self

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@hash_once
@dataclass(frozen=True)
class NameLoc(Location):
    """A named location: `loc("x"(#loc3))` names the value made at the child location."""

    label: str
    child: Location

    def file_line_col(self) -> "FileLineCol | None":
        return self.child.file_line_col()

    def name(self) -> str:
        return self.label


@hash_once
@dataclass(frozen=True)
class CallSiteLoc(Location):
    """An op inlined from a callee: where it was in the callee, and the call site."""

    callee: Location
    caller: Location

    def file_line_col(self) -> "FileLineCol | None":
        return self.caller.file_line_col() or self.callee.file_line_col()

    def name(self) -> str | None:
        return self.caller.name()


UNKNOWN = UnknownLoc()

