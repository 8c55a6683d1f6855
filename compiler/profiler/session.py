"""Starting, pausing and finishing profiling sessions (Proton's `start`, `activate`,
`deactivate`, `finalize`, `profile`).

`start(name)` returns a session id; the session records until `deactivate`, again after
`activate`, and `finalize` writes it to `name.hatchet` (or `name.chrome_trace`) and forgets it.
Several sessions may record at once; each has its own tree. Under `tile-explore prof -- ...`
the command owns the one session: `start` returns it and ignores its options, `finalize` in
the script is left to the command (as the `proton` command does). Sessions still open when
the process exits are finalized then.
"""
from __future__ import annotations

import atexit
import functools
from pathlib import Path

from compiler.profiler.data import Profile
from compiler.profiler.export import OUTPUT_FORMATS, write_profile
from compiler.profiler.hook import LaunchHook
from compiler.profiler.state import CONTEXTS, HOOKS, STATE, Session, sync_hook
from compiler.profiler.timers import BACKENDS, choose_timer

#: The profile's file name when `start` is given none (as Proton's).
DEFAULT_NAME = "proton"
#: The data structures `start(data=...)` accepts.
DATA = ("tree",)
#: Proton's backend name for in-kernel regions (`start(backend="instrumentation")`).
INSTRUMENTATION = "instrumentation"


def _check(option: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"profiler: {option}={value!r} is not supported; allowed: "
                         f"{', '.join(map(repr, allowed))}")


def _device_metadata() -> dict:
    """Proton's device record of GPU 0 (arch, SMs, clocks, bus width), empty without a GPU."""
    from compiler.runtime import driver

    if not driver.gpu_available():
        return {}
    major, minor = driver.device_capability()
    return {"CUDA": {"0": {
        "arch": f"{major}{minor}", "name": driver.device_name(),
        "num_sms": driver.device_attribute("MULTIPROCESSOR_COUNT"),
        "clock_rate": driver.device_attribute("CLOCK_RATE"),
        "memory_clock_rate": driver.device_attribute("MEMORY_CLOCK_RATE"),
        "bus_width": driver.device_attribute("GLOBAL_MEMORY_BUS_WIDTH"),
    }}}


def start(name: str | None = None, *, context: str = "shadow", data: str = "tree",
          backend: str | None = None, mode: str | None = None, hook: str | None = None) -> int:
    """Start a session and return its id. `context`: "shadow" (scopes) or "python" (the
    Python call stack at each launch of ours; other libraries' kernels still go by scopes);
    `data`: "tree"; `backend`: None (CUPTI, else CUDA events), "cupti", "cuda_events" (GPU
    launches; interpreter launches are always timed by wall clock) or Proton's
    "instrumentation"; `mode`: None, or "instrumentation[:key=value...]" (in-kernel regions:
    our kernels run instrumented, see `instrument`; with backend="instrumentation", Proton's
    "default[:key=value...]"); `hook`:
    None or "triton" (kernels' `launch_metadata`). One GPU timer serves every session, so a
    backend other than the running one is refused until its sessions are finalized."""
    if STATE.command_line is not None:
        return STATE.command_line
    _check("context", context, CONTEXTS)
    _check("data", data, DATA)
    _check("backend", backend, BACKENDS + (INSTRUMENTATION,))
    _check("hook", hook, HOOKS)
    instrumentation = _instrumentation(backend, mode)
    if backend == INSTRUMENTATION:
        backend = None
    from compiler.runtime.driver import gpu_available

    timing = {"method": "wall", "time_metric": "time (wall, interpreter)",
              "other_kernels": False}
    if gpu_available():
        if STATE.timer is None:
            STATE.timer, timing = choose_timer(backend)
            STATE.timing = timing
        elif backend is not None and backend != STATE.timer.method:
            raise ValueError(f"profiler: backend={backend!r} asked for while another session "
                             f"times kernels with {STATE.timer.method!r}; finalize it first")
        else:
            timing = STATE.timing
    if STATE.hook is None:
        STATE.hook = LaunchHook()
    session_id = STATE.next_id
    STATE.next_id += 1
    profile = Profile(name or DEFAULT_NAME, context)
    profile.metadata.update({"session": session_id, "context": context, "hook": hook,
                             "timing": dict(timing), "device": _device_metadata()})
    if instrumentation is not None:
        profile.metadata["instrumentation"] = {"pass": instrumentation}
    STATE.sessions[session_id] = Session(session_id, name or DEFAULT_NAME, context, hook,
                                         profile, instrumentation=instrumentation)
    sync_hook()
    return session_id


def _instrumentation(backend, mode) -> str | None:
    """The instrument-regions pass a session asks for: `mode="instrumentation[:k=v...]"`, or
    Proton's `backend="instrumentation"` with `mode` None, "default" or "default:k=v..."
    (`instrument.pass_text`); None when neither. Another session's different pass is
    refused (every kernel gets one variant)."""
    from compiler.profiler.instrument import pass_text
    if backend != INSTRUMENTATION and mode is None:
        return None
    if backend != INSTRUMENTATION and not str(mode).startswith("instrumentation"):
        _check("mode", mode, (None, "instrumentation"))
    text = pass_text(mode)
    for other in STATE.sessions.values():
        if other.instrumentation not in (None, text):
            raise ValueError(f"profiler: instrumentation {text!r} asked for while session "
                             f"{other.id} instruments with {other.instrumentation!r}; "
                             f"finalize it first")
    return text


def _sessions(session: int | None) -> list:
    if session is None:
        return list(STATE.sessions.values())
    if session not in STATE.sessions:
        known = ", ".join(map(str, STATE.sessions)) or "none"
        raise ValueError(f"profiler: no session {session!r} (open sessions: {known})")
    return [STATE.sessions[session]]


def activate(session: int | None = None) -> None:
    """Record again in `session` (None: every open session)."""
    for chosen in _sessions(session):
        chosen.active = True
    sync_hook()


def deactivate(session: int | None = None) -> None:
    """Stop recording in `session` (None: every open session); its data is kept."""
    for chosen in _sessions(session):
        chosen.active = False
    sync_hook()


def finalize(session: int | None = None, output_format: str = "hatchet") -> list:
    """Write `session` (None: every open session) as `output_format` ("hatchet" or
    "chrome_trace") and close it; returns the paths written. Under the `prof` command the
    command's session is finalized by the command."""
    _check("output_format", output_format, OUTPUT_FORMATS)
    if STATE.command_line is not None and session in (None, STATE.command_line):
        return []
    return close_sessions(_sessions(session), output_format)


def close_sessions(sessions: list, output_format: str) -> list:
    """Collect the timer's pending kernels, write and forget `sessions`; the paths."""
    if STATE.timer is not None:
        STATE.timer.flush()
    paths = []
    for chosen in sessions:
        chosen.active = False
        untagged = getattr(STATE.timer, "untagged", 0)
        if untagged:
            chosen.profile.metadata["timing"]["untagged_kernels"] = untagged
        paths.append(write_profile(chosen.profile, Path(chosen.name), output_format))
        del STATE.sessions[chosen.id]
    if not STATE.sessions and STATE.timer is not None:
        STATE.timer.close()
        STATE.timer = None
    sync_hook()
    return paths


def _finalize_at_exit() -> None:
    if STATE.sessions:
        close_sessions(list(STATE.sessions.values()), "hatchet")


atexit.register(_finalize_at_exit)


def profile(fn=None, *, name: str | None = None, context: str = "shadow", data: str = "tree",
            backend: str | None = None, mode: str | None = None, hook: str | None = None):
    """Decorator (`@profile` or `@profile(name=..., hook="triton")`): each call starts a
    session, runs the function and deactivates the session (write it with `finalize`)."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            session = start(name, context=context, data=data, backend=backend, mode=mode,
                            hook=hook)
            try:
                return function(*args, **kwargs)
            finally:
                deactivate(session)
        return wrapper
    return decorate if fn is None else decorate(fn)


def run_profiled(fn, name: str, *, context: str = "shadow", hook: str | None = None,
                 backend: str | None = None, output_format: str = "hatchet"):
    """Run `fn()` inside one session that the program cannot start or finalize itself (the
    `prof` command's mode: its `start` calls return this session); write it afterwards.
    Returns (fn's result, paths written)."""
    session = start(name, context=context, hook=hook, backend=backend)
    STATE.command_line = session
    try:
        result = fn()
    finally:
        STATE.command_line = None
        paths = close_sessions(_sessions(session), output_format)
    return result, paths
