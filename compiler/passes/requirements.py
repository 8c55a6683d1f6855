"""What passes need and give: module properties, checked before each pass and over whole pipelines.

A pass class declares `requires` (properties the module must have before it runs),
`establishes` (properties it makes true) and `invalidates` (properties it may make false), as
tuples of the `Property` objects below. Each property can check a module and names the pass
that provides it, so an order that cannot work stops with a `PassOrderError` that says what is
missing and what to add ("coalesce needs ttgir (every tensor has a layout; ttg.num-warps set):
add convert-triton-to-tritongpu before it") instead of an internal error deep inside the pass.

Two checks use the declarations: `check_before_pass(pass_, module, ...)` (the pass manager,
before each pass, against the real module) and `check_pipeline(passes, stage, ...)` (before
compiling: editors, `--passes`, the compile driver), which simulates the declarations along the
pipeline without running it; `check_pipelines({"ttir": ..., "ttgir": ...})` chains both stages. `check_stage_input(module, stage)` checks what a later stage (the
llir lowering) needs from the module the previous stage left.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from compiler.dialects.tt import CallOp
from compiler.ir.core import Module
from compiler.ir.types import TensorType

from .manager import PipelineError


@dataclass(frozen=True, eq=False)
class Property:
    """A checkable fact about a module: `describe` is the phrase users read, `level` the IR
    level it belongs to ("ttgir" for layouts), `provider` the pass that establishes it and
    `provider_stage` the pipeline that pass belongs in. `find_violation(module)` returns a
    short description of the first place the property fails, or None when it holds."""

    key: str
    describe: str
    level: str
    provider: str
    provider_stage: str
    find_violation: Callable[[Module], str | None]

    def holds(self, module: Module) -> bool:
        """Whether `module` has this property."""
        return self.find_violation(module) is None

    def __repr__(self) -> str:
        return f"Property({self.key})"


def _first_tensor_without_layout(module: Module) -> str | None:
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if isinstance(arg.type, TensorType) and arg.type.encoding is None:
                        return f"a block argument of {op.name} is {arg.type} without a layout"
        for result in op.results:
            if isinstance(result.type, TensorType) and result.type.encoding is None:
                return f"{op.name} makes {result.type} without a layout"
    return None


def _num_warps_missing(module: Module) -> str | None:
    return None if "ttg.num-warps" in module.attributes else "the module has no ttg.num-warps"


def _first_call(module: Module) -> str | None:
    for op in module.walk():
        if isinstance(op, CallOp):
            return f"{op.name} {op.attributes.get('callee')} is left"
    return None


def _shared_not_allocated(module: Module) -> str | None:
    return None if "ttg.shared" in module.attributes else "the module has no ttg.shared"


LAYOUTS = Property("layouts", "every tensor has a layout", "ttgir",
                   "convert-triton-to-tritongpu", "ttgir", _first_tensor_without_layout)
NUM_WARPS = Property("num-warps", "ttg.num-warps set", "ttgir",
                     "convert-triton-to-tritongpu", "ttgir", _num_warps_missing)
INLINED = Property("inlined", "no tt.call left", "ttir", "inline", "ttir", _first_call)
SHARED_ALLOCATED = Property("shared-allocated", "shared memory allocated", "ttgir",
                            "allocate-shared-memory", "ttgir", _shared_not_allocated)

#: Every property, in the order messages list them.
PROPERTIES: tuple[Property, ...] = (LAYOUTS, NUM_WARPS, INLINED, SHARED_ALLOCATED)
#: The ttgir-level properties most ttgir passes need.
TTGIR = (LAYOUTS, NUM_WARPS)

#: What each stage's input must have, from the stage before it (the llir lowering reads
#: layouts and the warp count, and has no lowering for calls).
STAGE_NEEDS: dict[str, tuple[Property, ...]] = {"llir": (LAYOUTS, NUM_WARPS, INLINED)}
#: The stage whose pipeline feeds each stage's input.
PREVIOUS_STAGE = {"ttgir": "ttir", "llir": "ttgir"}


class PassOrderError(PipelineError):
    """A pass (or a stage) would run on a module lacking a property it needs. Names the pass,
    what is missing and which pass provides it."""

    def __init__(self, stage: str, pass_name: str, position: int | None,
                 missing: tuple[Property, ...], detail: str = ""):
        self.stage = stage
        self.pass_name = pass_name
        self.position = position
        self.missing = missing
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        where = (f"{self.stage} pass #{self.position} '{self.pass_name}'"
                 if self.position is not None else self.pass_name)
        needs = "; ".join(_grouped(self.missing))
        fixes = []
        for provider, provider_stage in dict.fromkeys((p.provider, p.provider_stage)
                                                      for p in self.missing):
            # A ttgir property's provider may run in either pipeline (the conversion in a ttir
            # pipeline makes ttgir there); a ttir one belongs before the ttgir stage.
            if self.position is None:
                fixes.append(f"add {provider} to the {provider_stage} pipeline")
            elif provider_stage == self.stage or provider_stage == "ttgir":
                fixes.append(f"add {provider} before it")
            else:
                fixes.append(f"add {provider} to the {provider_stage} pipeline")
        hint = ""
        if self.position is not None and self.stage != "ttgir" and \
                any(p.level == "ttgir" for p in self.missing):
            hint = f" (or move {self.pass_name} to the ttgir pipeline)"
        detail = f", but {self.detail}" if self.detail else ""
        return f"{where} needs {needs}{detail}: {' and '.join(fixes)}{hint}"


def _grouped(props: Iterable[Property]) -> list[str]:
    """`ttgir (every tensor has a layout; ttg.num-warps set)` per level."""
    levels: dict[str, list[str]] = {}
    for prop in props:
        levels.setdefault(prop.level, []).append(prop.describe)
    return [f"{level} ({'; '.join(items)})" for level, items in levels.items()]


def requirements_of(pass_) -> tuple[Property, ...]:
    """The properties a pass (instance or class) declares it requires."""
    return tuple(getattr(pass_, "requires", ()))


def properties_of(module: Module) -> frozenset[Property]:
    """The properties `module` has now."""
    return frozenset(p for p in PROPERTIES if p.holds(module))


def check_before_pass(pass_, module: Module, stage: str, position: int) -> None:
    """Raise `PassOrderError` when `module` lacks a property `pass_` requires."""
    missing = [(p, p.find_violation(module)) for p in requirements_of(pass_)]
    missing = [(p, why) for p, why in missing if why is not None]
    if missing:
        raise PassOrderError(stage, pass_.name, position, tuple(p for p, _ in missing),
                             missing[0][1])


def check_stage_input(module: Module, stage: str) -> None:
    """Raise `PassOrderError` when `module` lacks what `stage` (e.g. "llir") needs from the
    stage before it."""
    missing = [(p, p.find_violation(module)) for p in STAGE_NEEDS.get(stage, ())]
    missing = [(p, why) for p, why in missing if why is not None]
    if missing:
        raise PassOrderError(PREVIOUS_STAGE.get(stage, stage), f"the {stage} stage", None,
                             tuple(p for p, _ in missing), missing[0][1])


def simulate(passes, held: Iterable[Property]) -> frozenset[Property]:
    """The properties held after `passes`, from the declarations alone (no IR is touched)."""
    state = set(held)
    for pass_ in passes:
        state -= set(getattr(pass_, "invalidates", ()))
        state |= set(getattr(pass_, "establishes", ()))
    return frozenset(state)


def check_pipeline(passes, stage: str, given: Iterable[Property] | None = None,
                   then: str | None = None) -> frozenset[Property]:
    """Check a pipeline before running it: every pass's requirements must be met by `given`
    (the properties of the stage's input; by default what the stage's default input has) and
    by the passes before it; with `then` (e.g. "llir"), the pipeline's output must also have
    what that stage needs. `passes` is a pipeline string, a list, or `Pass` instances.
    Returns the properties held at the end; raises `PassOrderError` on the first problem."""
    from .manager import parse_pipeline
    passes = parse_pipeline(passes)
    held = set(default_stage_input(stage) if given is None else given)
    for position, pass_ in enumerate(passes):
        missing = tuple(p for p in requirements_of(pass_) if p not in held)
        if missing:
            raise PassOrderError(stage, pass_.name, position, missing,
                                 f"nothing before it in the {stage} pipeline provides that")
        held = set(simulate([pass_], held))
    if then is not None:
        missing = tuple(p for p in STAGE_NEEDS.get(then, ()) if p not in held)
        if missing:
            raise PassOrderError(stage, f"the {then} stage", None, missing,
                                 f"the {stage} pipeline does not provide that")
    return frozenset(held)


def check_pipelines(pipelines, given: Iterable[Property] = ()) -> frozenset[Property]:
    """Check the ttir and ttgir pipelines of one compile together (`pipelines`: stage ->
    pipeline; a stage not named uses its default), from `given`, the properties of the ttir
    input (pass `properties_of(module)` of the front end's module for a precise answer; the
    default assumes none, so a pipeline without `inline` is refused as if the kernel had
    calls), through to what the llir lowering needs. Returns the properties the lowering gets;
    raises `PassOrderError` on the first problem. For pipeline editors and `--passes`."""
    from .manager import DEFAULT_PIPELINES
    held = frozenset(given)
    for stage, then in (("ttir", None), ("ttgir", "llir")):
        held = check_pipeline(pipelines.get(stage, DEFAULT_PIPELINES[stage]), stage, held, then)
    return held


def default_stage_input(stage: str) -> frozenset[Property]:
    """What a stage's input has when the stages before it ran their default pipelines (the
    front end's ttir has none of the properties)."""
    if stage not in PREVIOUS_STAGE:
        return frozenset()
    from .manager import DEFAULT_PIPELINES
    previous = PREVIOUS_STAGE[stage]
    return check_pipeline(DEFAULT_PIPELINES.get(previous, ""), previous)


def describe_pass(pass_) -> dict:
    """A pass's declarations as plain data (for the explorer and docs)."""
    keys = lambda props: [p.describe for p in props]  # noqa: E731
    return {"requires": keys(requirements_of(pass_)),
            "establishes": keys(getattr(pass_, "establishes", ())),
            "invalidates": keys(getattr(pass_, "invalidates", ()))}
