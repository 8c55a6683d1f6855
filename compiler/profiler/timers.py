"""How GPU kernels are timed: CUPTI's activity API, or CUDA events as the fallback.

A timer makes for each site a plan, `(begin(stream) -> token, end(token))`, that the launch
hook runs right before and after each launch of ours (no synchronization), is told
when the scope stack or the set of active sessions changes (`retag`, so that other libraries'
kernels land in the right scope), and turns what it collected into kernel counts and times
in the sessions' trees at `flush` (which synchronizes the device once). `choose_timer`
picks one for `start(backend=...)`: CUPTI when it can, else CUDA events around our launches
(torch's kernels are then not seen), said in the profile's metadata and in one warning.
"""
from __future__ import annotations

import warnings

from compiler.profiler.data import GPU_TIME
from compiler.profiler.state import now_ns

#: The values `start(backend=...)` accepts.
BACKENDS = (None, "cupti", "cuda_events")
#: The event timer reads the oldest this many launches' times once twice as many are pending.
RECYCLE_BATCH = 4096


class TimerUnavailable(RuntimeError):
    """A timing method cannot be used here (the message says why)."""


class EventTimer:
    """CUDA events recorded around each of our launches on its stream; elapsed times are read
    at `flush`. Only our kernels are timed."""

    method = "cuda_events"
    sees_other_kernels = False

    def __init__(self):
        from compiler.runtime.driver import Event

        self._event = Event
        self._origin = Event().record()
        self._origin_host = now_ns()
        self._pending = []          # (site, kernel name, start event, end event)
        self._free = []             # events whose times were read, to record again

    def retag(self, site) -> None:
        """Events time only our launches: nothing to do."""

    def plan(self, site, kernel_name: str) -> tuple:
        """(begin, end) around a launch: record an event before and after it on its stream
        (events are reused once their times were read)."""
        free, pending, make = self._free, self._pending, self._event

        def begin(stream):
            return stream, (free.pop() if free else make()).record(stream)

        def end(started) -> None:
            stream, start = started
            pending.append((site, kernel_name, start,
                            (free.pop() if free else make()).record(stream)))
            if len(pending) >= 2 * RECYCLE_BATCH:
                self._deliver(RECYCLE_BATCH)
        return begin, end

    def _deliver(self, count: int) -> None:
        """Read the times of the `count` oldest pending launches (long finished when called
        from a launch: thousands of launches were enqueued since) and reuse their events."""
        done = self._pending[:count]
        del self._pending[:count]
        for site, name, start, end in done:
            begin_ns = self._origin_host + int(self._origin.elapsed_ms(start) * 1e6)
            elapsed_ns = int(start.elapsed_ms(end) * 1e6)
            site.deliver(name, GPU_TIME, begin_ns, begin_ns + elapsed_ns, "gpu")
            self._free += (start, end)

    def flush(self) -> None:
        """Wait for the recorded events and deliver their times."""
        self._deliver(len(self._pending))

    def close(self) -> None:
        """Deliver what is pending."""
        self.flush()


def choose_timer(backend: str | None):
    """The timer for `backend` (see `BACKENDS`) and the metadata saying how times are taken.
    `None` tries CUPTI and falls back to CUDA events, with one warning saying why."""
    if backend not in BACKENDS:
        raise ValueError(f"profiler backend {backend!r} is not supported; use one of "
                         f"{', '.join(map(repr, BACKENDS))}")
    if backend in (None, "cupti"):
        from compiler.profiler.cupti_timer import CuptiTimer

        try:
            timer = CuptiTimer()
        except TimerUnavailable as why:
            if backend == "cupti":
                raise
            warnings.warn(f"profiler: CUPTI is not usable ({why}); timing our kernels with "
                          f"CUDA events instead (other libraries' kernels are not seen)",
                          RuntimeWarning, stacklevel=3)
            return EventTimer(), {"method": "cuda_events", "fallback_from": "cupti",
                                  "why": str(why), "other_kernels": False}
        return timer, {"method": "cupti", "other_kernels": True}
    return EventTimer(), {"method": "cuda_events", "other_kernels": False}
