"""What a pass is: a small class with a registry name, typed options and a docstring.

A pass subclasses `Pass`, sets `name` (the pipeline-string name), `stage` ("ttir", "ttgir" or
"llir"), declares its options as `Option`s and the module properties it `requires`,
`establishes` and `invalidates` (compiler.passes.requirements), and implements `run(module, ctx)`.
An option may be checked (`check`/`allowed`: a bad value is a `PassOptionError` naming the pass
and the option, as launch options are checked) and may take its value from a compile option
(`from_compile`) when the pipeline leaves it out: `bind(options)`, which the pass manager calls
when it builds the pipeline, fills those from the one frozen compile-options object. It reports
which rewrite patterns fired through `ctx.record_pattern(name)`; it never snapshots or times
itself (the pass manager's instrumentation does that). `@register_pass` puts it in `PASSES`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from compiler.ir.core import Module


class PassOptionError(ValueError):
    """A pass option with an unknown name or a value the pass does not allow."""


@dataclass(frozen=True)
class Option:
    """A typed pass option: `pass{name=value}` in a pipeline string. `check` (optional) says
    whether a value is allowed, `allowed` says in words what is; `from_compile` names the
    compile option that supplies the value when the pipeline does not give one."""

    name: str
    type: type
    default: Any
    help: str = ""
    check: Callable[[Any], bool] | None = None
    allowed: str = ""
    from_compile: str | None = None

    def validate(self, pass_name: str, value: Any) -> Any:
        """`value` if the option allows it; `PassOptionError` naming pass and option if not."""
        if not _has_type(value, self.type):
            raise PassOptionError(f"pass '{pass_name}': option '{self.name}' takes a "
                                  f"{self.type.__name__}, not {value!r}")
        if self.check is not None and not self.check(value):
            raise PassOptionError(f"pass '{pass_name}': option '{self.name}' = {value!r} is not "
                                  f"allowed; it must be {self.allowed or 'a valid value'}")
        return value

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


def _has_type(value: Any, expected: type) -> bool:
    """Whether `value` is of an option's type (a bool is no int; an int is a float)."""
    if expected is bool or isinstance(value, bool):
        return expected is bool and isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float))
    return isinstance(value, expected)


@dataclass
class PassContext:
    """Handed to each pass run: compile options and the pattern counter for this run."""

    options: Any = None           # the compile's frozen options object (None: passes run alone)
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
        for key, value in options.items():
            if key not in known:
                valid = ", ".join(known) or "none"
                raise PassOptionError(f"pass '{self.name}' has no option '{key}' "
                                      f"(valid: {valid})")
            known[key].validate(self.name, value)
        self.options = {o.name: options.get(o.name, o.default) for o in self.options_spec}
        self.given_options = frozenset(options)     # set by the pipeline, not defaulted
        self.compile_options = None                 # the frozen options `bind` received

    def bind(self, compile_options) -> None:
        """Take the compile's frozen options: every option the pipeline left out and that
        names a `from_compile` field gets that field's value (checked like a given one)."""
        self.compile_options = compile_options
        for spec in self.options_spec:
            if spec.from_compile is None or spec.name in self.given_options:
                continue
            value = getattr(compile_options, spec.from_compile)
            self.options[spec.name] = spec.validate(self.name, value)

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
