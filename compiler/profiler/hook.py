"""The profiler's launch hook: where each launch of ours goes, and its timing around it.

`LaunchHook` is the `recording.LaunchObserver` the profiler puts in `recording.ACTIVE` while a
session is active. For each launch it builds the `Site` (per active session the path of the
launch in that session's context, the kernel's node named by its specialization, and with
`hook="triton"` the kernel's `launch_metadata(grid, kernel, args)` result: `name` renames the
node, `flops8/16/32/64`, `bytes` and other numbers become its metrics). Interpreter launches
are timed by the host wall clock around the launch (`data.WALL_TIME`); GPU launches by the
session's timer, which does not synchronize.
"""
from __future__ import annotations

from numbers import Number

from compiler.profiler.data import WALL_TIME
from compiler.profiler.state import STATE, Site, active_sessions, now_ns, path_for
from compiler.runtime.recording import LaunchInfo, LaunchObserver


def specialization_label(launch: LaunchInfo) -> str:
    """`name [types and constants]`: the node name of one specialization of our kernel."""
    spec = getattr(launch.entry, "spec", None)
    if spec is None:
        return launch.kernel_name
    parts = [str(t) for t in spec.signature.values()]
    parts += [f"{k}={v!r}" for k, v in spec.constexprs.items()]
    return f"{launch.kernel_name} [{', '.join(parts)}]"


def hook_metrics(launch: LaunchInfo) -> tuple[str | None, dict]:
    """The kernel's `launch_metadata` result as (name or None, numeric metrics)."""
    metadata_fn = getattr(launch.jit, "launch_metadata", None)
    if metadata_fn is None:
        return None, {}
    result = metadata_fn(launch.grid, launch.entry.kernel, launch.named_arguments()) or {}
    if not isinstance(result, dict):
        raise TypeError(f"launch_metadata of {launch.kernel_name} returned "
                        f"{type(result).__name__}; it must return a dict such as "
                        f"{{'name': ..., 'flops16': ..., 'bytes': ...}}")
    name = result.get("name")
    metrics = {k: v for k, v in result.items()
               if k != "name" and isinstance(v, Number) and not isinstance(v, bool)}
    return (str(name) if name is not None else None), metrics


class LaunchHook(LaunchObserver):
    """See the module doc."""

    def __init__(self):
        self._labels = {}             # jit cache entry -> (label, attributes)

    def _label(self, launch: LaunchInfo) -> tuple:
        """The entry's node name and attributes (made once per specialization)."""
        known = self._labels.get(launch.entry)
        if known is None:
            label = specialization_label(launch)
            attributes = (("kernel", launch.kernel_name), ("specialization", label)) \
                if getattr(launch.entry, "spec", None) is not None else ()
            known = self._labels[launch.entry] = (label, attributes)
        return known

    def site_of(self, launch: LaunchInfo) -> Site:
        """Where this launch goes in every active session."""
        sessions = active_sessions()
        leaf, attributes = self._label(launch)
        metrics = {}
        if any(s.hook == "triton" for s in sessions):
            name, metrics = hook_metrics(launch)
            leaf = name or leaf
        return Site(tuple((s, path_for(s)) for s in sessions), leaf,
                    tuple(metrics.items()), attributes)

    def launch_begin(self, launch: LaunchInfo):
        """The site, and the start (host clock for the interpreter, the timer's token)."""
        site = self.site_of(launch)
        if launch.backend == "interpreter" or STATE.timer is None:
            return site, now_ns()
        return site, STATE.timer.begin(site, launch)

    def launch_end(self, launch: LaunchInfo, token) -> None:
        """Deliver an interpreter launch's wall time now; a GPU launch's comes at flush."""
        site, start = token
        if launch.backend == "interpreter" or STATE.timer is None:
            site.deliver(launch.kernel_name, WALL_TIME, start, now_ns(), "interpreter")
        else:
            STATE.timer.end(site, launch, start)
