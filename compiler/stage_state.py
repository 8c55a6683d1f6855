"""What the compile stages share: the frozen options, the kernel metadata, the stage state.

It sits below both the compile driver (`compiler.compiler`) and the backend's stages
(`compiler.codegen.nvidia_stages`), so that neither imports the other: the driver builds a
`CompileState` and runs the backend's stage functions over it; each stage reads the previous
stage's output from the state and writes its own.

- `CompileOptions`: every option of a compile in one frozen object (the backend's target and
  code-generation options plus the driver's own), read from keyword arguments and the TILE_*
  environment variables once, at the edge (`from_env`). The pass manager binds it to every
  pass; the lowering reads it.
- `KernelMetadata` (`compiler.metadata`): the kernel's facts, made by the ttgir stage.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields

from compiler.codegen.backend import OptionError, checked_value
from compiler.codegen.nvidia_options import DEFAULT_ARCH, NvidiaOptions, uses_tma
from compiler.ir.core import Module
from compiler.ir.printer import print_module_with_lines
from compiler.metadata import KernelMetadata, MetadataError  # noqa: F401
from compiler.passes.manager import ENV_PIPELINE_VARS, pipeline_from_env
from compiler.trace import CompileTrace
from compiler.watchdog import DEFAULT_STAGE_TIMEOUT_S

#: The backend the driver compiles for (its options class is `CompileOptions`' base).
BACKEND = "nvidia"
#: The driver's own options that change the generated artifacts (part of the cache key).
DRIVER_KEY_OPTIONS = ("pipelines", "build_cubin", "build_sass")
#: Boolean compile options an environment variable sets when the caller does not
#: (variable -> option; "1", "true", "yes", "on" are true).
ENV_SWITCHES = (("TILE_MMA_V2_TF32_INT8", "mma_v2_tf32_int8"),
                ("TILE_TF32_LDMATRIX", "tf32_ldmatrix"))
#: Stages whose pipeline a compile may replace (`pipelines=` / TILE_PIPELINE_<STAGE>).
PIPELINE_STAGES = tuple(ENV_PIPELINE_VARS)


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
    #: kernels may read any global, not only compile-time ones (Triton's escape hatch);
    #: TILE_ALLOW_NON_CONSTEXPR_GLOBALS or TRITON_ALLOW_NON_CONSTEXPR_GLOBALS
    allow_non_constexpr_globals: bool = False
    #: the watchdog's limit per stage in seconds (None: unbounded); TILE_STAGE_TIMEOUT
    stage_timeout_s: float | None = field(default=DEFAULT_STAGE_TIMEOUT_S, metadata={
        "check": lambda v: not isinstance(v, bool) and isinstance(v, (int, float)) and v > 0,
        "allowed": "a positive number of seconds, or None for no limit"})

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
    def from_env(cls, base: dict | None = None, environ=None,
                 default_arch=None) -> "CompileOptions":
        """Options from keyword arguments, then the TILE_* variables (read here, at the edge),
        then `default_arch()` (the present GPU's) for an `arch` neither of them gives.
        The backend parses and checks its options; unknown names and bad values raise
        `OptionError` (a `ValueError`) naming the option and what is allowed."""
        environ = os.environ if environ is None else environ
        values = dict(base or {})
        values["pipelines"] = pipeline_from_env(environ, values.pop("pipelines", None)).pipelines
        if "TILE_OVERRIDE_DIR" in environ and not values.get("override_dir"):
            values["override_dir"] = environ["TILE_OVERRIDE_DIR"]
        if environ.get("TILE_DEBUG") == "1" and values.get("debug") is None:
            values["debug"] = True
        if environ.get("TILE_KERNEL_DUMP") == "1" and not values.get("dump_dir"):
            values["dump_dir"] = environ.get("TILE_DUMP_DIR", "tile_dump")
        default_fusion = environ.get("TILE_DEFAULT_FP_FUSION",
                                     environ.get("TRITON_DEFAULT_FP_FUSION"))
        if default_fusion is not None and values.get("enable_fp_fusion") is None:
            values["enable_fp_fusion"] = default_fusion.strip().lower() in ("1", "true", "on")
        if "allow_non_constexpr_globals" not in values and allows_non_constexpr_globals(environ):
            values["allow_non_constexpr_globals"] = True
        override_arch = environ.get("TILE_OVERRIDE_ARCH") or environ.get("TRITON_OVERRIDE_ARCH")
        if override_arch and values.get("arch") is None:
            values["arch"] = override_arch      # "sm80", "sm_80" or "80", as Triton reads it
        for variable, option in ENV_SWITCHES:
            raw = environ.get(variable)
            if raw is not None and values.get(option) is None:
                values[option] = raw.strip().lower() in ("1", "true", "yes", "on")
        if values.get("arch") is None and default_arch is not None:
            values["arch"] = default_arch()
        if "TILE_STAGE_TIMEOUT" in environ and "stage_timeout_s" not in values:
            values["stage_timeout_s"] = _seconds_from_env("TILE_STAGE_TIMEOUT",
                                                          environ["TILE_STAGE_TIMEOUT"])
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise OptionError(f"unknown compile option(s) {', '.join(unknown)}{hint}; known: "
                              + ", ".join(sorted(known)))
        driver_names = set(cls.driver_option_names())
        backend = backend_for()
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

    def __post_init__(self):
        stray = sorted(set(self.pipelines) - set(PIPELINE_STAGES))
        if stray:
            raise OptionError(f"option 'pipelines' names unknown stage(s) {', '.join(stray)}; "
                              f"a pipeline can be given for {', '.join(PIPELINE_STAGES)}")

    @property
    def backend_options(self) -> NvidiaOptions:
        """The backend's part of these options, as its own options object (for `add_stages`)."""
        return NvidiaOptions(**{name: getattr(self, name) for name in self.backend_option_names()})

    @property
    def target(self) -> str:
        """The target string recorded on ttgir modules (`ttg.target`), e.g. "cuda:90"."""
        return f"cuda:{self.arch}"

    def key_parts(self) -> dict:
        """The options that change generated code (what the disk cache key includes): every
        backend option and the driver's `DRIVER_KEY_OPTIONS`."""
        names = self.backend_option_names() + DRIVER_KEY_OPTIONS
        return {name: getattr(self, name) for name in names}

    def frontend_options(self) -> dict:
        """What the front end reads: `debug`, the default of tl.dot's input_precision and
        num_warps (`tl.extra.cuda.num_threads()`), whether host descriptors are copied by TMA,
        whether kernels may read any global; the same keys the interpreter path hands it."""
        return {"debug": self.debug,
                "default_dot_input_precision": self.default_dot_input_precision,
                "num_warps": self.num_warps, "tma": uses_tma(self),
                "allow_non_constexpr_globals": self.allow_non_constexpr_globals}


def allows_non_constexpr_globals(environ) -> bool:
    """Whether the environment lets kernels read non-constexpr globals (TILE_ or Triton's
    TRITON_ALLOW_NON_CONSTEXPR_GLOBALS set to 1/true/yes/on)."""
    text = environ.get("TILE_ALLOW_NON_CONSTEXPR_GLOBALS",
                       environ.get("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", ""))
    return text.strip().lower() in ("1", "true", "yes", "on")


def _seconds_from_env(name: str, text: str) -> float | None:
    """A time limit from an environment variable: seconds, or 0 / "none" for no limit."""
    if text.strip().lower() in ("0", "none", "off", ""):
        return None
    try:
        return float(text)
    except ValueError:
        raise OptionError(f"{name}={text!r} is not a number of seconds (0 or 'none' for no "
                          f"limit)") from None


def backend_for(arch: int | None = None):
    """The backend object for `arch` (default: the backend's default architecture; `compile()`
    names the present GPU's architecture itself when the caller named none)."""
    from compiler.codegen.backend import GPUTarget, get_backend
    return get_backend(BACKEND, GPUTarget(BACKEND, DEFAULT_ARCH if arch is None else arch, 32))


@dataclass
class CompileState:
    """What the stages pass along: the modules and texts made so far, the kernel's metadata
    (set by the ttgir stage) and the trace."""

    name: str
    options: CompileOptions
    trace: CompileTrace
    ttir: Module | None = None
    ttgir: Module | None = None
    llir: str | None = None
    llvm_module: object = None      # the llvmlite module `llir` was printed from, if kept
    ptx: str | None = None
    cubin: bytes | None = None
    metadata: KernelMetadata | None = None
    watchdog: object = None         # the running stage's `compiler.watchdog.Watchdog`


def override_text(state: CompileState, stage: str) -> str | None:
    """The text of a stage replaced by a file from the override folder, noted in the trace."""
    from compiler.dump import find_override, read_override
    path = find_override(state.name, stage, state.options.override_dir)
    if path is None:
        return None
    state.trace.overrides[stage] = str(path)
    return read_override(path, stage)


def record_stage_text(state: CompileState, stage: str, module: Module) -> None:
    """Keep the stage's text, and map each Python source line to the stage's op lines."""
    text, op_lines = print_module_with_lines(module)
    state.trace.stages[stage] = text
    for op in module.walk():
        position = op.loc.file_line_col()
        if position is None or op not in op_lines:
            continue
        lines = state.trace.python_to_ops.setdefault(str(position.line), {})
        lines.setdefault(stage, []).append(op_lines[op])
