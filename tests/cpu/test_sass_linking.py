"""SASS everywhere (issue 12 item 2): the CUDA tools are found inside the nvidia wheels, the
ttgir -> SASS line map comes from nvdisasm's line info, the SASS tab says why when there is no
SASS, and the linked view links SASS lines to ttgir ops and their PTX."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.codegen import toolchain
from compiler.codegen.linemap import sass_line_map

ROOT = Path(__file__).resolve().parents[2]

SASS = """\
add_kernel:
.text.add_kernel:
\t//## File "add_kernel.ttgir", line 3
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "add_kernel.ttgir", line 7
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   LDC.64 R20, c[0x0][0x218] ;
\t//## File "libdevice.10.bc", line 99
        /*0030*/                   MUFU.EX2 R3, R3 ;
\t//## File "add_kernel.ttgir", line 3
        /*0040*/                   EXIT ;
"""


def test_sass_line_map_groups_runs_and_skips_other_files():
    assert sass_line_map(SASS) == {3: [[4, 4], [11, 11]], 7: [[6, 7]]}
    assert sass_line_map("        /*0000*/  EXIT ;\n") == {}


def test_tools_are_found_inside_the_wheels(tmp_path, monkeypatch):
    bindir = tmp_path / "nvidia" / "cu13" / "bin"
    bindir.mkdir(parents=True)
    for name in ("nvdisasm", "ptxas"):
        tool = bindir / name
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("TILE_PTXAS_PATH", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    toolchain.find_tool.cache_clear()
    try:
        assert toolchain.find_tool("nvdisasm") == str(bindir / "nvdisasm")
        assert toolchain.find_tool("ptxas") == str(bindir / "ptxas")
    finally:
        toolchain.find_tool.cache_clear()


def _sass_trace():
    sys.path.insert(0, str(Path(__file__).parent))
    from explorer_fixture import reference_trace
    trace = reference_trace("add")
    ttgir_line = next(int(k) for k in trace.ttgir_to_ptx)
    sass = "\n".join([f'\t//## File "add_kernel.ttgir", line {ttgir_line}',
                      "        /*0000*/                   S2R R0, SR_TID.X ;",
                      "        /*0010*/                   EXIT ;"]) + "\n"
    return trace, ttgir_line, replace(trace, stages={**trace.stages, "sass": sass},
                                      ttgir_to_sass={str(ttgir_line): [[2, 3]]})


def _have_reference():
    sys.path.insert(0, str(Path(__file__).parent))
    from explorer_fixture import have_reference
    return have_reference()


@pytest.mark.skipif(not _have_reference(), reason="../shared/reference absent")
def test_sass_tab_says_why_and_linked_view_follows_sass():
    from explorer.app import ExplorerApp
    from explorer.views.code_view import CodeView
    from explorer.views.stage_view import StageView
    plain, ttgir_line, with_sass = _sass_trace()
    without = replace(plain, stages={k: v for k, v in plain.stages.items() if k != "sass"},
                      sass_missing="no SASS: neither nvdisasm nor cuobjdump was found")

    async def body():
        app = ExplorerApp([without, with_sass])
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("enter")
            await pilot.pause()
            view = app.query_one(StageView)
            view.show_stage("sass")
            await pilot.pause()
            code = app.query_one("#stage-code", CodeView)
            assert "neither nvdisasm nor cuobjdump" in code.raw_lines[0]
            await pilot.press("5", "s")
            await pilot.pause()
            assert "no SASS for this kernel" in str(app.query_one("#linked-status").render())
        app = ExplorerApp([with_sass])
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("enter", "5")
            await pilot.pause()
            await pilot.press("s")
            await pilot.pause()
            right = app.query_one("#linked-ptx", CodeView)
            assert "EXIT" in right.raw_lines[2]
            ttgir = app.query_one("#linked-ttgir", CodeView)
            ttgir.cursor = ttgir_line
            await pilot.pause()
            assert right.linked == {2, 3}
            right.focus()
            right.cursor = 3
            await pilot.pause()
            status = str(app.query_one("#linked-status").render())
            assert f"SASS line 3 ← ttgir line(s) {ttgir_line} → PTX" in status
    asyncio.run(body())


@pytest.mark.skipif(toolchain.find_tool("nvdisasm") is None or toolchain.find_tool("ptxas") is None,
                    reason="nvdisasm or ptxas absent (pip install nvidia-cuda-nvdisasm nvidia-cuda-nvcc)")
def test_compiled_kernel_has_sass_linked_to_ttgir(tmp_path):
    env = {**os.environ, "TILE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.run([sys.executable, "-m", "explorer.cli", "sample_kernels/vector_add.py",
                           "--no-gpu", "--dump", str(tmp_path / "dump")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads((tmp_path / "dump" / "trace.json").read_text())["traces"][0]
    assert trace["stages"]["sass"] and not trace["sass_missing"]
    lines = trace["stages"]["sass"].splitlines()
    loads = [n for n, text in enumerate(lines, 1) if "LDG" in text]
    owners = {k for k, ranges in trace["ttgir_to_sass"].items()
              for a, b in ranges if any(a <= n <= b for n in loads)}
    ttgir = trace["stages"]["ttgir"].splitlines()
    assert owners and all("tt.load" in ttgir[int(k) - 1] for k in owners)
