"""Reading a hatchet profile back and printing its tree in the terminal (as `proton-viewer`).

`load(path)` gives a `ViewNode` tree with inclusive metrics (each node's own plus its
children's, as hatchet's `update_inclusive_columns`). `render(...)` prints one line per node:
the chosen metrics (default: time in ms, count, percent of the total, and TFLOP/s or GB/s
where the kernel's `launch_metadata` gave flops or bytes), then the indented name; `depth`,
`include` (keep only paths through a matching node) and `exclude` (drop matching nodes and
what is under them) filter as proton-viewer's options.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from compiler.profiler.data import GPU_TIME, HOOK_METRICS, WALL_TIME

#: Time units a `-m time/UNIT` or `avg_time/UNIT` metric may ask for -> nanoseconds per unit.
TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
#: Rate prefixes of `flop/s`, `byte/s` metrics -> factor.
RATE_PREFIXES = {"": 1.0, "g": 1e9, "t": 1e12}
DEFAULT_METRICS = ("time/ms", "count", "pct", "rate")


class ProfileFormatError(ValueError):
    """The file is not a hatchet profile in Proton's layout (the message says what is off)."""


@dataclass
class ViewNode:
    """One node with its own and inclusive metrics."""

    name: str
    own: dict
    children: list = field(default_factory=list)
    inclusive: dict = field(default_factory=dict)

    def total(self) -> dict:
        """Compute (and return) the inclusive metrics of this subtree."""
        total = {k: v for k, v in self.own.items() if isinstance(v, (int, float))}
        for child in self.children:
            for name, value in child.total().items():
                total[name] = total.get(name, 0) + value
        self.inclusive = total
        return total


def _node(literal, where: str) -> ViewNode:
    if not isinstance(literal, dict) or "frame" not in literal or "metrics" not in literal:
        raise ProfileFormatError(f"{where}: a node needs 'frame' and 'metrics'")
    name = literal["frame"].get("name", "?")
    children = [_node(child, f"{where}/{name}") for child in literal.get("children", [])]
    return ViewNode(name, dict(literal["metrics"]), children)


def load(path: str | Path) -> tuple[ViewNode, dict]:
    """The tree of a `.hatchet` file (inclusive metrics filled) and its root's metadata (with
    the file's device record under "device")."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ProfileFormatError(f"{path}: cannot read a profile ({err})") from None
    if not isinstance(value, list) or not value:
        raise ProfileFormatError(f"{path}: expected a JSON list [tree, device info]")
    root = _node(value[0], str(path))
    root.total()
    metadata = dict(value[0].get("metadata", {}))
    if len(value) > 1 and isinstance(value[1], dict):
        metadata["device"] = value[1]
    return root, metadata


def time_metric(root: ViewNode) -> str | None:
    """The time metric of the profile: GPU time, else interpreter wall time."""
    return next((m for m in (GPU_TIME, WALL_TIME) if m in root.inclusive), None)


def _rate(node: ViewNode, time_name: str | None, raw: str, prefix: str) -> float | None:
    """`raw` (bytes or a flops metric, or all flops) per second, scaled by `prefix`."""
    seconds = node.inclusive.get(time_name, 0) / 1e9 if time_name else 0
    if not seconds:
        return None
    if raw == "flops":
        amount = sum(node.inclusive.get(m, 0) for m in HOOK_METRICS if m.startswith("flops"))
    else:
        amount = node.inclusive.get(raw, 0)
    return amount / seconds / RATE_PREFIXES[prefix] if amount else None


_RATE_RE = re.compile(r"^(g|t|)(flop|flop8|flop16|flop32|flop64|byte)/s$")


def cell(node: ViewNode, metric: str, root: ViewNode) -> str:
    """The text of one metric of `node` (see `DEFAULT_METRICS` and `check_metric`)."""
    time_name = time_metric(root)
    if metric == "pct":
        total = root.inclusive.get(time_name, 0) if time_name else 0
        return f"{100 * node.inclusive.get(time_name, 0) / total:.1f}%" if total else "-"
    if metric == "rate":
        tflops = _rate(node, time_name, "flops", "t")
        gbytes = _rate(node, time_name, "bytes", "g")
        parts = ([f"{tflops:.3f} TFLOP/s"] if tflops is not None else []) + \
                ([f"{gbytes:.1f} GB/s" if gbytes >= 1 else f"{gbytes:.3g} GB/s"]
                 if gbytes is not None else [])
        return "  ".join(parts)
    kind, _, unit = metric.partition("/")
    if kind in ("time", "avg_time") and unit in TIME_UNITS:
        if not time_name or time_name not in node.inclusive:
            return "-"
        value = node.inclusive[time_name] / TIME_UNITS[unit]
        if kind == "avg_time":
            count = node.inclusive.get("count", 0)
            return f"{value / count:.3f} {unit}" if count else "-"
        return f"{value:.3f} {unit}"
    match = _RATE_RE.match(metric)
    if match:
        prefix, what = match.groups()
        raw = "bytes" if what == "byte" else ("flops" if what == "flop" else what + "s")
        value = _rate(node, time_name, raw, prefix)
        return f"{value:.3f} {metric}" if value is not None else ""
    name = _raw_name(metric, root)
    value = node.inclusive.get(name)
    return "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))


def _raw_name(metric: str, root: ViewNode) -> str | None:
    """The metric of the file called `metric`, ignoring case and the unit in parentheses."""
    wanted = metric.lower()
    for name in root.inclusive:
        if wanted in (name.lower(), name.split("(")[0].strip().lower()):
            return name
    return None


def metric_choices(root: ViewNode) -> list:
    """What `-m` may name for this profile."""
    derived = ["pct", "rate"] + [f"time/{u}" for u in TIME_UNITS] + \
              [f"avg_time/{u}" for u in TIME_UNITS] + \
              [f"{p}flop{w}/s" for p in ("g", "t") for w in ("", "8", "16", "32", "64")] + \
              [f"{p}byte/s" for p in ("g", "t")]
    return derived + [name.split("(")[0].strip().lower() for name in root.inclusive]


def check_metric(metric: str, root: ViewNode) -> None:
    """Raise ValueError naming the choices when `metric` is neither derived nor in the file."""
    if metric in ("pct", "rate", "count") or metric.partition("/")[0] in ("time", "avg_time") and \
            metric.partition("/")[2] in TIME_UNITS or _RATE_RE.match(metric):
        return
    if _raw_name(metric, root) is None:
        raise ValueError(f"metric {metric!r} is not in this profile; choose from "
                         f"{', '.join(metric_choices(root))}")


def _keep(node: ViewNode, include, exclude) -> ViewNode | None:
    """The subtree without excluded nodes and, with `include`, only the paths through a node
    whose name matches (that node's subtree is kept whole)."""
    if exclude and exclude.search(node.name):
        return None
    if include and include.search(node.name):
        include = None
    children = [kept for kept in (_keep(c, include, exclude) for c in node.children) if kept]
    if include and not children:
        return None
    return ViewNode(node.name, node.own, children, node.inclusive)


def render(root: ViewNode, metrics=DEFAULT_METRICS, depth: int = 100, include: str | None = None,
           exclude: str | None = None) -> str:
    """The tree as text lines, metrics first (see module doc)."""
    for metric in metrics:
        check_metric(metric, root)
    include_re = re.compile(include) if include else None
    exclude_re = re.compile(exclude) if exclude else None
    shown = ViewNode(root.name, root.own, [k for k in (_keep(c, include_re, exclude_re)
                                                      for c in root.children) if k],
                     root.inclusive)
    rows = []

    def visit(node: ViewNode, level: int, prefix: str, last: bool) -> None:
        branch = "" if level == 0 else prefix + ("└─ " if last else "├─ ")
        rows.append(([cell(node, m, root) for m in metrics], branch + node.name))
        if level >= depth:
            return
        inner = "" if level == 0 else prefix + ("   " if last else "│  ")
        for index, child in enumerate(node.children):
            visit(child, level + 1, inner, index == len(node.children) - 1)

    visit(shown, 0, "", True)
    widths = [max([len(m)] + [len(r[0][i]) for r in rows]) for i, m in enumerate(metrics)]
    header = "  ".join(m.rjust(w) for m, w in zip(metrics, widths)) + "  name"
    lines = [header] + ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) + "  " + name
                        for cells, name in rows]
    return "\n".join(lines)
