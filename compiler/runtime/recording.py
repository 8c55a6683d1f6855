"""Recording what a program compiles and launches, for the explorer's command line.

    with record() as rec:
        run_the_users_script()
    rec.traces      # CompileTrace of every kernel compiled (or launched) meanwhile
    rec.launches    # LaunchEvent of every launch, in order
    rec.arguments_of(trace)   # that kernel's last launch arguments, held weakly

Each launch is also appended to its kernel's `trace.launches` as a `compiler.trace.Launch`
(grid, backend, time in ms: CUDA events on the GPU, wall time in the interpreter). With no
recorder active, the jit pays one truthiness test of `ACTIVE` per launch and nothing else.

`OBSERVERS` holds `LaunchObserver`s (the profiler's launch hook): they see each launch begin
and end, without the recorder's synchronizing CUDA-event timing, and without taking the jit off
its fast path (the fast launch hands a cache hit to `observed_launch` while one is there).
"""
from __future__ import annotations

from numbers import Number

import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

from compiler.trace import Launch

#: The recorders now active (innermost last). The jit tests its truthiness on every launch.
ACTIVE: list = []
#: The launch observers now active (`LaunchObserver`); tested after a cache hit. Change it
#: with `add_observer` / `remove_observer`.
OBSERVERS: list = []
#: Jit cache entries whose launches the one observer in `OBSERVERS` needs to see no more: a
#: launch of one is a plain launch (the fast launch tests it right after `OBSERVERS`). The
#: profiler's hook puts entries here that CUPTI attributes by name; emptied whenever
#: `OBSERVERS` changes, and by the observer when what it needs changes.
QUIET: set = set()


@dataclass
class LaunchEvent:
    """One recorded launch: which kernel and specialization, where it ran, how long it took."""

    kernel_name: str
    specialization: dict
    grid: tuple
    backend: str                 # "gpu" or "interpreter"
    time_ms: float
    num_warps: int               # the compiled kernel's (its metadata), or the launch option's


class LaunchArguments:
    """The arguments of a recorded launch, held without keeping them alive: arrays by weak
    reference, plain values (ints, floats) as they are. `resolve()` gives them back while every
    array still exists, so a tool can launch another build of the kernel on the same data."""

    def __init__(self, grid: tuple, arguments, stream):
        self.grid = grid
        self.stream = stream
        self._held = []
        for argument in arguments:
            try:
                self._held.append((True, weakref.ref(argument)))
            except TypeError:             # not weak-referenceable: a plain value, kept as is
                self._held.append((False, argument))

    def resolve(self) -> tuple | None:
        """The arguments again, or None when one of the arrays has been freed since."""
        values = []
        for is_ref, held in self._held:
            value = held() if is_ref else held
            if is_ref and value is None:
                return None
            values.append(value)
        return tuple(values)


@dataclass
class Recorder:
    """What one `record()` block saw. `full_compile`: interpreter launches also run the whole
    pipeline so that their traces have every stage (the explorer's `--no-gpu` mode)."""

    full_compile: bool = True
    interpret: bool = False                          # run every launch in the interpreter
    compile_options: dict = field(default_factory=dict)   # e.g. {"pipelines": {...}}
    traces: list = field(default_factory=list)       # CompileTrace, first seen first
    kernels: list = field(default_factory=list)      # CompiledKernel objects compiled
    launches: list = field(default_factory=list)     # LaunchEvent
    last_arguments: dict = field(default_factory=dict)   # id(trace) -> LaunchArguments
    compile_failures: list = field(default_factory=list)  # (kernel name, message)

    def add_trace(self, trace) -> None:
        """Keep `trace` once (by identity)."""
        if trace is not None and not any(t is trace for t in self.traces):
            self.traces.append(trace)

    def arguments_of(self, trace) -> LaunchArguments | None:
        """The arguments of the last recorded launch of `trace`'s kernel (None if never)."""
        return self.last_arguments.get(id(trace))

    def trace_named(self, name: str):
        """The first recorded trace of the kernel `name` (None if there is none)."""
        return next((t for t in self.traces if t.kernel_name == name), None)


class LaunchInfo:
    """One launch as a `LaunchObserver` sees it: the jit cache entry, the grid as a tuple, the
    arguments handed to `entry.launch`, where it runs ("gpu" or "interpreter"), and (when the
    jit passed them) the JITFunction and all bound arguments in parameter order."""

    __slots__ = ("entry", "grid", "args", "stream", "backend", "jit", "bound")

    def __init__(self, entry, grid, args, stream, backend: str, jit=None, bound=None):
        self.entry = entry
        self.grid = _grid_tuple(grid)
        self.args = args
        self.stream = stream
        self.backend = backend
        self.jit = jit
        self.bound = bound

    @property
    def kernel_name(self) -> str:
        """The kernel's name ("?" when its entry has no trace)."""
        trace = getattr(self.entry, "trace", None)
        return trace.kernel_name if trace is not None else getattr(self.jit, "__name__", "?")

    def named_arguments(self) -> dict:
        """Every bound argument by parameter name (empty when the jit did not pass them)."""
        if self.jit is None or self.bound is None:
            return {}
        return dict(zip(self.jit.arg_names, self.bound))


def add_observer(observer) -> None:
    """Let `observer` see every launch from now on (see `QUIET`)."""
    QUIET.clear()
    OBSERVERS.append(observer)


def remove_observer(observer) -> None:
    """Stop showing launches to `observer`."""
    QUIET.clear()
    OBSERVERS.remove(observer)


def declared_metadata(info: LaunchInfo) -> tuple[str | None, dict]:
    """The kernel's `launch_metadata(grid, kernel, args)` result as (name or None, numeric
    metrics such as `bytes`, `flops16`); as in Triton, `grid` has three dims and `args` holds
    every argument by name. (None, {}) when the kernel declares no `launch_metadata`."""
    metadata_fn = getattr(info.jit, "launch_metadata", None)
    if metadata_fn is None:
        return None, {}
    grid = info.grid + (1,) * (3 - len(info.grid))          # Triton passes three dims
    result = metadata_fn(grid, info.entry.kernel, info.named_arguments()) or {}
    if not isinstance(result, dict):
        raise TypeError(f"launch_metadata of {info.kernel_name} returned "
                        f"{type(result).__name__}; it must return a dict such as "
                        f"{{'name': ..., 'flops16': ..., 'bytes': ...}}")
    name = result.get("name")
    metrics = {k: v for k, v in result.items()
               if k != "name" and isinstance(v, Number) and not isinstance(v, bool)}
    return (str(name) if name is not None else None), metrics


def argument_shapes(arguments) -> tuple:
    """The shape of each array-like argument (others are left out), the launch's problem
    size as the explorer groups launches by it."""
    shapes = []
    for argument in arguments or ():
        shape = getattr(argument, "shape", None)
        if shape is not None and not isinstance(argument, type):
            try:
                shapes.append(tuple(int(d) for d in shape))
            except (TypeError, ValueError):
                continue
    return tuple(shapes)


class LaunchObserver:
    """Something in `OBSERVERS` that sees launches begin and end (the profiler's hook). It gets
    the launch's parts as they are (`LaunchInfo(...)` bundles them when it needs to)."""

    #: True while the observer launches variants of the entries it sees (`variant`).
    substitutes = False

    def variant(self, entry, jit):
        """The entry to launch in place of `entry` (asked only while `substitutes` is True:
        the profiler's instrumentation mode runs region-instrumented kernels)."""
        return entry

    def launch_begin(self, entry, grid, args, stream, backend: str, jit=None, bound=None):
        """Called right before the launch; returns a token handed to `launch_end`."""
        raise NotImplementedError

    def launch_end(self, token) -> None:
        """Called right after the launch was enqueued (no synchronization)."""
        raise NotImplementedError


@contextmanager
def record(full_compile: bool = True, interpret: bool = False,
           compile_options: dict | None = None):
    """Collect every compiled kernel and every launch inside the block; yields the Recorder.
    `interpret`: kernels defined inside the block run in the interpreter; `compile_options`:
    compile options (e.g. `pipelines`) every compile inside the block uses over its own."""
    recorder = Recorder(full_compile=full_compile, interpret=interpret,
                        compile_options=dict(compile_options or {}))
    ACTIVE.append(recorder)
    try:
        yield recorder
    finally:
        ACTIVE.remove(recorder)


def wants_full_compile() -> bool:
    """True when an active recorder wants interpreter launches compiled through every stage."""
    return any(r.full_compile for r in ACTIVE)


def forces_interpreter() -> bool:
    """True when an active recorder asks for every launch to run in the interpreter."""
    return any(r.interpret for r in ACTIVE)


def compile_overrides() -> dict:
    """The compile options the active recorders set (the innermost wins)."""
    options: dict = {}
    for recorder in ACTIVE:
        options.update(recorder.compile_options)
    return options


def on_compile_failure(kernel_name: str, message: str) -> None:
    """Called by the jit when a full compile it could do without (an interpreter launch)
    failed, so a tool that asked for that compile can report it."""
    for recorder in ACTIVE:
        recorder.compile_failures.append((kernel_name, message))


def on_compile(kernel) -> None:
    """Called by the jit for each CompiledKernel it makes."""
    for recorder in ACTIVE:
        recorder.kernels.append(kernel)
        recorder.add_trace(getattr(kernel, "trace", None))


def on_trace(trace) -> None:
    """Called by the jit for a trace made without a full compile (front end only)."""
    for recorder in ACTIVE:
        recorder.add_trace(trace)


def observed_launch(entry, grid, args, stream, backend: str, jit=None, bound=None):
    """Launch `entry` (a jit cache entry) with every `OBSERVERS` entry seeing it begin and end;
    returns the entry's kernel (what a launch returns). `jit`, `bound`: the JITFunction and all
    bound arguments, for observers that read them (the profiler's `launch_metadata` hook)."""
    if len(OBSERVERS) == 1:                  # the usual case, kept short
        observer = OBSERVERS[0]
        if observer.substitutes:
            entry = observer.variant(entry, jit)
        elif entry in QUIET:
            entry.launch(grid, args, stream)
            return entry.kernel
        token = observer.launch_begin(entry, grid, args, stream, backend, jit, bound)
        try:
            entry.launch(grid, args, stream)
        finally:
            observer.launch_end(token)
        return entry.kernel
    entry = _variant(entry, jit)
    _observed((entry, grid, args, stream, backend, jit, bound), entry.launch,
              (grid, args, stream))
    return entry.kernel


def _variant(entry, jit):
    """The entry the first substituting observer launches instead of `entry`, else `entry`."""
    for observer in OBSERVERS:
        if observer.substitutes:
            return observer.variant(entry, jit)
    return entry


def _observed(launch: tuple, go, go_args) -> None:
    """`go(*go_args)` between every observer's `launch_begin(*launch)` and `launch_end`
    (every observer sees it: `QUIET` serves one observer alone)."""
    observers = list(OBSERVERS)
    tokens = [observer.launch_begin(*launch) for observer in observers]
    try:
        go(*go_args)
    finally:
        for observer, token in zip(reversed(observers), reversed(tokens)):
            observer.launch_end(token)


def timed_launch(entry, grid, args, stream, backend: str, sources=None, jit=None, bound=None):
    """Launch `entry` (a jit cache entry) with timing and record it in every active recorder
    (and past every observer, see `observed_launch`). `sources`: the launch's arguments as the
    caller passed them (arrays, not addresses); each recorder keeps them weakly as the trace's
    last launch arguments."""
    grid = _grid_tuple(grid)
    if OBSERVERS:
        entry = _variant(entry, jit)
        _observed((entry, grid, args, stream, backend, jit, bound), _record_launch,
                  (entry, grid, args, stream, backend, sources, jit, bound))
    else:
        _record_launch(entry, grid, args, stream, backend, sources, jit, bound)


def _declared(entry, grid, args, stream, backend, jit, bound) -> dict:
    """The launch's declared bytes / flops for the trace; a `launch_metadata` that fails is a
    note on the kernel's trace (once), not a failed launch."""
    if getattr(jit, "launch_metadata", None) is None:
        return {}
    try:
        return declared_metadata(LaunchInfo(entry, grid, args, stream, backend, jit, bound))[1]
    except Exception as error:  # the user's function: its failure is reported, not raised
        note = f"launch_metadata failed, so no bytes/flops were recorded: {error}"
        if entry.trace is not None and note not in entry.trace.notes:
            entry.trace.notes.append(note)
        return {}


def _record_launch(entry, grid, args, stream, backend: str, sources, jit=None,
                   bound=None) -> None:
    """Launch with timing and record the launch in every active Recorder: its time, the
    shapes of its array arguments and the bytes / flops its `launch_metadata` declares."""
    if backend == "gpu":
        time_ms = _gpu_timed(entry, grid, args, stream)
    else:
        start = time.perf_counter()
        entry.launch(grid, args, stream)
        time_ms = (time.perf_counter() - start) * 1e3
    launch = Launch(grid=grid, backend=backend, time_ms=time_ms, num_warps=entry.num_warps,
                    shapes=argument_shapes(sources if sources is not None else bound),
                    declared=_declared(entry, grid, args, stream, backend, jit, bound))
    if entry.trace is not None:
        entry.trace.launches.append(launch)
    name = entry.trace.kernel_name if entry.trace is not None else "?"
    event = LaunchEvent(kernel_name=name, specialization=entry.spec.describe(), grid=grid,
                        backend=backend, time_ms=time_ms, num_warps=entry.num_warps)
    held = LaunchArguments(grid, args if sources is None else sources, stream)
    for recorder in ACTIVE:
        recorder.add_trace(entry.trace)
        recorder.launches.append(event)
        if entry.trace is not None:
            recorder.last_arguments[id(entry.trace)] = held


def _gpu_timed(entry, grid, args, stream) -> float:
    """Launch between two CUDA events on the launch's stream; the elapsed milliseconds."""
    from compiler.runtime.driver import Event

    start, end = Event(), Event()
    start.record(stream)
    entry.launch(grid, args, stream)
    end.record(stream)
    return start.elapsed_ms(end)


def _grid_tuple(grid) -> tuple:
    if type(grid) is tuple and all(type(g) is int for g in grid):
        return grid
    if isinstance(grid, int):
        return (grid,)
    return tuple(int(g) for g in grid)
