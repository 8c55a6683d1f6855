"""Running a user's kernel file the way `tile-explore FILE` does, and recompiling a kernel.

The file runs as `__main__` with the `triton` alias installed, inside the compiler's recording
context, so every kernel it compiles and launches comes back as a CompileTrace. Kernels defined
but never launched are compiled through `warmup` when their parameters allow it; errors in the
user's file come back as a short message with file:line, never as a traceback. The compiler is
imported lazily: a missing piece gives a clear message (`CompilerMissing`).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import os
import sys
import tempfile
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path


class CompilerMissing(RuntimeError):
    """A part of the compiler that this mode needs cannot be imported."""


@dataclass
class RunResult:
    """What running a user file produced."""

    traces: list = field(default_factory=list)
    messages: list = field(default_factory=list)     # notes: what was not run and why
    error: str | None = None                          # the user's file failed (file:line + message)
    kernels: dict = field(default_factory=dict)       # kernel name -> JIT function object
    recorder: object = None                           # the recording (launch arguments, ...)


def require(module: str, attribute: str | None = None, purpose: str = ""):
    """Import `module` (and get `attribute`), or raise CompilerMissing saying what is missing."""
    try:
        loaded = importlib.import_module(module)
        return getattr(loaded, attribute) if attribute else loaded
    except (ImportError, AttributeError) as error:
        name = f"{module}.{attribute}" if attribute else module
        raise CompilerMissing(f"{name} is not available ({error}); it is needed {purpose}".strip())


def set_pipeline_overrides(passes: list[str]) -> None:
    """Apply `STAGE=PIPELINE` options through TILE_PIPELINE_<STAGE> for the compiler to read."""
    for item in passes:
        stage, sep, pipeline = item.partition("=")
        if not sep or stage.strip().lower() not in ("ttir", "ttgir", "llir"):
            raise ValueError(f"--passes {item!r}: expected STAGE=PIPELINE with STAGE one of "
                             "ttir, ttgir, llir")
        os.environ[f"TILE_PIPELINE_{stage.strip().upper()}"] = pipeline.strip()


def describe_user_error(error: BaseException, path: Path) -> str:
    """`file:line: message` plus the source line, for an exception raised by a user's file.

    Errors the compiler formats itself (with file:line:col and a caret) keep their text."""
    message = f"{type(error).__name__}: {error}"
    text = str(error)
    already_located = ":" in text.split("\n", 1)[0] and "^" in text   # file:line:col + caret
    if already_located:
        return text
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if Path(f.filename).resolve() == path.resolve()]
    if not frames:
        return message
    frame = frames[-1]
    source = linecache.getline(frame.filename, frame.lineno).rstrip()
    return f"{frame.filename}:{frame.lineno}: {message}\n    {source.strip()}"


def _is_jit_function(obj) -> bool:
    return callable(getattr(obj, "warmup", None)) and callable(getattr(obj, "fn", None))


def _warmup_arguments(jit) -> tuple | None:
    """Signature strings for a kernel's parameters, or None when a constexpr has no default.

    Parameters named like pointers get "*fp32", the others "i32"; constexprs take their
    default values. This is a guess, so kernels compiled this way are reported as such."""
    args, kwargs = [], {}
    for param in inspect.signature(jit.fn).parameters.values():
        if "constexpr" in str(param.annotation):
            if param.default is inspect.Parameter.empty:
                return None
            kwargs[param.name] = param.default
        elif param.name.lower().endswith(("ptr", "_p")) or (len(param.name) == 1 and
                                                             param.name.isupper()):
            args.append("*fp32")
        else:
            args.append("i32")
    return tuple(args), kwargs


def run_file(path: str | Path, script_args: list[str] | None = None, no_gpu: bool = False,
             only_kernel: str | None = None) -> RunResult:
    """Run a kernel file as __main__ and collect the traces of the kernels it compiled."""
    path = Path(path)
    result = RunResult()
    install = require("compiler.triton_alias", "install", "to run Triton-style files")
    record = require("compiler.runtime.recording", "record", "to record compiled kernels")
    if no_gpu:
        os.environ["TILE_INTERPRET"] = "1"     # the jit reads it when a kernel is defined
    install()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *(script_args or [])]
    sys.path.insert(0, str(path.resolve().parent))
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    namespace = module.__dict__
    saved_main = sys.modules.get("__main__")
    try:
        with record() as recorder:
            try:
                code = compile(path.read_text(), str(path), "exec")
                sys.modules["__main__"] = module
                exec(code, namespace)       # like runpy, but the globals survive an error
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    result.error = f"{path}: the script exited with status {stop.code}"
            except SyntaxError as error:
                result.error = f"{error.filename}:{error.lineno}:{error.offset}: {error.msg}\n" \
                               f"    {(error.text or '').strip()}"
            except Exception as error:   # the user's code failed: report it, keep what compiled
                result.error = describe_user_error(error, path)
            _warm_up_unlaunched(namespace, recorder, result)
        result.traces = list(recorder.traces)
        result.recorder = recorder
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    if only_kernel:
        result.traces = [t for t in result.traces if t.kernel_name == only_kernel]
        if not result.traces:
            result.messages.append(f"no kernel named {only_kernel!r} was compiled")
    return result


def _warm_up_unlaunched(namespace: dict, recorder, result: RunResult) -> None:
    """Compile kernels that were defined but never launched, when warmup can be called."""
    compiled = {trace.kernel_name for trace in recorder.traces}
    why = "the script stopped with an error first" if result.error else \
        "not launched by the script"
    for name, obj in namespace.items():
        if not _is_jit_function(obj):
            continue
        kernel_name = getattr(obj.fn, "__name__", name)
        result.kernels[kernel_name] = obj
        if kernel_name in compiled:
            continue
        guess = _warmup_arguments(obj)
        if guess is None:
            result.messages.append(f"{kernel_name}: {why}, and a constexpr parameter has no "
                                   "default, so it was not compiled")
            continue
        args, kwargs = guess
        try:
            obj.warmup(*args, grid=(1,), **kwargs)
            result.messages.append(f"{kernel_name}: {why}; compiled with guessed signature "
                                   f"({', '.join(args)}) and no timings")
        except Exception as error:
            result.messages.append(f"{kernel_name}: {why}, and compiling it with a guessed "
                                   f"signature failed: {type(error).__name__}: {error}")


def _literal(text):
    """A constexpr value as the trace stores it (its repr) back as a Python value."""
    try:
        return ast.literal_eval(text) if isinstance(text, str) else text
    except (ValueError, SyntaxError):
        return text


def recompile(trace, pipelines: dict, kernel=None):
    """Compile a kernel again with other pass pipelines ({stage: pipeline string}) and return
    the new CompileTrace (see `recompile_kernel`)."""
    return recompile_kernel(trace, pipelines, kernel).trace


def recompile_kernel(trace, pipelines: dict, kernel=None):
    """Compile a kernel again with other pass pipelines ({stage: pipeline string}) and return
    the CompiledKernel (its `trace` holds every stage, its `launch` runs it on the GPU).

    With the kernel's JIT function (from the run) this rebuilds its specialization as an
    `ASTSource`; without it (a saved trace) it compiles the trace's ttir from a file, so the
    pipeline editor also works on traces opened with --trace."""
    compile_fn = require("compiler", "compile", "to recompile with another pipeline")
    spec = trace.specialization or {}
    options = {key: value for key, value in (spec.get("options") or {}).items()
               if key in ("num_warps", "num_stages", "arch")}
    if kernel is not None and isinstance(spec.get("signature"), dict):
        ast_source = require("compiler.runtime.specialization", "ASTSource", "to recompile")
        source = ast_source(fn=kernel, signature=dict(spec["signature"]),
                            constexprs={k: _literal(v) for k, v in
                                        (spec.get("constexprs") or {}).items()},
                            attrs=dict(spec.get("attrs") or {}))
        return compile_fn(source, options=options, pipelines=pipelines)
    ttir = trace.stage_inputs.get("ttir") or trace.stages.get("ttir")
    if not ttir:
        raise ValueError(f"{trace.kernel_name}: the trace has no ttir to recompile from")
    with tempfile.TemporaryDirectory(prefix="tile-explore-") as folder:
        path = Path(folder) / f"{trace.kernel_name}.ttir"
        path.write_text(ttir)
        return compile_fn(str(path), options=options, pipelines=pipelines)
