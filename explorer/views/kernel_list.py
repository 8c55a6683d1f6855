"""The kernel list: every compiled specialization with its time, launch count and grid, and
below it the story of the highlighted kernel (explorer/summary.py). The time comes before the
long specialization column, which is elided to the width the screen leaves it (the story below
shows it in full), so that 80 columns always show the time and 160 columns show more."""
from __future__ import annotations

import statistics

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from compiler.trace import CompileTrace
from explorer.summary import kernel_story, signature_text, size_groups
from explorer.views.plain import plain, plain_row

SPEC_WIDTH = 10     # the specialization column's least width (full text in the story)
NAME_WIDTH = 24
COLUMNS = ("kernel", "time", "launches", "grid", "specialization")


def elide(text: str, width: int) -> str:
    """`text` cut to `width` characters with an ellipsis when longer."""
    return text if len(text) <= width else text[:width - 1] + "…"


def spec_text(trace: CompileTrace, first: frozenset = frozenset()) -> str:
    """A specialization as `BLOCK=1024, warps=4` (its signature when it has no constexprs);
    the constexprs named in `first` come first."""
    spec = trace.specialization or {}
    constexprs = spec.get("constexprs") or {}
    names = sorted(constexprs, key=lambda name: name not in first)     # stable: file order
    parts = [f"{name}={constexprs[name]}" for name in names]
    warps = (spec.get("options") or {}).get("num_warps") or spec.get("num_warps")
    if warps:
        parts.append(f"warps={warps}")
    return ", ".join(parts) or signature_text(spec.get("signature"))


def time_text(trace: CompileTrace) -> str:
    """The median launch time, or the range of the medians when the launches had several
    problem sizes (one median over mixed sizes would mean nothing)."""
    times = [launch.time_ms for launch in trace.launches if launch.time_ms is not None]
    if not times:
        return "not launched"
    where = "gpu" if trace.launches[0].backend == "gpu" else "interp"
    medians = sorted(statistics.median(launch.time_ms for launch in group)
                     for group in size_groups(trace).values())
    if len(medians) > 1:
        return f"{_short_ms(medians[0])}–{_short_ms(medians[-1])} ms ({where})"
    return f"{medians[0]:.4g} ms ({where})"


def _short_ms(value: float) -> str:
    """Three significant digits, without an exponent below 10^6."""
    return f"{value:.0f}" if value >= 1000 else f"{value:.3g}"


def differing_constexprs(traces: list) -> dict:
    """Kernel name -> the constexprs whose values differ between its specializations (what
    tells its rows apart, so the table shows those first)."""
    values: dict = {}
    for trace in traces:
        for name, value in ((trace.specialization or {}).get("constexprs") or {}).items():
            values.setdefault(trace.kernel_name, {}).setdefault(name, set()).add(str(value))
    return {kernel: frozenset(name for name, seen in names.items() if len(seen) > 1)
            for kernel, names in values.items()}


def _row_cells(trace: CompileTrace, first: frozenset = frozenset()) -> list[str]:
    """A kernel's table cells, the specialization in full (elided when the row is added)."""
    grid = "×".join(str(g) for g in trace.launches[0].grid) if trace.launches else "—"
    return [elide(trace.kernel_name, NAME_WIDTH), time_text(trace), str(len(trace.launches)),
            grid, spec_text(trace, first)]


def spec_width(rows: list[list[str]], table_width: int) -> int:
    """The width left to the last (specialization) column when every other column shows its
    widest cell; each column pads one space on both sides, and one column stays for the
    scroll bar."""
    others = sum(max([len(COLUMNS[i])] + [len(row[i]) for row in rows]) + 2
                 for i in range(len(COLUMNS) - 1))
    return max(SPEC_WIDTH, table_width - others - 3)


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
        yield Static(self._hint(), id="kernel-hint", markup=False)

    def _hint(self) -> str:
        if self.traces:
            return "Enter opens the highlighted kernel · 1-7 switch views · ? help"
        return "no kernel to open (see the messages) · g compile one · ? help · q quit"

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self._fill(table)
        self.show_messages(self.messages)
        self.show_story(0)

    def _fill(self, table: DataTable) -> None:
        """(Re)write the rows, the specialization elided to the width the table has now."""
        first = differing_constexprs(self.traces)
        rows = [_row_cells(trace, first.get(trace.kernel_name, frozenset()))
                for trace in self.traces]
        width = spec_width(rows, table.size.width or self.app.size.width)
        cursor = table.cursor_row
        table.clear()
        for index, cells in enumerate(rows):
            table.add_row(*plain_row(*cells[:-1], elide(cells[-1], width)), key=str(index))
        if self.traces:
            table.move_cursor(row=min(max(cursor, 0), len(self.traces) - 1))
        self._filled_width = table.size.width

    def on_resize(self) -> None:
        table = self.query_one(DataTable)
        if table.size.width != getattr(self, "_filled_width", None):
            self._fill(table)

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

    def add_trace(self, trace: CompileTrace) -> None:
        """A row for a trace appended to the list (the signature prompt's compile)."""
        if trace not in self.traces:
            self.traces.append(trace)
        self._fill(self.query_one(DataTable))
        self.query_one("#kernel-hint", Static).update(self._hint())
        self.set_class(False, "-no-kernels")

    def show_messages(self, messages: list[str]) -> None:
        """Show errors and notes (what was not run and why) under the table."""
        notes = list(messages)
        if not self.traces:
            notes.append("No kernel was compiled.")
        widget = self.query_one("#kernel-messages", Static)
        widget.update(plain("\n".join(notes)))
        self.query_one("#kernel-messages-scroll").display = bool(notes)
        self.set_class(not self.traces, "-no-kernels")     # the messages take the screen

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if self.traces and 0 <= table.cursor_row < len(self.traces):
            self.post_message(self.Selected(table.cursor_row))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.post_message(self.Selected(int(event.row_key.value)))
