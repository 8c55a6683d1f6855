"""Differential checking of a pipeline: which pass first changes what a kernel computes.

`check_passes(ttir, grid, args)` runs the interpreter on the unoptimized ttir (the reference)
and on the module after every ttir and ttgir pass (the interpreter executes ttgir by ignoring
its layouts), with the same inputs, and compares every array argument afterwards with the
reference; the `DifferentialReport` names the first pass whose results differ (or whose output
the interpreter cannot run), the number of mismatched elements, and that pass's IR diff.
`check_passes_on_gpu` does the same on the GPU with pipelines cut after each pass (each cut is
compiled through the llir stage; `inline` and `convert-triton-to-tritongpu`, which the
lowering needs, are added to a cut that lacks them). `bisect(path, kernel=None)` is the entry point of `tile-explore bisect`: it takes
a kernel script (run under the interpreter, its recorded launch arguments reused with their
float contents replaced by seeded random numbers) or a .ttir/.ttgir file (inputs made up from
the kernel's signature).
"""
from __future__ import annotations

import difflib
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from compiler.ir.core import Module
from compiler.ir.parser import parse_module
from compiler.ir.printer import print_module
from compiler.passes.manager import DEFAULT_PIPELINES, PassInstrumentation, PassManager
from compiler.runtime.recording import LaunchObserver

#: The stages whose passes the interpreter can run after (the llir stage's input is ttgir).
INTERPRETED_STAGES = ("ttir", "ttgir")


@dataclass
class PassCheck:
    """One pass's module checked against the reference."""

    stage: str
    position: int               # the pass's position in its stage's pipeline
    name: str
    changed: bool               # did the pass change the IR (else its result is the previous)
    mismatched: int = 0         # array elements that differ from the reference
    total: int = 0              # array elements compared
    error: str | None = None    # the interpreter (or the pass) failed: why

    @property
    def ok(self) -> bool:
        return self.error is None and self.mismatched == 0

    @property
    def label(self) -> str:
        return f"{self.stage} pass #{self.position} '{self.name}'"


@dataclass
class DifferentialReport:
    """The result of checking one kernel's pipeline pass by pass."""

    kernel: str
    checks: list = field(default_factory=list)      # PassCheck, in pipeline order
    first: PassCheck | None = None                  # the first pass that differs
    ir_before: str = ""                             # the IR before / after `first`
    ir_after: str = ""
    reference_error: str | None = None              # the reference run itself failed
    pipeline_error: str | None = None               # the pipeline cannot run (pass order, ...)
    mode: str = "interpreter"                       # or "gpu"

    @property
    def ok(self) -> bool:
        return self.first is None and self.reference_error is None and \
            self.pipeline_error is None

    def diff(self, context: int = 3) -> str:
        """The unified diff of the first differing pass's IR ("" when none differs)."""
        if self.first is None:
            return ""
        return "".join(difflib.unified_diff(
            self.ir_before.splitlines(keepends=True), self.ir_after.splitlines(keepends=True),
            f"before {self.first.name}", f"after {self.first.name}", n=context))

    def summary(self) -> str:
        """One paragraph: the first differing pass and how, or that every pass agrees."""
        if self.reference_error is not None:
            return f"{self.kernel}: the reference run failed: {self.reference_error}"
        if self.pipeline_error is not None and self.first is None:
            return f"{self.kernel}: the pipeline cannot run: {self.pipeline_error}"
        if self.first is None:
            return (f"{self.kernel}: all {len(self.checks)} passes keep the reference results "
                    f"({self.mode})")
        first = self.first
        how = (f"{first.error}" if first.error else
               f"{first.mismatched} of {first.total} elements differ from the unoptimized "
               f"reference")
        return f"{self.kernel}: first differing pass: {first.label} ({self.mode}): {how}"


class _Snapshots(PassInstrumentation):
    """Keeps a copy of the module after every pass (and the pass that failed, if one did)."""

    def __init__(self):
        self.taken: list = []        # (stage, position, name, module copy | None, error)

    def after_pass(self, run, module) -> None:
        self.taken.append((run.stage, run.position, run.pass_.name, module.clone(), None))

    def after_pass_failed(self, run, module) -> None:
        self.taken.append((run.stage, run.position, run.pass_.name, None,
                           f"the pass failed: {type(run.error).__name__}: {run.error}"))


# ---- running and comparing --------------------------------------------------------------------
def copy_arguments(args) -> list:
    """Fresh copies of the arrays among `args` (so each run starts from the same inputs)."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _interpret(module: Module, grid, args, outputs=None) -> list:
    """The arrays among `outputs` (argument indices; None: every array) after interpreting
    `module` on copies of `args`."""
    from compiler.runtime.interpreter import interpret
    args = copy_arguments(args)
    interpret(module, grid, args)
    return [a for i, a in enumerate(args) if isinstance(a, np.ndarray)
            and (outputs is None or i in outputs)]


def written_arguments(args, after: list) -> list:
    """The indices of the array arguments a run changed (its outputs); every array's index
    when it changed none."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    changed = [i for i, a in zip(arrays, after)
               if a.shape != args[i].shape or not np.array_equal(a, args[i], equal_nan=True)]
    return changed or arrays


def count_mismatches(want: list, got: list, rtol: float, atol: float) -> tuple[int, int]:
    """(elements that differ, elements compared) between two lists of arrays."""
    bad = total = 0
    for w, g in zip(want, got):
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        total += w.size
        if w.shape != g.shape:
            bad += w.size
            continue
        bad += int(np.sum(~np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)))
    return bad, total


def _compile_options(options: dict | None):
    from compiler.stage_state import CompileOptions
    return CompileOptions.from_env({**(options or {}), "build_cubin": False,
                                    "build_sass": False})


def snapshot_passes(ttir: Module, pipelines: dict | None = None, options: dict | None = None,
                    stages=INTERPRETED_STAGES) -> tuple[list, str | None]:
    """Run the ttir and ttgir pipelines (the given ones, else the defaults) over a copy of
    `ttir`: the module after every pass as (stage, position, name, module or None, error), and
    why the pipeline stopped before a pass ran (a refused order), or None."""
    opts = _compile_options(options)
    snapshots = _Snapshots()
    module = ttir.clone()
    for stage in stages:
        pipeline = (pipelines or {}).get(stage, opts.pipelines.get(stage,
                                                                    DEFAULT_PIPELINES[stage]))
        manager = PassManager(stage, pipeline, [snapshots], opts)
        try:
            module = manager.run(module)
        except Exception as err:  # a pass failed (its check says so) or never ran: reported
            failed_pass = snapshots.taken and snapshots.taken[-1][3] is None
            return snapshots.taken, None if failed_pass else f"{type(err).__name__}: {err}"
    return snapshots.taken, None


def check_passes(ttir: Module, grid, args, pipelines: dict | None = None,
                 options: dict | None = None, rtol: float = 1e-3, atol: float = 1e-3,
                 kernel: str | None = None, outputs=None) -> DifferentialReport:
    """Interpret `ttir` (unoptimized: the reference) and the module after every ttir and ttgir
    pass with copies of `args`; report the first pass whose outputs differ (see the module).
    `outputs`: the indices of the arguments to compare (default: the arrays the reference
    run wrote)."""
    name = kernel or _kernel_name(ttir)
    report = DifferentialReport(name)
    reference_text = print_module(ttir)
    try:
        every = _interpret(ttir, grid, args)
    except Exception as err:  # the reference cannot run on these inputs: say so
        report.reference_error = f"{type(err).__name__}: {err}"
        return report
    outputs = set(written_arguments(args, every) if outputs is None else outputs)
    want = _interpret(ttir, grid, args, outputs)
    previous_text, previous = reference_text, (0, sum(w.size for w in want), None)
    taken, report.pipeline_error = snapshot_passes(ttir, pipelines, options)
    for stage, position, pass_name, module, error in taken:
        text = print_module(module) if module is not None else previous_text
        check = PassCheck(stage, position, pass_name, changed=text != previous_text)
        if error is not None:
            check.error = error
        elif check.changed:
            try:
                check.mismatched, check.total = count_mismatches(
                    want, _interpret(module, grid, args, outputs), rtol, atol)
            except Exception as err:  # the pass made IR the interpreter cannot run
                check.error = f"the interpreter failed after it: {type(err).__name__}: {err}"
        else:
            check.mismatched, check.total, check.error = previous
        report.checks.append(check)
        if not check.ok and report.first is None:
            report.first, report.ir_before, report.ir_after = check, previous_text, text
        previous_text, previous = text, (check.mismatched, check.total, check.error)
    return report


def _kernel_name(module: Module) -> str:
    for func in module.functions():
        return func.attributes["sym_name"].value
    return "kernel"


# ---- the GPU path -----------------------------------------------------------------------------
def _cut_pipelines(pipelines: dict, stage: str, upto: int) -> dict:
    """The ttir/ttgir pipelines cut after pass `upto` of `stage` (a ttir cut keeps only the
    conversion to ttgir, so the cut module can be lowered)."""
    ttir = pipelines["ttir"].split(",") if pipelines["ttir"] else []
    ttgir = pipelines["ttgir"].split(",") if pipelines["ttgir"] else []
    if stage == "ttir":
        cut = ttir[:upto + 1]
        return {"ttir": ",".join(cut if "inline" in cut else ["inline", *cut]),
                "ttgir": "convert-triton-to-tritongpu"}
    return {"ttir": ",".join(ttir), "ttgir": ",".join(ttgir[:upto + 1])}


def _gpu_run(ttir: Module, pipelines: dict, options: dict | None, grid, args) -> list:
    from compiler.compiler import compile as compile_module
    from compiler.runtime.arrays import to_device, to_host
    from compiler.runtime.driver import synchronize
    compiled = compile_module(parse_module(print_module(ttir)),
                              options={**(options or {}), "build_sass": False},
                              pipelines=pipelines)
    device = [to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
              for a in args]
    compiled.launch(grid, device)
    synchronize()
    return [to_host(d) for a, d in zip(args, device) if isinstance(a, np.ndarray)]


def check_passes_on_gpu(ttir: Module, grid, args, pipelines: dict | None = None,
                        options: dict | None = None, rtol: float = 1e-3, atol: float = 1e-3,
                        kernel: str | None = None, outputs=None) -> DifferentialReport:
    """On the GPU: compile pipelines cut after each ttir and ttgir pass, launch each on copies
    of `args` and compare with the cut after no pass (the reference); the first pass whose
    outputs differ, as `check_passes` reports it."""
    opts = _compile_options(options)
    full = {stage: (pipelines or {}).get(stage, opts.pipelines.get(stage,
                                                                   DEFAULT_PIPELINES[stage]))
            for stage in INTERPRETED_STAGES}
    report = DifferentialReport(kernel or _kernel_name(ttir), mode="gpu")
    reference = {"ttir": "inline", "ttgir": "convert-triton-to-tritongpu"}  # what llir needs
    try:
        every = _gpu_run(ttir, reference, options, grid, args)
    except Exception as err:  # the reference cannot compile or run: say so
        report.reference_error = f"{type(err).__name__}: {err}"
        return report
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    keep = set(written_arguments(args, every) if outputs is None else outputs)
    want = [a for i, a in zip(arrays, every) if i in keep]
    previous_text = print_module(ttir)
    taken, report.pipeline_error = snapshot_passes(ttir, full, options)
    for stage, position, pass_name, module, error in taken:
        text = print_module(module) if module is not None else previous_text
        check = PassCheck(stage, position, pass_name, changed=text != previous_text, error=error)
        if error is None:
            try:
                got = _gpu_run(ttir, _cut_pipelines(full, stage, position), options, grid, args)
                got = [a for i, a in zip(arrays, got) if i in keep]
                check.mismatched, check.total = count_mismatches(want, got, rtol, atol)
            except Exception as err:  # the cut does not compile or launch: the pass's doing
                check.error = f"the cut after it fails: {type(err).__name__}: {err}"
        report.checks.append(check)
        if not check.ok and report.first is None:
            report.first, report.ir_before, report.ir_after = check, previous_text, text
        previous_text = text
    return report


# ---- inputs -----------------------------------------------------------------------------------
def randomize(args, seed: int = 0) -> list:
    """Copies of `args` with every float array refilled with seeded standard-normal numbers
    (integer arrays, which often hold indices, and scalars are kept)."""
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating):
            a = rng.standard_normal(a.shape).astype(a.dtype)
        elif isinstance(a, np.ndarray):
            a = a.copy()
        out.append(a)
    return out


def _as_numpy(value):
    """A numpy copy of an array argument (numpy, torch, DeviceArray); other values as they are."""
    if isinstance(value, (bool, int, float, np.generic)) or value is None:
        return value
    from compiler.runtime.arrays import to_host
    try:
        return np.array(to_host(value))
    except Exception:  # not an array: a value the interpreter takes as it is
        return value


def signature_arguments(module: Module, seed: int = 0, size: int | None = None) -> list:
    """Made-up arguments for a kernel read from a file: a random array of `size` elements per
    pointer (default: four times the largest tensor in the module) and `size` for every
    integer (so `offsets < n` masks keep accesses in bounds), 1.0 for every float."""
    from compiler.dialects.tt import PointerType
    from compiler.ir.types import FloatType, IntegerType, TensorType
    func = next(iter(module.functions()))
    largest = max([int(np.prod(op_result.type.shape)) for op in module.walk()
                   for op_result in op.results if isinstance(op_result.type, TensorType)]
                  or [1])
    size = size or 4 * largest
    rng = np.random.default_rng(seed)
    args = []
    for arg in func.body.args:
        t = arg.type
        if isinstance(t, PointerType):
            dtype = _numpy_dtype(t.pointee)
            data = rng.standard_normal(size) if np.issubdtype(dtype, np.floating) else \
                rng.integers(0, 4, size)
            args.append(data.astype(dtype))
        elif isinstance(t, IntegerType):
            args.append(size if t.width > 1 else True)
        elif isinstance(t, FloatType):
            args.append(1.0)
        else:
            args.append(0)
    return args


def _numpy_dtype(element) -> np.dtype:
    text = str(element)
    table = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32,
             "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
    return np.dtype(table.get(text, np.float32))


# ---- bisect -----------------------------------------------------------------------------------
@dataclass
class KernelCase:
    """A kernel to bisect: its unoptimized ttir, compile options, a grid and arguments."""

    name: str
    ttir: Module
    grid: tuple
    args: list
    options: dict = field(default_factory=dict)


class _FirstLaunches(LaunchObserver):
    """A launch observer keeping, per kernel, its first launch's grid and a copy of its
    arguments as they were before the launch (the kernel's inputs)."""

    def __init__(self):
        self.seen: dict = {}         # kernel name -> (trace, grid, arguments)

    def launch_begin(self, entry, grid, args, stream, backend, jit=None, bound=None):
        trace = getattr(entry, "trace", None)
        if trace is not None and trace.kernel_name not in self.seen:
            self.seen[trace.kernel_name] = (trace, tuple(grid),
                                            [_as_numpy(a) for a in args])
        return None

    def launch_end(self, token) -> None:
        """Nothing to do after a launch."""


def cases_from_script(path: str | Path, kernel: str | None = None, seed: int = 0,
                      script_args=()) -> list:
    """Run a kernel script under the interpreter and return, per kernel it launched (only
    `kernel` when given), its unoptimized ttir with its first launch's grid and arguments
    (float arrays refilled with seeded random numbers, see `randomize`)."""
    from compiler.runtime.recording import add_observer, record, remove_observer
    from compiler.triton_alias import install
    path = Path(path)
    saved = sys.argv, list(sys.path)
    install()
    sys.argv = [str(path), *script_args]
    sys.path.insert(0, str(path.resolve().parent))
    launches = _FirstLaunches()
    add_observer(launches)
    try:
        with record(full_compile=False, interpret=True):
            runpy.run_path(str(path), run_name="__main__")
    finally:
        remove_observer(launches)
        sys.argv, sys.path[:] = saved
    cases = []
    for name, (trace, grid, arguments) in launches.seen.items():
        text = trace.stage_inputs.get("ttir") or trace.stages.get("ttir")
        if (kernel is not None and name != kernel) or not text:
            continue
        spec_options = (trace.specialization or {}).get("options") or {}
        options = {k: v for k, v in spec_options.items() if k in ("num_warps", "num_stages")}
        cases.append(KernelCase(name, parse_module(text, f"{name}.ttir"), grid,
                                randomize(arguments, seed), options))
    return cases


def case_from_file(path: str | Path, seed: int = 0, grid=(1,)) -> KernelCase:
    """A .ttir file's kernel with made-up arguments (`signature_arguments`) over `grid`."""
    path = Path(path)
    module = parse_module(path.read_text(), str(path))
    if "ttg.num-warps" in module.attributes:
        raise ValueError(f"{path}: bisect starts from the unoptimized ttir; give the .ttir (or "
                         f"the kernel's script), not a .ttgir")
    return KernelCase(_kernel_name(module), module, tuple(grid),
                      signature_arguments(module, seed))


def bisect(path: str | Path, kernel: str | None = None, pipelines: dict | None = None,
           seed: int = 0, gpu: bool = False, script_args=()) -> list:
    """The first pass that changes each kernel's results: one `DifferentialReport` per kernel
    of a script (or of a .ttir file), checked in the interpreter, or on the GPU (`gpu`)."""
    path = Path(path)
    if path.suffix in (".ttir", ".ttgir"):
        cases = [case_from_file(path, seed)]
    else:
        cases = cases_from_script(path, kernel, seed, script_args)
        if not cases:
            which = f"kernel {kernel!r}" if kernel else "any kernel"
            raise ValueError(f"{path}: the script never launched {which}, so there is nothing "
                             f"to bisect")
    check = check_passes_on_gpu if gpu else check_passes
    return [check(case.ttir, case.grid, case.args, pipelines, case.options, kernel=case.name)
            for case in cases]
