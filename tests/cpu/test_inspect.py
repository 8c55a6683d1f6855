"""The compiler's door for tools (`compiler.inspect`) and the structured trace it hands out."""
from __future__ import annotations

import textwrap

import pytest

import compiler.language as tl
from compiler.inspect import (NotDrawable, check_pipeline, describe_layout, list_passes,
                              recompile, run_file)
from compiler.passes.pipeline_text import PipelineError
from compiler.trace import CompileTrace, IRStructure, decode_constexpr, encode_constexpr
from explorer.graph import layout_graph

KERNEL = textwrap.dedent('''
    import numpy as np
    import triton
    import triton.language as tl


    @triton.jit
    def fill_kernel(x_ptr, n, BLOCK: tl.constexpr, DT: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.full([BLOCK], 3.0, DT), mask=offs < n)


    x = np.zeros(32, dtype=np.float32)
    fill_kernel[(1,)](x, 32, BLOCK=32, DT=tl.float32, num_warps=2)
    assert (x == 3).all()
''')


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("door") / "fill.py"
    path.write_text(KERNEL)
    result = run_file(path, interpret=True)
    assert result.error is None, result.error
    return result


@pytest.mark.parametrize("value", [None, True, 3, 2.5, "x", (1, (2, "a")), [1, 2], tl.float16,
                                   tl.pointer_type(tl.float32)])
def test_constexprs_round_trip_through_json(value):
    import json
    assert decode_constexpr(json.loads(json.dumps(encode_constexpr(value)))) == value


def test_a_constexpr_that_cannot_be_rebuilt_says_so():
    data = encode_constexpr(object())
    with pytest.raises(ValueError, match="recorded as text only"):
        decode_constexpr(data)


def test_the_trace_records_full_options_and_json_constexprs(run):
    spec = run.traces[0].specialization
    assert spec["constexprs_json"] == {"BLOCK": 32, "DT": {"dtype": "fp32"}}
    assert spec["options"]["num_warps"] == 2
    assert {"num_stages", "arch", "debug", "enable_fp_fusion", "pipelines"} <= set(spec["options"])


def test_recompile_uses_the_recorded_options_and_constexprs(run):
    trace = run.traces[0]
    again = recompile(trace, {"ttgir": "convert-triton-to-tritongpu,coalesce"},
                      run.kernels["fill_kernel"])
    assert again.trace.specialization["options"]["num_warps"] == 2
    assert again.trace.specialization["constexprs_json"] == trace.specialization["constexprs_json"]
    assert [p.name for p in again.trace.passes_of("ttgir")] == ["convert-triton-to-tritongpu",
                                                               "coalesce"]
    assert "ttg.num-warps\" = 2" in again.trace.stages["ttgir"]


def test_an_old_trace_recompiles_from_its_ttir_and_draws_from_text(run):
    data = run.traces[0].to_dict()
    del data["specialization"]["constexprs_json"]
    for record in data["passes"]:
        del record["structure"]
    old = CompileTrace.from_dict(data)
    assert old.structure_of("ttgir") is None
    assert layout_graph(old).graph["source"] == "text"
    again = recompile(old, {"ttgir": "convert-triton-to-tritongpu"}, run.kernels["fill_kernel"])
    assert again.trace.overrides.get("ttir")           # compiled from the recorded ttir


def test_snapshots_carry_values_layouts_and_def_use_edges(run):
    trace = run.traces[0]
    structure = trace.structure_of("ttgir")
    assert isinstance(structure, IRStructure)
    offs = next(v for v in structure.values if v.op == "tt.make_range")
    assert offs.shape == (32,) and offs.layout in structure.layouts
    assert structure.layouts[offs.layout].startswith("#ttg.blocked<")
    store = next(op for op in structure.ops if op.name == "tt.store")
    assert offs.index in {u for op in structure.ops for u in op.operands}
    assert store.operands and not store.results
    graph = layout_graph(trace)
    assert graph.graph["source"] == "structure"
    assert any(target.startswith("tt.store@") for _, target in graph.edges)
    finals = {}                             # each stage's last record carries the structure
    for record in trace.passes:
        finals[record.stage] = record
    for stage, record in finals.items():    # its names and lines are the text's own
        if stage == "llir":                 # LLVM IR text: no MLIR structure
            continue
        data = IRStructure.from_data(record.structure)
        assert data is not None and data.values, stage
        lines = record.ir_after.splitlines()
        for value in data.values:
            assert value.name in lines[value.line - 1]


def test_passes_are_listed_with_docs_and_options():
    passes = {p.name: p for p in list_passes()}
    assert "remove-layout-conversions" in passes and passes["licm"].doc
    assert [o.name for o in passes["licm"].options] == ["hoist-loads"]
    assert passes["licm"].options[0].type == "bool"


def test_check_pipeline_locates_errors():
    assert check_pipeline("cse, licm{hoist-loads=false}") == ["cse", "licm"]
    with pytest.raises(PipelineError) as err:
        check_pipeline("cse,licm{hoist-loads=maybe}")
    assert err.value.column == 9 and "takes true or false" in str(err.value)


def test_describe_layout_uses_the_compilers_model():
    blocked = ("#ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [2], "
               "order = [0]}>")
    description = describe_layout(blocked, (256,))
    assert description.owners[(0,)] == [(0, 0, 0)] and description.owners[(3,)] == [(0, 1, 1)]
    assert "elements/thread" in description.summary
    shared = describe_layout("#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, "
                             "order = [0]}>", (64,))
    assert shared.shared and not shared.owners and "no thread owns" in shared.summary
    assert shared.offsets[(5,)] == 5 and shared.banks[(5,)] == 2      # 16-bit elements
    with pytest.raises(NotDrawable, match="no linear layout"):
        describe_layout("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, "
                        "warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>", (8, 8, 8))


MMA_V3 = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
          "instrShape = [16, 64, 16]}>")


def test_describe_layout_reads_the_linear_layout_of_mma_v3_and_dot_operands():
    from compiler.analysis.layout_to_linear import to_linear_layout
    from compiler.ir.parser import Parser
    mma = describe_layout(MMA_V3, (64, 64))
    # the wgmma accumulator: lane 4g + t holds (g, 2t), (g, 2t + 1), then g + 8; warps on M
    assert mma.owners[(0, 0)] == [(0, 0, 0)] and mma.owners[(0, 1)] == [(0, 0, 1)]
    assert mma.owners[(8, 0)] == [(0, 0, 2)] and mma.owners[(16, 0)] == [(1, 0, 0)]
    assert mma.bases_table()[0] == ["in", "bit", "dim0", "dim1"]
    linear = to_linear_layout(Parser(MMA_V3).encoding_ref(), (64, 64))
    assert [list(r.values) for r in mma.bases if r.in_dim == "lane"] == \
        [list(v) for v in linear.bases("lane")]
    dot = describe_layout(f"#ttg.dot_op<{{opIdx = 0, parent = {MMA_V3}, kWidth = 2}}>",
                          (64, 32))
    assert len(dot.owners) == 64 * 32 and "elements/thread" in dot.summary


def test_describe_layout_gives_offsets_and_banks_of_nvmma_shared():
    text = ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, "
            "elementBitWidth = 16}>")
    shared = describe_layout(text, (64, 64))
    assert shared.shared and shared.element_bits == 16
    # 128-byte swizzle: row r's 16-byte chunks are XORed with r % 8, so column 0 of rows 0-7
    # lies in banks 0, 4, ..., 28: no conflict down a column
    assert [shared.banks[(r, 0)] for r in range(8)] == [0, 4, 8, 12, 16, 20, 24, 28]
    assert sorted(shared.offsets.values()) == list(range(64 * 64))
    assert shared.bases_table()[1] == ["offset", "0", "0", "1"]


def test_recompile_isolated_runs_in_a_worker_and_matches(run):
    trace = run.traces[0]
    pipelines = {"ttgir": "convert-triton-to-tritongpu,coalesce"}
    again = recompile(trace, pipelines, run.kernels["fill_kernel"], isolated=True)
    assert [p.name for p in again.trace.passes_of("ttgir")] == ["convert-triton-to-tritongpu",
                                                               "coalesce"]
    assert again.trace.stages["ttgir"] == recompile(trace, pipelines,
                                                    run.kernels["fill_kernel"]).trace.stages["ttgir"]


DECLARED = textwrap.dedent('''
    import numpy as np
    import triton
    import triton.language as tl


    def _meta(grid, kernel, args):
        return {"name": "fill", "bytes": 4 * args["n"], "flops32": args["n"]}


    @triton.jit(launch_metadata=_meta)
    def fill_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.full([BLOCK], 3.0, tl.float32), mask=offs < n)


    x = np.zeros((4, 8), dtype=np.float32)
    fill_kernel[(1,)](x, 32, BLOCK=32)
''')


def test_launches_record_argument_shapes_and_declared_bytes_and_flops(tmp_path):
    path = tmp_path / "declared.py"
    path.write_text(DECLARED)
    result = run_file(path, interpret=True)
    assert result.error is None, result.error
    launch = result.traces[0].launches[0]
    assert launch.shapes == ((4, 8),)
    assert launch.declared == {"bytes": 128, "flops32": 32}
    again = CompileTrace.from_dict(result.traces[0].to_dict()).launches[0]
    assert again.shapes == ((4, 8),) and again.declared == launch.declared


def test_the_editors_recompile_is_isolated_and_timed_when_a_gpu_is_there(run, monkeypatch):
    import compiler.inspect as door
    from types import SimpleNamespace
    trace = run.traces[0]
    pipelines = {"ttgir": "convert-triton-to-tritongpu"}
    b = door.recompile_for_editor(trace, pipelines, run.kernels["fill_kernel"], None)
    assert b.launches == [] and b.passes_of("ttgir")[0].name == "convert-triton-to-tritongpu"
    timed = []
    monkeypatch.setattr(door, "gpu_available", lambda: True)
    monkeypatch.setattr(door, "time_on_gpu", lambda kernel, args: timed.append(kernel) or 0.25)
    b = door.recompile_for_editor(trace, pipelines, run.kernels["fill_kernel"],
                                  SimpleNamespace(grid=(1, 1, 1)))
    assert [(l.backend, l.time_ms, l.grid) for l in b.launches] == [("gpu", 0.25, (1, 1, 1))]
    assert timed and timed[0].trace is not trace
