"""`tile-explore FILE` end to end on this machine's compiler (through the interpreter, no GPU):
running a Triton-style file, compiling unlaunched kernels through warmup, reporting errors
with file:line, `--json`, `--dump`, `--passes`, `compare`, and the app on the real traces."""
from __future__ import annotations

import asyncio
import json
import sys

import pytest

from compiler.trace import load_traces
from explorer import cli

pytest.importorskip("compiler.runtime.recording")
pytest.importorskip("compiler.triton_alias")

KERNELS = '''import numpy as np
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2.0, mask=offs < n)      # the mask again: cse has work


@triton.jit
def warm_kernel(x_ptr, n, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


@triton.jit
def cold_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


if __name__ == "__main__":
    import sys
    n = int(sys.argv[1])
    x = np.arange(n, dtype=np.float32)
    out = np.empty_like(x)
    scale_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    assert (out == 2 * x).all()
    print("scaled")
'''


@pytest.fixture
def script(tmp_path, monkeypatch):
    """A Triton-style kernel file; the environment changes the CLI makes are undone after."""
    for var in ("TILE_INTERPRET", "TILE_PIPELINE_TTIR", "TILE_PIPELINE_TTGIR"):
        monkeypatch.setenv(var, "")      # records the original value (or its absence) ...
        monkeypatch.delenv(var)          # ... so whatever the CLI sets is undone afterwards
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def _json(capsys, argv) -> tuple[int, dict]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


def test_json_runs_the_file_and_warms_up_unlaunched_kernels(script, capsys):
    code, data = _json(capsys, [str(script), "--json", "--no-gpu", "--", "100"])
    assert code == 0 and data["error"] is None
    names = [k["kernel"] for k in data["kernels"]]
    assert names == ["scale_kernel", "warm_kernel"]
    scale = data["kernels"][0]
    assert scale["launches"] == [{"grid": [2], "backend": "interpreter",
                                  "time_ms": scale["launches"][0]["time_ms"]}]
    assert {"source", "ttir", "ttgir", "llir", "ptx"} <= set(scale["stages"])
    assert scale["metrics"]["ptx instructions"] > 10
    assert data["kernels"][1]["launches"] == []
    assert any(m.startswith("warm_kernel: not launched by the script; compiled")
               for m in data["messages"])
    assert any(m.startswith("cold_kernel") and "no default" in m for m in data["messages"])


def test_error_in_the_users_file_is_shown_with_file_and_line(script, capsys):
    script.write_text(KERNELS.replace('    print("scaled")', '    print(undefined_name)'))
    code, data = _json(capsys, [str(script), "--json", "--no-gpu", "--", "64"])
    line = KERNELS.splitlines().index('    print("scaled")') + 1
    assert code == 1
    assert data["error"].startswith(f"{script}:{line}:11: NameError")     # file:line:col
    assert data["error"].endswith("print(undefined_name)\n              ^")  # and a caret
    assert "print(undefined_name)" in data["error"] and "Traceback" not in data["error"]
    assert [k["kernel"] for k in data["kernels"]] == ["scale_kernel", "warm_kernel"]


def test_compile_error_in_a_kernel_keeps_the_compilers_caret(script, capsys):
    script.write_text(KERNELS.replace("x * 2.0", "tl.frobnicate(x)"))
    code, data = _json(capsys, [str(script), "--json", "--no-gpu", "--", "64"])
    line = next(i for i, text in enumerate(script.read_text().splitlines(), 1)
                if "frobnicate" in text)
    assert code == 1
    first, source, caret = data["error"].splitlines()[:3]
    assert first.startswith(f"{script}:{line}:") and "frobnicate" in first
    assert "tl.frobnicate(x)" in source and caret.strip() == "^"
    assert any(m.startswith("scale_kernel: the script stopped with an error first")
               for m in data["messages"])


def test_syntax_error_is_reported_with_line_and_column(script, capsys):
    script.write_text("x = (1,\n")
    code, data = _json(capsys, [str(script), "--json"])
    assert code == 1 and data["error"].startswith(f"{script}:1:")


def test_dump_writes_stage_files_and_all_traces(script, tmp_path, capsys):
    out = tmp_path / "dump"
    assert cli.main([str(script), "--dump", str(out), "--no-gpu", "--kernel", "scale_kernel",
                     "--", "64"]) == 0
    traces = load_traces(out / "trace.json")
    assert [t.kernel_name for t in traces] == ["scale_kernel"]
    files = [p.name for p in (out / "scale_kernel").iterdir()]
    assert any(name.endswith("ttgir.mlir") for name in files)
    assert "wrote 1 kernel trace" in capsys.readouterr().out


def test_passes_option_changes_the_pipeline(script, capsys):
    code, data = _json(capsys, [str(script), "--json", "--no-gpu", "--passes",
                                "ttir=inline,cse", "--", "64"])
    assert code == 0
    assert data["kernels"][0]["pipelines"]["ttir"] == ["inline", "cse"]
    assert cli.main([str(script), "--json", "--passes", "bogus"]) == 2


def test_compare_prints_the_metrics_table(script, capsys):
    assert cli.main(["compare", str(script), "--no-gpu", "--stage", "ttir",
                     "--pipeline", "inline,canonicalize,cse", "--pipeline", "inline",
                     "--", "64"]) == 0
    out = capsys.readouterr().out
    assert "scale_kernel  (A = 'inline,canonicalize,cse', B = 'inline')" in out
    row = next(line for line in out.splitlines() if line.startswith("ttir ops"))
    a, b = (int(v) for v in row.split()[2:4])
    assert b > a                               # without canonicalize/cse more ops remain
    assert cli.main(["compare", str(script), "--pipeline", "cse"]) == 2


def test_compare_says_why_the_runtime_row_is_empty(script, capsys, monkeypatch):
    monkeypatch.setattr(cli, "gpu_present", lambda: False)     # as on a machine without one
    assert cli.main(["compare", str(script), "--no-gpu", "--stage", "ttir",
                     "--pipeline", "inline,cse", "--pipeline", "inline", "--", "64"]) == 0
    out = capsys.readouterr().out
    blocks = {block.split("  (", 1)[0]: block for block in out.strip().split("\n\n")}
    launched, warmed = blocks["scale_kernel"], blocks["warm_kernel"]
    runtime = next(line for line in launched.splitlines() if line.startswith("runtime ms"))
    assert runtime.split()[-2:] == ["—", "—"]
    assert launched.splitlines()[-1] == "runtime —: not launched: no GPU"
    assert warmed.splitlines()[-1] == "runtime —: not launched by the script"


def test_app_on_real_traces_links_ttgir_to_ptx_and_recompiles(script):
    from explorer.app import ExplorerApp
    from compiler.inspect import recompile, run_file
    from explorer.views.code_view import CodeView
    from explorer.views.pipeline_editor import PipelineEditor

    result = run_file(script, ["64"], interpret=True)
    trace = result.traces[0]
    assert trace.ttgir_to_ptx, "the backend records which PTX lines each ttgir op became"

    async def drive():
        app = ExplorerApp(result.traces, result.messages,
                          recompiler=lambda t, p: recompile(t, p, result.kernels[t.kernel_name]).trace)
        async with app.run_test(size=(120, 40)) as pilot:
            for view in "234567":
                await pilot.press(view)
            await pilot.press("5")
            line = int(next(iter(trace.ttgir_to_ptx)))
            app.query_one("#linked-ttgir", CodeView).cursor = line
            await pilot.pause()
            first, last = trace.ttgir_to_ptx[str(line)][0]
            assert {first, last} <= app.query_one("#linked-ptx", CodeView).linked
            python = app.query_one("#linked-python", CodeView)
            assert len(python.linked) == 1
            python_text = python.raw_lines[min(python.linked) - 1]
            await pilot.press("6")                          # the ttgir pipeline
            editor = app.query_one(PipelineEditor)
            names = [e.name for e in editor.entries["ttgir"]]
            for _ in range(names.index("remove-layout-conversions")):
                await pilot.press("down")
            await pilot.press("space", "r")                 # without it
            await app.workers.wait_for_complete()
            await pilot.pause()
            table = app.query_one("#compare-table")
            rows = {table.get_row_at(i)[0]: table.get_row_at(i) for i in range(table.row_count)}
            return editor, rows, python_text, names

    editor, rows, python_text, names = asyncio.run(drive())
    assert "tl." in python_text                        # a line of the kernel's own source
    assert editor.result is not None
    ran = [p.name for p in editor.result.passes_of("ttgir")]
    # the default pipeline runs it twice (again after accelerate-matmul); one was switched off
    assert ran.count("remove-layout-conversions") == names.count("remove-layout-conversions") - 1
    assert all(row[2] != "—" for key, row in rows.items() if not key.startswith("runtime"))
    assert rows["registers"][2] == str(editor.result.cubin_info["registers"])


def test_json_opens_the_attention_sample(capsys):
    """sample_kernels/attention.py runs under the recorder (interpreter) and every variant it
    launches compiles through every stage, with tensor-core dots and no compile failure."""
    from pathlib import Path
    sample = Path(__file__).resolve().parents[2] / "sample_kernels" / "attention.py"
    code, data = _json(capsys, [str(sample), "--json", "--no-gpu"])
    assert code == 0 and data["error"] is None
    kernels = data["kernels"]
    assert {k["kernel"] for k in kernels} == {"attention_kernel"} and len(kernels) == 4
    for kernel in kernels:
        assert {"ttir", "ttgir", "llir", "ptx"} <= set(kernel["stages"])
        assert not kernel["failed_passes"]
