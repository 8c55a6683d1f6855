"""A small chart of the convert_layout count through the pipeline (one bar per pass)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

BARS = " ▁▂▃▄▅▆▇█"


def chart_text(counts: list[int], names: list[str], width: int = 70) -> Text:
    """A one-line bar chart (scaled to the max count) with the first and last counts labelled."""
    if not counts:
        return Text("no ttgir passes recorded", style="dim")
    peak = max(counts) or 1
    bars = "".join(BARS[round(c / peak * (len(BARS) - 1))] if c else "·" for c in counts)
    text = Text("convert_layout ", style="bold")
    text.append(f"{counts[0]}→{counts[-1]} (peak {max(counts)}")
    if max(counts):
        text.append(f" after {names[counts.index(max(counts))]}")
    text.append(")  ")
    text.append(bars[:width], style="yellow")
    return text


class ConvertChart(Static):
    """Shows `chart_text` for the ttgir pass records of a trace."""

    def show_trace(self, trace) -> None:
        """Redraw for a trace."""
        records = trace.passes_of("ttgir")
        self.update(chart_text([r.convert_layout_count for r in records],
                               [r.name for r in records]))
