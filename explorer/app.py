"""The explorer App: a thin shell that holds the traces, the chosen kernel and the views.

Each view lives in `explorer/views/`; the App only switches between them (keys 1-7) and hands
the chosen trace to every view through `show_trace`. Styles are in `styles.tcss`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Footer, Header, TabbedContent, TabPane

from compiler.trace import CompileTrace
from explorer.views.help import HelpScreen
from explorer.views.kernel_list import KernelList
from explorer.views.layout_view import LayoutView
from explorer.views.linked_view import LinkedView
from explorer.views.pass_timeline import PassTimeline
from explorer.views.pipeline_editor import PipelineEditor
from explorer.views.stage_view import StageView
from explorer.views.timings import TimingsView

VIEWS = ("kernels", "stages", "passes", "layouts", "linked", "pipeline", "timings")


class ExplorerApp(App):
    """tile-explore: kernels, stages, per-pass diffs, layouts, linked panes, pipelines, timings."""

    TITLE = "tile-explore"
    CSS_PATH = "styles.tcss"
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("g", "signature", "Signature", show=False),
        *[Binding(str(i + 1), f"show_view('{name}')", name.capitalize(), show=False)
          for i, name in enumerate(VIEWS)],
    ]

    kernel_index = reactive(-1, init=False)

    def __init__(self, traces: list[CompileTrace], messages: list[str] | None = None,
                 recompiler: Callable | None = None, export_dir: str | Path = ".",
                 initial_kernel: int = 0, signature_compiler: Callable | None = None,
                 uncompiled: list | None = None) -> None:
        super().__init__()
        self.signature_compiler = signature_compiler    # prompt text -> CompileTrace
        self.uncompiled = list(uncompiled or [])        # kernels defined but not compiled
        self.traces = traces
        self.messages = messages or []
        self.recompiler = recompiler
        self.export_dir = Path(export_dir)
        self._initial_kernel = initial_kernel

    @property
    def trace(self) -> CompileTrace | None:
        """The trace of the chosen kernel."""
        if 0 <= self.kernel_index < len(self.traces):
            return self.traces[self.kernel_index]
        return None

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="kernels", id="views"):
            with TabPane("1 Kernels", id="kernels"):
                yield KernelList(self.traces, self.messages)
            with TabPane("2 Stages", id="stages"):
                yield StageView()
            with TabPane("3 Passes", id="passes"):
                yield PassTimeline()
            with TabPane("4 Layouts", id="layouts"):
                yield LayoutView()
            with TabPane("5 Linked", id="linked"):
                yield LinkedView()
            with TabPane("6 Pipeline", id="pipeline"):
                yield PipelineEditor()
            with TabPane("7 Timings", id="timings"):
                yield TimingsView(self.traces)
        yield Footer()

    def on_mount(self) -> None:
        if self.traces:
            self.kernel_index = min(self._initial_kernel, len(self.traces) - 1)
        self.query_one("#kernel-table").focus()

    def watch_kernel_index(self, index: int) -> None:
        trace = self.trace
        if trace is None:
            return
        self.sub_title = f"{trace.kernel_name} · {len(trace.passes)} passes"
        for view in (StageView, PassTimeline, LayoutView, LinkedView, PipelineEditor, TimingsView):
            self.query_one(view).show_trace(trace)

    def on_kernel_list_selected(self, event: KernelList.Selected) -> None:
        self.kernel_index = event.index
        self.action_show_view("stages")

    def action_show_view(self, name: str) -> None:
        """Switch to a view and focus its main widget."""
        self.query_one(TabbedContent).active = name
        targets = {"kernels": "#kernel-table", "stages": "#stage-code", "passes": "#pass-table",
                   "layouts": "#layout-code", "linked": "#linked-ttgir",
                   "pipeline": "#pipeline-table", "timings": "#launch-table"}
        self.query_one(targets[name]).focus()

    def action_signature(self) -> None:
        """`g`: the signature prompt, for kernels the script did not launch."""
        if self.signature_compiler is None:
            self.notify("no script was run: there is nothing to compile a signature for",
                        severity="warning", markup=False)
            return
        from explorer.views.signature_prompt import SignaturePrompt

        def added(trace) -> None:
            if trace is None:
                return
            self.traces.append(trace)
            if trace.kernel_name in self.uncompiled:
                self.uncompiled.remove(trace.kernel_name)
            self.query_one(KernelList).add_trace(trace)
            self.kernel_index = len(self.traces) - 1
            self.action_show_view("stages")
        self.push_screen(SignaturePrompt(self.signature_compiler, self.uncompiled), added)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())
