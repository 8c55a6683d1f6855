"""`@jit`: turns a Python function into a kernel launched with `kernel[grid](*args, **kwargs)`.

A launch binds its arguments through a function generated once per kernel (so binding, the
specialization key and the launch options cost one Python call), looks the key up in an
in-memory cache and, on a hit, calls the compiled kernel's `launch` (GPU) or the ttir
interpreter (no GPU, `interpret=True`, or `TILE_INTERPRET=1` when the kernel was defined). On
a miss it splits the key into an `ASTSource` (see `specialization`) and compiles: the full
pipeline (`compiler.compiler.compile`) for the GPU and for `warmup`, only the front end for the
interpreter, unless a recorder wants whole traces. `warmup(*args, grid=..., **kw)` compiles
without launching and accepts signature strings (`"*fp32"`, `"i32"`) in place of arguments.
Once compiled, a specialization is not re-checked against later edits of the globals it read.

`kernel[grid]` returns the kernel's *fast launch* bound to `grid` (`fast_launch`): code
generated for the argument types of an earlier GPU launch that computes the key inline, reads
each array's address once and launches a cache hit in one Python call plus the launcher's.
Anything else it hands to `run`, the reference path described above.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import linecache
import operator
import os
import re
import textwrap
from dataclasses import dataclass

from compiler.codegen.backend import BackendOptions
from compiler.codegen.nvidia_options import uses_tma
from compiler.frontend import source_text  # noqa: F401  (keeps exec'd kernel sources readable)
from compiler.frontend.errors import CompilationError
from compiler.frontend.source import is_constexpr_annotation
from compiler.stage_state import allows_non_constexpr_globals
from compiler.runtime import recording as _recording
from compiler.runtime import tensor_map
from compiler.runtime.fast_launch import MISSING, fast_launch_options, make_fast_launch
from compiler.runtime.tensor_wrapper import (TensorWrapper, reinterpret,  # noqa: F401
                                            type_canonicalisation_dict)  # (Triton's names here)
from compiler.runtime.specialization import (
    HANDLERS, ArgumentOverflow, ASTSource, DescriptorFields, Specialization, constexpr_entry,
    def_line, function_key, handler_for, launch_value, specialize_unspecialized,
    specialize_without_alignment, split_entries,
)

#: Launch options a kernel call accepts as keywords (besides its parameters), in key order.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug",
                  "arch", "tma")
#: Launch options that choose how to launch, not what to compile (part of the key, never a
#: compile option): `launch_cooperative_grid=True` launches with cuLaunchCooperativeKernel
#: (every CTA resident at once). The interpreter runs programs one after another on the host,
#: where it changes nothing.
LAUNCH_MODES = ("launch_cooperative_grid",)
#: Launch options Triton accepts that the GPU launcher cannot honour yet: name -> why. Like
#: LAUNCH_MODES they are part of the key only; the interpreter accepts them.
GPU_UNSUPPORTED_LAUNCH_OPTIONS = {
    "launch_pdl": "programmatic dependent launch is not supported by the GPU launcher yet",
}
#: Keywords that choose how (not what) to launch; they are not part of the cache key.
LAUNCH_CONTROLS = ("interpret", "stream")
#: How many times a kernel's fast launch is regenerated for new argument types, at most.
MAX_FAST_LAUNCHES = 4
#: Compile options used when a launch does not give them: the backend options' own defaults
#: (Triton's), so that they are written in one place.
DEFAULT_OPTIONS = {f.name: f.default for f in dataclasses.fields(BackendOptions)
                   if f.name in ("num_warps", "num_stages", "num_ctas")}


@dataclass(frozen=True)
class RuntimeEnv:
    """Environment switches of the runtime, read once (when a kernel is defined)."""

    interpret: bool = False
    dump: bool = False
    debug: bool = False
    allow_non_constexpr_globals: bool = False

    @classmethod
    def from_environ(cls, environ=os.environ) -> "RuntimeEnv":
        """Read `TILE_INTERPRET` (1/true/yes/on forces the interpreter) and `TILE_KERNEL_DUMP`
        (kernels run by the interpreter are then compiled through every stage too, so that
        each stage can be dumped) and `TILE_DEBUG` (the `debug` option of kernels that do not
        set it) and TILE_ / TRITON_ALLOW_NON_CONSTEXPR_GLOBALS (kernels may read any global)."""
        def flag(name: str) -> bool:
            return environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
        return cls(interpret=flag("TILE_INTERPRET"), dump=flag("TILE_KERNEL_DUMP"),
                   debug=flag("TILE_DEBUG"),
                   allow_non_constexpr_globals=allows_non_constexpr_globals(environ))


class KernelArgumentError(CompilationError, TypeError):
    """A kernel was called with arguments it cannot take; the message points at its `def`."""


class KernelArgumentOverflow(KernelArgumentError, OverflowError):
    """An int argument beyond every 64-bit range (an OverflowError, as in Triton)."""


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a kernel: name, position, constexpr-ness, default."""

    name: str
    index: int
    is_constexpr: bool
    do_not_specialize: bool         # no equal-to-1, no divisibility
    ignore_alignment: bool          # do_not_specialize_on_alignment: no divisibility
    has_default: bool
    default: object = None

    @property
    def num(self) -> int:
        """The parameter's position (Triton's `KernelParam.num`)."""
        return self.index


class KernelInterface:
    """Anything launched as `kernel[grid](*args, **kwargs)` (jit functions, autotuners,
    heuristics); subclasses implement `run(*args, grid, **kwargs)`."""

    def __getitem__(self, grid):
        """Bind the launch grid: a tuple of up to 3 ints, or a callable of the meta-parameters
        dict (every parameter name -> its value) returning one."""
        last = self.__dict__.get("_last_launcher")
        if last is not None and last.keywords["grid"] is grid:
            return last                 # same grid object as last time (e.g. a literal)
        launcher = self.__dict__["_last_launcher"] = functools.partial(self.run, grid=grid)
        return launcher

    def run(self, *args, grid, **kwargs):  # pragma: no cover - abstract
        """Launch over `grid`."""
        raise NotImplementedError

    @property
    def jit_function(self) -> "JITFunction":
        """The JITFunction at the bottom of a stack of wrappers."""
        inner = self
        while not isinstance(inner, JITFunction):
            inner = inner.fn
        return inner


class _GpuEntry:
    """A compiled specialization launched on the GPU. `takes_addresses`: its `launch` wants
    pointers as int device addresses (`specialization.launch_value`), not the arguments as
    given."""

    __slots__ = ("kernel", "launch", "takes_addresses", "select", "spec", "trace", "num_warps")

    def __init__(self, kernel, spec: Specialization, num_warps: int, cooperative: bool = False):
        self.kernel = kernel
        # The loaded kernel's own fast launch when it offers one (a CompiledKernel does,
        # through its launcher): two calls fewer per launch, and the one taking addresses
        # lets the fast launch read each array's address once.
        launcher = getattr(kernel, "launcher", None)
        loaded = launcher() if callable(launcher) else kernel
        if cooperative:
            loaded = loaded.cooperative()
        self.launch = getattr(loaded, "launch_addresses", None)
        self.takes_addresses = self.launch is not None
        if self.launch is None:
            self.launch = loaded.launch
        self.select = _selector(spec.runtime_params, spec.descriptor_params,
                                uses_tma(getattr(kernel, "options", None)))
        self.spec = spec
        self.trace = getattr(kernel, "trace", None)
        self.num_warps = num_warps

    def runtime_args(self, bound: tuple) -> tuple:
        """The arguments `launch` takes, from all bound arguments."""
        args = self.select(bound)
        return tuple(map(launch_value, args)) if self.takes_addresses else args


class _InterpreterEntry:
    """A specialization run by the ttir interpreter on host arrays."""

    __slots__ = ("module", "name", "select", "spec", "trace", "kernel", "num_warps")
    takes_addresses = False

    def __init__(self, module, name: str, spec: Specialization, trace, kernel, num_warps: int):
        self.module = module
        self.name = name
        self.select = _selector(spec.runtime_params, spec.descriptor_params)
        self.spec = spec
        self.trace = trace
        self.kernel = kernel
        self.num_warps = num_warps

    def launch(self, grid, args, stream=None):
        """Run every program of `grid` through the interpreter."""
        from compiler.runtime.interpreter import interpret

        interpret(self.module, grid, list(args), kernel_name=self.name)

    def runtime_args(self, bound: tuple) -> tuple:
        """The arguments `launch` takes: the runtime ones among all bound arguments."""
        return self.select(bound)


def _selector(positions: tuple, descriptors: tuple = (), tensor_maps: bool = False):
    """A fast function picking the runtime arguments out of all bound arguments; a tensor
    descriptor among them (at a position in `descriptors`) becomes its kernel fields, followed
    by its CUtensorMap when the kernel copies it by TMA (`tensor_maps`: compiled with TMA)."""
    if descriptors:
        return functools.partial(_select_expanding, positions, frozenset(descriptors),
                                 tensor_maps)
    if not positions:
        return lambda bound: ()
    if len(positions) == 1:
        index = positions[0]
        return lambda bound: (bound[index],)
    return operator.itemgetter(*positions)


def _select_expanding(positions: tuple, descriptors: frozenset, tensor_maps: bool,
                      bound: tuple) -> tuple:
    """The runtime arguments with each descriptor's kernel fields in its place: a host
    `TensorDescriptor` gives its `kernel_fields()`, a tuple (the fields a launch handler
    already converted, `specialization._descriptor_launch`) is spliced in as it is; then, for
    a kernel compiled with TMA, the descriptor's tensor map (`tensor_map.of_descriptor`, or
    the converted fields' own `tensor_map()`)."""
    out = []
    for index in positions:
        value = bound[index]
        if index not in descriptors:
            out.append(value)
            continue
        if isinstance(value, tuple):
            out.extend(value)
            encoded = value.tensor_map() if tensor_maps and \
                isinstance(value, DescriptorFields) else None
        else:
            out.extend(value.kernel_fields())
            encoded = tensor_map.of_descriptor(value) if tensor_maps else None
        if encoded is not None:
            out.append(encoded)
    return tuple(out)


def _for_user(err: CompilationError) -> CompilationError:
    """A user's CompilationError without the compiler's frames in its traceback, unless
    TILE_DEBUG asked for them (the error then carries its `internal` traceback)."""
    return err if err.internal else err.with_traceback(None)


def _source_from_def(fn) -> str:
    """The function's source from its `def` line (decorators dropped), dedented, as Triton's
    `JITFunction.src` (functions defined by an exec'd string included); empty when the source
    is not available."""
    from compiler.frontend.source import read_source_lines
    try:
        text = textwrap.dedent("".join(read_source_lines(fn)[0]))
    except (OSError, TypeError):
        return ""
    match = re.search(r"^(async\s+)?def\s", text, re.MULTILINE)
    return text[match.start():] if match else text


class JITFunction(KernelInterface):
    """A `@jit` function: compiled per specialization, cached, launched over a grid."""

    def __init__(self, fn, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 debug=None, noinline=None, repr=None, launch_metadata=None, version=None):
        if not inspect.isfunction(fn):
            raise TypeError(f"@jit decorates a Python function, not {type(fn).__name__}")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__ = fn.__globals__
        self.noinline = bool(noinline)
        self.debug = debug
        # fn(grid, kernel, args) -> {name, flops*, bytes}: read by the profiler's triton hook
        self.launch_metadata = launch_metadata
        self._repr = repr
        self.do_not_specialize = tuple(do_not_specialize)
        self.do_not_specialize_on_alignment = tuple(do_not_specialize_on_alignment)
        self.file = fn.__code__.co_filename
        self.line = def_line(fn)
        self._src = _source_from_def(fn)
        self._updated_src = None       # the text given to _unsafe_update_src, if any
        self.hash = None               # Triton's attribute; cleared when the source changes
        self.used_global_vals: dict = {}
        self.env = RuntimeEnv.from_environ()
        self.params = self._read_params(fn, do_not_specialize, do_not_specialize_on_alignment)
        self.arg_names = [p.name for p in self.params]
        self.constexprs = [p.index for p in self.params if p.is_constexpr]
        self._constexpr_names = frozenset(p.name for p in self.params if p.is_constexpr)
        self._option_names = tuple(o for o in LAUNCH_OPTIONS + LAUNCH_MODES
                                   + tuple(GPU_UNSUPPORTED_LAUNCH_OPTIONS)
                                   if o not in self.arg_names)
        self._binder = self._make_binder()
        self._default_interpret = None
        self._gpu_cache: dict = {}
        self._interp_cache: dict = {}
        self._compiled: dict = {}      # key -> CompiledKernel (full compiles, incl. warmup)
        self._last_grid = self._last_grid_launch = None
        self._fast_launch = self._launch_first
        self._fast_shape, self._fast_made = None, 0

    # -- construction -------------------------------------------------------------------------

    def _read_params(self, fn, do_not_specialize, on_alignment) -> list:
        signature = inspect.signature(fn)
        names = list(signature.parameters)
        no_spec = {names[d] if isinstance(d, int) else d for d in do_not_specialize}
        no_align = {names[d] if isinstance(d, int) else d for d in on_alignment}
        for name in no_spec | no_align:
            if name not in names:
                raise self._where(f"do_not_specialize names '{name}', which is not a "
                                  f"parameter of {fn.__name__}")
        params = []
        for index, (name, param) in enumerate(signature.parameters.items()):
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.POSITIONAL_ONLY):
                raise self._where(
                    f"kernel parameter '{name}' is {param.kind.description}: kernels take plain "
                    f"positional-or-keyword parameters only")
            has_default = param.default is not param.empty
            params.append(KernelParam(name, index, is_constexpr_annotation(param.annotation),
                                      name in no_spec, name in no_align, has_default,
                                      param.default if has_default else None))
        return params

    def _make_binder(self):
        """Generate `bind(*args, **kwargs) -> (bound, key, interpret, stream, unknown)`."""
        namespace = {"_tile_handlers": HANDLERS, "_tile_handler_for": handler_for,
                     "_tile_nospec": specialize_unspecialized,
                     "_tile_noalign": specialize_without_alignment, "_tile_type": type}
        decls, entries = [], []
        for p in self.params:
            if p.has_default:
                namespace[f"_tile_default_{p.index}"] = p.default
                decls.append(f"{p.name}=_tile_default_{p.index}")
            else:
                decls.append(p.name)
            if p.is_constexpr:      # hashed as is; `_hashable` handles unhashable values
                entries.append(f"(_tile_type({p.name}), {p.name})")
            elif p.do_not_specialize:
                entries.append(f"_tile_nospec({p.name})")
            elif p.ignore_alignment:
                entries.append(f"_tile_noalign({p.name})")
            else:                   # specialize(), inlined: the handler by type, then its call
                entries.append(f"(_tile_handlers.get(_tile_type({p.name})) or "
                               f"_tile_handler_for({p.name}))({p.name})")
        controls = [c for c in LAUNCH_CONTROLS if c not in self.arg_names]
        keywords = list(self._option_names) + controls
        if keywords:
            decls.append("*")
            decls += [f"{k}=None" for k in keywords]
        decls.append("**_tile_unknown")
        bound = "".join(f"{p.name}, " for p in self.params)
        key = "".join(f"{e}, " for e in entries) + "".join(f"{o}, " for o in self._option_names)
        interpret = "interpret" if "interpret" in controls else "None"
        stream = "stream" if "stream" in controls else "None"
        source = (f"def bind({', '.join(decls)}):\n"
                  f"    return ({bound}), ({key}), {interpret}, {stream}, _tile_unknown\n")
        exec(compile(source, f"<jit binder of {self.__name__}>", "exec"), namespace)
        return namespace["bind"]

    # -- launching ----------------------------------------------------------------------------

    def __getitem__(self, grid):
        """Bind the launch grid (see `KernelInterface.__getitem__`): the kernel's fast launch
        (`compiler.runtime.fast_launch`) with `grid` as its first argument. The object made
        for the last grid is reused while the same grid object comes back (a literal tuple in
        a loop, a grid variable, a lambda defined once)."""
        if grid is self._last_grid:
            return self._last_grid_launch
        launch = functools.partial(self._fast_launch, grid)
        self._last_grid, self._last_grid_launch = grid, launch
        return launch

    def _launch_first(self, grid, *args, **kwargs):
        """The fast launch before any GPU launch: `run`, then specialize the fast launch."""
        return self._run_and_specialize(grid, args, kwargs)

    def _launch_slow(self, keyword_names, grid, given, extra, kwargs, keywords, options):
        """Where a fast launch sends anything but a GPU cache hit of its kind of call: the
        call rebuilt as it was made (see `fast_launch.make_fast_launch`), through `run`."""
        args = list(itertools.takewhile(lambda value: value is not MISSING, given)) + list(extra)
        kwargs = dict(kwargs)
        kwargs.update((name, value) for name, value in zip(keyword_names, keywords)
                      if value is not MISSING)
        kwargs.update((name, value) for name, value in zip(fast_launch_options(self), options)
                      if value is not None)
        return self._run_and_specialize(grid, args, kwargs)

    def _run_and_specialize(self, grid, args, kwargs):
        """`run`; after a GPU launch whose argument types (or call shape) the fast launch was
        not made for, make it for them (at most `MAX_FAST_LAUNCHES` times per kernel, so that
        a call site alternating types settles on the slow path instead of making code)."""
        result = self.run(*args, grid=grid, **kwargs)
        if self._default_interpret is False and "interpret" not in kwargs \
                and "warmup" not in kwargs and self._fast_made < MAX_FAST_LAUNCHES:
            bound = self.bind(*args, **kwargs)[0]
            positional = min(len(args), len(self.params))
            shape = (tuple(map(type, bound)), positional)
            if shape != self._fast_shape:
                slow = functools.partial(self._launch_slow, self.arg_names[positional:])
                self._fast_launch = make_fast_launch(self, bound, positional, slow)
                self._fast_shape = shape
                self._fast_made += 1
                self._last_grid = self._last_grid_launch = None
        return result

    def run(self, *args, grid, warmup=False, **kwargs):
        """Launch over `grid` (see `KernelInterface.__getitem__`), compiling on first use;
        returns the compiled kernel (None when only the interpreter's ttir was made).
        `warmup=True` compiles without launching. This is the reference path: `kernel[grid]`
        launches GPU cache hits through the fast launch and everything else through here."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        try:
            bound, key, interpret, stream, unknown = self._binder(*args, **kwargs)
        except TypeError as err:
            raise self._argument_error(args, kwargs, err) from None
        if unknown:
            raise self._unknown_keyword_error(unknown)
        if interpret is None:
            interpret = self._default_interpret
            if interpret is None:
                interpret = self._resolve_default_interpret()
        try:
            entry = (self._interp_cache if interpret else self._gpu_cache).get(key)
        except TypeError:           # an unhashable constexpr value: key it by its repr
            key = self._hashable(key)
            entry = (self._interp_cache if interpret else self._gpu_cache).get(key)
        if entry is None:
            entry = self._build_entry(key, bound, interpret)
        if callable(grid):
            grid = grid(dict(zip(self.arg_names, bound)))
        if _recording.ACTIVE:
            _recording.timed_launch(entry, grid, entry.runtime_args(bound), stream,
                                    "interpreter" if interpret else "gpu",
                                    sources=entry.select(bound), jit=self, bound=bound)
        elif _recording.OBSERVERS:
            _recording.observed_launch(entry, grid, entry.runtime_args(bound), stream,
                                       "interpreter" if interpret else "gpu", self, bound)
        else:
            entry.launch(grid, entry.runtime_args(bound), stream)
        return entry.kernel

    def warmup(self, *args, grid=None, **kwargs):
        """Compile for these arguments without launching (works without a GPU) and return the
        compiled kernel. Arguments may be arrays or signature strings ("*fp32", "i32",
        "*fp16:16"); constexprs go by keyword or position as in a launch."""
        bound, key, interpret = self.bind(*args, **kwargs)[:3]
        compiled = self._compiled.get(key)
        if compiled is None:
            spec = self._specialization(key, bound)
            try:
                compiled = self._compile_full(key, spec)
            except CompilationError as err:
                raise _for_user(err) from err.__cause__
        if self.will_interpret(interpret) and compiled.interpreted_launch is None:
            options = {name: value for name, value in kwargs.items() if name not in self.arg_names and name != "interpret"}
            compiled.interpreted_launch = functools.partial(self._interpreted_launch, options)
        return compiled

    def _interpreted_launch(self, options: dict, grid, args: tuple) -> None:
        """`compiled[grid](*args)` of a kernel warmed up for the interpreter: the launch the
        warmup stood for (all arguments in order, constexprs included, and its options)."""
        self.run(*args, grid=grid, interpret=True, **options)

    def bind(self, *args, **kwargs) -> tuple:
        """`(bound arguments, cache key, interpret, stream)` of a call: what `run` computes
        inline on its fast path, for the slow paths and for tools."""
        try:
            bound, key, interpret, stream, unknown = self._binder(*args, **kwargs)
        except TypeError as err:
            raise self._argument_error(args, kwargs, err) from None
        if unknown:
            raise self._unknown_keyword_error(unknown)
        try:
            hash(key)
        except TypeError:
            key = self._hashable(key)
        return bound, key, interpret, stream

    def _hashable(self, key: tuple) -> tuple:
        """`key` with constexpr values that cannot be hashed replaced by their repr."""
        return tuple(constexpr_entry(entry[1]) if index in self.constexprs else entry
                     for index, entry in enumerate(key))

    def will_interpret(self, interpret=None) -> bool:
        """Whether a launch given `interpret=` (None: not given) runs in the interpreter."""
        if interpret is not None:
            return bool(interpret)
        if self._default_interpret is not None:
            return self._default_interpret
        return self._resolve_default_interpret()

    def _resolve_default_interpret(self) -> bool:
        """Interpret when TILE_INTERPRET was set or no GPU is usable (decided once)."""
        if self.env.interpret or _recording.forces_interpreter():
            self._default_interpret = True
        else:
            try:
                from compiler.runtime.driver import gpu_available
            except ImportError:
                self._default_interpret = True
            else:
                self._default_interpret = not gpu_available()
        return self._default_interpret

    # -- compiling ----------------------------------------------------------------------------

    def _specialization(self, key: tuple, bound: tuple) -> Specialization:
        entries = key[:len(self.params)]
        try:
            return split_entries(self.arg_names, self._constexpr_names, entries, bound)
        except ValueError as err:
            cls = KernelArgumentOverflow if isinstance(err, ArgumentOverflow) else \
                KernelArgumentError
            raise self._where(f"{self.__name__}(): {err}", cls) from None

    def compile_options(self, key: tuple) -> dict:
        """The compile options a cache key stands for (launch options over the defaults)."""
        options = dict(DEFAULT_OPTIONS)
        if self.debug is not None or self.env.debug:    # the kernel's, else TILE_DEBUG's
            options["debug"] = self.env.debug if self.debug is None else self.debug
        if self.env.allow_non_constexpr_globals:
            options["allow_non_constexpr_globals"] = True
        given = key[len(self.params):]
        options.update({k: v for k, v in zip(self._option_names, given) if v is not None})
        return options

    def source_for(self, spec: Specialization) -> ASTSource:
        """The ASTSource of one specialization."""
        return ASTSource(self, dict(spec.signature), dict(spec.constexprs), spec.attrs)

    def _compile_full(self, key: tuple, spec: Specialization):
        """Run the whole pipeline (`compiler.compiler.compile`) and cache the result. Launch
        options the compile driver has no field for are accepted for Triton compatibility but
        not passed on. SASS (a disassembler run, ~0.5 s) is made only when a recorder (the
        explorer) will show it."""
        from compiler.compiler import CompileOptions, compile as compile_source

        known = CompileOptions.__dataclass_fields__
        options = {k: v for k, v in self.compile_options(key).items() if k in known}
        options["build_sass"] = bool(_recording.ACTIVE)
        options.update(_recording.compile_overrides())
        compiled = compile_source(self.source_for(spec), options=options)
        self._compiled[key] = compiled
        _recording.on_compile(compiled)
        return compiled

    def _build_entry(self, key: tuple, bound: tuple, interpret: bool):
        """Compile a new specialization for launching; a user's CompilationError is re-raised
        without the compiler's frames (unless TILE_DEBUG kept its internal traceback)."""
        try:
            return self._make_entry(key, bound, interpret)
        except CompilationError as err:
            raise _for_user(err) from err.__cause__

    def _make_entry(self, key: tuple, bound: tuple, interpret: bool):
        spec = self._specialization(key, bound)
        for index in spec.runtime_params:
            if isinstance(bound[index], str):
                raise self._where(
                    f"{self.__name__}(): argument '{self.arg_names[index]}' is the signature "
                    f"string '{bound[index]}'; only warmup() takes signature strings, a launch "
                    f"needs real arguments")
        options = self.compile_options(key)
        if interpret:
            entry = self._interpreter_entry(key, spec, options)
            self._interp_cache[key] = entry
        else:
            for name, why in GPU_UNSUPPORTED_LAUNCH_OPTIONS.items():
                if options.get(name):
                    raise self._where(f"{self.__name__}(): launch option {name}=True: {why}; "
                                      f"launch without it (or with interpret=True)")
            compiled = self._compiled.get(key) or self._compile_full(key, spec)
            entry = _GpuEntry(compiled, spec, compiled.num_warps,
                              cooperative=bool(options.get("launch_cooperative_grid")))
            self._gpu_cache[key] = entry
        return entry

    def _interpreter_entry(self, key: tuple, spec: Specialization, options: dict):
        """Front end only (fast); the whole pipeline too when a recorder wants traces. If the
        later stages fail then, the trace says so and the interpreter still runs."""
        from compiler.trace import CompileTrace

        source = self.source_for(spec)
        module = source.make_ttir({**options, "for_interpreter": True})
        compiled = self._compiled.get(key)
        trace = getattr(compiled, "trace", None)
        note = None
        if compiled is None and (_recording.wants_full_compile() or self.env.dump):
            try:
                compiled = self._compile_full(key, spec)
                trace = compiled.trace
            except Exception as err:  # noqa: BLE001 - recorded in the trace, run continues
                trace = None
                note = f"full compile failed ({type(err).__name__}: {err}); interpreted the ttir"
                _recording.on_compile_failure(self.__name__, f"{type(err).__name__}: {err}")
        if trace is None:
            from compiler.ir.printer import print_module

            trace = CompileTrace(kernel_name=self.__name__, source_file=self.file,
                                 source_line=self.line,
                                 specialization={**spec.describe(), "options": options},
                                 stages={"source": self.src, "ttir": print_module(module)})
            if note:
                trace.notes.append(note)
            _recording.on_trace(trace)
        return _InterpreterEntry(module, self.__name__, spec, trace, compiled,
                                 options["num_warps"])

    # -- errors -------------------------------------------------------------------------------

    def _where(self, message: str, cls=KernelArgumentError) -> KernelArgumentError:
        """An error (a `cls`) located at the kernel's `def` line."""
        text = linecache.getline(self.file, self.line)
        col = len(text) - len(text.lstrip()) if text else 0
        return cls(message, self.file, self.line, col, text)

    def _describe_params(self) -> str:
        return ", ".join(f"{p.name}: constexpr" if p.is_constexpr else p.name
                         for p in self.params)

    def _argument_error(self, args, kwargs, err: TypeError) -> Exception:
        names = self.arg_names
        takes = f"{self.__name__}() takes ({self._describe_params()})"
        if len(args) > len(names):
            return self._where(
                f"{takes} but was given {len(args)} positional arguments")
        given = set(names[:len(args)])
        twice = [k for k in kwargs if k in given]
        if twice:
            return self._where(
                f"{takes} and got two values for '{twice[0]}' (by position and by keyword)")
        missing = [p.name for p in self.params
                   if p.name not in given and p.name not in kwargs and not p.has_default]
        if missing:
            listed = ", ".join(f"'{m}'" for m in missing)
            return self._where(
                f"{takes} but was called without {listed} "
                f"({len(args)} positional, {len(kwargs)} keyword arguments given)")
        return err

    def _unknown_keyword_error(self, unknown: dict) -> Exception:
        name = next(iter(unknown))
        options = ", ".join(self._option_names + LAUNCH_CONTROLS)
        return self._where(
            f"{self.__name__}() got the keyword '{name}', which is neither a parameter "
            f"({', '.join(self.arg_names)}) nor a launch option ({options})")

    # -- compatibility ------------------------------------------------------------------------

    @property
    def src(self) -> str:
        """The kernel's source from its `def` line, dedented (Triton's `JITFunction.src`)."""
        return self._src

    @src.setter
    def src(self, _value) -> None:
        raise AttributeError("cannot set 'src' directly: use _unsafe_update_src(new_source) "
                             "(callers that inline this function must be rebuilt as well)")

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replace the source the kernel compiles from (Triton's test-suite hook). The new text
        starts at the `def`; compiled specializations are dropped, and errors point at lines
        of the new text counted from the original `def` line."""
        self._src = self._updated_src = new_src
        self.hash = None
        self.used_global_vals = {}
        self._gpu_cache.clear()
        self._interp_cache.clear()
        self._compiled.clear()
        self._fast_launch = self._launch_first
        self._fast_shape, self._fast_made = None, 0
        self._last_grid = self._last_grid_launch = None

    @property
    def repr(self):
        """Triton's `repr` hook (a callable naming the kernel in profiles), or None."""
        return self._repr


    @property
    def cache_key(self) -> str:
        """sha256 of the source and of the globals it reads (callees included)."""
        return function_key(self)

    @property
    def cache(self) -> dict:
        """Compiled kernels by specialization key (full compiles only)."""
        return self._compiled

    def __call__(self, *args, **kwargs):
        raise self._where(
            f"{self.__name__} is a @jit kernel: launch it as {self.__name__}[grid](...), or "
            f"call it from inside another @jit function")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
        do_not_specialize_on_alignment=(), debug=None, noinline=None):
    """Decorate a function as a kernel; usable bare (`@jit`) or with options
    (`@jit(do_not_specialize=["n"], debug=True, noinline=True)`)."""
    def decorate(function):
        return JITFunction(function, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata, version=version)
    return decorate if fn is None else decorate(fn)
