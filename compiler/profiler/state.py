"""The profiler's process state: sessions, which are active, the scope stack, the launch hook.

A `Session` holds a `Profile` plus its options (context, hook, output name). While at least
one session is active the profiler's `LaunchHook` sits in `recording.OBSERVERS`, so every
launch of ours goes past it (the jit's fast path included); with none active a launch pays one
more truthiness test. The scope stack is per thread (as Proton's); other libraries' kernels are
attributed by the scope stack of the thread that launched them. `Site`s say where a kernel
belongs: which sessions were active when it was launched and at which path of their trees.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from compiler.profiler.data import Profile

#: Contexts a session may use: the scope stack ("shadow") or the Python call stack ("python").
CONTEXTS = ("shadow", "python")
#: Hooks a session may use: none, or "triton" (kernels' `launch_metadata`).
HOOKS = (None, "triton")
#: Where frames are not shown in the python context (our own packages: compiler, explorer).
_OWN_FOLDERS = (str(Path(__file__).resolve().parents[1]) + os.sep,
                str(Path(__file__).resolve().parents[2] / "explorer") + os.sep)


@dataclass(eq=False)
class Session:
    """One profiling session (see module doc)."""

    id: int
    name: str
    context: str
    hook: str | None
    profile: Profile
    active: bool = True
    instrumentation: str | None = None    # the instrument-regions pass text, when asked for


@dataclass(frozen=True, eq=False)
class Site:
    """Where a kernel goes (compared by identity: the GPU timer interns sites): for each
    session active at its launch, its path in that session's tree. `leaf` names the kernel's
    node (None: the name the GPU timer reports); `metrics` (the triton hook's) and
    `attributes` (our kernel's specialization) go with it."""

    placements: tuple                 # ((Session, path), ...)
    leaf: str | None = None
    metrics: tuple = ()               # ((name, value), ...)
    attributes: tuple = ()

    def deliver(self, leaf: str, time_metric: str, start_ns: int, end_ns: int,
                track: str, attributes: dict | None = None) -> None:
        """Count one execution of the kernel, timed from `start_ns` to `end_ns` (host
        clock), in every session of the site. `leaf` and `attributes` name the kernel's node
        where the site does not (a kernel record the GPU timer named)."""
        metrics = {time_metric: end_ns - start_ns, **dict(self.metrics)}
        attributes = dict(self.attributes) if self.leaf is not None else dict(attributes or {})
        for session, path in self.placements:
            session.profile.add_kernel(path, self.leaf or leaf, metrics, start_ns, end_ns,
                                       track, attributes)


@dataclass
class _State:
    sessions: dict = field(default_factory=dict)      # id -> Session, in start order
    next_id: int = 0
    timer: object = None                              # the GPU timer (see `timers`)
    timing: dict = field(default_factory=dict)        # how the timer times (metadata)
    hook: object = None                               # the LaunchHook while registered
    command_line: int | None = None                   # the `prof` command's session id
    version: int = 0                                  # bumped when sessions or scopes change
    instrumentation: object = None                    # `instrument.Instrumentation` while on


STATE = _State()
_local = threading.local()


def scope_stack() -> list:
    """This thread's stack of open scopes: (name, start ns, sessions active at entry)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def active_sessions() -> tuple:
    """The sessions recording now, in start order."""
    return tuple(s for s in STATE.sessions.values() if s.active)


def shadow_path() -> tuple:
    """The names of this thread's open scopes, outermost first."""
    return tuple(entry[0] for entry in scope_stack())


def python_path(skip_own: bool = True) -> tuple:
    """The Python call stack as Proton names frames (`file:function@line`), outermost first,
    without the frames of this compiler and its explorer."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (skip_own and filename.startswith(_OWN_FOLDERS)):
            frames.append(f"{filename}:{frame.f_code.co_name}@{frame.f_lineno}")
        frame = frame.f_back
    return tuple(reversed(frames))


def path_for(session: Session) -> tuple:
    """Where a kernel launched now goes in `session`'s tree."""
    return python_path() if session.context == "python" else shadow_path()


def now_ns() -> int:
    """The host clock every event is measured on."""
    return time.perf_counter_ns()


def sync_hook() -> None:
    """Put the launch hook into `recording.OBSERVERS` while some session is active, take it
    out otherwise, and tell the GPU timer that the active set or the scope stack changed."""
    from compiler.runtime import recording

    STATE.version += 1
    hook = STATE.hook
    recording.QUIET.clear()
    _sync_instrumentation(hook)
    if active_sessions():
        if hook not in recording.OBSERVERS:
            recording.add_observer(hook)
    elif hook in recording.OBSERVERS:
        recording.remove_observer(hook)
    if STATE.timer is not None:
        STATE.timer.retag(current_site())


def _sync_instrumentation(hook) -> None:
    """Instrumentation mode is on while an active session asked for it (one pass text for
    all of them: `start` refuses a second, different one)."""
    texts = {s.instrumentation for s in active_sessions() if s.instrumentation}
    if not texts:
        STATE.instrumentation = None
    elif STATE.instrumentation is None or STATE.instrumentation.text not in texts:
        from compiler.profiler.instrument import Instrumentation
        STATE.instrumentation = Instrumentation(texts.pop())
    if hook is not None:
        hook.substitutes = STATE.instrumentation is not None


def current_site() -> Site | None:
    """The site of a kernel launched now by someone else (torch), by the scope stack."""
    sessions = active_sessions()
    path = shadow_path()
    return Site(tuple((s, path) for s in sessions)) if sessions else None
