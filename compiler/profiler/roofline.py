"""Roofline: each timed kernel's achieved TFLOP/s and GB/s against the device's peaks.

Peaks come from the profile's device record (queried when the session started): memory
bandwidth as `2 * bus_width * memory_clock_rate / 8` and tensor-core throughput per operand
width as Proton's viewer estimates it (A100, L4-class Ada, H100/H200 scaled by SMs and clock).
`points(root, device)` gives one `Point` per kernel node that has a time and flops or bytes;
`draw(points, peaks)` draws them on a log-log chart in text, under the roofs, with a table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.profiler.data import HOOK_METRICS
from compiler.profiler.viewer import ViewNode, time_metric

#: Dense tensor-core FLOP/s at 8-bit operands by architecture (halved per doubling of width);
#: sm_90 is scaled by the device's SMs and clock from the H100 PCIe's 114 SMs at 1755 MHz.
_FLOPS8 = {"80": 624e12, "89": 330.3e12, "90": 1513e12}


@dataclass
class Peaks:
    """The device's peak memory bandwidth (bytes/s) and FLOP/s per operand width."""

    name: str
    bandwidth: float | None
    flops: dict            # width -> FLOP/s


@dataclass
class Point:
    """One kernel on the chart."""

    name: str
    seconds: float
    flops: float
    bytes: float
    widths: tuple          # operand widths whose flops it reported

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12

    @property
    def gbytes(self) -> float:
        return self.bytes / self.seconds / 1e9

    @property
    def intensity(self) -> float | None:
        """FLOP per byte (None without both)."""
        return self.flops / self.bytes if self.flops and self.bytes else None


def peaks_of(device: dict) -> Peaks | None:
    """The peaks of GPU 0 in a profile's device record (None when there is none)."""
    record = (device.get("CUDA") or {}).get("0")
    if not record:
        return None
    bandwidth = None
    if record.get("bus_width") and record.get("memory_clock_rate"):
        bandwidth = 2 * record["bus_width"] * record["memory_clock_rate"] * 1e3 / 8
    base = _FLOPS8.get(str(record.get("arch")))
    if base and str(record.get("arch")) == "90":
        base *= record.get("num_sms", 114) / 114 * record.get("clock_rate", 1755e3) / 1755e3
    flops = {w: base / (w / 8) for w in (8, 16, 32, 64)} if base else {}
    return Peaks(record.get("name", f"sm_{record.get('arch')}"), bandwidth, flops)


def points(root: ViewNode) -> list:
    """A point per kernel node (a leaf with a count) that has a time and flops or bytes."""
    time_name = time_metric(root)
    found = []

    def visit(node: ViewNode) -> None:
        if not node.children and node.inclusive.get("count") and time_name:
            seconds = node.inclusive.get(time_name, 0) / 1e9
            widths = tuple(int(m[5:]) for m in HOOK_METRICS
                           if m.startswith("flops") and node.inclusive.get(m))
            flops = sum(node.inclusive.get(f"flops{w}", 0) for w in widths)
            nbytes = node.inclusive.get("bytes", 0)
            if seconds > 0 and (flops or nbytes):
                found.append(Point(node.name, seconds, flops, nbytes, widths))
        for child in node.children:
            visit(child)
    visit(root)
    return found


def _roof(peaks: Peaks, point: Point) -> tuple[float | None, str]:
    """The attainable FLOP/s at the point's intensity and what bounds it."""
    compute = min((peaks.flops[w] for w in point.widths if w in peaks.flops), default=None)
    intensity = point.intensity
    if compute and peaks.bandwidth and intensity:
        memory = intensity * peaks.bandwidth
        return min(compute, memory), "memory" if memory < compute else "compute"
    return None, "memory" if not point.flops else "?"


def table(found: list, peaks: Peaks | None) -> list:
    """Rows of the roofline table (strings), header first."""
    rows = [["#", "kernel", "FLOP/B", "TFLOP/s", "GB/s", "% peak BW", "% roof", "bound"]]
    for index, point in enumerate(found, 1):
        intensity = point.intensity
        bw_share = f"{100 * point.bytes / point.seconds / peaks.bandwidth:.1f}" \
            if peaks and peaks.bandwidth and point.bytes else "-"
        roof, bound = _roof(peaks, point) if peaks else (None, "-")
        roof_share = f"{100 * point.flops / point.seconds / roof:.1f}" if roof else "-"
        rows.append([str(index), point.name, f"{intensity:.2f}" if intensity else "-",
                     f"{point.tflops:.3f}" if point.flops else "-",
                     f"{point.gbytes:.1f}" if point.bytes else "-", bw_share, roof_share,
                     bound])
    return rows


def _chart_peak(peaks: Peaks) -> float:
    """The compute roof the chart draws: the 16-bit one (the header names it)."""
    return peaks.flops.get(16, max(peaks.flops.values()))


def chart(found: list, peaks: Peaks | None, width: int = 64, height: int = 16) -> list:
    """A log-log text chart: x FLOP/byte, y TFLOP/s; the 16-bit compute roof drawn with '-',
    the bandwidth roof with '/', kernels as their table numbers. Kernels without both flops
    and bytes are left off."""
    placed = [(i, p) for i, p in enumerate(found, 1) if p.intensity]
    if not placed:
        return []
    xs = [p.intensity for _, p in placed]
    ys = [p.tflops for _, p in placed]
    roof_top = _chart_peak(peaks) / 1e12 if peaks and peaks.flops else max(ys)
    x_lo, x_hi = math.log10(min(xs)) - 1, math.log10(max(xs)) + 1
    y_lo, y_hi = math.log10(min(ys)) - 1, math.log10(max(max(ys), roof_top)) + 0.3
    grid = [[" "] * width for _ in range(height)]

    def cell(x: float, y: float) -> tuple[int, int] | None:
        col = round((math.log10(x) - x_lo) / (x_hi - x_lo) * (width - 1))
        row = height - 1 - round((math.log10(y) - y_lo) / (y_hi - y_lo) * (height - 1))
        return (row, col) if 0 <= row < height and 0 <= col < width else None

    if peaks and peaks.bandwidth and peaks.flops:
        top = _chart_peak(peaks)
        for col in range(width):
            x = 10 ** (x_lo + col / (width - 1) * (x_hi - x_lo))
            y = min(top, x * peaks.bandwidth) / 1e12
            where = cell(x, y)
            if where:
                grid[where[0]][where[1]] = "-" if y * 1e12 >= top else "/"
    for index, point in placed:
        where = cell(point.intensity, point.tflops)
        if where:
            label = str(index)
            row, col = where
            for offset, char in enumerate(label[:width - col]):
                grid[row][col + offset] = char
    lines = [f"TFLOP/s 10^{y_hi:.1f} ┐"]
    lines += ["│" + "".join(row) for row in grid]
    lines.append("└" + "─" * width + f"  FLOP/byte 10^{x_lo:.1f} .. 10^{x_hi:.1f}")
    return lines


def draw(root: ViewNode, device: dict) -> str:
    """The roofline of a loaded profile as text (chart, then table)."""
    found = points(root)
    peaks = peaks_of(device)
    if not found:
        return "roofline: no kernel has both a time and flops or bytes " \
               "(give them through launch_metadata with hook='triton')"
    head = [f"roofline on {peaks.name}: peak "
            + (f"{peaks.bandwidth / 1e9:.0f} GB/s" if peaks.bandwidth else "? GB/s") + ", "
            + (f"{peaks.flops[16] / 1e12:.0f} TFLOP/s at 16-bit" if peaks.flops else
               "no compute peak known for this architecture")] if peaks else \
        ["roofline: this profile has no device record (interpreter run): achieved rates only"]
    rows = table(found, peaks)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    body = ["  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in
                      enumerate(zip(r, widths))) for r in rows]
    return "\n".join(head + chart(found, peaks) + body)
