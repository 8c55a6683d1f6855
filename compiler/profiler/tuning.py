"""The autotuner's results in the profile: each config's time and the chosen one.

`tuning_scope(kernel)` / `config_scope(config)` are the scopes the autotuner benchmarks in, so
that the benchmark launches land under `autotune KERNEL / config CONFIG` in the tree;
`record_tuning(...)` adds each config's median as the metric `autotune median (ns)` on its
config node and the whole result (configs, times, best, key) to every active session's
metadata under "autotuning".
"""
from __future__ import annotations

import math

from compiler.profiler.scope import scope
from compiler.profiler.state import active_sessions, path_for

#: The metric holding a config's benchmark median on its node.
TUNING_METRIC = "autotune median (ns)"


def tuning_scope(kernel_name: str) -> scope:
    """The scope the autotuner of `kernel_name` benchmarks in."""
    return scope(f"autotune {kernel_name}")


def config_scope(config) -> scope:
    """The scope one config is benchmarked in."""
    return scope(f"config {config}")


def record_tuning(kernel_name: str, key: tuple, timings: dict, best, seconds: float) -> None:
    """Put one tuning run (config -> median ms) into every active session."""
    for session in active_sessions():
        base = path_for(session) + (f"autotune {kernel_name}",)
        for config, ms in timings.items():
            node = session.profile.node_at(base + (f"config {config}",))
            if not math.isinf(ms):
                node.add({TUNING_METRIC: ms * 1e6})
            node.attributes["chosen"] = config is best
        session.profile.metadata.setdefault("autotuning", []).append({
            "kernel": kernel_name, "key": [repr(k) for k in key], "seconds": seconds,
            "configs": [{"config": repr(c), "median_ms": None if math.isinf(ms) else ms}
                        for c, ms in timings.items()],
            "best": repr(best)})


def format_tuning(kernel_name: str, timings: dict, best, seconds: float) -> str:
    """What `TRITON_PRINT_AUTOTUNING` / `TILE_PRINT_AUTOTUNING` print after a tuning run."""
    lines = [f"Autotuning for {kernel_name} finished after {seconds:.2f}s; "
             f"best config selected: {best};"]
    for config, ms in timings.items():
        shown = "failed" if math.isinf(ms) else f"{ms:.4f} ms"
        lines.append(f"  {'*' if config is best else ' '} {config}: {shown}")
    return "\n".join(lines)
