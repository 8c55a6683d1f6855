"""The explorer App: a thin shell that holds the traces, the chosen kernel and the views.

Each view lives in `explorer/views/`; the App only switches between them (keys 1-7) and hands
the chosen trace to every view through `show_trace`. Styles are in `styles.tcss`.

Keys that work in every view: `/` search the focused text view, `c` copy its selection (or all
of it) to the clipboard, `w` save it to a file, `ctrl+k` switch kernel, `ctrl+p` the command
palette (explorer/commands.py). A text view is any widget with `view_text()` and `search()`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Footer, Header, TabbedContent, TabPane

from compiler.trace import CompileTrace
from explorer.commands import ExplorerCommands
from explorer.views.help import HelpScreen
from explorer.views.kernel_list import KernelList
from explorer.views.kernel_switcher import KernelSwitcher
from explorer.views.layout_view import LayoutView
from explorer.views.linked_view import LinkedView
from explorer.views.pass_timeline import PassTimeline
from explorer.views.pipeline_editor import PipelineEditor
from explorer.views.prompt import PromptScreen
from explorer.views.stage_view import StageView
from explorer.views.timings import TimingsView

VIEWS = ("kernels", "stages", "passes", "layouts", "linked", "pipeline", "timings")


class ExplorerApp(App):
    """tile-explore: kernels, stages, per-pass diffs, layouts, linked panes, pipelines, timings."""

    TITLE = "tile-explore"
    CSS_PATH = "styles.tcss"
    COMMANDS = App.COMMANDS | {ExplorerCommands}
    VIEW_NAMES = VIEWS
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("g", "signature", "Signature", show=False),
        Binding("ctrl+k", "switch_kernel", "Kernel"),
        Binding("slash", "search", "Search", show=False),
        Binding("c", "copy", "Copy", show=False),
        Binding("w", "save", "Save", show=False),
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
        """Switch to a view and focus its main widget (closing any screen over the views:
        a diff, B's views, a prompt)."""
        self.to_main_screen()
        self.query_one("#views", TabbedContent).active = name
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

    # ---- every view: kernel switcher, search, copy, save --------------------------------------
    def select_kernel(self, index: int) -> None:
        """Make kernel `index` current (every view follows) and show its stages."""
        if 0 <= index < len(self.traces):
            self.kernel_index = index
            self.action_show_view("stages")

    def to_main_screen(self) -> None:
        """Close every screen pushed over the views."""
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_switch_kernel(self) -> None:
        """Open the kernel list as a modal; the chosen kernel becomes current."""
        if not self.traces:
            self.notify("no kernel was compiled", severity="warning")
            return

        def chosen(index: int | None) -> None:
            if index is not None:
                self.select_kernel(index)
        self.push_screen(KernelSwitcher(self.traces, self.kernel_index), chosen)

    def text_view(self) -> Widget | None:
        """The focused text view (a widget with `view_text` and `search`), or None."""
        widget = self.focused
        while widget is not None:
            if hasattr(widget, "view_text") and hasattr(widget, "search"):
                return widget
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        return None

    def action_search(self) -> None:
        """Ask for text and find it in the focused text view; `n` / `N` then step."""
        view = self.text_view()
        if view is None:
            self.notify("focus a text view to search it", severity="warning")
            return

        def found(query: str | None) -> None:
            if query:
                count = view.search(query)
                self.notify(f"{count} line(s) match {query!r}" + (" · n / N to step"
                                                                  if count else ""))
            view.focus()
        self.push_screen(PromptScreen("search", getattr(view, "query_text", "")), found)

    def action_copy(self) -> None:
        """Copy the mouse selection, else the view's line selection (`v`), else the whole
        focused view, to the clipboard (OSC 52 through Textual)."""
        selected = self.screen.get_selected_text()
        view = self.text_view()
        text = selected or (view.view_text(selection_only=True) if view is not None else None)
        if not text:
            self.notify("nothing to copy here: focus a text view", severity="warning")
            return
        self.copy_to_clipboard(text)
        self.notify(f"copied {len(text.splitlines())} line(s) to the clipboard")

    def action_save(self) -> None:
        """Ask for a path and write the focused view's text there; errors show in the app."""
        view = self.text_view()
        if view is None:
            self.notify("focus a text view to save it", severity="warning")
            return
        name = f"{self.trace.kernel_name if self.trace else 'view'}-{view.id or 'view'}.txt"

        def save(path: str | None) -> None:
            if path:
                self.save_text(view.view_text(), path)
            view.focus()
        self.push_screen(PromptScreen("save this view to", str(self.export_dir / name)), save)

    def save_text(self, text: str, path: str) -> Path | None:
        """Write `text` to `path` (relative to the export folder); a failure is a notification
        naming the path and the reason, never a crash."""
        target = Path(path).expanduser()
        if not target.is_absolute():
            target = self.export_dir / target
        try:
            target.write_text(text)
        except OSError as error:
            self.notify(f"could not save {target}: {error.strerror or error}", severity="error",
                        timeout=8)
            return None
        self.notify(f"saved {len(text.splitlines())} line(s) to {target.resolve()}")
        return target
