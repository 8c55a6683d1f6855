"""The one pipeline-string grammar: `a,b{opt=1 x=y},c`, and `stage=pipeline` on the command line.

    pipeline   := item ("," item)*            empty items (",,", trailing ",") are skipped
    item       := name ("{" options? "}")?
    options    := option (("," | " ") option)*
    option     := key "=" value
    stage_spec := stage "=" pipeline          (`--passes ttgir=coalesce,cse`)

Names and keys are `[A-Za-z0-9_.-]+`; a value is any run of characters other than blanks,
`,`, `{`, `}` and `=` (so `target=cuda:90` reads). This module only reads the text (into `PassSpec`s
with the column of every name and option); the pass manager binds names to registered passes
and option texts to typed values. Every error is a `PipelineError` that knows its column and
prints the text with a caret under it.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache

_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_VALUE_STOPS = frozenset(" \t,{}=")


class PipelineError(ValueError):
    """A pipeline string that cannot be read, or that names an unknown pass or option.

    `text` and `column` (0-based) locate the problem; `str()` shows the message, then the text
    with a caret under the column (when both are known)."""

    def __init__(self, message: str, text: str | None = None, column: int | None = None):
        self.message = message
        self.text = text
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        if self.text is None or self.column is None:
            return self.message
        return (f"{self.message}\n  at column {self.column + 1} of the pipeline:\n"
                f"    {self.text}\n    {' ' * self.column}^")


@dataclass
class OptionSpec:
    """One `key=value` of a pass, as written (the value still text)."""

    key: str
    value: str
    column: int = 0


@dataclass
class PassSpec:
    """One item of a pipeline string: a pass name and its options, with their columns."""

    name: str
    options: list = field(default_factory=list)     # OptionSpec, in the order written
    column: int = 0

    def option_dict(self) -> dict:
        """{key: value text} of the options."""
        return {o.key: o.value for o in self.options}

    def text(self) -> str:
        """The item as a pipeline string writes it."""
        return format_item(self.name, self.option_dict())


class _Reader:
    """A cursor over the pipeline text."""

    def __init__(self, text: str, offset: int = 0):
        self.text = text
        self.pos = offset

    def error(self, message: str, column: int | None = None) -> PipelineError:
        return PipelineError(message, self.text, self.pos if column is None else column)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_spaces(self) -> None:
        while self.peek() == " " or self.peek() == "\t":
            self.pos += 1

    def word(self, what: str, value: bool = False) -> tuple[str, int]:
        self.skip_spaces()
        start = self.pos
        while self.peek() and (self.peek() not in _VALUE_STOPS if value
                               else self.peek() in _WORD_CHARS):
            self.pos += 1
        if self.pos == start:
            found = f"'{self.peek()}'" if self.peek() else "the end"
            raise self.error(f"expected {what}, found {found}")
        return self.text[start:self.pos], start


def parse_pipeline_text(text: str, offset: int = 0) -> list[PassSpec]:
    """Read a pipeline string into `PassSpec`s (no registry lookup). `offset`: where the pipeline
    starts inside `text` (for `stage=` prefixes), so columns point into the whole text. Each
    text is read once (every compile names its stages' pipelines); the specs are new each call."""
    return [PassSpec(name, [OptionSpec(*option) for option in options], column)
            for name, options, column in _read_pipeline(text, offset)]


@lru_cache(maxsize=256)
def _read_pipeline(text: str, offset: int) -> tuple:
    """`parse_pipeline_text`'s specs as tuples `(name, ((key, value, column), ...), column)`."""
    return tuple((spec.name, tuple((o.key, o.value, o.column) for o in spec.options),
                  spec.column) for spec in _read_specs(text, offset))


def _read_specs(text: str, offset: int) -> list[PassSpec]:
    reader = _Reader(text, offset)
    specs: list[PassSpec] = []
    while True:
        reader.skip_spaces()
        if reader.peek() == ",":
            reader.pos += 1
            continue
        if not reader.peek():
            return specs
        name, column = reader.word("a pass name")
        spec = PassSpec(name, [], column)
        reader.skip_spaces()
        if reader.peek() == "{":
            _read_options(reader, spec)
        reader.skip_spaces()
        if reader.peek() not in (",", ""):
            raise reader.error(f"expected ',' or '{{' after pass '{name}', found "
                               f"'{reader.peek()}'")
        specs.append(spec)


def _read_options(reader: _Reader, spec: PassSpec) -> None:
    """Read `{k=v, ...}` after a pass name (the cursor is on the '{')."""
    opening = reader.pos
    reader.pos += 1
    while True:
        reader.skip_spaces()
        ch = reader.peek()
        if ch == "}":
            reader.pos += 1
            return
        if ch == ",":
            reader.pos += 1
            continue
        if not ch:
            raise reader.error(f"unbalanced '{{': the options of '{spec.name}' are not closed",
                               opening)
        key, column = reader.word(f"an option name of '{spec.name}'")
        reader.skip_spaces()
        if reader.peek() != "=":
            raise reader.error(f"option '{key}' of pass '{spec.name}' needs a value: {key}=...")
        reader.pos += 1
        value, _ = reader.word(f"a value for option '{key}'", value=True)
        spec.options.append(OptionSpec(key, value, column))


def parse_stage_pipeline(text: str, stages: tuple[str, ...]) -> tuple[str, list[PassSpec]]:
    """Read `stage=pipeline` (the command line's `--passes`); the stage must be one of
    `stages`. Returns the stage and the pipeline's `PassSpec`s."""
    stage, sep, _ = text.partition("=")
    name = stage.strip().lower()
    if not sep:
        raise PipelineError(f"expected STAGE=PIPELINE with STAGE one of {', '.join(stages)}",
                            text, len(text))
    if name not in stages:
        hint = suggestion(name, stages)
        raise PipelineError(f"unknown stage '{stage.strip()}'{hint}; the stages with passes "
                            f"are {', '.join(stages)}", text, len(stage) - len(stage.lstrip()))
    return name, parse_pipeline_text(text, len(stage) + 1)


def suggestion(name: str, candidates) -> str:
    """' (did you mean 'x' or 'y'?)' for the closest candidates to a misspelt name, or ''."""
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)"


def _value_text(value) -> str:
    """An option value as a pipeline string writes it (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def format_item(name: str, options: dict) -> str:
    """`name` or `name{k=v k2=v2}` (MLIR writes options space-separated)."""
    if not options:
        return name
    return name + "{" + " ".join(f"{k}={_value_text(v)}" for k, v in options.items()) + "}"


def format_pipeline(items) -> str:
    """The pipeline string of `(name, options)` pairs."""
    return ",".join(format_item(name, options) for name, options in items)
