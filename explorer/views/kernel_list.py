"""The kernel list: every compiled specialization with its time, launch count and grid, and
below it the story of the highlighted kernel (explorer/summary.py). The time comes before the
long specialization column, which is elided, so that 80 columns always show the time."""
from __future__ import annotations

import statistics

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from compiler.trace import CompileTrace
from explorer.summary import kernel_story
from explorer.views.plain import plain, plain_row

SPEC_WIDTH = 20     # longer specializations are elided in the table (full text in the story)


def elide(text: str, width: int) -> str:
    """`text` cut to `width` characters with an ellipsis when longer."""
    return text if len(text) <= width else text[:width - 1] + "…"


def spec_text(trace: CompileTrace) -> str:
    """A specialization as `BLOCK=1024, warps=4` (its signature when it has no constexprs)."""
    spec = trace.specialization or {}
    constexprs = spec.get("constexprs") or {}
    parts = [f"{k}={v}" for k, v in constexprs.items()]
    warps = (spec.get("options") or {}).get("num_warps") or spec.get("num_warps")
    if warps:
        parts.append(f"warps={warps}")
    return ", ".join(parts) or str(spec.get("signature", ""))


def time_text(trace: CompileTrace) -> str:
    times = [launch.time_ms for launch in trace.launches if launch.time_ms is not None]
    if not times:
        return "not launched"
    where = "gpu" if trace.launches[0].backend == "gpu" else "interp"
    return f"{statistics.median(times):.4g} ms ({where})"


class KernelList(Vertical):
    """A table of the recorded kernels; Enter opens one. Messages (errors, notes) show below."""

    class Selected(Message):
        """The user chose kernel number `index`."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, traces: list, messages: list[str], **kwargs) -> None:
        super().__init__(**kwargs)
        self.traces = traces
        self.messages = messages

    def compose(self) -> ComposeResult:
        yield DataTable(id="kernel-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="kernel-story-scroll"):
            yield Static(id="kernel-story", markup=False)
        with VerticalScroll(id="kernel-messages-scroll"):
            yield Static(id="kernel-messages")
        yield Static("Enter opens the highlighted kernel · 1-7 switch views · ? help",
                     id="kernel-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("kernel", "time", "launches", "grid", "specialization")
        for index, trace in enumerate(self.traces):
            self._add_row(table, index, trace)
        self.show_messages(self.messages)
        self.show_story(0)

    def show_story(self, index: int) -> None:
        """Show the summary of kernel `index` under the table."""
        story = self.query_one("#kernel-story", Static)
        if 0 <= index < len(self.traces):
            story.update(kernel_story(self.traces[index]))
        self.query_one("#kernel-story-scroll").display = 0 <= index < len(self.traces)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.show_story(int(event.row_key.value))

    def _add_row(self, table: DataTable, index: int, trace: CompileTrace) -> None:
        grid = "×".join(str(g) for g in trace.launches[0].grid) if trace.launches else "—"
        table.add_row(*plain_row(elide(trace.kernel_name, 24), time_text(trace),
                                 len(trace.launches), grid,
                                 elide(spec_text(trace), SPEC_WIDTH)), key=str(index))

    def add_trace(self, trace: CompileTrace) -> None:
        """A row for a trace appended to the list (the signature prompt's compile)."""
        if trace not in self.traces:
            self.traces.append(trace)
        self._add_row(self.query_one(DataTable), self.traces.index(trace), trace)

    def show_messages(self, messages: list[str]) -> None:
        """Show errors and notes (what was not run and why) under the table."""
        notes = list(messages)
        if not self.traces:
            notes.append("No kernel was compiled.")
        widget = self.query_one("#kernel-messages", Static)
        widget.update(plain("\n".join(notes)))
        self.query_one("#kernel-messages-scroll").display = bool(notes)

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if self.traces and 0 <= table.cursor_row < len(self.traces):
            self.post_message(self.Selected(table.cursor_row))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.post_message(self.Selected(int(event.row_key.value)))
