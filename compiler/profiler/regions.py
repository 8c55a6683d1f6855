"""In-kernel regions, host side: decoding the profile buffer, per-region statistics, the
Chrome trace of warps and the profile tree's region nodes.

The records come from the GPU (`compiler.codegen.lower_profile`'s buffer: per warp, a count
and `(tag, program, globaltimer, clock64)` records) or from the interpreter (`(region, kind,
warp, program, ns)` tuples, wall clock). `region_stats` pairs each enter with the next exit
of the same region in the same warp, sums a region's durations per warp (a loop body's
iterations add up) and reports min/median/max over the warps of every program, in cycles
(GPU) and ns.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

import numpy as np

from compiler.analysis.profile_regions import (HEADER_WORDS, KIND_SHIFT, RECORD_WORDS, WARP_SHIFT,
                                            block_words)

#: Kinds of record.
ENTER, EXIT = 0, 1


@dataclass(frozen=True)
class Record:
    """One timestamp: region id, kind (ENTER/EXIT), warp, program, ns and cycles (None from
    the interpreter)."""

    region: int
    kind: int
    warp: int
    program: int
    ns: int
    cycles: int | None = None


@dataclass
class Decoded:
    """A launch's records, how many were lost to full slots per (program, warp), and where
    the times came from ("gpu": %globaltimer/%clock64, "interpreter": host wall clock)."""

    records: list
    overflow: dict = field(default_factory=dict)     # (program, warp) -> records not stored
    source: str = "gpu"
    num_warps: int = 1

    @property
    def lost(self) -> int:
        """Records not stored, in all."""
        return sum(self.overflow.values())


def decode_buffer(words: np.ndarray, programs: int, num_warps: int, slots: int) -> Decoded:
    """Decode a GPU profile buffer (u64 words, `programs * num_warps` warp blocks)."""
    per_warp = block_words(slots)
    words = np.asarray(words, dtype=np.uint64)
    if words.size < programs * num_warps * per_warp:
        raise ValueError(f"profile buffer has {words.size} words; {programs} programs of "
                         f"{num_warps} warps with {slots} slots need "
                         f"{programs * num_warps * per_warp}")
    blocks = words[:programs * num_warps * per_warp].reshape(programs * num_warps, per_warp)
    records, overflow = [], {}
    for index, block in enumerate(blocks):
        made = int(block[0])
        if made > slots:
            overflow[(index // num_warps, index % num_warps)] = made - slots
        body = block[HEADER_WORDS:HEADER_WORDS + RECORD_WORDS * min(made, slots)]
        for tag, program, ns, cycles in body.reshape(-1, RECORD_WORDS).tolist():
            records.append(Record(tag & 0xFFFFFFFF, (tag >> KIND_SHIFT) & 0xFF,
                                  tag >> WARP_SHIFT, program, ns, cycles))
    return Decoded(records, overflow, "gpu", num_warps)


def decode_interpreter(records: list) -> Decoded:
    """The interpreter's `(region, kind, warp, program, ns)` tuples as a `Decoded`."""
    return Decoded([Record(*r) for r in records], {}, "interpreter", 1)


@dataclass
class Span:
    """One execution of a region by one warp."""

    region: int
    warp: int
    program: int
    start_ns: int
    end_ns: int
    cycles: int | None


def spans(decoded: Decoded) -> tuple[list, int]:
    """Each enter paired with the next exit of its region in the same warp (records of a warp
    are in program order); (spans, records left unpaired)."""
    open_, out, unpaired = {}, [], 0
    for record in decoded.records:
        key = (record.program, record.warp, record.region)
        if record.kind == ENTER:
            unpaired += key in open_
            open_[key] = record
            continue
        start = open_.pop(key, None)
        if start is None:
            unpaired += 1
            continue
        cycles = None
        if record.cycles is not None and start.cycles is not None:
            cycles = (record.cycles - start.cycles) % (1 << 64)
        out.append(Span(record.region, record.warp, record.program, start.ns, record.ns,
                        cycles))
    return out, unpaired + len(open_)


def _summary(values: list) -> dict:
    return {"min": min(values), "median": median(values), "max": max(values),
            "total": sum(values)}


def region_stats(decoded: Decoded, table: list) -> list:
    """Per region of `table` (`profile_regions.Region`s) that ran: its table entry as a dict
    plus `count` (executions), `warps` (warps that ran it), and `ns` / `cycles` summaries
    (min/median/max/total over warps of each warp's summed time)."""
    done, _ = spans(decoded)
    per_warp = {}
    for span in done:
        entry = per_warp.setdefault(span.region, {})
        ns, cycles, count = entry.get((span.program, span.warp), (0, 0, 0))
        entry[(span.program, span.warp)] = (ns + span.end_ns - span.start_ns,
                                            cycles + (span.cycles or 0), count + 1)
    by_id = {region.id: region for region in table}
    out = []
    for region_id in sorted(per_warp):
        warps = per_warp[region_id]
        region = by_id.get(region_id)
        info = region.to_dict() if region is not None else {"id": region_id,
                                                              "name": f"region {region_id}",
                                                              "kind": "unknown"}
        info.update(count=sum(c for _, _, c in warps.values()), warps=len(warps),
                    ns=_summary([ns for ns, _, _ in warps.values()]))
        if decoded.source == "gpu":
            info["cycles"] = _summary([cycles for _, cycles, _ in warps.values()])
        out.append(info)
    return out


def warp_events(decoded: Decoded, table: list, origin_ns: int | None = None) -> list:
    """Chrome trace events of the regions, one track (tid) per warp of each program:
    `program * num_warps + warp` under the process "warps"."""
    done, _ = spans(decoded)
    names = {region.id: region.name for region in table}
    if origin_ns is None:
        origin_ns = min((s.start_ns for s in done), default=0)
    events, tracks = [], set()
    for span in done:
        tid = span.program * decoded.num_warps + span.warp
        if tid not in tracks:
            tracks.add(tid)
            events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                           "args": {"name": f"program {span.program} warp {span.warp}"}})
        events.append({"name": names.get(span.region, f"region {span.region}"), "cat": "region",
                       "ph": "X", "pid": 1, "tid": tid,
                       "ts": (span.start_ns - origin_ns) / 1e3,
                       "dur": max(span.end_ns - span.start_ns, 0) / 1e3,
                       "args": {"cycles": span.cycles}})
    if events:
        events.insert(0, {"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                          "args": {"name": f"warps ({decoded.source} time)"}})
    return events


def region_metrics(info: dict, source: str) -> dict:
    """The numbers a region's node in the profile tree adds per launch: executions, total
    time (ns; the interpreter's is wall clock) and, from the GPU, total cycles. None is named
    like the kernels' `count` or time, so a kernel's inclusive launches and time stay its
    own (`tile-explore prof -m cycles,region_executions` shows them)."""
    time_key = "region time (ns)" if source == "gpu" else "region time (wall, interpreter)"
    metrics = {"region_executions": info["count"], time_key: info["ns"]["total"]}
    if "cycles" in info:
        metrics["cycles"] = info["cycles"]["total"]
    return metrics


def attach_regions(site, kernel_name: str, entry, decoded: Decoded, launch_ns: int) -> list:
    """Put one instrumented launch's regions in every session of `site`: a "region" node
    per region under the kernel's node (metrics summed over launches, the last launch's
    min/median/max per warp as attributes), the warps' Chrome trace events, the lost-record
    count in the metadata; and the statistics in the variant's compile trace (`regions`).
    Returns the statistics."""
    stats = region_stats(decoded, entry.table)
    trace = getattr(entry, "trace", None)
    if trace is not None and hasattr(trace, "regions"):
        trace.regions = stats
    for session, path in site.placements:
        profile = session.profile
        kernel = profile.node_at(path).child(site.leaf or kernel_name, "kernel")
        for info in stats:
            node = kernel.child(info["name"], "region")
            node.add(region_metrics(info, decoded.source))
            node.attributes.update({key: info[key] for key in
                                    ("id", "kind", "ttgir_lines", "python_lines", "warps",
                                     "ns", "cycles") if key in info})
        origin = None
        if decoded.source == "gpu":       # device clock: start the launch at its host time
            first = min((r.ns for r in decoded.records), default=0)
            origin = first - (launch_ns - profile.host_start_ns)
        else:
            origin = profile.host_start_ns
        profile.warp_events.extend(warp_events(decoded, entry.table, origin))
        meta = profile.metadata.setdefault("instrumentation", {})
        meta["time_source"] = decoded.source
        meta["lost_records"] = meta.get("lost_records", 0) + decoded.lost
        meta["slots"] = entry.slots
    return stats
