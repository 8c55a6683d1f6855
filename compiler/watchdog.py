"""A watchdog that bounds a compile stage: a stage (or one of its passes) that runs longer than
its limit stops with a `StageTimeout` naming the stage and the pass, instead of hanging.

`Watchdog(limit_s, stage)` is a context manager around one stage. A timer thread, when the
limit passes, raises `StageTimeout` asynchronously in the compiling thread
(`PyThreadState_SetAsyncExc`): Python delivers it between bytecodes, so it interrupts the
pure-Python loops of passes and the lowering; a call into native code (LLVM) is interrupted
when it returns. The pass manager's instrumentation tells the watchdog which pass is running
(`WatchdogInstrumentation`), so the error names it. External tools get their own timeout
(ptxas: `subprocess.run(timeout=...)`). The limit is the compile option `stage_timeout_s`
(env TILE_STAGE_TIMEOUT, read once by `CompileOptions.from_env`); None disables the watchdog.
"""
from __future__ import annotations

import ctypes
import threading

from compiler.passes.manager import PassInstrumentation

#: The default limit per stage in seconds: generous, a bound on hangs, not on slow compiles.
DEFAULT_STAGE_TIMEOUT_S = 120.0
#: Callables `(stage, pass_name or None)` told when a stage or a pass starts (the isolation
#: worker reports progress through it, so that a crash names where it happened).
PROGRESS_LISTENERS: list = []


def report_progress(stage: str, pass_name: str | None = None) -> None:
    """Tell every `PROGRESS_LISTENERS` entry that `stage` (and `pass_name` in it) starts."""
    for listener in PROGRESS_LISTENERS:
        listener(stage, pass_name)


class StageTimeout(Exception):
    """A stage or pass that ran past the watchdog's limit."""

    def __init__(self, stage: str = "?", pass_name: str | None = None,
                 limit_s: float | None = None):
        self.stage = stage
        self.pass_name = pass_name
        self.limit_s = limit_s
        where = f"pass '{pass_name}' of the {stage} stage" if pass_name else f"the {stage} stage"
        limit = f"{limit_s:g} s" if limit_s is not None else "its time limit"
        super().__init__(f"{where} ran past {limit} and was stopped (a hang or a very slow "
                         f"compile; raise the limit with the compile option stage_timeout_s "
                         f"or TILE_STAGE_TIMEOUT)")


class _Interrupt(StageTimeout):
    """What the timer raises in the compiling thread (built without arguments by Python);
    `Watchdog.__exit__` replaces it with a `StageTimeout` that names the stage and pass."""


def _set_async_exc(thread_id: int, exc_type) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc_type) if exc_type else None)


class Watchdog:
    """Bound the `with` block (one stage) to `limit_s` seconds (None: unbounded)."""

    def __init__(self, limit_s: float | None, stage: str):
        self.limit_s = limit_s
        self.stage = stage
        self.pass_name: str | None = None
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._thread_id = 0

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            _set_async_exc(self._thread_id, _Interrupt)

    def __enter__(self) -> "Watchdog":
        report_progress(self.stage)
        if self.limit_s is not None:
            self._thread_id = threading.get_ident()
            self._timer = threading.Timer(self.limit_s, self._fire)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._timer is None:
            return False
        with self._lock:
            self._done = True
            self._timer.cancel()
            if self.fired:               # an interrupt not yet delivered must not leak out
                _set_async_exc(self._thread_id, None)
        if self.fired:
            # whatever escaped (the interrupt itself, or a pass failure wrapping it) was the
            # watchdog's doing: say so, naming the stage and the pass
            raise StageTimeout(self.stage, self.pass_name, self.limit_s) from None
        return False


class WatchdogInstrumentation(PassInstrumentation):
    """Pass-manager instrumentation telling a `Watchdog` which pass is running."""

    def __init__(self, watchdog: Watchdog | None):
        self.watchdog = watchdog

    def before_pass(self, run, module) -> None:
        """Note the pass about to run (a timeout inside it names it)."""
        if self.watchdog is not None:
            self.watchdog.pass_name = run.pass_.name
        report_progress(run.stage, run.pass_.name)

    def after_pass(self, run, module) -> None:
        """The pass is over: the stage runs outside any pass again."""
        if self.watchdog is not None:
            self.watchdog.pass_name = None
