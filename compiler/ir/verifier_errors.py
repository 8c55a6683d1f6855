"""The error raised when IR breaks an invariant."""
from __future__ import annotations


class VerificationError(Exception):
    """IR that breaks an invariant; the message names the op and its location."""

    def __init__(self, op, message: str):
        where = f" at {op.loc.file_line_col()}" if op is not None and op.loc.file_line_col() else ""
        name = f"'{op.name}'" if op is not None else "module"
        super().__init__(f"{name}{where}: {message}")
        self.op = op
        self.bare_message = message
