"""Compile traces from the pass manager: dump files, trace.json, overrides."""
import json
import subprocess
import sys
from pathlib import Path

from compiler.dump import (DumpOptions, dump_files, dump_trace, dump_traces, find_override,
                           load_override)
from compiler.ir import parse_module
from compiler.passes.instrumentation import TraceInstrumentation
from compiler.passes.manager import PassManager
from compiler.trace import CompileTrace, load_traces

ROOT = Path(__file__).resolve().parents[2]


def traced(reference_dir, name: str) -> CompileTrace:
    text = (reference_dir / f"{name}.ttir").read_text()
    trace = CompileTrace(name + "_kernel", source_file="kernels.py", source_line=5)
    trace.stages["source"] = (reference_dir / f"{name}.source").read_text()
    module = PassManager("ttir", None, [TraceInstrumentation(trace)]).run(parse_module(text))
    trace.stages["ttir"] = str(module)
    trace.stages["ptx"] = "// ptx text\n"
    return trace


def test_records_chain_and_snapshots_parse(reference_dir):
    for name in ("add", "softmax", "layernorm", "matmul"):
        trace = traced(reference_dir, name)
        records = trace.passes_of("ttir")
        assert len(records) == 9
        before = trace.stage_inputs["ttir"]
        for record in records:
            assert trace.ir_before(record) == before
            parse_module(record.ir_after)
            before = record.ir_after
        assert records[-1].ir_after == trace.stages["ttir"]


def test_dump_names_and_files(reference_dir, tmp_path):
    trace = traced(reference_dir, "matmul")
    names = [n for n, _ in dump_files(trace)]
    assert names[:3] == ["00-source.py", "01-ttir-input.mlir", "02-ttir-inline.mlir"]
    assert "07-ttir-cse.mlir" in names
    assert names[-2:] == ["11-ttir.mlir", "12-ptx.ptx"]
    dump_trace(trace, tmp_path)
    assert (tmp_path / "07-ttir-cse.mlir").read_text() == trace.passes[5].ir_after
    loaded = CompileTrace.load(tmp_path / "trace.json")
    assert loaded == trace


def test_dump_several_traces(reference_dir, tmp_path):
    traces = [traced(reference_dir, "add"), traced(reference_dir, "add")]
    dump_traces(traces, tmp_path)
    assert (tmp_path / "add_kernel" / "00-source.py").is_file()
    assert (tmp_path / "add_kernel-1" / "trace.json").exists() is False
    assert len(load_traces(tmp_path / "trace.json")) == 2


def test_trace_json_loads_in_a_fresh_process_without_the_compiler(reference_dir, tmp_path):
    dump_trace(traced(reference_dir, "softmax"), tmp_path)
    script = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("trace_alone", {str(ROOT / "compiler/trace.py")!r})
mod = importlib.util.module_from_spec(spec)
sys.modules["trace_alone"] = mod
spec.loader.exec_module(mod)
t = mod.CompileTrace.load({str(tmp_path / "trace.json")!r})
assert not any(m.startswith("compiler") for m in sys.modules), sorted(sys.modules)
print(len(t.passes), t.passes[0].name, t.schema_version)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["9", "inline", "1"]


def test_trace_json_fields_are_plain(reference_dir):
    data = json.loads(traced(reference_dir, "add").to_json())
    record = data["passes"][0]
    assert set(record) >= {"stage", "name", "options", "index", "wall_ms", "changed", "ir_after",
                           "op_counts", "convert_layout_count", "patterns", "doc", "error"}


def test_overrides(tmp_path):
    assert load_override("k", "ttir", None) is None
    assert load_override("k", "ttir", tmp_path) is None
    (tmp_path / "k.ttgir").write_text("A")
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "ttir.mlir").write_text("B")
    (tmp_path / "other.ptx").write_text("C")
    assert load_override("k", "ttgir", tmp_path) == "A"
    assert load_override("k", "ttir", tmp_path) == "B"
    assert find_override("k", "ptx", tmp_path) is None
    assert load_override("other", "ptx", tmp_path) == "C"


def test_dump_options_from_env(tmp_path):
    opts = DumpOptions.from_env({"TILE_KERNEL_DUMP": "1", "TILE_DUMP_DIR": str(tmp_path),
                                 "TILE_OVERRIDE_DIR": "/x"})
    assert opts.dump and opts.dump_dir == tmp_path and opts.override_dir == Path("/x")
    assert not DumpOptions.from_env({}).dump


def test_reader_skips_fields_a_newer_writer_added(reference_dir):
    data = json.loads(traced(reference_dir, "add").to_json())
    data["future_field"] = 1
    data["passes"][0]["future_metric"] = 2.5
    loaded = CompileTrace.from_dict(data)
    assert loaded.passes[0].name == "inline"
