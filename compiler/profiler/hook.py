"""The profiler's launch hook: where each launch of ours goes, and its timing around it.

`LaunchHook` is the `recording.LaunchObserver` the profiler puts in `recording.OBSERVERS` while a
session is active. For each launch it builds the `Site` (per active session the path of the
launch in that session's context, the kernel's node named by its specialization, and with
`hook="triton"` the kernel's `launch_metadata(grid, kernel, args)` result: `name` renames the
node, `flops8/16/32/64`, `bytes` and other numbers become its metrics). Interpreter launches
are timed by the host wall clock around the launch (`data.WALL_TIME`); GPU launches by the
session's timer, which does not synchronize. When the timer needs nothing per launch of an
entry (CUPTI names the kernel, the pushed id says the scope: `CuptiTimer.plan` returns None),
the entry goes into `recording.QUIET` and its launches skip the hook until the sessions or
scopes change.
"""
from __future__ import annotations

from compiler.profiler.data import WALL_TIME
from compiler.profiler.regions import attach_regions
from compiler.profiler.state import STATE, Site, active_sessions, now_ns, path_for
from compiler.runtime import recording
from compiler.runtime.recording import LaunchInfo, LaunchObserver, declared_metadata


def specialization_label(launch: LaunchInfo) -> str:
    """`name [types and constants]`: the node name of one specialization of our kernel."""
    spec = getattr(launch.entry, "spec", None)
    if spec is None:
        return launch.kernel_name
    parts = [str(t) for t in spec.signature.values()]
    parts += [f"{k}={v!r}" for k, v in spec.constexprs.items()]
    return f"{launch.kernel_name} [{', '.join(parts)}]"


def function_name(launch: LaunchInfo) -> str:
    """The name of the loaded GPU function (what CUPTI's kernel records say)."""
    return getattr(launch.entry.kernel, "name", None) or launch.kernel_name


def _nothing(_):
    """A plan's half that does nothing."""


#: The plan of an entry the timer needs nothing per launch for.
QUIET_PLAN = (_nothing, _nothing)


def hook_metrics(launch: LaunchInfo) -> tuple[str | None, dict]:
    """The kernel's `launch_metadata` result as (name or None, numeric metrics); see
    `recording.declared_metadata`, which the launch records use as well."""
    return declared_metadata(launch)


class LaunchHook(LaunchObserver):
    """See the module doc. A GPU launch runs a *plan* (`timer.plan(site, name)`: what to do
    right before and after it), made once per specialization and state of the sessions and
    scopes (`STATE.version`) unless the site depends on the launch itself (the python
    context's call stack, the triton hook's `launch_metadata`)."""

    def __init__(self):
        self._labels = {}             # jit cache entry -> (label, attributes)
        self._plans = {}              # jit cache entry -> (begin, end), for `_plans_version`
        self._plans_version = -1
        self._hot = {}                # the GPU plans of entries not instrumented, likewise
        self._state = None            # (version, sessions, any python context, any hook)

    def _label(self, launch: LaunchInfo) -> tuple:
        """The entry's node name and attributes (made once per specialization)."""
        known = self._labels.get(launch.entry)
        if known is None:
            label = specialization_label(launch)
            attributes = (("kernel", launch.kernel_name), ("specialization", label)) \
                if getattr(launch.entry, "spec", None) is not None else ()
            known = self._labels[launch.entry] = (label, attributes)
        return known

    def _sessions(self) -> tuple:
        state = self._state
        if state is None or state[0] != STATE.version:
            sessions = active_sessions()
            state = self._state = (STATE.version, sessions,
                                   any(s.context == "python" for s in sessions),
                                   any(s.hook == "triton" for s in sessions))
        return state

    def site_of(self, launch: LaunchInfo) -> tuple[Site, bool]:
        """Where this launch goes in every active session, and whether the same site holds
        for every launch of its specialization until the sessions or scopes change."""
        _, sessions, python, hooked = self._sessions()
        hooked = hooked and getattr(launch.jit, "launch_metadata", None) is not None
        leaf, attributes = self._label(launch)
        metrics = {}
        if hooked:
            name, metrics = hook_metrics(launch)
            leaf = name or leaf
        site = Site(tuple((s, path_for(s)) for s in sessions), leaf, tuple(metrics.items()),
                    attributes)
        return site, not (python or hooked)

    def variant(self, entry, jit):
        """The region-instrumented variant of `entry` (instrumentation mode, see `instrument`)."""
        return STATE.instrumentation.variant(entry, jit)

    def launch_begin(self, entry, grid, args, stream, backend: str, jit=None, bound=None):
        """Start the launch's plan (GPU) or its wall clock (interpreter, or no GPU timer)."""
        if self._plans_version == STATE.version:       # the usual case: a plan made before
            plan = self._hot.get(entry)
            if plan is not None:
                return plan[1], plan[0](stream)
        if getattr(entry, "instrumented", False):
            launch = LaunchInfo(entry, grid, args, stream, backend, jit, bound)
            token = self._begin(entry, grid, args, stream, backend, jit, bound)
            return self._regions_end, (token, entry, self.site_of(launch)[0],
                                       launch.kernel_name, now_ns())
        return self._begin(entry, grid, args, stream, backend, jit, bound)

    def _regions_end(self, started) -> None:
        """Finish the instrumented launch's timing, then put its regions in the tree."""
        token, entry, site, name, start_ns = started
        self.launch_end(token)
        decoded = entry.take()
        if decoded is not None:
            attach_regions(site, name, entry, decoded, start_ns)

    def _begin(self, entry, grid, args, stream, backend: str, jit=None, bound=None):
        timer = STATE.timer
        if backend == "gpu" and timer is not None:
            plan = self._plans.get(entry) if self._plans_version == STATE.version else None
            if plan is None:
                plan = self._plan(LaunchInfo(entry, grid, args, stream, backend, jit, bound),
                                  timer)
            return plan[1], plan[0](stream)
        launch = LaunchInfo(entry, grid, args, stream, backend, jit, bound)
        return self._wall_end, (self.site_of(launch)[0], launch.kernel_name, now_ns())

    def launch_end(self, token) -> None:
        """Finish what `launch_begin` started (a GPU launch's time comes at flush)."""
        end, started = token
        end(started)

    @staticmethod
    def _wall_end(started) -> None:
        site, name, start = started
        site.deliver(name, WALL_TIME, start, now_ns(), "interpreter")

    def _plan(self, launch: LaunchInfo, timer) -> tuple:
        site, cacheable = self.site_of(launch)
        plan = timer.plan(site, launch.kernel_name, function_name(launch),
                          per_launch=not cacheable)
        if getattr(timer, "names_changed", False):    # quiet entries may need an id now
            timer.names_changed = False
            recording.QUIET.clear()
            self._plans_version = -1
        if plan is None:
            plan = QUIET_PLAN
            if recording.OBSERVERS == [self]:
                recording.QUIET.add(launch.entry)
        if cacheable:
            if self._plans_version != STATE.version:
                self._plans, self._hot, self._plans_version = {}, {}, STATE.version
            self._plans[launch.entry] = plan
            if launch.backend == "gpu" and not getattr(launch.entry, "instrumented", False):
                self._hot[launch.entry] = plan
        return plan
