"""The layout graph of a ttgir: values as nodes labelled with their layouts, def-use edges.

Built with networkx from the structure the trace recorded for the final ttgir (`layout_graph`:
values, types, layouts and def-use edges as data, `compiler.trace.IRStructure`). Traces without
it (older files, Triton's reference dumps) are read from their ttgir text instead
(`build_layout_graph`), and the graph says so (`graph.graph["source"] == "text"`). Conversions (`ttg.convert_layout`) are marked, nodes are clustered by layout, and the
graph exports to DOT (one cluster per layout) and GraphML. `render_clusters` draws it as text.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass

import networkx as nx

_ALIAS = re.compile(r"^(#[\w.$-]+)\s*=\s*(#(?!loc)[\w.]+<.*>)\s*$")
_RESULTS = re.compile(r"^\s*((?:%[\w.$-]+(?::\d+)?)(?:\s*,\s*%[\w.$-]+)*)\s*=\s*(.*)$")
_OPNAME = re.compile(r'^"?([a-z_][\w]*\.[\w.]+)"?')
_VALUE = re.compile(r"%[\w.$-]+")
_LAYOUT_REF = re.compile(r"#(?!loc)[\w.$-]+")
_FUNC_ARG = re.compile(r"(%[\w.$-]+)\s*:\s*([^,{)]+?)(?=\s*(?:\{|loc\(|,|\)))")
_LOC_TAIL = re.compile(r"\s*loc\(.*$")
SCALAR = "scalar"
CONVERT_OP = "ttg.convert_layout"


@dataclass
class _Pending:
    """A multi-line op (with regions) whose result type comes on its closing line."""

    nodes: list
    indent: int


def layout_aliases(ttgir: str) -> dict:
    """`#alias -> full layout text` for the layout definitions at the top of a ttgir module."""
    aliases = {}
    for line in ttgir.splitlines():
        match = _ALIAS.match(line.strip())
        if match:
            aliases[match.group(1)] = match.group(2)
    return aliases


def _result_layouts(type_text: str, aliases: dict) -> str:
    """The layout alias of a result type text (the part after the last '->' when there is one)."""
    if "->" in type_text:
        type_text = type_text.rsplit("->", 1)[1]
    refs = [r for r in _LAYOUT_REF.findall(type_text) if r in aliases]
    return refs[-1] if refs else SCALAR


def _split_results(text: str) -> list:
    """Result names of an op, expanding `%x:2` into `%x#0, %x#1`."""
    names = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            base, count = part.split(":")
            names += [f"{base}#{i}" for i in range(int(count))]
        else:
            names.append(part)
    return names


def layout_graph(trace) -> nx.DiGraph:
    """The layout graph of a trace's final ttgir: from its recorded structure when there is
    one, else read from the text."""
    structure = trace.structure_of("ttgir")
    if structure is None:
        graph = build_layout_graph(trace.stages.get("ttgir", ""))
        graph.graph["source"] = "text"
        return graph
    return graph_from_structure(structure)


def graph_from_structure(structure) -> nx.DiGraph:
    """The def-use graph of an `IRStructure`: a node per value (block arguments included) and
    per result-less op that uses values and does not end its block (a store, not a yield)."""
    graph = nx.DiGraph(aliases=dict(structure.layouts), source="structure")
    for value in structure.values:
        graph.add_node(value.name, op=value.op, layout=value.layout or SCALAR, line=value.line,
                       conversion=value.op == CONVERT_OP, shape=value.shape,
                       type=value.type)
    for op in structure.ops:
        targets = [structure.values[i].name for i in op.results]
        if not targets:
            if op.ends_block or not op.operands:
                continue
            targets = [f"{op.name}@{op.line}"]
            graph.add_node(targets[0], op=op.name, layout=SCALAR, line=op.line,
                           conversion=False, shape=None)
        for used in op.operands:
            for target in targets:
                graph.add_edge(structure.values[used].name, target)
    return graph


def build_layout_graph(ttgir: str) -> nx.DiGraph:
    """Parse a ttgir text into a def-use graph; node attributes: op, layout, line, conversion."""
    aliases = layout_aliases(ttgir)
    graph = nx.DiGraph(aliases=aliases)
    pending: list[_Pending] = []
    for number, raw in enumerate(ttgir.splitlines(), start=1):
        if raw.strip().startswith("tt.func"):
            for name, type_text in _FUNC_ARG.findall(raw.split("(", 1)[1]):
                graph.add_node(name, op="arg", layout=_result_layouts(type_text, aliases),
                               line=number, conversion=False)
            continue
        line = _LOC_TAIL.sub("", raw)
        stripped = line.strip()
        if stripped.startswith("})") and pending and pending[-1].indent == _indent(raw):
            closing = pending.pop()
            type_text = stripped.split(" : ", 1)[1] if " : " in stripped else ""
            for node in closing.nodes:
                graph.nodes[node]["layout"] = _result_layouts(type_text, aliases)
            continue
        match = _RESULTS.match(line)
        if match:
            results, rest = _split_results(match.group(1)), match.group(2)
        elif _OPNAME.match(stripped) and not stripped.startswith(("tt.func", "module")):
            results, rest = [f"{_OPNAME.match(stripped).group(1)}@{number}"], stripped
        else:
            continue
        op_match = _OPNAME.match(rest.strip())
        op = op_match.group(1) if op_match else "?"
        if op in ("tt.return", "scf.yield", "tt.reduce.return", "tt.scan.return"):
            continue
        body, _, type_text = rest.partition(" : ")
        layout = _result_layouts(type_text, aliases) if match else SCALAR
        for name in results:
            graph.add_node(name, op=op, layout=layout, line=number,
                           conversion=(op == CONVERT_OP))
        for used in _VALUE.findall(body):
            if used in graph and used not in results:
                for name in results:
                    graph.add_edge(used, name)
        if stripped.endswith("({") or stripped.endswith("{") and op.startswith("scf."):
            pending.append(_Pending(results, _indent(raw)))
    return graph


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def clusters(graph: nx.DiGraph) -> dict:
    """Nodes grouped by layout alias, in the order layouts first appear."""
    groups: dict = {}
    for node, data in sorted(graph.nodes(data=True), key=lambda item: item[1]["line"]):
        groups.setdefault(data["layout"], []).append(node)
    return groups


def conversions(graph: nx.DiGraph) -> list:
    """(node, source layout, target layout) for every ttg.convert_layout in the graph."""
    out = []
    for node, data in graph.nodes(data=True):
        if data["conversion"]:
            sources = [graph.nodes[p]["layout"] for p in graph.predecessors(node)]
            out.append((node, sources[0] if sources else "?", data["layout"]))
    return out


def layout_edges(graph: nx.DiGraph) -> dict:
    """How many def-use edges go from one layout to another (only pairs that differ)."""
    counts: dict = {}
    for src, dst in graph.edges:
        a, b = graph.nodes[src]["layout"], graph.nodes[dst]["layout"]
        if a != b:
            counts[(a, b)] = counts.get((a, b), 0) + 1
    return counts


def _dot_id(name: str) -> str:
    return '"' + name.replace('"', '\\"') + '"'


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT text: one cluster per layout, conversions drawn red and bold."""
    aliases = graph.graph.get("aliases", {})
    out = io.StringIO()
    out.write("digraph layouts {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n")
    for index, (layout, nodes) in enumerate(clusters(graph).items()):
        label = aliases.get(layout, layout).replace('"', "'")
        out.write(f"  subgraph cluster_{index} {{\n    label={_dot_id(layout + ' = ' + label)};\n")
        for node in nodes:
            data = graph.nodes[node]
            style = ', color=red, style=bold' if data["conversion"] else ""
            out.write(f"    {_dot_id(node)} [label={_dot_id(node + chr(92) + 'n' + data['op'])}"
                      f"{style}];\n")
        out.write("  }\n")
    for src, dst in graph.edges:
        red = " [color=red]" if graph.nodes[dst]["conversion"] else ""
        out.write(f"  {_dot_id(src)} -> {_dot_id(dst)}{red};\n")
    out.write("}\n")
    return out.getvalue()


def to_graphml(graph: nx.DiGraph) -> str:
    """GraphML text of the graph (layout full text kept as a node attribute)."""
    aliases = graph.graph.get("aliases", {})
    plain = nx.DiGraph()
    for node, data in graph.nodes(data=True):
        plain.add_node(node, op=data["op"], layout=data["layout"], line=data["line"],
                       layout_text=aliases.get(data["layout"], ""),
                       conversion=bool(data["conversion"]))
    plain.add_edges_from(graph.edges)
    return "\n".join(nx.generate_graphml(plain))


def render_clusters(graph: nx.DiGraph, width: int = 78) -> list[str]:
    """A text drawing: a box per layout listing its values (op, inputs), then the conversions."""
    aliases = graph.graph.get("aliases", {})
    lines: list[str] = []
    for layout, nodes in clusters(graph).items():
        title = f" {layout} " + (f"= {aliases[layout]} " if layout in aliases else "")
        lines.append("┌" + title[: width - 2].ljust(width - 2, "─") + "┐")
        for node in nodes:
            data = graph.nodes[node]
            inputs = ", ".join(graph.predecessors(node))
            mark = "⇄ " if data["conversion"] else "  "
            text = f"{mark}{node} = {data['op']}" + (f" ({inputs})" if inputs else "")
            lines.append("│" + text[: width - 2].ljust(width - 2) + "│")
        lines.append("└" + "─" * (width - 2) + "┘")
    flows = layout_edges(graph)
    if flows:
        lines.append("layout flow (def-use edges between layouts):")
        lines += [f"  {a} ──{n}──▶ {b}" for (a, b), n in sorted(flows.items())]
    return lines
