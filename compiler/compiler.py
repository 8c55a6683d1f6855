"""The compile driver: a kernel's source through the backend's ordered stages, traced.

`compile(src, options, pipelines)` takes an `ASTSource` (a jit function with its
specialization) or a path to a `.ttir`/`.ttgir` file, runs the stages in order
(ttir -> ttgir -> llir -> ptx -> cubin [-> sass]) and returns a `CompiledKernel` whose `.asm`
holds every stage's text and whose `.trace` is the `CompileTrace` the explorer reads. Each stage
is a named function `(state) -> None` that reads the previous stage's output from the state and
writes its own; a stage may be replaced by a file (`TILE_OVERRIDE_DIR`), and compilation may
start from a stage's file.
"""
from __future__ import annotations

import difflib
import os
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from compiler.codegen.backend import checked_value
from compiler.codegen.nvidia_backend import DEFAULT_ARCH, NvidiaOptions
from compiler.ir.core import Module
from compiler.ir.parser import parse_module
from compiler.ir.printer import print_module, print_module_with_lines
from compiler.ir.verifier import verify_module
from compiler.trace import CompileTrace

#: The backend the driver compiles for (its options class is `CompileOptions`' base).
BACKEND = "nvidia"
#: The driver's own options that change the generated artifacts (part of the cache key).
DRIVER_KEY_OPTIONS = ("pipelines", "build_cubin", "build_sass")


@dataclass(frozen=True)
class CompileOptions(NvidiaOptions):
    """Everything that changes what a compile produces. The target and code-generation options
    (num_warps, num_stages, num_ctas, arch, maxnreg, debug, enable_fp_fusion, ptx_version,
    default_dot_input_precision, warp_size, line_info) and their checks are the backend's
    (`NvidiaOptions`, the base class); the fields below are the driver's own."""

    pipelines: dict = field(default_factory=dict)      # stage -> pipeline string
    snapshots: bool = True
    verify_each: bool = True
    build_cubin: bool = True
    build_sass: bool = True
    override_dir: str | None = None
    dump_dir: str | None = None

    @classmethod
    def backend_option_names(cls) -> tuple[str, ...]:
        """The names the backend's options class owns (validated by its `parse_options`)."""
        return tuple(f.name for f in fields(NvidiaOptions))

    @classmethod
    def driver_option_names(cls) -> tuple[str, ...]:
        """The names the compile driver owns (stage pipelines, tracing, outputs, folders)."""
        backend = set(cls.backend_option_names())
        return tuple(f.name for f in fields(cls) if f.name not in backend)

    @classmethod
    def from_env(cls, base: dict | None = None, environ=None) -> "CompileOptions":
        """Options from keyword arguments, then the TILE_* variables (read here, at the edge).
        The backend parses and checks its options; unknown names and bad values raise
        `ValueError` naming the option and what is allowed."""
        from compiler.passes.manager import pipeline_from_env
        environ = os.environ if environ is None else environ
        values = dict(base or {})
        values["pipelines"] = pipeline_from_env(environ, values.pop("pipelines", None)).pipelines
        if "TILE_OVERRIDE_DIR" in environ and not values.get("override_dir"):
            values["override_dir"] = environ["TILE_OVERRIDE_DIR"]
        if environ.get("TILE_KERNEL_DUMP") == "1" and not values.get("dump_dir"):
            values["dump_dir"] = environ.get("TILE_DUMP_DIR", "tile_dump")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"unknown compile option(s) {', '.join(unknown)}{hint}; known: "
                             + ", ".join(sorted(known)))
        driver_names = set(cls.driver_option_names())
        backend = _backend()
        parsed = backend.parse_options({k: v for k, v in values.items()
                                        if k not in driver_names})
        driver = {k: checked_value(known[k], v, backend.name) for k, v in values.items()
                  if k in driver_names}
        return cls.with_backend_options(parsed, **driver)

    @classmethod
    def with_backend_options(cls, backend_options: NvidiaOptions, **driver) -> "CompileOptions":
        """Compile options holding the (already parsed) backend options plus driver options."""
        return cls(**{name: getattr(backend_options, name)
                      for name in cls.backend_option_names()}, **driver)

    @property
    def backend_options(self) -> NvidiaOptions:
        """The backend's part of these options, as its own options object (for `add_stages`)."""
        return NvidiaOptions(**{name: getattr(self, name) for name in self.backend_option_names()})

    def key_parts(self) -> dict:
        """The options that change generated code (what the disk cache key includes): every
        backend option and the driver's `DRIVER_KEY_OPTIONS`."""
        names = self.backend_option_names() + DRIVER_KEY_OPTIONS
        return {name: getattr(self, name) for name in names}


def _backend(arch: int | None = None):
    """The backend object for `arch` (default: the backend's default architecture, so an
    option set without `arch` compiles for it whatever GPU is present)."""
    from compiler.codegen.backend import GPUTarget, get_backend
    return get_backend(BACKEND, GPUTarget(BACKEND, DEFAULT_ARCH if arch is None else arch, 32))


@dataclass
class CompileState:
    """What the stages pass along: the modules and texts made so far, and the trace."""

    name: str
    options: CompileOptions
    trace: CompileTrace
    ttir: Module | None = None
    ttgir: Module | None = None
    llir: str | None = None
    ptx: str | None = None
    cubin: bytes | None = None
    metadata: dict = field(default_factory=dict)


class CompiledKernel:
    """A compiled specialization: every stage's text (`asm`), metadata, trace, and `launch`."""

    def __init__(self, state: CompileState):
        self.name = state.name
        self.trace = state.trace
        self.asm: dict[str, Any] = dict(state.trace.stages)
        if state.cubin is not None:
            self.asm["cubin"] = state.cubin
        self.metadata = dict(state.metadata)
        if state.ttir is not None:
            self.ttir_module = state.ttir
        if state.ttgir is not None:
            self.ttgir_module = state.ttgir
        self.options = state.options
        self.from_disk_cache = False
        self._launcher = None

    @classmethod
    def from_cache(cls, entry, options: "CompileOptions") -> "CompiledKernel":
        """Rebuild a kernel from a disk-cache entry (modules are re-parsed when asked for)."""
        from compiler.runtime.cache import TRACE_FILE, stages_from_entry
        trace = CompileTrace.from_json(entry.text(TRACE_FILE))
        state = CompileState(name=trace.kernel_name, options=options, trace=trace)
        state.cubin = stages_from_entry(entry).get("cubin")
        state.metadata = dict(entry.metadata)
        kernel = cls(state)
        kernel.from_disk_cache = True
        return kernel

    def __getattr__(self, name):
        # ttir/ttgir modules of a kernel loaded from the disk cache are parsed on first use.
        if name in ("ttir_module", "ttgir_module"):
            stage = name.split("_")[0]
            module = parse_module(self.trace.stages[stage], f"{self.name}.{stage}")
            setattr(self, name, module)
            return module
        raise AttributeError(name)

    @property
    def num_warps(self) -> int:
        return self.options.num_warps

    @property
    def shared(self) -> int:
        return int(self.metadata.get("shared", 0))

    def launcher(self):
        """The GPU launcher for this kernel, built (module loaded) on first use."""
        if self._launcher is None:
            from compiler.runtime.launcher import Launcher
            self._launcher = Launcher.for_kernel(self)
        return self._launcher

    def launch(self, grid, args, stream=None) -> None:
        """Launch on the GPU over `grid` with `args` (kernel parameters, constexprs excluded)."""
        self.launcher().launch(grid, args, stream)


# ---- stages -------------------------------------------------------------------------------------
def _run_pipeline(state: CompileState, stage: str, module: Module, extra: dict) -> Module:
    from compiler.passes.instrumentation import TraceInstrumentation
    from compiler.passes.manager import DEFAULT_PIPELINES, PassManager
    from compiler.passes.requirements import check_pipeline, properties_of
    pipeline = state.options.pipelines.get(stage, DEFAULT_PIPELINES.get(stage, ""))
    inst = TraceInstrumentation(state.trace, snapshots=state.options.snapshots,
                                verify_each=state.options.verify_each)
    manager = PassManager(stage, pipeline, [inst])
    check_pipeline(manager.passes, stage, given=properties_of(module))   # before any pass runs
    for pass_ in manager.passes:     # the launch's values, where the pipeline gave none
        pass_.set_default_option("num-warps", state.options.num_warps)
        pass_.set_default_option("target", f"cuda:{state.options.arch}")
    ctx = {"num_warps": state.options.num_warps, "arch": state.options.arch,
           "num_stages": state.options.num_stages, **extra}
    return manager.run(module, ctx)


def override_text(state: CompileState, stage: str) -> str | None:
    """The text of a stage replaced by a file from the override folder, noted in the trace."""
    from compiler.dump import find_override, read_override
    path = find_override(state.name, stage, state.options.override_dir)
    if path is None:
        return None
    state.trace.overrides[stage] = str(path)
    return read_override(path, stage)


def stage_ttir(state: CompileState) -> None:
    """ttir: run the ttir pipeline over the front end's module (or an override file)."""
    text = override_text(state, "ttir")
    module = parse_module(text, f"{state.name}.ttir") if text is not None else state.ttir
    state.ttir = _run_pipeline(state, "ttir", module, {})
    _record_stage_text(state, "ttir", state.ttir)


def stage_ttgir(state: CompileState) -> None:
    """ttgir: assign layouts and optimize them (convert-triton-to-tritongpu onwards)."""
    text = override_text(state, "ttgir")
    if text is not None:
        state.ttgir = parse_module(text, f"{state.name}.ttgir")
        verify_module(state.ttgir)
    else:
        ttgir_input = state.ttir.clone()
        state.ttgir = _run_pipeline(state, "ttgir", ttgir_input, {})
    _record_stage_text(state, "ttgir", state.ttgir)
    state.metadata["shared"] = _module_int_attr(state.ttgir, "ttg.shared")
    state.metadata["num_warps"] = _module_int_attr(state.ttgir, "ttg.num-warps") or \
        state.options.num_warps


def _record_stage_text(state: CompileState, stage: str, module: Module) -> None:
    """Keep the stage's text, and map each Python source line to the stage's op lines."""
    text, op_lines = print_module_with_lines(module)
    state.trace.stages[stage] = text
    for op in module.walk():
        position = op.loc.file_line_col()
        if position is None or id(op) not in op_lines:
            continue
        lines = state.trace.python_to_ops.setdefault(str(position.line), {})
        lines.setdefault(stage, []).append(op_lines[id(op)])


def _module_int_attr(module: Module, key: str) -> int:
    attr = module.attributes.get(key)
    return int(attr.value) if attr is not None else 0


# ---- entry points -------------------------------------------------------------------------------
def compile(src, options: dict | CompileOptions | None = None, pipelines: dict | None = None,
            stop_after: str | None = None) -> CompiledKernel:
    """Compile `src` (an ASTSource, or a path to a .ttir/.ttgir file) through every stage."""
    if isinstance(options, CompileOptions):
        opts = options
        if pipelines:
            opts = replace(opts, pipelines={**opts.pipelines, **pipelines})
    else:
        base = dict(options or {})
        if pipelines:
            base["pipelines"] = {**base.get("pipelines", {}), **pipelines}
        opts = CompileOptions.from_env(base)
    if isinstance(src, (str, Path)):
        kernel = _compile_uncached(*_state_from_file(Path(src), opts), stop_after)
    elif stop_after is not None or opts.override_dir or not hasattr(src, "hash"):
        kernel = _compile_uncached(_state_from_source(src, opts), "ttir", stop_after)
    else:
        kernel = _compile_cached(src, opts)
    if opts.dump_dir:
        from compiler.dump import dump_trace_or_warn
        dump_trace_or_warn(kernel.trace, Path(opts.dump_dir) / kernel.name)
    return kernel


def _compile_cached(src, opts: CompileOptions) -> CompiledKernel:
    """Look the specialization up in the disk cache; compile and store it on a miss."""
    from compiler.runtime.cache import CacheOptions, KernelCache, cache_key, stage_files
    cache = KernelCache(CacheOptions.from_env())
    key = cache_key(source_hash=src.hash(), specialization=None, options=opts.key_parts(),
                    target=f"cuda:{opts.arch}")
    entry = None if cache.options.always_compile else cache.get(key)
    if entry is not None:
        try:
            return CompiledKernel.from_cache(entry, opts)
        except Exception as exc:        # whole on disk, but not loadable by this compiler
            cache.reject(entry, f"cannot be loaded: {type(exc).__name__}: {exc}")
    kernel = _compile_uncached(_state_from_source(src, opts), "ttir", None)
    cache.put(key, stage_files(kernel.asm, kernel.trace.to_json(indent=None)), kernel.metadata)
    return kernel


def backend_stages(options: CompileOptions) -> dict:
    """The ordered stage functions of the backend for the options' target (NVIDIA here: the
    common ttir and ttgir stages, then its own llir, ptx, cubin and sass)."""
    stages: dict = {}
    backend = _backend(options.arch)
    backend.add_stages(stages, options.backend_options)
    return stages


def _compile_uncached(state: CompileState, first: str, stop_after: str | None) -> CompiledKernel:
    """Run the backend's stages from `first` on, stopping after `stop_after` when given."""
    run = False
    for name, stage in backend_stages(state.options).items():
        if name == first:
            run = True
        if not run:
            continue
        if name == "llir":           # the lowering needs layouts, a warp count, no calls
            from compiler.passes.requirements import check_stage_input
            check_stage_input(state.ttgir, name)
        start = time.perf_counter()
        stage(state)
        state.trace.stage_times_ms[name] = (time.perf_counter() - start) * 1e3
        if name == stop_after:
            break
    return CompiledKernel(state)


def _state_from_source(src, opts: CompileOptions) -> CompileState:
    from compiler.frontend import generate_ttir
    fn = getattr(src, "fn", src)
    fn = getattr(fn, "fn", fn)
    name = fn.__name__
    code = getattr(fn, "__code__", None)
    trace = CompileTrace(kernel_name=name,
                         source_file=code.co_filename if code else "",
                         source_line=code.co_firstlineno if code else 0,
                         specialization={"signature": dict(src.signature),
                                         "constexprs": {k: repr(v) for k, v in
                                                        src.constexprs.items()},
                                         "attrs": dict(getattr(src, "attrs", {}) or {}),
                                         "options": {"num_warps": opts.num_warps,
                                                     "num_stages": opts.num_stages,
                                                     "arch": opts.arch,
                                                     "pipelines": dict(opts.pipelines)}})
    trace.stages["source"] = _function_source(fn)
    start = time.perf_counter()
    module = generate_ttir(fn, src.signature, src.constexprs, getattr(src, "attrs", None),
                           {"num_warps": opts.num_warps})
    trace.stage_times_ms["frontend"] = (time.perf_counter() - start) * 1e3
    return CompileState(name=name, options=opts, trace=trace, ttir=module)


def _function_source(fn) -> str:
    import inspect
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def _state_from_file(path: Path, opts: CompileOptions) -> tuple[CompileState, str]:
    stage = path.suffix.lstrip(".")
    if stage not in ("ttir", "ttgir"):
        raise ValueError(f"{path}: compilation can start from a .ttir or .ttgir file, "
                         f"not '{path.suffix}'")
    module = parse_module(path.read_text(), str(path))
    verify_module(module)
    funcs = [op for op in module.ops if op.name == "tt.func"
             and getattr(op.attributes.get("sym_visibility"), "value", "public") == "public"]
    name = funcs[0].attributes["sym_name"].value if funcs else path.stem
    if stage == "ttgir":
        warps = _module_int_attr(module, "ttg.num-warps")
        if warps:
            opts = replace(opts, num_warps=warps)
    trace = CompileTrace(kernel_name=name, source_file=str(path))
    trace.overrides[stage] = str(path)
    state = CompileState(name=name, options=opts, trace=trace)
    if stage == "ttir":
        state.ttir = module
        return state, "ttir"
    state.ttgir = module
    trace.stages["ttgir"] = print_module(module)
    state.metadata["shared"] = _module_int_attr(module, "ttg.shared")
    state.metadata["num_warps"] = opts.num_warps
    return state, "llir"
