"""The layout graph view: the ttgir on the left, the graph of values clustered by layout on the
right (conversions marked ⇄), and the thread-ownership map of the layout under the cursor.
`d` exports DOT, `m` GraphML (into the app's export folder)."""
from __future__ import annotations

from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.widgets import Static

from compiler.trace import CompileTrace
from explorer.graph import SCALAR, layout_graph, render_clusters, to_dot, to_graphml
from explorer.lexers import lexer_for_stage
from explorer.ownership import ownership_grid, tensor_shape
from explorer.views.code_view import CodeView

GRAPH_WIDTH = 64          # the drawing scrolls sideways in narrow terminals
WARP_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]


def ownership_text(layout_name: str, aliases: dict, shape: tuple, width: int = 60) -> Text:
    """The ownership map as text: each element shows its lane (hex), coloured by warp."""
    try:
        grid = ownership_grid(layout_name, shape, aliases, max_rows=8, max_cols=width // 3)
    except (ValueError, AttributeError) as error:
        return Text(f"{layout_name}: {error}", style="dim")
    text = Text(f"{layout_name} on tensor {'x'.join(map(str, shape))}: lane per element, "
                "colour = warp, underlined = register 0\n", style="bold")
    for row in grid:
        for warp, lane, register in row:
            text.append(f"{lane:>2} ", Style(color="black", bgcolor=WARP_COLORS[warp % 10],
                                             underline=register == 0))
        text.append("\n")
    warps = sorted({cell[0] for row in grid for cell in row})
    text.append("warps: ")
    for warp in warps:
        text.append(f" w{warp} ", Style(color="black", bgcolor=WARP_COLORS[warp % 10]))
    first = grid[0][:8]
    text.append("\nelement → (warp, lane, reg): " +
                ", ".join(f"[{i}]→{cell}" for i, cell in enumerate(first)))
    return text


class LayoutView(Horizontal):
    """ttgir with a cursor | the layout graph and the ownership map of the value at the cursor."""

    BINDINGS = [
        Binding("d", "export('dot')", "Export DOT"),
        Binding("m", "export('graphml')", "Export GraphML"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trace: CompileTrace | None = None
        self.graph = None

    def compose(self) -> ComposeResult:
        yield CodeView(id="layout-code")
        with Vertical(id="layout-side"):
            with ScrollableContainer(id="layout-graph-scroll"):
                yield Static(id="layout-graph")
            yield Static(id="layout-owner")

    def show_trace(self, trace: CompileTrace) -> None:
        """Build the graph of the trace's ttgir and draw it."""
        self.trace = trace
        ttgir = trace.stages.get("ttgir", "")
        self.graph = layout_graph(trace)
        self.query_one(CodeView).set_text(ttgir, lexer_for_stage("ttgir"))
        self._draw_graph(None)

    def _graph_text(self, focus_line: int | None) -> tuple[Text, int | None]:
        """The drawing, with the values defined on `focus_line` reversed, and the row of the
        first of them (to scroll to)."""
        text = Text()
        if self.graph is None or not self.graph.number_of_nodes():
            return Text("no ttgir in this trace", style="dim"), None
        focus = {n for n, d in self.graph.nodes(data=True) if d["line"] == focus_line}
        focus_row = None
        for row, line in enumerate(render_clusters(self.graph, width=GRAPH_WIDTH)):
            style = None
            if "⇄" in line:
                style = "bold red"
            if any(f" {name} =" in line for name in focus):
                style = "reverse"
                focus_row = row if focus_row is None else focus_row
            text.append(line + "\n", style=style)
        return text, focus_row

    def _draw_graph(self, focus_line: int | None) -> None:
        text, focus_row = self._graph_text(focus_line)
        self.query_one("#layout-graph", Static).update(text)
        if focus_row is not None:
            scroller = self.query_one("#layout-graph-scroll")
            scroller.call_after_refresh(scroller.scroll_to, y=max(0, focus_row - 2),
                                        animate=False)

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        event.stop()
        if self.graph is None:
            return
        self._draw_graph(event.line)
        owner = self.query_one("#layout-owner", Static)
        nodes = [d for _, d in self.graph.nodes(data=True) if d["line"] == event.line]
        if not nodes or nodes[0]["layout"] == SCALAR:
            owner.update(Text("move the cursor onto a tensor value to see who owns which "
                              "element", style="dim"))
            return
        shape = nodes[0].get("shape") or self._shape_from_text(event.line)
        if shape is None:
            owner.update(Text(f"{nodes[0]['layout']}: no tensor shape on this line", style="dim"))
            return
        width = max(24, owner.content_region.width or 60)
        owner.update(ownership_text(nodes[0]["layout"], self.graph.graph["aliases"], shape, width))

    def _shape_from_text(self, line: int) -> tuple | None:
        """The result shape written on a ttgir line (for graphs read from text)."""
        line_text = self.trace.stages["ttgir"].splitlines()[line - 1]
        type_text = line_text.rsplit(" : ", 1)[-1]
        if "->" in type_text:
            type_text = type_text.rsplit("->", 1)[1]
        return tensor_shape(type_text)

    def action_export(self, kind: str) -> None:
        if self.graph is None or self.trace is None:
            return
        folder = Path(getattr(self.app, "export_dir", "."))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.trace.kernel_name}.layouts.{kind}"
        path.write_text(to_dot(self.graph) if kind == "dot" else to_graphml(self.graph))
        self.app.notify(f"wrote {path}", markup=False)
