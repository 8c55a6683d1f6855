"""The error raised when IR breaks an invariant."""
from __future__ import annotations

import linecache


class VerificationError(Exception):
    """IR that breaks an invariant; the message names the op and where it is: the op's line in
    the IR text it was parsed from (see `located`), else its source location, with the line
    and a caret when the file can be read."""

    def __init__(self, op, message: str, where: str | None = None):
        self.op = op
        self.bare_message = message
        name = f"'{op.name}'" if op is not None else "module"
        excerpt = ""
        if where is None:
            where, excerpt = _source_position(op), source_excerpt(op)
        super().__init__(f"{where}error: {name}: {message}{excerpt}" if where else
                         f"{name}: {message}")
        self.where = where

    def located(self, parsed_from) -> "VerificationError":
        """This error pointing at the op's line of `parsed_from` (a `ParsedSource`) when the
        op was parsed from it; itself otherwise."""
        if parsed_from is None:
            return self
        op = self.op
        pos = parsed_from.locate(op)
        while pos is None and op is not None:     # an op the parser made (scf.if's else)
            op = op.parent_op
            pos = parsed_from.locate(op) if op is not None else None
        if pos is None:
            return self
        text = parsed_from.text
        line = text.count("\n", 0, pos) + 1
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        snippet = text[start:len(text) if end < 0 else end]
        col = pos - start + 1
        err = VerificationError(self.op, self.bare_message,
                                f"{parsed_from.source_name}:{line}:{col}: ")
        err.args = (f"{err.args[0]}\n{snippet}\n" + " " * (col - 1) + "^",)
        return err


def _source_position(op) -> str:
    """`file:line:col: ` of the op's source location, '' when it has none."""
    flc = op.loc.file_line_col() if op is not None else None
    if flc is None:
        return ""
    return f"{flc}: "


def source_excerpt(op) -> str:
    """The op's source line and a caret under its column, '' when the file cannot be read."""
    flc = op.loc.file_line_col() if op is not None else None
    if flc is None:
        return ""
    line = linecache.getline(flc.file, flc.line).rstrip("\n")
    if not line:
        return ""
    return f"\n{line}\n" + " " * max(flc.col - 1, 0) + "^"
