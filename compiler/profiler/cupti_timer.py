"""Kernel times from CUPTI's activity API (NVIDIA's `cupti-python` bindings), for every kernel.

CUPTI writes a CONCURRENT_KERNEL record for each kernel the process runs (ours, torch's, any
library's) into buffers it hands back asynchronously; nothing synchronizes per launch. Each
record carries the correlation id of the API call that launched it. To know where a kernel
belongs, the profiler keeps an external correlation id pushed (kind CUSTOM2; CUSTOM0/1 are
used by PyTorch's Kineto) that stands for the current `Site` (the active sessions and the
scope path), re-pushed only when that changes (a scope entered or left, a session started,
paused or resumed); CUPTI then emits EXTERNAL_CORRELATION records pairing each API call's
correlation id with that id (it does so for API calls it records, hence `API_KINDS`).

Our kernels need nothing per launch on top: a kernel record names the loaded function, and
`plan` keeps a map from that name to the specialization it was loaded for, so the record finds
its node (`add [*fp32, i32, BLOCK=256]`) by name. A launch pushes an id of its own only when its
node cannot come from the name: the triton hook's `launch_metadata` (name and metrics per
launch), the python context (the call stack per launch), or a function name shared by two
specializations of this profile (from then on both push per launch). `flush` synchronizes the
device once, flushes the buffers and delivers every kernel to its site.
"""
from __future__ import annotations

import threading

from compiler.profiler.data import GPU_TIME
from compiler.profiler.state import now_ns
from compiler.profiler.timers import TimerUnavailable

_BUFFER_BYTES = 8 * 1024 * 1024
_REGISTERED = False           # CUPTI's buffer callbacks are registered once per process
#: The API activity kinds enabled beside the kernel and external-correlation kinds: CUPTI
#: writes an EXTERNAL_CORRELATION record only in front of an API record, so the driver API
#: (our cuLaunchKernel) and the runtime API (torch's cudaLaunchKernel) are recorded too
#: (`bench/profiler_overhead.py --kinds` measures what each costs and whether scopes still
#: see their kernels without it).
API_KINDS = ("RUNTIME", "DRIVER")


def load_cupti():
    """The `cupti.cupti` module, or TimerUnavailable saying why not."""
    try:
        from cupti import cupti
    except Exception as err:  # noqa: BLE001 - any import failure means "not usable"
        raise TimerUnavailable(f"cupti-python is not importable ({type(err).__name__}: {err}); "
                               f"install it with `pip install tile-explore[profile]`") from None
    return cupti


class CuptiTimer:
    """Collects CUPTI kernel records and attributes them to sites (see module doc)."""

    method = "cupti"
    sees_other_kernels = True

    def __init__(self):
        global _REGISTERED
        cupti = self._cupti = load_cupti()
        self._kernel_kind = int(cupti.ActivityKind.CONCURRENT_KERNEL)
        self._external_kind = int(cupti.ActivityKind.EXTERNAL_CORRELATION)
        self._tag_kind = cupti.ExternalCorrelationKind.CUSTOM2
        self._kinds = (cupti.ActivityKind.CONCURRENT_KERNEL,
                       cupti.ActivityKind.EXTERNAL_CORRELATION) + tuple(
            getattr(cupti.ActivityKind, kind) for kind in API_KINDS)
        self._lock = threading.Lock()
        self._kernels = []        # (correlation id, name, start, end) on CUPTI's clock
        self._external = {}       # correlation id -> external id
        self._site_ids = {}       # what a Site says -> external id
        self._sites = {}          # external id -> Site
        self._tagged = False
        self._names = {}          # loaded function name -> (node name, attributes)
        self._shared = set()      # function names two specializations have
        #: Set when a function name became shared: plans made without a per-launch id are
        #: stale (the launch hook drops them).
        self.names_changed = False
        #: Kernels seen without a site: run while no session recorded, or launched from a
        #: thread whose scopes the profiler did not tag.
        self.untagged = 0
        enabled = []
        try:
            if not _REGISTERED:
                cupti.activity_register_callbacks(self._requested, _dispatch_completed)
                _REGISTERED = True
            _CURRENT[0] = self
            for kind in self._kinds:
                cupti.activity_enable(kind)
                enabled.append(kind)
            self._offset = cupti.get_timestamp() - now_ns()
        except Exception as err:  # noqa: BLE001 - CUPTI refused (permissions, another tool)
            _CURRENT[0] = None
            for kind in enabled:          # leave CUPTI as it was
                cupti.activity_disable(kind)
            raise TimerUnavailable(f"CUPTI refused to collect kernel activity "
                                   f"({type(err).__name__}: {err})") from None

    @staticmethod
    def _requested():
        return _BUFFER_BYTES, 0

    def completed(self, activities) -> None:
        """CUPTI's buffer-completed callback: copy out the fields we need (records are not
        kept alive)."""
        kernels, external = [], {}
        for record in activities:
            kind = int(record.kind)
            if kind == self._kernel_kind:
                kernels.append((int(record.correlation_id), str(record.name),
                                int(record.start), int(record.end)))
            elif kind == self._external_kind:
                external[int(record.correlation_id)] = int(record.external_id)
        with self._lock:
            self._kernels += kernels
            self._external.update(external)

    def _id_of(self, site) -> int:
        """The external id of `site`, one per distinct site (sites made per launch, with the
        triton hook, share the id of an equal one: the tables stay as small as the tree)."""
        key = (site.placements, site.leaf, site.metrics, site.attributes)
        known = self._site_ids.get(key)
        if known is None:
            known = self._site_ids[key] = len(self._site_ids) + 1
            self._sites[known] = site
        return known

    def retag(self, site) -> None:
        """Replace the pushed external id by `site`'s (or by none)."""
        if self._tagged:
            self._cupti.activity_pop_external_correlation_id(self._tag_kind)
            self._tagged = False
        if site is not None:
            self._cupti.activity_push_external_correlation_id(self._tag_kind, self._id_of(site))
            self._tagged = True

    def plan(self, site, kernel_name: str, function: str | None = None,
             per_launch: bool = True) -> tuple | None:
        """(begin, end) around a launch: push the site's external id, pop it; or None (nothing
        to do per launch) when `per_launch` is False (the site is the pushed one plus the
        kernel's node) and the loaded `function`'s name stands for this specialization alone."""
        if not per_launch and function is not None and site.leaf is not None \
                and not site.metrics and self._claim(function, site):
            return None
        push = self._cupti.activity_push_external_correlation_id
        pop = self._cupti.activity_pop_external_correlation_id
        kind, external_id = self._tag_kind, self._id_of(site)

        def begin(stream) -> None:
            push(kind, external_id)

        def end(started) -> None:
            pop(kind)
        return begin, end

    def _claim(self, function: str, site) -> bool:
        """Let kernel records named `function` stand for `site`'s node, unless another
        specialization has that name (then neither does any more)."""
        named = (site.leaf, dict(site.attributes))
        known = self._names.setdefault(function, named)
        if function in self._shared:
            return False
        if known != named:
            self._shared.add(function)
            self.names_changed = True
            return False
        return True

    def flush(self) -> None:
        """Synchronize, flush CUPTI's buffers, deliver every attributed kernel (kernels
        without a site are counted in `untagged`, not recorded)."""
        from compiler.runtime.driver import synchronize

        synchronize()
        self._cupti.activity_flush_all(1)
        with self._lock:
            kernels, self._kernels = self._kernels, []
            external = self._external
            self._external = {}
        for correlation, name, start, end in kernels:
            site = self._sites.get(external.pop(correlation, None))
            if site is not None:
                leaf, attributes = self._names.get(name, (name, None))
                site.deliver(leaf, GPU_TIME, start - self._offset, end - self._offset, "gpu",
                             attributes)
            else:
                self.untagged += 1
        with self._lock:          # ids whose kernel record has not arrived yet
            self._external.update(external)

    def close(self) -> None:
        """Flush, stop collecting and drop the pushed id."""
        self.flush()
        self.retag(None)
        for kind in self._kinds:
            self._cupti.activity_disable(kind)
        _CURRENT[0] = None


_CURRENT = [None]             # the collecting CuptiTimer (the callbacks outlive timers)


def _dispatch_completed(activities) -> None:
    timer = _CURRENT[0]
    if timer is not None:
        timer.completed(activities)
