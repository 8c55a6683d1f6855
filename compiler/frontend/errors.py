"""User-facing front-end errors: `CompilationError` (file:line:col, the source line, a caret and
one sentence) and `SemanticError`, which semantic code raises without knowing the location; the
code generator turns it into a `CompilationError` at the node being compiled."""
from __future__ import annotations


class SemanticError(Exception):
    """A type, shape or usage error found while building IR; carries only its sentence."""


class CompilationError(Exception):
    """A kernel the front end rejects, pointing at the offending source position.

    `line` is the 1-based line in `file`; `col` is the 0-based column of the Python node (the
    same numbers the IR's locations carry). `source_line` is the line's text. With debugging
    enabled (`TILE_DEBUG=1`, read once by the entry point) `internal` holds the compiler's own
    traceback, appended to the message.
    """

    def __init__(self, message: str, file: str, line: int, col: int, source_line: str = "",
                 internal: str | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.source_line = source_line
        self.internal = internal
        super().__init__(self.format())

    def format(self) -> str:
        """`file:line:col: error: message`, then the source line and a caret under the column."""
        text = f"{self.file}:{self.line}:{self.col}: error: {self.message}"
        if self.source_line:
            text += "\n" + self.source_line.rstrip("\n") + "\n" + " " * self.col + "^"
        if self.internal:
            text += "\n\ninternal traceback (TILE_DEBUG=1):\n" + self.internal
        return text

    @property
    def caret_line(self) -> str:
        """The line holding the caret, as printed."""
        return " " * self.col + "^"
