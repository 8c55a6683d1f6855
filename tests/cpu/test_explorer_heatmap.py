"""The region heat map (explorer/heatmap.py): exclusive times per region, lines of ttgir, PTX
and Python coloured by them, and the summary line; on a hand-made trace and on a real
instrumented trace from the interpreter."""
from __future__ import annotations

import numpy as np
from rich.text import Text

from compiler.trace import CompileTrace
from explorer.heatmap import HEAT_COLORS, heat_color, heat_summary, region_heat, render_heat


def _trace() -> CompileTrace:
    regions = [
        {"id": 0, "name": "kernel", "kind": "kernel", "ttgir_lines": [2, 3, 4, 5, 6],
         "python_lines": ["k.py:11", "k.py:12", "k.py:13"], "cycles": {"total": 1000}},
        {"id": 1, "name": "loop L12 body", "kind": "loop", "ttgir_lines": [4, 5],
         "python_lines": ["k.py:12"], "cycles": {"total": 900}},
    ]
    return CompileTrace("k", source_line=10, stages={"source": "\n".join(["l"] * 5)},
                        ttgir_to_ptx={"4": [[20, 22]], "2": [[10, 10]]}, regions=regions)


def test_lines_take_their_innermost_regions_exclusive_time():
    heat = region_heat(_trace())
    assert heat["ttgir"][4].region == "loop L12 body" and heat["ttgir"][4].value == 900
    assert heat["ttgir"][2].region == "kernel" and heat["ttgir"][2].value == 100
    assert abs(heat["ttgir"][5].share - 0.9) < 1e-9
    assert {line: h.region for line, h in heat["ptx"].items()} == {
        10: "kernel", 20: "loop L12 body", 21: "loop L12 body", 22: "loop L12 body"}
    assert heat["source"][3].region == "loop L12 body"           # k.py:12, source starts at 10
    assert heat["source"][2].region == "kernel"
    assert region_heat(CompileTrace("plain")) == {"ttgir": {}, "ptx": {}, "source": {}}


def test_render_colours_hot_lines_and_labels_them():
    heat = region_heat(_trace())["ttgir"]
    lines = render_heat([Text(f"op {n}") for n in range(1, 7)], heat)
    assert lines[0].plain == "     op 1"
    assert lines[3].plain == " 90% op 4  ◀ loop L12 body (900 cycles)"
    assert lines[1].plain == " 10% op 2  ◀ kernel (100 cycles)"
    assert any(f"on {HEAT_COLORS[-1]}" in str(span.style) for span in lines[3].spans)
    assert heat_color(0.0) == HEAT_COLORS[0] and heat_color(1.0) == HEAT_COLORS[-1]
    assert heat_summary(_trace()) == "regions: loop L12 body 90% · kernel 10%"


def test_heat_map_of_a_real_interpreted_trace(tmp_path):
    import compiler.profiler as proton
    from compiler.runtime import recording
    from tests.cpu.test_profile_regions import BODY, loop_kernel

    x = np.arange(300, dtype=np.float32)
    out = np.zeros(128, dtype=np.float32)
    with recording.record(full_compile=False) as recorder:
        session = proton.start(str(tmp_path / "heat"), mode="instrumentation")
        loop_kernel[(1,)](x, out, 4, BLOCK=128, interpret=True)
        proton.finalize(session)
    trace = recorder.trace_named("loop_kernel")
    names = {r["name"] for r in trace.regions}
    assert {"kernel", "load", BODY} <= names
    heat = region_heat(trace)
    assert heat["source"] and not heat["ttgir"]        # interpreter: no ttgir lines
    first = min(heat["source"])
    assert render_heat([Text("x")] * first, heat["source"])[-1].plain.endswith(" ns)")
