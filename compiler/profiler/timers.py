"""How GPU kernels are timed: CUPTI's activity API, or CUDA events as the fallback.

A timer makes for each site a plan, `(begin(stream) -> token, end(token))`, that the launch
hook runs right before and after each launch of ours (no synchronization), or None when it
needs nothing per launch (CUPTI attributing the kernel by name), is told
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
#: Launches the event timer keeps pending before it reads their times (then it waits for the
#: newest and reads them all: one wait per this many launches, never one per launch).
MAX_PENDING = 1 << 16
#: Event pairs the event timer makes when it starts (outside any loop it times); it doubles
#: the pool when more launches than that are pending.
POOL_START = 1 << 15


class TimerUnavailable(RuntimeError):
    """A timing method cannot be used here (the message says why)."""


class EventTimer:
    """CUDA events recorded around each of our launches on its stream; elapsed times are read
    at `flush`. Only our kernels are timed. Event pairs come from a pool that grows to the
    most launches pending at once and is reused after each flush; a launch records two of
    them with the driver's cuEventRecord and appends its plan's (site, name) to a list,
    allocating nothing of its own; the times are read only at `flush` (finalize, or every
    `MAX_PENDING` launches). Those two driver calls are the path's whole cost, and on a tiny
    launch they cost about as much as the launch itself (see the GPU tier's overhead test)."""

    method = "cuda_events"
    sees_other_kernels = False

    def __init__(self):
        from compiler.runtime import driver

        cu = driver.bindings()
        self._cu = cu
        self._stream_handle = driver.stream_handle
        self._current_stream = driver.current_stream
        self._flags = int(cu.CUevent_flags.CU_EVENT_DEFAULT)
        self._pool = []             # (start, end) raw CUevent pairs
        self._pending = []          # (site, kernel name) of pool[i], per launch since flush
        self._stream = 0            # the stream of the launch between begin and end
        self._origin = self._new_event()
        self._check(cu.cuEventRecord(self._origin, 0), "cuEventRecord")
        self._origin_host = now_ns()
        self._grow(POOL_START)

    @staticmethod
    def _check(result, call: str):
        from compiler.runtime.driver import check
        return check(result, call)

    def _new_event(self):
        return self._check(self._cu.cuEventCreate(self._flags), "cuEventCreate")

    def _grow(self, pairs: int = 0) -> None:
        """Add `pairs` event pairs to the pool (0: double it), or read the pending times first
        when `MAX_PENDING` launches wait."""
        if len(self._pending) >= MAX_PENDING:
            self.flush()
            return
        for _ in range(pairs or min(len(self._pool), MAX_PENDING - len(self._pool))):
            self._pool.append((self._new_event(), self._new_event()))

    def retag(self, site) -> None:
        """Events time only our launches: nothing to do."""

    def plan(self, site, kernel_name: str, function: str | None = None,
             per_launch: bool = True) -> tuple:
        """(begin, end) around a launch: record the next pooled pair's first event before it
        and the second after it, on the launch's stream."""
        pool, pending, slot = self._pool, self._pending, (site, kernel_name)
        record, handle, grow = self._cu.cuEventRecord, self._stream_handle, self._grow
        current = self._current_stream

        def begin(stream):
            if len(pending) == len(pool):
                grow()
            pair = pool[len(pending)]
            # no stream is the launch's: torch's current one (driver.current_stream); the
            # default stream stays None: cuda.bindings turns an int into a CUstream object on
            # every call, None costs nothing (the launcher spells it so too)
            self._stream = raw = current() if stream is None else handle(stream)
            failed = record(pair[0], raw)[0]
            if failed:
                self._check((failed,), "cuEventRecord")
            pending.append(slot)
            return pair

        def end(pair) -> None:
            failed = record(pair[1], self._stream)[0]
            if failed:
                self._check((failed,), "cuEventRecord")
        return begin, end

    def flush(self) -> None:
        """Wait for the recorded events and deliver their times; the pool is reused."""
        cu, check = self._cu, self._check
        pending = list(self._pending)
        self._pending.clear()
        if not pending:
            return
        check(cu.cuEventSynchronize(self._pool[len(pending) - 1][1]), "cuEventSynchronize")
        elapsed = cu.cuEventElapsedTime
        for (site, name), (start, end) in zip(pending, self._pool):
            begin_ns = self._origin_host + int(check(elapsed(self._origin, start),
                                                     "cuEventElapsedTime") * 1e6)
            elapsed_ns = int(check(elapsed(start, end), "cuEventElapsedTime") * 1e6)
            site.deliver(name, GPU_TIME, begin_ns, begin_ns + elapsed_ns, "gpu")

    def close(self) -> None:
        """Deliver what is pending and destroy the events."""
        self.flush()
        for pair in self._pool:
            for event in pair:
                self._cu.cuEventDestroy(event)
        self._cu.cuEventDestroy(self._origin)
        self._pool = []


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
