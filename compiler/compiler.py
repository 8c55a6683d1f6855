"""The compile driver: a kernel's source through the backend's ordered stages, traced.

`compile(src, options, pipelines)` takes an `ASTSource` (a jit function with its
specialization) or a path to a `.ttir`/`.ttgir` file, reads the options once into the frozen
`CompileOptions`, runs the backend's stages in order (ttir -> ttgir -> llir -> ptx -> cubin
[-> sass], listed by the backend's `add_stages`) over a `CompileState`, and returns a
`CompiledKernel` whose `.asm` holds every stage's text, `.metadata` the kernel's
`KernelMetadata` and `.trace` the `CompileTrace` the explorer reads. A stage may be replaced by
a file (`override_dir`), and compilation may start from a stage's file. The stages, their
state and the options live below this module (`compiler.codegen.nvidia_stages`,
`compiler.stage_state`), the disk-cache lookup in the runtime (`runtime.cache.compile_cached`);
this module only orders and times the stages and dumps the trace.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from compiler.dialects.tt import FuncOp
from compiler.codegen.backend import GPUTarget, OptionError
from compiler.frontend import errors  # noqa: F401  (`triton.compiler.errors`)
from compiler.ir.core import Module
from compiler.ir.parser import parse_module
from compiler.ir.printer import print_module
from compiler.ir.verifier import verify_module
from compiler.stage_state import (BACKEND, DRIVER_KEY_OPTIONS, CompileOptions,  # noqa: F401
                                  CompileState, KernelMetadata, backend_for)
from compiler.trace import CompileTrace, encode_constexpr, encode_options
from compiler.runtime.specialization import ASTSource  # noqa: F401  (`triton.compiler.ASTSource`)
from compiler.watchdog import Watchdog

class CompiledKernel:
    """A compiled specialization: every stage's text (`asm`), metadata, trace, and `launch`."""

    def __init__(self, state: CompileState):
        self.name = state.name
        self.trace = state.trace
        self.asm: dict[str, Any] = dict(state.trace.stages)
        if state.cubin is not None:
            self.asm["cubin"] = state.cubin
        self.metadata: KernelMetadata | None = state.metadata   # None before the ttgir stage
        if state.ttir is not None:
            self.ttir_module = state.ttir
        if state.ttgir is not None:
            self.ttgir_module = state.ttgir
        self.options = state.options
        self.from_disk_cache = False
        self._launcher = None
        #: Set by `JITFunction.warmup` when its launches run in the interpreter: a function
        #: `(grid, args) -> None` that launches there; `_init_handles` then loads nothing.
        self.interpreted_launch = None

    @classmethod
    def from_cache(cls, entry, options: "CompileOptions") -> "CompiledKernel":
        """Rebuild a kernel from a disk-cache entry (modules are re-parsed when asked for)."""
        from compiler.runtime.cache import TRACE_FILE, stages_from_entry
        trace = CompileTrace.from_json(entry.text(TRACE_FILE))
        state = CompileState(name=trace.kernel_name, options=options, trace=trace)
        state.cubin = stages_from_entry(entry).get("cubin")
        state.metadata = KernelMetadata.from_dict({"name": trace.kernel_name, **entry.metadata})
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
        """The kernel's warps: its metadata's (the ttgir module's), else the option's (a
        kernel compiled only to ttir)."""
        return self.metadata.num_warps if self.metadata is not None else self.options.num_warps

    @property
    def shared(self) -> int:
        """Dynamic shared memory bytes the kernel needs (0 before the ttgir stage)."""
        return self.metadata.shared if self.metadata is not None else 0

    def launcher(self):
        """The GPU launcher for this kernel, built (module loaded) on first use."""
        if self._launcher is None:
            from compiler.runtime.launcher import Launcher
            self._launcher = Launcher.for_kernel(self)
        return self._launcher

    def launch(self, grid, args, stream=None) -> None:
        """Launch on the GPU over `grid` with `args` (kernel parameters, constexprs excluded)."""
        self.launcher().launch(grid, args, stream)

    # -- Triton's compiled-kernel interface (`triton.compile(...)` results) -------------------
    def __getitem__(self, grid):
        """`kernel[grid](*args)`: launch over `grid` (a tuple of up to three ints)."""
        return lambda *args, stream=None: self.run(grid, *args, stream=stream)

    def run(self, grid, *args, stream=None) -> None:
        """Launch with the kernel's arguments in signature order; constexpr arguments (entries
        "constexpr" in an ASTSource signature) may be passed too and are skipped."""
        if self.interpreted_launch is not None:
            self.interpreted_launch(grid, args)
            return
        self.launch(grid, self._runtime_args(args), stream)

    def _runtime_args(self, args: tuple) -> tuple:
        """`args` without the constexpr ones when all the kernel's parameters were passed in
        order (Triton's compiled kernels take them all: tutorial 02 launches its warmed-up
        kernel with BLOCK_SIZE and num_stages at the end); otherwise `args` as given."""
        layout = self.__dict__.get("_param_layout")
        if layout is None:      # (number of parameters, positions of the runtime ones): once
            spec = self.trace.specialization
            signature = spec.get("signature", {})
            params = spec.get("params") or list(signature)
            layout = (len(params), tuple(i for i, name in enumerate(params)
                                         if name in signature and signature[name] != "constexpr"))
            self.__dict__["_param_layout"] = layout
        count, runtime = layout
        if len(args) == count and count != len(runtime):
            return tuple(args[i] for i in runtime)
        return args

    def _init_handles(self) -> None:
        """Load the module onto the GPU now (Triton loads it on first launch otherwise); a
        kernel warmed up for the interpreter has nothing to load."""
        if self.interpreted_launch is None:
            self.launcher()

    @property
    def n_regs(self) -> int:
        """Registers per thread, as ptxas reported them (0 without a cubin)."""
        return int(self.trace.cubin_info.get("registers", 0)) if self.trace.cubin_info else 0

    @property
    def n_spills(self) -> int:
        """Bytes spilled to local memory (ptxas's spill stores; 0 without a cubin)."""
        return int(self.trace.cubin_info.get("spill_stores", 0)) if self.trace.cubin_info else 0


# ---- entry points -------------------------------------------------------------------------------
def compile(src, options: dict | CompileOptions | None = None, pipelines: dict | None = None,
            stop_after: str | None = None, *, target: GPUTarget | None = None) -> CompiledKernel:
    """Compile `src` through every stage (up to `stop_after`): an ASTSource, a path to a
    .ttir/.ttgir file, or a parsed ttir/ttgir `Module` (ttgir when it has ttg.num-warps).
    Triton's spelling `compile(src, target=GPUTarget("cuda", 90, 32), options={...})` works too:
    a target (also as the second positional argument) sets the architecture. Without a target
    or an `arch` option, the architecture is TRITON_OVERRIDE_ARCH's / TILE_OVERRIDE_ARCH's,
    else the active driver's current target, as in Triton: the present GPU's compute
    capability, or sm_90 (what the interpreter simulates) without one. A `CompileOptions`
    object is taken as it is."""
    if isinstance(options, GPUTarget):       # Triton's positional order: compile(src, target)
        options, target = None, options
    if target is not None:
        options = _with_target(options, target)
    if isinstance(options, CompileOptions):
        opts = options
        if pipelines:
            opts = replace(opts, pipelines={**opts.pipelines, **pipelines})
    else:
        base = dict(options or {})
        if pipelines:
            base["pipelines"] = {**base.get("pipelines", {}), **pipelines}
        opts = CompileOptions.from_env(base, default_arch=lambda: int(current_target().arch))
    if isinstance(src, (str, Path)):
        kernel = _compile_uncached(*_state_from_file(Path(src), opts), stop_after)
    elif isinstance(src, Module):
        stage = "ttgir" if "ttg.num-warps" in src.attributes else "ttir"
        kernel = _compile_uncached(*_state_from_module(src, stage, opts, f"<{stage} module>"),
                                   stop_after)
    elif stop_after is not None or opts.override_dir or not hasattr(src, "hash"):
        kernel = _compile_uncached(_state_from_source(src, opts), "ttir", stop_after)
    else:
        kernel = _compile_cached(src, opts)
    if opts.dump_dir:
        from compiler.dump import dump_trace_or_warn
        dump_trace_or_warn(kernel.trace, Path(opts.dump_dir) / kernel.name)
    return kernel


def triton_key() -> str:
    """A string that changes whenever this compiler's output may change, as Triton's
    `triton.compiler.compiler.triton_key()` is for its caches (torch keys its own compile cache on
    it): the Triton API version we implement, a hash of the compiler's sources and the versions of
    the tools behind its output."""
    import hashlib
    import json

    from compiler import __version__
    from compiler.runtime.cache import compiler_fingerprint, toolchain_versions
    tools = hashlib.sha256(json.dumps(toolchain_versions(), sort_keys=True).encode()).hexdigest()
    return f"{__version__}-tile-explore-{compiler_fingerprint()}-{tools}"


def current_target() -> GPUTarget:
    """The target a compile without one is for: the active driver's (`runtime.active_driver`;
    the present GPU's compute capability, else sm_90). A GPU this backend generates no code
    for is an error that says so and how to compile for another architecture."""
    from compiler.codegen.nvidia_options import KNOWN_ARCHS
    from compiler.runtime import active_driver
    target = active_driver.active().get_current_target()
    if int(target.arch) not in KNOWN_ARCHS:
        raise OptionError(f"the GPU present is sm_{target.arch}, for which this compiler "
                          f"generates no code (known: {', '.join(map(str, KNOWN_ARCHS))}); "
                          f"pass arch=... (e.g. arch=90) to compile for another architecture")
    return target


def _with_target(options, target: GPUTarget):
    """`options` with the architecture of a CUDA `target`; other backends are refused."""
    if target.backend not in ("cuda", BACKEND):
        raise ValueError(f"target backend '{target.backend}' is not supported; this compiler "
                         f"generates code for CUDA (GPUTarget('cuda', <sm>, 32))")
    if isinstance(options, CompileOptions):
        return replace(options, arch=int(target.arch))
    return {**dict(options or {}), "arch": int(target.arch)}


def _compile_cached(src, opts: CompileOptions) -> CompiledKernel:
    """The runtime's disk cache looks the specialization up; a miss compiles here."""
    from compiler.runtime.cache import compile_cached
    return compile_cached(src.hash(), opts,
                          lambda: _compile_uncached(_state_from_source(src, opts), "ttir", None),
                          CompiledKernel.from_cache)


def backend_stages(options: CompileOptions) -> dict:
    """The ordered stage functions of the backend for the options' target (NVIDIA here: the
    common ttir and ttgir stages, then its own llir, ptx, cubin and sass)."""
    stages: dict = {}
    backend = backend_for(options.arch)
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
        with Watchdog(state.options.stage_timeout_s, name) as state.watchdog:
            stage(state)
        state.trace.stage_times_ms[name] = (time.perf_counter() - start) * 1e3
        if name == stop_after:
            break
    return CompiledKernel(state)


def _state_from_source(src, opts: CompileOptions) -> CompileState:
    from compiler.frontend import generate_ttir
    jit = getattr(src, "fn", src)            # the JITFunction: its source may be replaced
    fn = getattr(jit, "fn", jit)
    name = getattr(src, "name", None) or fn.__name__       # an ASTSource's repr hook may rename
    code = getattr(fn, "__code__", None)
    trace = CompileTrace(kernel_name=name,
                         source_file=code.co_filename if code else "",
                         source_line=code.co_firstlineno if code else 0,
                         specialization={"signature": dict(src.signature),
                                         "params": _parameter_names(fn),
                                         "constexprs": {k: repr(v) for k, v in
                                                        src.constexprs.items()},
                                         "constexprs_json": {k: encode_constexpr(v) for k, v
                                                             in src.constexprs.items()},
                                         "attrs": dict(getattr(src, "attrs", {}) or {}),
                                         "options": encode_options(opts)})
    trace.stages["source"] = _function_source(jit)
    start = time.perf_counter()
    with Watchdog(opts.stage_timeout_s, "frontend"):
        module = generate_ttir(jit, src.signature, src.constexprs, getattr(src, "attrs", None),
                               opts.frontend_options(), name=name)
    trace.stage_times_ms["frontend"] = (time.perf_counter() - start) * 1e3
    return CompileState(name=name, options=opts, trace=trace, ttir=module)


def _parameter_names(fn) -> list:
    """The kernel's parameters in order, constexprs included."""
    import inspect
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _function_source(fn) -> str:
    """The kernel's source text for the trace ('' when it cannot be read), as the front end
    reads it (and from the same cache)."""
    from compiler.frontend.source import read_source_lines
    try:
        return "".join(read_source_lines(fn)[0])
    except (OSError, TypeError):
        return ""


def _state_from_file(path: Path, opts: CompileOptions) -> tuple[CompileState, str]:
    stage = path.suffix.lstrip(".")
    if stage not in ("ttir", "ttgir"):
        raise ValueError(f"{path}: compilation can start from a .ttir or .ttgir file, "
                         f"not '{path.suffix}'")
    module = parse_module(path.read_text(), str(path))
    return _state_from_module(module, stage, opts, str(path), fallback_name=path.stem)


def _state_from_module(module: Module, stage: str, opts: CompileOptions, source_file: str,
                       fallback_name: str = "kernel") -> tuple[CompileState, str]:
    """The state of a compile that starts from a ttir or ttgir module (verified here)."""
    verify_module(module)
    funcs = [op for op in module.ops if isinstance(op, FuncOp)
             and getattr(op.attributes.get("sym_visibility"), "value", "public") == "public"]
    name = funcs[0].attributes["sym_name"].value if funcs else fallback_name
    metadata = KernelMetadata.from_ttgir(module, name) if stage == "ttgir" else None
    if metadata is not None:        # the module's facts win over the options' defaults
        opts = replace(opts, num_warps=metadata.num_warps)
    trace = CompileTrace(kernel_name=name, source_file=source_file)
    trace.overrides[stage] = source_file
    state = CompileState(name=name, options=opts, trace=trace)
    if stage == "ttir":
        state.ttir = module
        return state, "ttir"
    state.ttgir = module
    trace.stages["ttgir"] = print_module(module)
    state.metadata = metadata
    return state, "llir"
