"""The kernel list: every compiled specialization with its grid, launch count and time."""
from __future__ import annotations

import statistics

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from compiler.trace import CompileTrace
from explorer.views.plain import plain, plain_row


def _spec_text(trace: CompileTrace) -> str:
    spec = trace.specialization or {}
    constexprs = spec.get("constexprs") or {}
    parts = [f"{k}={v}" for k, v in constexprs.items()]
    warps = (spec.get("options") or {}).get("num_warps") or spec.get("num_warps")
    if warps:
        parts.append(f"warps={warps}")
    return ", ".join(parts) or str(spec.get("signature", ""))


def _time_text(trace: CompileTrace) -> str:
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
        with VerticalScroll(id="kernel-messages-scroll"):
            yield Static(id="kernel-messages")
        yield Static("Enter opens the highlighted kernel · 1-7 switch views · ? help",
                     id="kernel-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("kernel", "specialization", "grid", "launches", "time")
        for index, trace in enumerate(self.traces):
            self._add_row(table, index, trace)
        self.show_messages(self.messages)

    def _add_row(self, table: DataTable, index: int, trace: CompileTrace) -> None:
        grid = "×".join(str(g) for g in trace.launches[0].grid) if trace.launches else "—"
        table.add_row(*plain_row(trace.kernel_name, _spec_text(trace), grid,
                                 len(trace.launches), _time_text(trace)), key=str(index))

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
