"""The real Triton's artifacts read into our traces (issue 12 item 7, CPU part): the
MLIR_ENABLE_DUMP per-pass dump (the reference softmax dump), TRITON_KERNEL_DUMP stage folders,
TritonParse ndjson logs, `--from-triton` / `--triton` on the command line and in the app, and
`compare --against-triton`. The run under the real Triton is faked with a stand-in `triton`
package that writes the same artifacts."""
from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.triton_import.kernel_dump import read_kernel_dump
from compiler.triton_import.merge import load_triton_artifacts
from compiler.triton_import.mlir_dump import read_mlir_dump, read_mlir_dump_file
from compiler.triton_import.run import run_under_triton
from compiler.triton_import.tritonparse_log import read_tritonparse_log

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = Path(os.environ.get("TILE_REFERENCE_DIR", ROOT.parent / "shared" / "reference"
                                / "triton-3.6-h200"))
DUMP = REFERENCE / "softmax.per-pass-dump.txt"
need_dump = pytest.mark.skipif(not DUMP.is_file(), reason=f"{DUMP} absent")

MODULE = """module {{
  tt.func public @{name}(%arg0: !tt.ptr<f32>) {{
    %c = arith.constant {value} : i32
    tt.return
  }}
}}
"""


def _mini_dump(name="tiny", values=(1, 2, 2)) -> str:
    parts = []
    for (cls, arg), value in zip([("Inliner", "inline"), ("CSE", "cse"),
                                  ("ConvertTritonToTritonGPU", "convert-triton-to-tritongpu")],
                                 values):
        parts.append(f"// -----// IR Dump Before {cls} ({arg}) ('builtin.module' operation) "
                     "//----- //")
        parts.append(MODULE.format(name=name, value=value))
    return "\n".join(parts)


@need_dump
def test_reference_dump_becomes_pass_records():
    [trace] = read_mlir_dump_file(DUMP)
    assert trace.kernel_name == "softmax_kernel"
    names = [r.name for r in trace.passes]
    assert len(names) == 70 and names[0] == "inline" and names[-1] == "enable-line-info"
    assert "tritongpu-pipeline:LowerLoops" in names
    by_name = {}
    for record in trace.passes:
        by_name.setdefault(record.name, record)         # the first run of each name
    assert by_name["tritongpu-coalesce"].convert_layout_count == 7
    assert by_name["tritongpu-coalesce"].stage == "ttgir" and by_name["cse"].stage == "ttir"
    assert trace.passes[0].options["nested"][0].startswith("canonicalize @")
    assert abs(trace.passes[0].wall_ms - 27.0) < 0.01          # Inliner 0.0270 s
    assert {"ttir", "ttgir"} <= set(trace.stages)
    assert "ttg.convert_layout" not in trace.stages["ttgir"]
    # the LLVM-dialect snapshots are text, their parse error located in the dump file
    lowered = by_name["convert-triton-gpu-to-llvm"]
    assert lowered.stage == "llir" and lowered.parse_error and not lowered.op_counts
    where = lowered.parse_error.split(": ")[0]
    line = int(where.rsplit(":", 2)[1])
    assert "llvm.mlir.global" in DUMP.read_text().splitlines()[line - 1]
    assert trace.passes[-1].parse_error.startswith("the dump ends before")
    assert any("shown as text" in note for note in trace.notes)
    unparsed = [r for r in trace.passes if r.parse_error]
    assert all(r.stage == "llir" for r in unparsed)


def test_mini_dump_two_compiles_without_timing():
    text = _mini_dump("first") + "\n" + _mini_dump("second", (5, 5, 6))
    traces = read_mlir_dump(text, "mini.txt")
    assert [t.kernel_name for t in traces] == ["first", "second"]
    first = traces[0]
    assert [(r.stage, r.name, r.changed) for r in first.passes] == [
        ("ttir", "inline", True), ("ttir", "cse", False),
        ("ttgir", "convert-triton-to-tritongpu", False)]
    assert first.passes[0].op_counts["arith.constant"] == 1
    assert first.stages["ttir"] == first.stage_inputs["ttgir"]
    with pytest.raises(ValueError, match="no '// -----// IR Dump Before"):
        read_mlir_dump("just text\n", "x.txt")


def _fake_kernel_dump(folder: Path, name="add_kernel") -> Path:
    sub = folder / "HASH123"
    sub.mkdir(parents=True)
    (sub / f"{name}.ttir").write_text(MODULE.format(name=name, value=3))
    (sub / f"{name}.ttgir").write_text(MODULE.format(name=name, value=4))
    (sub / f"{name}.ptx").write_text("//\n.version 8.7\n.target sm_90a\n")
    (sub / f"{name}.json").write_text(json.dumps({"name": name, "num_warps": 8, "hash": "HASH123"}))
    (sub / f"__grp__{name}.json").write_text("{}")
    return sub


def test_kernel_dump_folder_and_merge_with_mlir_dump(tmp_path):
    _fake_kernel_dump(tmp_path / "kernels")
    [alone] = read_kernel_dump(tmp_path / "kernels")
    assert alone.kernel_name == "add_kernel"
    assert alone.specialization["options"]["num_warps"] == 8
    assert "value" not in alone.stages["ttir"] and "arith.constant 3" in alone.stages["ttir"]
    assert alone.sass_missing == "the dump has no cubin"
    (tmp_path / "mlir-dump.txt").write_text(_mini_dump("add_kernel"))
    [merged] = load_triton_artifacts(tmp_path)
    assert len(merged.passes) == 3 and "arith.constant 4" in merged.stages["ttgir"]
    with pytest.raises(ValueError, match="no Triton stage files"):
        read_kernel_dump(_empty(tmp_path))


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_tritonparse_log(tmp_path):
    events = [
        {"event_type": "compilation", "pid": 1, "stack": [],
         "payload": {"metadata": {"name": "add_kernel", "hash": "abc", "num_warps": 4},
                     "file_content": {"add_kernel.ttir": MODULE.format(name="add_kernel", value=1),
                                      "add_kernel.ttgir": MODULE.format(name="add_kernel", value=2)},
                     "file_path": {},
                     "python_source": {"file_path": "/x/add.py", "code": "def add_kernel():\n",
                                       "start_line": 7}}},
        {"event_type": "launch", "name": "add_kernel", "grid": [4, 1, 1],
         "compilation_metadata": {"hash": "abc", "num_warps": 4}},
        {"event_type": "launch", "compilation_metadata": {"hash": "other"}},
    ]
    text = "\n".join(json.dumps(e) for e in events) + "\n"
    plain = tmp_path / "log.ndjson"
    plain.write_text(text)
    packed = tmp_path / "log.ndjson.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        [trace] = load_triton_artifacts(path)
        assert trace.kernel_name == "add_kernel" and set(trace.stages) >= {"ttir", "ttgir", "source"}
        assert trace.source_line == 7 and [lch.grid for lch in trace.launches] == [(4, 1, 1)]
    bad = tmp_path / "bad.ndjson"
    bad.write_text(json.dumps(events[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"bad.ndjson:2:2: not a JSON event"):
        read_tritonparse_log(bad)


def _cli(*args, env_extra=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "explorer.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@need_dump
def test_cli_from_triton_json_and_errors(tmp_path):
    proc = _cli("--from-triton", str(DUMP), "--json")
    assert proc.returncode == 0, proc.stderr
    [kernel] = json.loads(proc.stdout)["kernels"]
    assert kernel["kernel"] == "softmax_kernel" and kernel["passes"] == 70
    assert any("shown as text" in note for note in kernel["notes"])
    missing = _cli("--from-triton", str(tmp_path / "nope.txt"), "--json")
    assert missing.returncode == 2 and "nope.txt: no such file" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_cli_triton_without_real_triton_says_why(tmp_path):
    if _real_triton_installed():
        pytest.skip("the real Triton is installed here")
    proc = _cli("--triton", "sample_kernels/vector_add.py", "--json")
    assert proc.returncode == 1
    assert "the real Triton is not installed" in proc.stderr and "Traceback" not in proc.stderr


def _real_triton_installed() -> bool:
    from compiler.triton_import.run import find_real_triton
    return find_real_triton()[0] is not None


FAKE_TRITON = '''
"""A stand-in for the real Triton: compile() writes what MLIR_ENABLE_DUMP and
TRITON_KERNEL_DUMP would."""
import os, sys, json
__version__ = "9.9-fake"

def compile(name):
    assert os.environ.get("MLIR_ENABLE_DUMP") == "1"
    # only the wrapper's own path: the caller's PYTHONPATH and TILE_ knobs were dropped
    assert os.environ["PYTHONPATH"] == os.path.dirname(os.path.dirname(__file__))
    assert not [k for k in os.environ if k.startswith("TILE_")]
    sys.stderr.write(open(os.environ["FAKE_DUMP"]).read())
    folder = os.path.join(os.environ["TRITON_DUMP_DIR"], "h0")
    os.makedirs(folder)
    for suffix in ("ttir", "ttgir"):
        open(os.path.join(folder, name + "." + suffix), "w").write(
            "module {\\n  tt.func public @%s() {\\n    tt.return\\n  }\\n}\\n" % name)
    open(os.path.join(folder, name + ".json"), "w").write(json.dumps({"num_warps": 4}))
'''


def test_run_under_a_stand_in_triton(tmp_path):
    package = tmp_path / "site" / "triton"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_TRITON)
    fake_dump = tmp_path / "dump.txt"
    fake_dump.write_text(_mini_dump("my_kernel"))
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path / 'site'} FAKE_DUMP={fake_dump} "
                      f"exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    script = tmp_path / "script.py"
    script.write_text("import triton\n\ndef my_kernel():\n    pass\n\ntriton.compile('my_kernel')\n")
    run = run_under_triton(script, folder=tmp_path / "out", python=str(python))
    assert run.error is None, run.error
    [trace] = run.traces
    assert trace.kernel_name == "my_kernel" and len(trace.passes) == 3
    assert trace.stages["source"].startswith("import triton") and trace.source_line == 1
    assert "Triton 9.9-fake" in run.messages[0]
    assert (tmp_path / "out" / "mlir-dump.txt").is_file()
    failing = tmp_path / "fails.py"
    failing.write_text("import triton\nraise SystemExit('boom')\n")
    bad = run_under_triton(failing, folder=tmp_path / "out2", python=str(python))
    assert "exited with status 1 under Triton" in bad.error and "boom" in bad.error


@need_dump
def test_compare_against_triton_dump():
    proc = _cli("compare", "sample_kernels/softmax.py", "--against-triton", "--triton-dump",
                str(DUMP), "--no-gpu")
    assert proc.returncode == 0, proc.stderr
    assert "softmax_kernel  (A = ours, B = Triton)" in proc.stdout
    rows = {line.split()[0] + " " + line.split()[1]: line.split()
            for line in proc.stdout.splitlines() if line.startswith(("ttgir", "ttir"))}
    assert rows["ttgir passes"][3] == "42"        # Triton's ttgir run: records 8-49
    assert "ttgir convert_layout" in rows


@need_dump
def test_app_opens_triton_trace_in_every_view():
    sys.path.insert(0, str(Path(__file__).parent))
    from explorer.app import ExplorerApp
    from explorer.views.pass_timeline import PassTimeline
    [trace] = read_mlir_dump_file(DUMP)

    async def body():
        app = ExplorerApp([trace])
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("enter")
            for key in "2345671":
                await pilot.press(key)
                await pilot.pause()
            await pilot.press("3")
            await pilot.pause()
            timeline = app.query_one(PassTimeline)
            assert timeline.trace is trace
    asyncio.run(body())
