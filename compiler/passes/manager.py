"""The pass manager: pipelines from strings or lists, run with instrumentation hooks.

A pipeline is an MLIR-style string (`"inline,canonicalize,cse,licm{hoist-loads=false},dce"`,
read by `pipeline_text`, the one grammar), a list of names / `Pass` instances, or a mix.
`PassManager(stage, passes, instrumentations)` runs it on a module; every instrumentation sees each pass before and after it runs (snapshots,
verification and timing live there, never inside passes). Pass names resolve lazily: every
module of `compiler.passes` is imported the first time a name is looked up, so passes other
helpers register (the ttgir ones) are found without this module knowing them.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import time
from dataclasses import dataclass, field

from compiler.ir.core import Module

from .base import PASSES, Pass, PassContext, PassOptionError
from .pipeline_text import (PassSpec, PipelineError, format_pipeline, parse_pipeline_text,
                            suggestion)

DEFAULT_PIPELINES: dict[str, str] = {
    # Triton's make_ttir: inliner, canonicalizer, combine, reorder-broadcast, cse, symbol-dce,
    # loop-unroll (PASSES.md); we add licm here since our ttir already has loops worth hoisting.
    "ttir": "inline,canonicalize,combine,reorder-broadcast,canonicalize,cse,licm,dce,loop-unroll",
    "ttgir": ("convert-triton-to-tritongpu,coalesce,remove-layout-conversions,"
              "optimize-thread-locality,accelerate-matmul,remove-layout-conversions,optimize-dot-operands,"
              "reduce-data-duplication,reorder-instructions,pipeline,allocate-shared-memory"),
    # Triton's make_llir: the lowering to LLVM IR, then LLVM's optimizer (passes/llir.py).
    "llir": "convert-tritongpu-to-llvm,llvm-optimize",
}

ENV_PIPELINE_VARS = {"ttir": "TILE_PIPELINE_TTIR", "ttgir": "TILE_PIPELINE_TTGIR",
                     "llir": "TILE_PIPELINE_LLIR"}


class PassFailure(RuntimeError):
    """A pass raised, or left IR the verifier rejects; names the pass and the reason."""

    def __init__(self, stage: str, pass_name: str, index: int, message: str):
        super().__init__(f"{stage} pass #{index} '{pass_name}' failed: {message}")
        self.stage = stage
        self.pass_name = pass_name
        self.index = index
        self.reason = message


_LOADED = False


def load_all_passes() -> dict[str, type[Pass]]:
    """Import every module of `compiler.passes` (registering its passes); returns `PASSES`."""
    global _LOADED
    if not _LOADED:
        package = importlib.import_module("compiler.passes")
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"compiler.passes.{info.name}")
        _LOADED = True
    return PASSES


def pass_class(name: str, text: str | None = None, column: int | None = None) -> type[Pass]:
    """The registered pass named `name`; otherwise a `PipelineError` (located at `column` of
    the pipeline `text` when given) suggesting the closest names and listing the valid ones."""
    passes = load_all_passes()
    if name not in passes:
        valid = ", ".join(sorted(passes))
        raise PipelineError(f"unknown pass '{name}'{suggestion(name, passes)}; "
                            f"valid passes: {valid}", text, column)
    return passes[name]


def bind_spec(spec: PassSpec, text: str | None = None) -> Pass:
    """The `Pass` a `PassSpec` of the pipeline `text` names, its option texts converted to the
    options' types; errors point at the name or option in `text`."""
    cls = pass_class(spec.name, text, spec.column)
    known = {o.name: o for o in cls.options_spec}
    options: dict = {}
    for option in spec.options:
        if option.key not in known:
            valid = ", ".join(known) or "none"
            raise PipelineError(f"pass '{spec.name}' has no option '{option.key}'"
                                f"{suggestion(option.key, known)} (valid options: {valid})",
                                text, option.column)
        try:
            options[option.key] = known[option.key].convert(option.value)
        except ValueError as err:
            raise PipelineError(f"pass '{spec.name}': {err}", text, option.column) from None
    try:
        return cls(**options)
    except PassOptionError as err:
        raise PipelineError(str(err), text, spec.column) from None


def parse_pipeline(spec) -> list[Pass]:
    """Passes from a pipeline string, a list of names/strings/`Pass` instances, or None (empty)."""
    if spec is None:
        return []
    if isinstance(spec, Pass):
        return [spec]
    if isinstance(spec, str):
        return [bind_spec(item, spec) for item in parse_pipeline_text(spec)]
    passes: list[Pass] = []
    for entry in spec:
        if isinstance(entry, Pass):
            passes.append(entry)
        elif isinstance(entry, type) and issubclass(entry, Pass):
            passes.append(entry())
        elif isinstance(entry, str):
            passes.extend(parse_pipeline(entry))
        else:
            raise PipelineError(f"a pipeline entry must be a pass name or Pass, not {entry!r}")
    return passes


def pipeline_text(passes: list[Pass]) -> str:
    """The pipeline string that reproduces `passes` (options that differ from defaults shown)."""
    return format_pipeline(
        (p.name, {o.name: p.options[o.name] for o in p.options_spec
                  if p.options[o.name] != o.default}) for p in passes)


@dataclass
class PipelineOptions:
    """The pipeline per stage a compile uses; stages not named use `DEFAULT_PIPELINES`."""

    pipelines: dict = field(default_factory=dict)   # stage -> pipeline string or list

    def for_stage(self, stage: str):
        """The pipeline for `stage`: the one given, else the default."""
        return self.pipelines.get(stage, DEFAULT_PIPELINES.get(stage, ""))


def pipeline_from_env(environ=None, base: dict | None = None) -> PipelineOptions:
    """Read TILE_PIPELINE_TTIR / _TTGIR / _LLIR once (at the edge) into `PipelineOptions`;
    `base` (e.g. `compile(..., pipelines=...)`) wins over the environment."""
    environ = os.environ if environ is None else environ
    pipelines = {stage: environ[var] for stage, var in ENV_PIPELINE_VARS.items() if var in environ}
    pipelines.update(base or {})
    return PipelineOptions(pipelines)


@dataclass
class PassRun:
    """What the manager hands instrumentations about one pass run."""

    stage: str
    pass_: Pass
    position: int           # position inside this stage's pipeline
    ctx: PassContext
    wall_ms: float = 0.0
    error: BaseException | None = None


class PassInstrumentation:
    """MLIR-style hooks around a pipeline and each pass; subclasses override what they need.
    `after_pass` may raise `PassFailure` (e.g. when verification fails)."""

    def before_pipeline(self, stage: str, module: Module) -> None:
        """Called once before the stage's first pass."""

    def before_pass(self, run: PassRun, module: Module) -> None:
        """Called before each pass."""

    def after_pass(self, run: PassRun, module: Module) -> None:
        """Called after each pass that returned normally."""

    def after_pass_failed(self, run: PassRun, module: Module) -> None:
        """Called after a pass raised (`run.error` holds the exception)."""

    def after_pipeline(self, stage: str, module: Module) -> None:
        """Called once after the stage's last pass."""


class PassManager:
    """Runs one stage's pipeline over a module, calling every instrumentation around each pass.

    `options` (the compile's frozen options object, optional) is bound to every pass when the
    pipeline is built (`Pass.bind`: options the pipeline left out take the compile's values,
    checked) and handed to each run as `ctx.options`. A pass whose `stage` is not this
    manager's is refused here, before anything runs."""

    def __init__(self, stage: str, passes=None, instrumentations=(), options=None):
        self.stage = stage
        self.passes = parse_pipeline(DEFAULT_PIPELINES.get(stage, "") if passes is None
                                     else passes)
        self.instrumentations = list(instrumentations)
        self.options = options
        for pass_ in self.passes:
            if (pass_.stage == "llir") != (stage == "llir"):
                raise PipelineError(f"pass '{pass_.name}' belongs to the {pass_.stage} stage; "
                                    f"it cannot run in the {stage} pipeline")
            if options is not None:
                try:
                    pass_.bind(options)
                except PassOptionError as err:
                    raise PipelineError(str(err)) from None

    def run(self, module: Module, ctx_options=None) -> Module:
        """Run every pass in order; returns the (possibly new) module. A pass that raises ends
        the run with `PassFailure` naming it; a pass whose declared requirements the module
        lacks does not run: `PassOrderError` says what is missing and which pass provides it.
        `ctx_options` overrides the bound options object handed to the passes as `ctx.options`."""
        from .requirements import check_before_pass
        options = self.options if ctx_options is None else ctx_options
        for inst in self.instrumentations:
            inst.before_pipeline(self.stage, module)
        for position, pass_ in enumerate(self.passes):
            check_before_pass(pass_, module, self.stage, position)
            run = PassRun(self.stage, pass_, position, PassContext(options))
            for inst in self.instrumentations:
                inst.before_pass(run, module)
            start = time.perf_counter()
            try:
                result = pass_.run(module, run.ctx)
            except PassFailure:
                raise
            except Exception as err:  # a pass bug or an unsupported input: name the pass
                run.wall_ms = (time.perf_counter() - start) * 1e3
                run.error = err
                for inst in self.instrumentations:
                    inst.after_pass_failed(run, module)
                raise PassFailure(self.stage, pass_.name, position,
                                  f"{type(err).__name__}: {err}") from err
            run.wall_ms = (time.perf_counter() - start) * 1e3
            if isinstance(result, Module):
                module = result
            for inst in self.instrumentations:
                inst.after_pass(run, module)
        for inst in self.instrumentations:
            inst.after_pipeline(self.stage, module)
        return module
