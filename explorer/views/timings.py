"""The timings pane: every recorded launch (CUDA events on the GPU, wall time through the
interpreter, labelled as such) and the compile time of each stage."""
from __future__ import annotations

import statistics

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from compiler.trace import CompileTrace
from explorer.views.plain import plain_row

BACKEND_LABELS = {"gpu": "GPU (CUDA events)", "interpreter": "interpreter (wall time)"}


class TimingsView(Vertical):
    """Launches of all kernels, and the stage compile times of the current one."""

    def __init__(self, traces: list, **kwargs) -> None:
        super().__init__(**kwargs)
        self.traces = traces

    def compose(self) -> ComposeResult:
        yield DataTable(id="launch-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="stage-times", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("kernel", "grid", "warps", "backend", "time ms")
        for trace in self.traces:
            for launch in trace.launches:
                table.add_row(*plain_row(trace.kernel_name, "×".join(map(str, launch.grid)),
                                         launch.num_warps,
                                         BACKEND_LABELS.get(launch.backend, launch.backend),
                                         "—" if launch.time_ms is None
                                         else f"{launch.time_ms:.4g}"))
        if not any(trace.launches for trace in self.traces):
            table.add_row("(no launches recorded)", "", "", "", "")

    def show_trace(self, trace: CompileTrace) -> None:
        """Show the compile time of each stage of a trace."""
        times = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in trace.stage_times_ms.items())
        launched = [launch.time_ms for launch in trace.launches if launch.time_ms is not None]
        if launched:
            where = BACKEND_LABELS.get(trace.launches[0].backend, trace.launches[0].backend)
            runs = (f"{len(launched)} timed launch(es) on {where}: median "
                    f"{statistics.median(launched):.4g} ms, min {min(launched):.4g} ms")
        else:
            runs = "not launched (no timings)"
        self.query_one("#stage-times", Static).update(
            f"{trace.kernel_name}: {runs}\ncompile: {times or 'no stage times recorded'}")
