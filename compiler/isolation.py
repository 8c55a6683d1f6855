"""Compiling where a crash cannot take the caller down: a worker process per compile.

LLVM and ptxas run in-process through llvmlite; an LLVM assertion or fatal error aborts the
whole process (SIGABRT), which for the explorer means the app dies. `run_isolated(fn, ...)`
runs `fn` in a forked worker (fork keeps the caller's kernels, JIT functions and imports
without pickling them; `spawn` where fork does not exist), sends back its result or its
exception, and turns a worker that dies (a signal, an exit without an answer) into a
`CompileCrashed` naming the kernel, the stage and the pass it was in: the worker reports each
stage and pass as it starts (`compiler.watchdog.PROGRESS_LISTENERS`).
`compile_isolated(src, options, pipelines, stop_after)` is `compiler.compile` run that way; the
kernel comes back rebuilt from its trace, cubin and metadata (its modules re-parsed on use).
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import tempfile
import signal
import warnings
from typing import Any, Callable


class CompileCrashed(RuntimeError):
    """The worker compiling a kernel died (an abort or another signal) instead of answering."""

    def __init__(self, kernel: str, stage: str | None, pass_name: str | None, how: str):
        self.kernel = kernel
        self.stage = stage
        self.pass_name = pass_name
        self.how = how
        where = (f"in pass '{pass_name}' of the {stage} stage" if pass_name else
                 f"in the {stage} stage" if stage else "before its first stage")
        super().__init__(f"compiling {kernel} crashed {where}: the worker process {how}. The "
                         f"caller is unharmed; this is a compiler (or LLVM/ptxas) bug: please "
                         f"report it with the kernel's IR (TILE_KERNEL_DUMP=1 writes it)")


class WorkerError(RuntimeError):
    """An exception from the worker that could not be sent back as itself."""


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not finish"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        cause = " (an abort: LLVM or a tool hit a fatal error)" if -exitcode == signal.SIGABRT \
            else ""
        return f"was killed by {name}{cause}"
    return f"exited with status {exitcode} without an answer"


def _worker(connection, stderr_path, fn, args, kwargs) -> None:
    import faulthandler
    from compiler.watchdog import PROGRESS_LISTENERS
    faulthandler.disable()           # a crash is reported by the caller, not as a C stack
    with open(stderr_path, "wb") as captured:   # LLVM's last words, for the caller
        os.dup2(captured.fileno(), 2)
    PROGRESS_LISTENERS.append(lambda stage, pass_name: connection.send(("at", stage,
                                                                        pass_name)))
    try:
        result = ("ok", fn(*args, **kwargs))
    except BaseException as err:  # sent back to the caller, who raises it
        result = ("error", err)
    try:
        connection.send(result)
    except Exception:  # the result or the exception does not pickle: send its text
        if result[0] == "error":
            err = result[1]
            connection.send(("error", WorkerError(f"{type(err).__name__}: {err}")))
        else:
            connection.send(("error", WorkerError(
                f"the worker's result ({type(result[1]).__name__}) cannot be sent back")))
    finally:
        connection.close()


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_isolated(fn: Callable, *args, kernel: str = "kernel", timeout_s: float | None = None,
                 **kwargs) -> Any:
    """`fn(*args, **kwargs)` run in a worker process; its result, or its exception raised
    here. A worker that dies raises `CompileCrashed` (naming `kernel` and the stage and pass
    the worker last reported); one that runs past `timeout_s` is killed and reported so."""
    with tempfile.TemporaryDirectory(prefix="tile-worker-") as folder:
        stderr_path = os.path.join(folder, "stderr")
        try:
            return _run_worker(fn, args, kwargs, kernel, timeout_s, stderr_path)
        finally:
            _forward_output(stderr_path)


def _last_words(stderr_path: str, lines: int = 8) -> str:
    try:
        with open(stderr_path, "rb") as captured:
            text = captured.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _forward_output(stderr_path: str) -> None:
    """What the worker wrote on stderr (warnings, tool messages), for the caller to see."""
    try:
        with open(stderr_path, "rb") as captured:
            text = captured.read().decode("utf-8", "replace")
    except OSError:
        return
    if text:
        sys.stderr.write(text)


def _crashed(kernel, stage, pass_name, how, stderr_path) -> CompileCrashed:
    words = _last_words(stderr_path)
    if words:
        how += f"; its last output:\n{words}\n"
    open(stderr_path, "wb").close()      # shown in the error: not forwarded again
    return CompileCrashed(kernel, stage, pass_name, how)


def _run_worker(fn, args, kwargs, kernel, timeout_s, stderr_path):
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    with warnings.catch_warnings():      # forking a threaded caller: the child only compiles
        warnings.simplefilter("ignore", DeprecationWarning)
        process = context.Process(target=_worker,
                                  args=(sender, stderr_path, fn, args, kwargs), daemon=True)
        process.start()
    sender.close()
    stage = pass_name = None
    answer = None
    try:
        while answer is None:
            if not receiver.poll(timeout_s):
                process.kill()
                process.join()
                raise _crashed(kernel, stage, pass_name,
                               f"ran past {timeout_s:g} s and was stopped", stderr_path)
            try:
                message = receiver.recv()
            except (EOFError, OSError):   # the worker died without an answer
                process.join()
                raise _crashed(kernel, stage, pass_name, _describe_exit(process.exitcode),
                               stderr_path) from None
            except pickle.UnpicklingError as err:
                process.join()
                raise WorkerError(f"the worker's answer could not be read: {err}") from None
            if message[0] == "at":
                stage, pass_name = message[1], message[2]
            else:
                answer = message
    finally:
        receiver.close()
    process.join()
    kind, value = answer
    if kind == "error":
        raise value
    return value


# ---- compiles -------------------------------------------------------------------------------
def _compile_in_worker(src, options, pipelines, stop_after) -> dict:
    from compiler.compiler import compile as compile_source
    kernel = compile_source(src, options=options, pipelines=pipelines, stop_after=stop_after)
    return {"trace": kernel.trace.to_json(indent=None), "cubin": kernel.asm.get("cubin"),
            "metadata": kernel.metadata.to_dict() if kernel.metadata is not None else None,
            "options": kernel.options}


def _kernel_name(src) -> str:
    fn = getattr(getattr(src, "fn", src), "fn", getattr(src, "fn", None))
    name = getattr(fn, "__name__", None)
    return name or str(src)


def compile_isolated(src, options=None, pipelines: dict | None = None,
                     stop_after: str | None = None, timeout_s: float | None = None):
    """`compiler.compile(src, options, pipelines, stop_after)` in a worker process (see
    `run_isolated`); the `CompiledKernel` rebuilt here. A crash of LLVM or ptxas raises
    `CompileCrashed` instead of killing the caller."""
    from compiler.compiler import CompiledKernel
    from compiler.stage_state import CompileState, KernelMetadata
    from compiler.trace import CompileTrace
    parts = run_isolated(_compile_in_worker, src, options, pipelines, stop_after,
                         kernel=_kernel_name(src), timeout_s=timeout_s)
    trace = CompileTrace.from_json(parts["trace"])
    state = CompileState(name=trace.kernel_name, options=parts["options"], trace=trace)
    state.cubin = parts["cubin"]
    if parts["metadata"] is not None:
        state.metadata = KernelMetadata.from_dict(parts["metadata"])
    return CompiledKernel(state)
