"""User-facing front-end errors: `CompilationError` (file:line:col, the source line, a caret and
one sentence) and `SemanticError`, which semantic code raises without knowing the location; the
code generator turns it into a `CompilationError` at the node being compiled.

This module is also `triton.compiler.errors`: `CompilationError` derives from `TritonError`, a
failed `tl.static_assert` is a `CompileTimeAssertionFailure` and syntax a kernel cannot use is an
`UnsupportedLanguageConstruct`, as in Triton, each keeping our file:line:col and caret.
"""
from __future__ import annotations

from compiler.errors import TritonError


class SemanticError(Exception):
    """A type, shape or usage error found while building IR; carries only its sentence.
    `located_as` is the `CompilationError` class the code generator raises for it."""

    @property
    def located_as(self) -> type:
        """The positioned error class this becomes at the node being compiled."""
        return CompilationError


class StaticAssertionFailed(SemanticError):
    """`tl.static_assert` found its condition false."""

    @property
    def located_as(self) -> type:
        return CompileTimeAssertionFailure


class CompilationError(TritonError):
    """A kernel the front end rejects, pointing at the offending source position.

    `line` is the 1-based line in `file`; `col` is the 0-based column of the Python node (the
    same numbers the IR's locations carry). `source_line` is the line's text. With debugging
    enabled (`TILE_DEBUG=1`, read once by the entry point) `internal` holds the compiler's own
    traceback, appended to the message. `in_function` is `(function name, line, col)` counted as
    Triton counts them (line 1 is the `def`, columns of the dedented source), shown after the
    caret as `at line:col: in name`, so that messages match Triton's positions too.
    """

    def __init__(self, message: str, file: str, line: int, col: int, source_line: str = "",
                 internal: str | None = None, in_function: tuple | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.source_line = source_line
        self.internal = internal
        self.in_function = in_function
        super().__init__(self.format())

    @property
    def error_message(self) -> str:
        """The bare sentence (Triton's `CompilationError.error_message`)."""
        return self.message

    def format(self) -> str:
        """`file:line:col: error: message`, then the source line and a caret under the column."""
        text = f"{self.file}:{self.line}:{self.col}: error: {self.message}"
        if self.source_line:
            text += "\n" + self.source_line.rstrip("\n") + "\n" + " " * self.col + "^"
        if self.in_function:
            name, line, col = self.in_function
            text += f"\nat {line}:{col}: in {name}"
        if self.internal:
            text += "\n\ninternal traceback (TILE_DEBUG=1):\n" + self.internal
        return text

    @property
    def caret_line(self) -> str:
        """The line holding the caret, as printed."""
        return " " * self.col + "^"


class CompileTimeAssertionFailure(CompilationError):
    """A `tl.static_assert` (or an `assert` on constants) failed while compiling."""


class UnsupportedLanguageConstruct(CompilationError):
    """Python syntax or a construct that kernels cannot use."""
