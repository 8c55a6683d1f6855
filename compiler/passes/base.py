"""What a pass is: a small class with a registry name, typed options and a docstring.

A pass subclasses `Pass`, sets `name` (the pipeline-string name), `stage` ("ttir", "ttgir" or
"llir"), declares its options as `Option`s and the module properties it `requires`,
`establishes` and `invalidates` (compiler.passes.requirements), and implements
`run(module, ctx)`. It reports which rewrite patterns fired through
`ctx.record_pattern(name)`; it never snapshots or times itself (the pass manager's
instrumentation does that). `@register_pass` puts it in `PASSES`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.ir.core import Module


@dataclass(frozen=True)
class Option:
    """A typed pass option: `pass{name=value}` in a pipeline string."""

    name: str
    type: type
    default: Any
    help: str = ""

    def convert(self, text: str) -> Any:
        """Parse the option's text from a pipeline string into its type."""
        if self.type is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"option '{self.name}' takes true or false, not '{text}'")
        try:
            return self.type(text)
        except ValueError:
            raise ValueError(f"option '{self.name}' takes a {self.type.__name__}, "
                             f"not '{text}'") from None


@dataclass
class PassContext:
    """Handed to each pass run: compile options and the pattern counter for this run."""

    options: dict = field(default_factory=dict)     # compile options: num_warps, target, ...
    patterns: dict = field(default_factory=dict)    # pattern name -> count (this pass run)
    sites: list = field(default_factory=list)       # where patterns fired (first MAX_SITES)

    MAX_SITES = 200

    def record_pattern(self, name: str, count: int = 1, op=None, source: str = "") -> None:
        """Note that rewrite pattern `name` fired (the explorer shows these per pass); with
        `op`, also where: the op's name and source location, and `source`, the pattern's
        defining class (`module.Class`)."""
        self.patterns[name] = self.patterns.get(name, 0) + count
        if op is not None and len(self.sites) < self.MAX_SITES:
            where = op.loc.file_line_col()
            self.sites.append({"pattern": name, "op": op.name,
                               "loc": str(where) if where is not None else "",
                               "source": source})


class Pass:
    """Base class of all passes; see the module docstring."""

    name: ClassVar[str] = ""
    stage: ClassVar[str] = "ttir"
    options_spec: ClassVar[tuple] = ()
    # Module properties (compiler.passes.requirements) the pass needs, makes true, may break.
    requires: ClassVar[tuple] = ()
    establishes: ClassVar[tuple] = ()
    invalidates: ClassVar[tuple] = ()

    def __init__(self, **options):
        known = {o.name: o for o in self.options_spec}
        for key in options:
            if key not in known:
                valid = ", ".join(known) or "none"
                raise ValueError(f"pass '{self.name}' has no option '{key}' (valid: {valid})")
        self.options = {o.name: options.get(o.name, o.default) for o in self.options_spec}
        self.given_options = frozenset(options)     # set by the pipeline, not defaulted

    def set_default_option(self, name: str, value) -> None:
        """Use `value` for option `name` unless the pipeline gave it explicitly (e.g. the
        launch's num_warps for `convert-triton-to-tritongpu`)."""
        if name in self.options and name not in self.given_options:
            self.options[name] = value

    @classmethod
    def doc(cls) -> str:
        """The pass's description: its docstring, with whitespace tidied."""
        return " ".join((cls.__doc__ or "").split())

    def run(self, module: Module, ctx: PassContext) -> Module | None:
        """Transform `module` in place (or return a new module)."""
        raise NotImplementedError(f"pass {self.name} has no run()")


PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make a pass selectable by name in pipelines."""
    if cls.name in PASSES and PASSES[cls.name] is not cls:
        raise ValueError(f"two passes named '{cls.name}'")
    PASSES[cls.name] = cls
    return cls
