"""Scopes: named regions of the host program that kernels launched inside are attributed to.

`with scope("name", metrics):` / `@scope("name")` and `enter_scope(name)` / `exit_scope()` push
a name on this thread's scope stack; each active session gets the node (and the metrics,
added to the node) and a host span for the Chrome trace. With no session active they cost a
check and nothing is recorded (as in Proton).
"""
from __future__ import annotations

import functools

from compiler.profiler.state import (
    active_sessions, now_ns, python_path, scope_stack, shadow_path, sync_hook,
)


def _session_path(session, name: str) -> tuple:
    if session.context == "python":
        return python_path() + (name,)
    return shadow_path()


def enter_scope(name: str, *, triton_op: bool = False, metrics: dict | None = None) -> int:
    """Open the scope `name`; returns its depth (-1 when no session is active). `triton_op`
    (Proton's mark for an operator scope) is accepted; such a scope is a scope like others."""
    sessions = active_sessions()
    if not sessions:
        return -1
    stack = scope_stack()
    stack.append((str(name), now_ns(), sessions))
    for session in sessions:
        node = session.profile.node_at(_session_path(session, str(name)))
        if metrics:
            node.add(dict(metrics))
    sync_hook()
    return len(stack) - 1


def exit_scope(triton_op: bool = False) -> int:
    """Close the innermost open scope; returns its depth (-1 when none is open)."""
    stack = scope_stack()
    if not stack:
        return -1
    path = shadow_path()
    name, start, sessions = stack.pop()
    end = now_ns()
    for session in sessions:
        if session.context == "shadow":
            session.profile.add_span(path, start, end)
    sync_hook()
    return len(stack)


class scope:
    """`with scope(name, metrics):` or `@scope(name, metrics)` (see module doc)."""

    def __init__(self, name: str, metrics: dict | None = None):
        self.name = name
        self.metrics = metrics
        self._depth = -1

    def __enter__(self):
        self._depth = enter_scope(self.name, metrics=self.metrics)
        return self

    def __exit__(self, *exc) -> None:
        if self._depth >= 0:
            exit_scope()

    def __call__(self, fn):
        """Use as a decorator: every call of `fn` runs inside the scope."""
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with scope(self.name, self.metrics):
                return fn(*args, **kwargs)
        return wrapper
