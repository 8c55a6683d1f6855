"""The compiler's one door for tools: everything the explorer asks of the compiler goes here.

    run_file(path, args, interpret=..., pipelines=...)   run a script under the recorder
    recompile(trace, pipelines, kernel=None, isolated=)   compile a recorded kernel again
    list_passes()                                         the registered passes, docs, options
    check_pipeline(text) / parse_stage_overrides(items)   read and validate pipeline strings
    describe_layout(encoding_text, shape)                 a layout's map: owners or offsets/banks,
                                                          and its bases table
    gpu_available() / time_on_gpu(kernel, arguments)      time another build on recorded data
    recompile_for_editor(trace, pipelines, kernel, args)  isolated recompile, timed on a GPU
    bisect(path, kernel=None, pipelines=None)             the first pass that changes results
    parse_kernel_specs(sigs, constexprs)                  --signature / --constexpr for run_file
    compile_with_signature(kernels, text)                 the explorer's signature prompt
    run_under_triton(path, args) / load_triton(path)      the real Triton's per-pass IR and
                                                          stage files, as traces

Settings travel as arguments (never through `os.environ`); the traces it hands back are
`compiler.trace` objects. Errors a user can cause come back as `ToolError`s (a `ValueError`)
whose text has the location and a caret, or, for a script, in `RunResult.error`.
"""
from __future__ import annotations

import ast
import inspect as _pyinspect
import linecache
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import types
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable

from compiler.passes.pipeline_text import (PassSpec, PipelineError, format_item,  # noqa: F401
                                           format_pipeline, parse_pipeline_text,
                                           parse_stage_pipeline)
from compiler.trace import CompileTrace, decode_constexpr

#: The stages whose pass pipelines a tool may replace.
PIPELINE_STAGES = ("ttir", "ttgir", "llir")


class ToolError(ValueError):
    """A request a tool made that the compiler cannot do; the message says why."""


# ---- pipelines and passes -----------------------------------------------------------------------
@dataclass(frozen=True)
class OptionInfo:
    """One option of a registered pass."""

    name: str
    type: str
    default: object
    help: str


@dataclass(frozen=True)
class PassInfo:
    """A registered pass: its pipeline name, its description and its options."""

    name: str
    doc: str
    options: tuple


def list_passes() -> list[PassInfo]:
    """Every registered pass, sorted by name, with its docstring and typed options."""
    from compiler.passes.manager import load_all_passes
    return [PassInfo(name, cls.doc(), tuple(OptionInfo(o.name, o.type.__name__, o.default, o.help)
                                            for o in cls.options_spec))
            for name, cls in sorted(load_all_passes().items())]


def check_pipeline(text: str) -> list[str]:
    """The pass names of a pipeline string, after checking every name and option against the
    registry; a `PipelineError` (with column and caret) otherwise."""
    from compiler.passes.manager import parse_pipeline
    return [p.name for p in parse_pipeline(text)]


def parse_stage_overrides(items: list[str]) -> dict:
    """`["ttgir=coalesce,cse", ...]` (the command line's `--passes`) -> {stage: pipeline},
    each pipeline checked against the registry; a `PipelineError` naming the item otherwise."""
    from compiler.passes.manager import bind_spec
    pipelines: dict = {}
    for item in items:
        stage, specs = parse_stage_pipeline(item, PIPELINE_STAGES)
        pipeline = item.partition("=")[2]
        for spec in specs:
            bind_spec(spec, item)
        if not specs:
            raise PipelineError(f"the {stage} pipeline is empty", item, len(item))
        pipelines[stage] = pipeline.strip()
    return pipelines


def bisect(path: str | Path, kernel: str | None = None, pipelines: dict | None = None,
           seed: int = 0, gpu: bool = False, script_args=()) -> list:
    """Per kernel of a script (or a .ttir file), the first ttir/ttgir pass whose results differ
    from the unoptimized reference, in the interpreter or (`gpu`) with pipelines cut after each
    pass: `compiler.differential.DifferentialReport`s (`summary()`, `checks`, `first`,
    `diff()`)."""
    from compiler.differential import bisect as first_differing_pass
    return first_differing_pass(path, kernel, pipelines, seed=seed, gpu=gpu,
                                script_args=script_args)


# ---- running a script ---------------------------------------------------------------------------
@dataclass
class Progress:
    """How far a running script has got (for a progress line)."""

    kernels: int
    launches: int
    elapsed_s: float

    def line(self) -> str:
        """`running: 3 kernels compiled, 120 launches, 4.2 s`."""
        return (f"running: {self.kernels} kernel(s) compiled, {self.launches} launch(es), "
                f"{self.elapsed_s:.1f} s")


@dataclass
class RunResult:
    """What running a user file produced."""

    traces: list = field(default_factory=list)
    messages: list = field(default_factory=list)     # notes: what was not run and why
    error: str | None = None                          # the user's file failed (file:line + message)
    kernels: dict = field(default_factory=dict)       # kernel name -> JIT function object
    recorder: object = None                           # the recording (launch arguments, ...)
    interrupted: bool = False                         # stopped by Ctrl-C (what ran is kept)


def describe_user_error(error: BaseException, path: Path) -> str:
    """`file:line: message`, the source line and a caret, for an exception raised by a user's
    file. Errors the compiler formats itself (with file:line:col and a caret) keep their text."""
    message = f"{type(error).__name__}: {error}"
    text = str(error)
    already_located = ":" in text.split("\n", 1)[0] and "^" in text   # file:line:col + caret
    if already_located:
        return text
    stack = traceback.extract_tb(error.__traceback__)
    frames = [f for f in stack if Path(f.filename).resolve() == path.resolve()]
    if not frames:
        return message
    frame = frames[-1]
    text = f"{_frame_location(frame)}: {message}\n{_frame_source(frame)}"
    # raised deeper, in a module the script imported or called: show that line as well
    deeper = [f for f in stack[stack.index(frame) + 1:]
              if not f.filename.startswith("<") and not _in_compiler(f.filename)]
    if deeper:
        text += f"\n  raised in {_frame_location(deeper[-1])}:\n{_frame_source(deeper[-1])}"
    return text


def _frame_column(frame) -> int:
    """The 0-based column of a traceback frame (its line's indent when Python has none)."""
    column = getattr(frame, "colno", None)
    if column is None:
        source = linecache.getline(frame.filename, frame.lineno)
        column = len(source) - len(source.lstrip())
    return column


def _frame_location(frame) -> str:
    return f"{frame.filename}:{frame.lineno}:{_frame_column(frame) + 1}"


def _frame_source(frame) -> str:
    """The frame's source line and a caret under its column, indented by four."""
    source = linecache.getline(frame.filename, frame.lineno).rstrip()
    return f"    {source}\n    {' ' * _frame_column(frame)}^"


def _in_compiler(filename: str) -> bool:
    """Whether a file is part of this compiler (its frames are never the user's)."""
    return Path(filename).resolve().is_relative_to(Path(__file__).resolve().parent)


def _syntax_error_text(error: SyntaxError) -> str:
    """`file:line:col: message`, the line and a caret, for a script that does not parse."""
    line = (error.text or "").rstrip("\n")
    column = max(0, (error.offset or 1) - 1)
    return f"{error.filename}:{error.lineno}:{column + 1}: {error.msg}\n    {line}\n    " \
           f"{' ' * column}^"


def _is_jit_function(obj) -> bool:
    return callable(getattr(obj, "warmup", None)) and callable(getattr(obj, "fn", None))


def _function_tree(jit) -> ast.FunctionDef | None:
    """The parsed `def` of a @jit function (None when its source cannot be read)."""
    try:
        tree = ast.parse(textwrap.dedent(_pyinspect.getsource(jit.fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)


def _helpers(jits: dict) -> set:
    """The @jit functions that are helpers, not kernels: those that return a value, and
    those another @jit function of the script calls. They are compiled inside their callers,
    never on their own."""
    trees = {name: _function_tree(obj) for name, obj in jits.items()}
    helpers = set()
    for name, tree in trees.items():
        if tree is None:
            continue
        nodes = [node for statement in tree.body for node in ast.walk(statement)]
        if any(isinstance(node, ast.Return) and node.value is not None for node in nodes):
            helpers.add(name)
        helpers |= {node.func.id for node in nodes if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name) and node.func.id in jits
                    and node.func.id != name}
    return helpers


def _warmup_arguments(jit, given: dict | None = None) -> tuple | None:
    """Signature strings for a kernel's parameters, or None when a constexpr has no default
    and is not in `given` (constexprs from --constexpr).

    Parameters named like pointers get "*fp32", the others "i32"; constexprs take their
    given or default values. This is a guess, so kernels compiled this way are reported as
    such."""
    args, kwargs = [], {}
    given = given or {}
    for param in _pyinspect.signature(jit.fn).parameters.values():
        if "constexpr" in str(param.annotation):
            if param.name in given:
                kwargs[param.name] = given[param.name]
                continue
            if param.default is _pyinspect.Parameter.empty:
                return None
            kwargs[param.name] = param.default
        elif param.name.lower().endswith(("ptr", "_p")) or (len(param.name) == 1 and
                                                             param.name.isupper()):
            args.append("*fp32")
        else:
            args.append("i32")
    return tuple(args), kwargs


class _Ticker:
    """Calls `progress(Progress)` about twice a second from a thread while a script runs."""

    def __init__(self, recorder, progress: Callable | None, period_s: float = 0.5):
        self.recorder, self.progress, self.period_s = recorder, progress, period_s
        self.start = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def snapshot(self) -> Progress:
        return Progress(len(self.recorder.traces), len(self.recorder.launches),
                        time.perf_counter() - self.start)

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.progress(self.snapshot())

    def __enter__(self):
        if self.progress is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self.progress is not None:
            self._thread.join()


def run_file(path: str | Path, script_args: list[str] | None = None, interpret: bool = False,
             pipelines: dict | None = None, only_kernel: str | None = None,
             progress: Callable[[Progress], None] | None = None,
             specs: tuple | None = None) -> RunResult:
    """Run a kernel file as `__main__` (the `triton` alias installed) under the recorder and
    collect the traces of the kernels it compiled. `interpret`: launches run in the interpreter
    (and still compile through every stage); `pipelines`: {stage: pipeline} every compile uses;
    `progress`: called about twice a second while the script runs; `specs`: what
    parse_kernel_specs made of --signature/--constexpr, for kernels the script does not launch.
    Ctrl-C stops the script and keeps what was recorded (`interrupted`)."""
    from compiler.runtime.recording import record
    from compiler.triton_alias import install

    path = Path(path)
    result = RunResult()
    options = {"pipelines": dict(pipelines)} if pipelines else {}
    install()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *(script_args or [])]
    sys.path.insert(0, str(path.resolve().parent))
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    namespace = module.__dict__
    saved_main = sys.modules.get("__main__")
    try:
        with record(interpret=interpret, compile_options=options) as recorder, \
                _Ticker(recorder, progress) as ticker:
            try:
                code = compile(path.read_text(), str(path), "exec")
                sys.modules["__main__"] = module
                exec(code, namespace)       # like runpy, but the globals survive an error
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    result.error = f"{path}: the script exited with status {stop.code}"
            except SyntaxError as error:
                result.error = _syntax_error_text(error)
            except KeyboardInterrupt:
                result.interrupted = True
                seen = ticker.snapshot()
                result.error = (f"{path}: interrupted (Ctrl-C) after {seen.elapsed_s:.1f} s; "
                                f"kept the {seen.kernels} kernel(s) and {seen.launches} "
                                "launch(es) recorded so far")
            except Exception as error:   # the user's code failed: report it, keep what compiled
                result.error = describe_user_error(error, path)
            if not result.interrupted:
                _warm_up_unlaunched(namespace, recorder, result, specs or ({}, {}, {}))
        result.traces = list(recorder.traces)
        result.recorder = recorder
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    _report_compile_failures(recorder, result, bool(pipelines))
    if only_kernel:
        result.traces = [t for t in result.traces if t.kernel_name == only_kernel]
        if not result.traces:
            result.messages.append(f"no kernel named {only_kernel!r} was compiled")
    return result


def _report_compile_failures(recorder, result: RunResult, pipelines_given: bool) -> None:
    """Full compiles that failed while the interpreter ran the kernel: an error when the user
    gave pipelines (their pipeline broke the compile), a note otherwise."""
    for name, message in recorder.compile_failures:
        text = f"{name}: the full compile failed: {message}"
        if pipelines_given and not result.error:
            result.error = text + "\n  (with the pipelines given by --passes)"
        elif pipelines_given:
            result.messages.append(text)


def _warm_up_unlaunched(namespace: dict, recorder, result: RunResult, specs: tuple) -> None:
    """Compile the kernels given a --signature, and those defined but never launched when
    their signature can be guessed (constexprs from --constexpr or their defaults)."""
    from compiler.signature_spec import SpecError, bind_spec
    signatures, common, per_kernel = specs
    script = Path(namespace.get("__file__", "."))
    compiled = {trace.kernel_name for trace in recorder.traces}
    why = "the script stopped with an error first" if result.error else \
        "not launched by the script"
    jits = {getattr(obj.fn, "__name__", name): obj for name, obj in namespace.items()
            if _is_jit_function(obj)}
    result.kernels.update(jits)
    problems = [f"--signature/--constexpr name a kernel {name!r} that the script "
                f"does not define (its kernels: {', '.join(sorted(jits)) or 'none'})"
                for name in list(signatures) + list(per_kernel) if name not in jits]
    known = {p.name for obj in jits.values()
             for p in _pyinspect.signature(obj.fn).parameters.values()
             if "constexpr" in str(p.annotation)}
    problems += [f"--constexpr {name}: no kernel of the script has a constexpr named {name!r} "
                 f"(theirs: {', '.join(sorted(known)) or 'none'})"
                 for name in common if name not in known]
    helpers = _helpers(jits)
    for kernel_name, obj in jits.items():
        if kernel_name in signatures:
            spec = signatures[kernel_name]
            try:
                args, kwargs = bind_spec(obj, spec, common)
                obj.warmup(*args, grid=(1,), **kwargs)
                result.messages.append(f"{kernel_name}: compiled with --signature "
                                       f"({', '.join(args)})"
                                       + "".join(f" {k}={v!r}" for k, v in kwargs.items()))
            except SpecError as error:
                problems.append(str(error))
            except Exception as error:
                problems.append(f"{kernel_name}: compiling it with --signature "
                                f"{spec.describe()} failed: {describe_user_error(error, script)}")
            continue
        if kernel_name in compiled or kernel_name in helpers:
            continue
        guess = _warmup_arguments(obj, {**common, **per_kernel.get(kernel_name, {})})
        if guess is None:
            result.messages.append(f"{kernel_name}: {why}, and a constexpr parameter has no "
                                   "default, so it was not compiled (give it with --signature "
                                   f"'{kernel_name}=TYPES' --constexpr NAME=VALUE)")
            continue
        args, kwargs = guess
        try:
            obj.warmup(*args, grid=(1,), **kwargs)
            result.messages.append(f"{kernel_name}: {why}; compiled with guessed signature "
                                   f"({', '.join(args)}) and no timings (give the real one "
                                   f"with --signature '{kernel_name}=TYPES')")
        except Exception as error:
            result.messages.append(f"{kernel_name}: {why}, and compiling it with a guessed "
                                   f"signature failed: {type(error).__name__}: {error}")
    if problems:
        result.error = "\n".join(([result.error] if result.error else []) + problems)


def compile_with_signature(kernels: dict, text: str) -> CompileTrace:
    """Compile a kernel of a run (`kernels`: RunResult.kernels) for the explorer's prompt text
    `KERNEL=TYPE,TYPE,... [NAME=VALUE ...]`; its trace, or ToolError saying what is wrong (the
    column with a caret, or the kernel's def line)."""
    from compiler.signature_spec import SpecError, bind_spec, parse_prompt
    try:
        spec = parse_prompt(text)
        if spec.kernel not in kernels:
            raise SpecError(f"no kernel named {spec.kernel!r} (kernels: "
                            f"{', '.join(sorted(kernels)) or 'none'})")
        args, kwargs = bind_spec(kernels[spec.kernel], spec, {})
        compiled = kernels[spec.kernel].warmup(*args, grid=(1,), **kwargs)
    except SpecError as error:
        raise ToolError(str(error)) from None
    except Exception as error:           # a compile error of the user's kernel
        raise ToolError(describe_user_error(error, Path("."))) from None
    if getattr(compiled, "trace", None) is None:
        raise ToolError(f"{spec.kernel}: the compile recorded no trace")
    return compiled.trace


def parse_kernel_specs(signatures: list, constexprs: list) -> tuple:
    """--signature and --constexpr option texts -> the `specs` of run_file; ToolError with
    the column and a caret for a malformed one."""
    from compiler.signature_spec import SpecError, parse_specs
    try:
        return parse_specs(signatures, constexprs)
    except SpecError as error:
        raise ToolError(str(error)) from None


def dump_traces(traces: list, folder: str | Path) -> None:
    """Write traces the way `--dump` and TILE_KERNEL_DUMP do (one folder per kernel)."""
    from compiler.dump import dump_traces as write
    write(traces, Path(folder))


# ---- recompiling --------------------------------------------------------------------------------
def recorded_options(trace: CompileTrace) -> dict:
    """The compile options a trace recorded (every field of `CompileOptions` it has), as
    keyword arguments for `compile`; options the driver no longer knows are left out."""
    from compiler.compiler import CompileOptions
    known = {f.name: f for f in fields(CompileOptions)}
    recorded = (trace.specialization or {}).get("options") or {}
    options = {}
    for key, value in recorded.items():
        if key in known:
            options[key] = tuple(value) if isinstance(value, list) else value
    return options


def recorded_constexprs(trace: CompileTrace) -> dict | None:
    """The constexpr values of a trace (from their JSON record), or None for a trace written
    before constexprs were recorded as JSON (it is then recompiled from its ttir)."""
    data = (trace.specialization or {}).get("constexprs_json")
    if data is None:
        return None
    return {key: decode_constexpr(value) for key, value in data.items()}


def recompile(trace: CompileTrace, pipelines: dict, kernel=None, isolated: bool = False):
    """Compile a recorded kernel again with other pass pipelines ({stage: pipeline string});
    returns the CompiledKernel (`.trace` holds every stage, `.launch` runs it on a GPU).

    With `isolated`, the compile runs in a worker process (`compiler.isolation`): an LLVM or
    ptxas crash raises `CompileCrashed` (kernel, stage, pass) instead of killing the caller.

    With the kernel's JIT function (from a run) and a trace holding its specialization, the
    front end runs again on the recorded signature and JSON constexprs with the recorded
    options; otherwise (a saved trace, an old trace) the trace's ttir is compiled."""
    if isolated:
        from compiler.isolation import compile_isolated as compile_source
    else:
        from compiler.compiler import compile as compile_source
    for text in pipelines.values():
        check_pipeline(text)
    options = recorded_options(trace)
    options.pop("pipelines", None)            # the new pipelines replace the recorded ones
    spec = trace.specialization or {}
    constexprs = recorded_constexprs(trace)
    if kernel is not None and isinstance(spec.get("signature"), dict) and constexprs is not None:
        from compiler.runtime.specialization import ASTSource
        source = ASTSource(fn=kernel, signature=dict(spec["signature"]), constexprs=constexprs,
                           attrs=dict(spec.get("attrs") or {}))
        return compile_source(source, options=options, pipelines=pipelines)
    ttir = trace.stage_inputs.get("ttir") or trace.stages.get("ttir")
    if not ttir:
        raise ToolError(f"{trace.kernel_name}: the trace has no ttir to recompile from")
    with tempfile.TemporaryDirectory(prefix="tile-explore-") as folder:
        path = Path(folder) / f"{trace.kernel_name}.ttir"
        path.write_text(ttir)
        return compile_source(str(path), options=options, pipelines=pipelines)


def recompile_for_editor(trace: CompileTrace, pipelines: dict, kernel=None,
                         arguments=None) -> CompileTrace:
    """The pipeline editor's B: `recompile(..., isolated=True)` (a crash is `CompileCrashed`,
    not a dead app), then, on a GPU with the kernel's recorded launch `arguments`, one timed
    launch record (the median of `time_on_gpu`) so that A and B compare by runtime too."""
    compiled = recompile(trace, pipelines, kernel, isolated=True)
    if arguments is not None and gpu_available():
        from compiler.trace import Launch
        warps = trace.launches[0].num_warps if trace.launches else 4
        compiled.trace.launches.append(Launch(grid=tuple(arguments.grid), backend="gpu",
                                              time_ms=time_on_gpu(compiled, arguments),
                                              num_warps=warps))
    return compiled.trace


# ---- layouts ------------------------------------------------------------------------------------
class NotDrawable(ValueError):
    """A layout whose elements no thread owns, or that the layout model cannot map; the
    message says why (for a shared layout: what it is)."""


@dataclass(frozen=True)
class BasisRow:
    """One row of a layout's bases table: input bit `bit` of `in_dim` (register, lane, warp,
    block; offset for shared memory) moves the tensor coordinates by `values` (one per dim,
    XOR-combined with the other set bits). All zeros: a broadcast bit."""

    in_dim: str
    bit: int
    values: tuple


@dataclass
class LayoutDescription:
    """What a layout does to a tensor of `shape`, computed from its linear layout: a one-line
    summary, the bases table (`bases`, over the output dims `out_dims`), and for distributed
    layouts `owners[coord] = [(warp, lane, register), ...]`; for shared layouts (`shared`)
    `offsets[coord]` (the element's position in the buffer, in elements) and `banks[coord]`
    (its 4-byte bank, for elements of `element_bits` bits)."""

    encoding: str
    shape: tuple
    summary: str
    owners: dict
    bases: tuple = ()
    out_dims: tuple = ()
    shared: bool = False
    offsets: dict = field(default_factory=dict)
    banks: dict = field(default_factory=dict)
    element_bits: int = 0

    def bases_table(self) -> list[list[str]]:
        """The bases as rows of text: a header (`in`, `bit`, the dims), then one row per bit."""
        head = ["in", "bit"] + list(self.out_dims)
        return [head] + [[row.in_dim, str(row.bit)] + [str(v) for v in row.values]
                         for row in self.bases]


def _parse_encoding(encoding_text: str, aliases: dict):
    """The compiler's encoding object for a layout text (aliases `#name -> text` resolved)."""
    from compiler.dialects import ttg  # noqa: F401  (registers the layout parsers)
    from compiler.ir.parser import ParseError, Parser
    known: dict = {}
    for name, definition in aliases.items():      # definitions come parents first
        alias_parser = Parser(definition)
        alias_parser.layout_aliases = known
        try:
            known[name] = alias_parser.encoding_ref()
        except (ParseError, KeyError):
            continue                               # a layout the compiler does not know
    parser = Parser(encoding_text)
    parser.layout_aliases = known
    try:
        return parser.encoding_ref()
    except (ParseError, KeyError) as error:
        raise NotDrawable(f"the compiler cannot read this layout ({error})") from None


def describe_layout(encoding_text: str, shape: tuple, aliases: dict | None = None,
                    element_bits: int | None = None) -> LayoutDescription:
    """The layout `encoding_text` (a full `#ttg.…<…>` text or an alias defined in `aliases`)
    on a `shape` tensor, from the compiler's linear layout of it: who owns each element
    (distributed layouts) or where each element lies and in which bank (shared layouts, for
    `element_bits`-bit elements: the encoding's own width for nvmma_shared, else 16 unless
    given), with the bases as a table. Layouts the model cannot map raise `NotDrawable`
    saying why."""
    try:
        from compiler.analysis import layout_to_linear as linear
    except ImportError as error:
        raise NotDrawable(f"drawing layouts needs the compiler's layout model ({error})") \
            from None
    encoding = _parse_encoding(encoding_text, dict(aliases or {}))
    try:
        layout = linear.to_linear_layout(encoding, tuple(shape))
    except ValueError as error:          # LayoutConversionError and invalid bases
        raise NotDrawable(f"the compiler has no linear layout for {encoding_text} on "
                          f"{'x'.join(map(str, shape))}: {error}") from None
    bases = tuple(BasisRow(d, i, tuple(vec)) for d in layout.in_dims
                  for i, vec in enumerate(layout.bases(d)))
    out_dims = tuple(layout.out_dims)
    if linear.OFFSET in layout.in_dims:
        bits = element_bits or getattr(encoding, "element_bit_width", None) or 16
        offsets, banks = _shared_places(layout, bits)
        summary = (f"shared memory: {len(offsets)} elements of {bits} bits at offsets "
                   f"0..{layout.in_dim_size(linear.OFFSET) - 1}, 4-byte banks shown; no thread "
                   "owns its elements")
        return LayoutDescription(encoding_text, tuple(shape), summary, {}, bases, out_dims,
                                 True, offsets, banks, bits)
    owners = _owners(layout)
    summary = _distributed_summary(layout)
    return LayoutDescription(encoding_text, tuple(shape), summary, owners, bases, out_dims)


def _owners(layout) -> dict:
    """{coords: [(warp, lane, register), ...]} of a distributed linear layout."""
    owners: dict = {}
    sizes = [layout.in_dim_size(d) if d in layout.in_dims else 1
             for d in ("warp", "lane", "register")]
    for warp in range(sizes[0]):
        for lane in range(sizes[1]):
            for register in range(sizes[2]):
                coord = layout.apply_tuple(register=register, lane=lane, warp=warp)
                owners.setdefault(coord, []).append((warp, lane, register))
    return owners


def _distributed_summary(layout) -> str:
    """`8 elements/thread, 32 lanes x 4 warps, 2 broadcast bits (lane 1, warp 0)`."""
    free = [f"{d} {i}" for d in layout.in_dims for i in layout.zero_bases(d)]
    text = (f"{layout.in_dim_size('register')} elements/thread, "
            f"{layout.in_dim_size('lane')} lanes x {layout.in_dim_size('warp')} warps")
    if free:
        text += f", {len(free)} broadcast bit(s) ({', '.join(free)})"
    return text


def _shared_places(layout, element_bits: int) -> tuple:
    """({coords: offset}, {coords: bank}) of a shared linear layout (offset -> coords)."""
    offsets, banks = {}, {}
    for offset in range(layout.in_dim_size("offset")):
        coord = layout.apply_tuple(offset=offset)
        if coord in offsets:
            continue
        offsets[coord] = offset
        banks[coord] = (offset * element_bits // 32) % 32
    return offsets, banks


# ---- the GPU ------------------------------------------------------------------------------------
def gpu_available() -> bool:
    """Whether the CUDA driver finds a GPU (False when the driver cannot be loaded at all)."""
    try:
        from compiler.runtime.driver import gpu_available as driver_gpu_available
    except ImportError:
        return False
    return driver_gpu_available()


def time_on_gpu(kernel, arguments, repeats: int = 20) -> float:
    """Median milliseconds of `repeats` launches of a CompiledKernel on recorded launch
    `arguments` (`LaunchArguments`; one untimed launch first: module load and cold caches)."""
    import statistics

    from compiler.runtime.driver import Event

    values = arguments.resolve()
    if values is None:
        raise ToolError("the recorded launch's arguments are no longer reachable")
    kernel.launch(arguments.grid, values, arguments.stream)
    times = []
    for _ in range(repeats):
        start, end = Event(), Event()
        start.record(arguments.stream)
        kernel.launch(arguments.grid, values, arguments.stream)
        end.record(arguments.stream)
        times.append(start.elapsed_ms(end))
    return statistics.median(times)


# ---- the profiler (`tile-explore prof`) ---------------------------------------------------------
def load_profile(path: str | Path):
    """A profile file written by `compiler.profiler` (hatchet JSON): `(root, metadata)`;
    `ProfileFormatError` when it is not one."""
    from compiler.profiler import viewer
    return viewer.load(path)


def profile_metric_choices(root) -> list[str]:
    """The metric names a loaded profile carries (for `prof --list` and `-m`)."""
    from compiler.profiler import viewer
    return viewer.metric_choices(root)


def default_profile_metrics() -> tuple:
    """The metrics `prof` shows when none is chosen."""
    from compiler.profiler import viewer
    return tuple(viewer.DEFAULT_METRICS)


def render_profile(root, metrics, **view) -> str:
    """The profile tree as terminal text (`depth`, `include`, `exclude` as proton-viewer's)."""
    from compiler.profiler import viewer
    return viewer.render(root, metrics, **view)


def draw_roofline(root, device: dict) -> str:
    """A terminal roofline of the profile's kernels against the device's peaks."""
    from compiler.profiler.roofline import draw
    return draw(root, device)


def run_profiled(body: Callable, name: str, **session):
    """Run `body()` under one profiling session with `import triton` resolving to this
    compiler; returns `(status, written paths)` as `compiler.profiler.session.run_profiled`."""
    from compiler import triton_alias
    from compiler.profiler.session import run_profiled as run_in_session
    with triton_alias.installed():
        return run_in_session(body, name, **session)


def profile_format_error() -> type:
    """The exception class a malformed profile file raises."""
    from compiler.profiler.viewer import ProfileFormatError
    return ProfileFormatError


# --------------------------------------------------------------------------------------------
# The real Triton's artifacts

def run_under_triton(path: str | Path, script_args: list | None = None,
                     folder: str | Path | None = None):
    """Run a script under the real Triton with its IR dumps on (compiler.triton_import.run):
    a TritonRun with traces, messages and error (the error says why when Triton is absent)."""
    from compiler.triton_import.run import run_under_triton as run
    return run(path, script_args, folder)


def load_triton(path: str | Path) -> list:
    """Traces from a real Triton artifact: an MLIR_ENABLE_DUMP text, a TRITON_KERNEL_DUMP
    folder or a TritonParse ndjson log; ToolError (file and why) when it cannot be read."""
    from compiler.triton_import.merge import load_triton_artifacts
    try:
        return load_triton_artifacts(path)
    except (ValueError, OSError) as error:
        raise ToolError(str(error)) from None
