"""The layout graph view: the ttgir on the left, the graph of values clustered by layout on the
right (conversions marked ⇄), and the map of the layout under the cursor with its linear
layout's bases table (thread ownership for distributed layouts, offsets and banks for shared).
`d` exports DOT, `m` GraphML (into the app's export folder)."""
from __future__ import annotations

from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.widgets import Static

from compiler.inspect import describe_layout
from compiler.trace import CompileTrace
from explorer.graph import SCALAR, layout_graph, render_clusters, to_dot, to_graphml
from explorer.lexers import lexer_for_stage
from explorer.ownership import (element_bits, owner_grid, shared_description, shared_grid,
                               tensor_shape)
from explorer.views.code_view import CodeView

GRAPH_WIDTH = 64          # the drawing scrolls sideways in narrow terminals
WARP_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]


def ownership_text(layout_name: str, aliases: dict, shape: tuple, width: int = 60,
                   element_bits: int | None = None) -> Text:
    """The layout's map as text, then its bases table: for a distributed layout each element
    shows its lane (hex), coloured by warp; for a shared layout its bank, coloured by bank."""
    try:
        description = describe_layout(layout_name, tuple(shape), aliases, element_bits)
    except ValueError as error:
        return Text(f"{layout_name}: {error}", style="dim")
    cols = max(1, width // 3)
    if description.shared:
        text = _shared_text(layout_name, aliases, description, cols)
    else:
        text = _owner_text(layout_name, description, cols)
    text.append("\n")
    text.append_text(bases_text(description))
    return text


def _owner_text(layout_name: str, description, cols: int) -> Text:
    grid = owner_grid(description, max_rows=8, max_cols=cols)
    shape = description.shape
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


def _shared_text(layout_name: str, aliases: dict, description, cols: int) -> Text:
    grid = shared_grid(description, max_rows=8, max_cols=cols)
    full = aliases.get(layout_name, layout_name)
    text = Text(f"{layout_name}: {shared_description(full)}\n", style="bold")
    text.append(f"bank per element ({description.element_bits}-bit elements), colour = bank\n")
    for row in grid:
        for _, bank in row:
            text.append(f"{bank:>2} ", Style(color="black", bgcolor=WARP_COLORS[bank % 10]))
        text.append("\n")
    first = grid[0][:6]
    text.append("element → (offset, bank): " +
                ", ".join(f"[{i}]→{cell}" for i, cell in enumerate(first)))
    return text


def bases_text(description) -> Text:
    """The linear layout's bases, one row per input dim and one column per bit (each entry the
    coordinates that bit moves to; (0, 0) is a broadcast bit), as the paper's figures show."""
    text = Text("bases (bit → coordinates, XORed):\n", style="bold")
    rows: dict = {}
    for row in description.bases:
        rows.setdefault(row.in_dim, []).append(row.values)
    names = ", ".join(description.out_dims)
    for in_dim, vectors in rows.items():
        cells = [("(" + ", ".join(map(str, v)) + ")", not any(v)) for v in vectors]
        text.append(f"{in_dim:>8}: ")
        for cell, broadcast in cells:
            text.append(cell + " ", style="dim" if broadcast else None)
        text.append("\n")
    text.append(f"coordinates are ({names})", style="dim")
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
            with ScrollableContainer(id="layout-owner-scroll"):
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
        type_text = nodes[0].get("type") or self._type_from_text(event.line)
        owner.update(ownership_text(nodes[0]["layout"], self.graph.graph["aliases"], shape, width,
                                    element_bits(type_text)))

    def _type_from_text(self, line: int) -> str:
        """The result type written on a ttgir line (for graphs read from text)."""
        line_text = self.trace.stages["ttgir"].splitlines()[line - 1]
        type_text = line_text.rsplit(" : ", 1)[-1]
        if "->" in type_text:
            type_text = type_text.rsplit("->", 1)[1]
        return type_text

    def _shape_from_text(self, line: int) -> tuple | None:
        """The result shape written on a ttgir line (for graphs read from text)."""
        return tensor_shape(self._type_from_text(line))

    def action_export(self, kind: str) -> None:
        if self.graph is None or self.trace is None:
            return
        folder = Path(getattr(self.app, "export_dir", "."))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.trace.kernel_name}.layouts.{kind}"
        path.write_text(to_dot(self.graph) if kind == "dot" else to_graphml(self.graph))
        self.app.notify(f"wrote {path}", markup=False)
