"""Heat maps of in-kernel region times on the linked view's texts: ttgir ops, PTX lines and
Python lines, from a compile trace's `regions` (written by the profiler's instrumentation mode).

Each line takes the *exclusive* time of the innermost region covering it: a region's total
(summed over warps and executions) minus the totals of the regions directly inside it, so a
loop body's loads and the kernel's prologue do not both look as hot as the whole kernel.
GPU regions are measured in cycles, interpreter ones in wall-clock ns.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

#: Backgrounds from cool to hot (five steps).
HEAT_COLORS = ("#16324f", "#1f5a46", "#6b6418", "#8c4516", "#9e1c1c")


@dataclass(frozen=True)
class LineHeat:
    """A line's heat: its region, that region's exclusive time, the unit ("cycles" or "ns")
    and its share of the kernel's whole time (0..1)."""

    region: str
    value: float
    unit: str
    share: float


def _measure(region: dict) -> tuple[float, str]:
    if "cycles" in region:
        return float(region["cycles"]["total"]), "cycles"
    return float(region.get("ns", {}).get("total", 0)), "ns"


def _exclusive(regions: list) -> dict:
    """Region id -> (exclusive time, unit): its total minus its direct children's, where a
    child is a region whose ttgir lines (else Python lines) lie inside the parent's."""
    def cover(region):
        return frozenset(region.get("ttgir_lines") or region.get("python_lines") or ())
    covers = {r["id"]: cover(r) for r in regions}
    out = {}
    for region in regions:
        mine = covers[region["id"]]
        inside = [r for r in regions if r is not region and covers[r["id"]] < mine]
        direct = [r for r in inside
                  if not any(covers[r["id"]] < covers[o["id"]] for o in inside if o is not r)]
        total, unit = _measure(region)
        out[region["id"]] = (max(total - sum(_measure(r)[0] for r in direct), 0.0), unit)
    return out


def _python_file_line(text: str) -> int | None:
    tail = str(text).rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def region_heat(trace) -> dict:
    """{"ttgir" | "ptx" | "source": {line: LineHeat}} for a trace with `regions` (empty maps
    without). Source lines are lines of the trace's `source` stage (which starts at the
    kernel's `source_line`)."""
    regions = list(getattr(trace, "regions", None) or [])
    heat = {"ttgir": {}, "ptx": {}, "source": {}}
    if not regions:
        return heat
    exclusive = _exclusive(regions)
    whole = sum(value for value, _ in exclusive.values()) or 1.0
    first = getattr(trace, "source_line", 0) or 1
    source_lines = len(trace.stages.get("source", "").splitlines())
    # outer regions first, so the innermost region of a line is the one left on it
    for region in sorted(regions, key=lambda r: -len(r.get("ttgir_lines") or
                                                     r.get("python_lines") or ())):
        value, unit = exclusive[region["id"]]
        mark = LineHeat(region["name"], value, unit, value / whole)
        for line in region.get("ttgir_lines", ()):
            heat["ttgir"][line] = mark
            for start, end in trace.ttgir_to_ptx.get(str(line), ()):
                for ptx_line in range(start, end + 1):
                    heat["ptx"][ptx_line] = mark
        for where in region.get("python_lines", ()):
            file_line = _python_file_line(where)
            if file_line is not None and 1 <= file_line - first + 1 <= source_lines:
                heat["source"][file_line - first + 1] = mark
    return heat


def heat_color(share: float) -> str:
    """The background for a share of the kernel's time (0..1)."""
    step = min(int(max(share, 0.0) * len(HEAT_COLORS)), len(HEAT_COLORS) - 1)
    return HEAT_COLORS[step]


def _amount(value: float, unit: str) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix} {unit}"
    return f"{value:.0f} {unit}"


def render_heat(lines: list, heat: dict) -> list:
    """Copies of `lines` (rich Text, one per 1-based line) behind a 5-column heat gutter (the
    line's share of the kernel's time on its colour; blank on lines no region covers) and,
    on hot lines, a trailing label `◀ loop L12 body (3.1M cycles)`."""
    out = []
    for number, line in enumerate(lines, 1):
        text = line.copy() if isinstance(line, Text) else Text(str(line))
        mark = heat.get(number)
        row = Text()
        if mark is None:
            row.append("     ")
        else:
            row.append(f"{mark.share:>4.0%} ", style=f"bold #f0e68c on {heat_color(mark.share)}")
            text.append(f"  ◀ {mark.region} ({_amount(mark.value, mark.unit)})",
                        style="#f0e68c")
        row.append_text(text)
        out.append(row)
    return out


def heat_summary(trace, top: int = 4) -> str:
    """One status line: the hottest regions by exclusive time and their shares."""
    regions = list(getattr(trace, "regions", None) or [])
    if not regions:
        return ""
    exclusive = _exclusive(regions)
    whole = sum(value for value, _ in exclusive.values()) or 1.0
    ranked = sorted(regions, key=lambda r: -exclusive[r["id"]][0])[:top]
    return "regions: " + " · ".join(
        f"{r['name']} {exclusive[r['id']][0] / whole:.0%}" for r in ranked)
