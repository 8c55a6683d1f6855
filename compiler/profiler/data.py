"""What a profiling session collects: a tree of named nodes with summed metrics, and events.

The tree is Proton's: the root, one node per scope (or Python frame, in the python context)
and, at the leaves, one node per kernel (our kernels by their specialization or their
`launch_metadata` name; other kernels by the name CUPTI reports). Every node keeps its own
(exclusive) metrics: `count` and a time metric for kernels, `flops8/16/32/64` and `bytes` from
the triton hook, whatever `scope(name, metrics)` adds. Events (kernel executions and host-side
scope spans, in nanoseconds of the session's host clock) feed the Chrome trace.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

#: The time metric of kernels timed on the GPU (CUPTI or CUDA events), in nanoseconds.
GPU_TIME = "time (ns)"
#: The time metric of interpreter launches: host wall clock around the launch, in nanoseconds.
WALL_TIME = "time (wall, interpreter)"
#: Metrics the triton hook takes from a kernel's `launch_metadata` result (besides "name").
HOOK_METRICS = ("flops8", "flops16", "flops32", "flops64", "bytes")


@dataclass
class Node:
    """One node of the tree: its name, kind ("scope", "frame" or "kernel"), own metrics and
    children by name (in first-seen order)."""

    name: str
    kind: str = "scope"
    metrics: dict = field(default_factory=dict)
    children: dict = field(default_factory=dict)
    attributes: dict = field(default_factory=dict)   # e.g. a kernel's specialization

    def child(self, name: str, kind: str = "scope") -> "Node":
        """The child called `name`, made on first use."""
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Node(name, kind)
        return node

    def add(self, metrics: dict) -> None:
        """Add `metrics` (name -> number) to this node's own metrics."""
        for name, value in metrics.items():
            self.metrics[name] = self.metrics.get(name, 0) + value

    def walk(self):
        """This node and every node below it, depth first."""
        yield self
        for child in self.children.values():
            yield from child.walk()


@dataclass
class Event:
    """One span for the Chrome trace: a kernel execution ("gpu"/"interpreter") or a scope
    ("host"); times in ns since the session started, on the host clock."""

    name: str
    track: str
    start_ns: int
    end_ns: int
    path: tuple = ()
    args: dict = field(default_factory=dict)


@dataclass
class Profile:
    """The data of one session: the tree, the events and the metadata (how times were
    taken, the device, autotuning results)."""

    name: str
    context: str
    root: Node = field(default_factory=lambda: Node("ROOT", "scope"))
    events: list = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    host_start_ns: int = field(default_factory=time.perf_counter_ns)
    warp_events: list = field(default_factory=list)   # Chrome trace events of in-kernel regions

    def node_at(self, path: tuple, kind: str = "scope") -> Node:
        """The node at `path` (names from the root's child down), made as needed."""
        node = self.root
        for name in path:
            node = node.child(name, kind)
        return node

    def add_kernel(self, path: tuple, leaf: str, metrics: dict, start_ns: int, end_ns: int,
                   track: str, attributes: dict | None = None) -> None:
        """Count one kernel execution at `path` + `leaf` (metrics include its time) and keep
        its span; `start_ns`/`end_ns` are on the host clock (`time.perf_counter_ns`)."""
        node = self.node_at(path).child(leaf, "kernel")
        node.add({"count": 1, **metrics})
        if attributes:
            node.attributes.update(attributes)
        self.events.append(Event(leaf, track, start_ns - self.host_start_ns,
                                 end_ns - self.host_start_ns, path, dict(metrics)))

    def add_span(self, path: tuple, start_ns: int, end_ns: int) -> None:
        """Keep a host-side scope span (its node exists since the scope was entered)."""
        self.events.append(Event(path[-1] if path else "ROOT", "host",
                                 start_ns - self.host_start_ns, end_ns - self.host_start_ns,
                                 path))

    def metric_names(self) -> list:
        """Every metric some node has, `count` and times first."""
        names = []
        for node in self.root.walk():
            names += [n for n in node.metrics if n not in names]
        first = [n for n in ("count", GPU_TIME, WALL_TIME) if n in names]
        return first + [n for n in names if n not in first]
