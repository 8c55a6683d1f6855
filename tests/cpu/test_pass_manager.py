"""The pass manager: pipeline strings, errors, env pipelines, instrumentation, failures."""
import io
import textwrap

import pytest

from compiler.ir import parse_module
from compiler.ir.core import op_count_by_name
from compiler.passes.base import Pass
from compiler.passes.instrumentation import TraceInstrumentation
from compiler.passes.manager import (DEFAULT_PIPELINES, PassFailure, PassInstrumentation,
                                     PassManager, PipelineError, parse_pipeline,
                                     pipeline_from_env, pipeline_text)
from compiler.trace import CompileTrace
from tests.cpu.pass_helpers import kernel

IR = kernel("""
    %c0 = arith.constant 0 : i32
    %x = arith.addi %n, %c0 : i32
    %y = arith.addi %n, %c0 : i32
    %s = arith.addi %x, %y : i32
    %t = tt.splat %s : i32 -> tensor<2xi32>
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
    %q = tt.addptr %ps, %t : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
    %v = tt.load %q : tensor<2x!tt.ptr<f32>>
    tt.store %q, %v : tensor<2x!tt.ptr<f32>>
""")


def test_pipeline_string_with_options_and_repeats():
    passes = parse_pipeline("inline, canonicalize,cse,licm{hoist-loads=false},cse,"
                            "loop-unroll{max-trip-count=8}")
    assert [p.name for p in passes] == ["inline", "canonicalize", "cse", "licm", "cse",
                                        "loop-unroll"]
    assert passes[3].options == {"hoist-loads": False}
    assert passes[5].options == {"max-trip-count": 8}
    assert pipeline_text(passes) == ("inline,canonicalize,cse,licm{hoist-loads=false},cse,"
                                     "loop-unroll{max-trip-count=8}")


def test_pipeline_from_list_of_names_and_instances():
    from compiler.passes.cse import CSE
    passes = parse_pipeline(["canonicalize", CSE(), "dce,cse"])
    assert [p.name for p in passes] == ["canonicalize", "cse", "dce", "cse"]


def test_unknown_pass_lists_valid_names():
    with pytest.raises(PipelineError) as err:
        parse_pipeline("canonicalize,cse,frobnicate")
    message = str(err.value)
    assert "unknown pass 'frobnicate'" in message
    for name in ("canonicalize", "cse", "dce", "inline", "licm", "combine", "loop-unroll"):
        assert name in message


def test_bad_options_fail_with_valid_options():
    with pytest.raises(PipelineError, match=r"no option 'depth' \(valid options: hoist-loads\)"):
        parse_pipeline("licm{depth=2}")
    with pytest.raises(PipelineError, match="takes a int, not 'many'"):
        parse_pipeline("loop-unroll{max-trip-count=many}")
    with pytest.raises(PipelineError, match="takes true or false"):
        parse_pipeline("licm{hoist-loads=maybe}")
    with pytest.raises(PipelineError, match="unbalanced"):
        parse_pipeline("licm{hoist-loads=true")


def test_default_ttir_pipeline_resolves():
    names = [p.name for p in parse_pipeline(DEFAULT_PIPELINES["ttir"])]
    assert names[0] == "inline" and "cse" in names and names[-1] == "loop-unroll"


def test_pipeline_from_env_is_read_once_into_options():
    env = {"TILE_PIPELINE_TTIR": "cse,dce", "TILE_PIPELINE_TTGIR": "coalesce"}
    options = pipeline_from_env(env)
    assert options.for_stage("ttir") == "cse,dce"
    assert options.for_stage("ttgir") == "coalesce"
    assert options.for_stage("llir") == DEFAULT_PIPELINES.get("llir", "")
    assert pipeline_from_env(env, base={"ttir": "inline"}).for_stage("ttir") == "inline"
    assert pipeline_from_env({}).for_stage("ttir") == DEFAULT_PIPELINES["ttir"]


def test_trace_records_chain_and_count():
    trace = CompileTrace("k")
    module = parse_module(IR)
    module = PassManager("ttir", "cse,canonicalize,dce", [TraceInstrumentation(trace)]).run(module)
    assert [r.name for r in trace.passes] == ["cse", "canonicalize", "dce"]
    assert [r.index for r in trace.passes] == [0, 1, 2]
    cse, canon, dce = trace.passes
    assert cse.changed and cse.patterns == {"merge arith.addi": 1}
    assert canon.changed and canon.patterns["fold-identity"] == 1
    assert dce.changed is False and dce.ir_after == canon.ir_after
    assert trace.ir_before(cse) == trace.stage_inputs["ttir"]
    assert trace.ir_before(dce) == canon.ir_after
    assert dce.op_counts == op_count_by_name(module)
    assert canon.doc.startswith("Simplifies the IR")
    assert all(r.wall_ms >= 0 and r.error is None for r in trace.passes)
    for record in trace.passes:
        parse_module(record.ir_after)


def test_print_after_change_echoes_only_changes():
    stream = io.StringIO()
    trace = CompileTrace("k")
    inst = TraceInstrumentation(trace, print_after_change=True, stream=stream)
    PassManager("ttir", "canonicalize,dce", [inst]).run(parse_module(IR))
    out = stream.getvalue()
    assert "IR Dump After canonicalize" in out and "IR Dump After dce" not in out


def test_without_snapshots_changed_comes_from_counts():
    trace = CompileTrace("k")
    inst = TraceInstrumentation(trace, snapshots=False)
    PassManager("ttir", "canonicalize,dce", [inst]).run(parse_module(IR))
    assert [r.changed for r in trace.passes] == [True, False]
    assert all(r.ir_after == "" for r in trace.passes)


class BreakUses(Pass):
    """Test pass: moves the store to the top of the function, before its operands exist."""

    name = "break-uses"

    def run(self, module, ctx):
        func = module.functions()[0]
        store = next(op for op in func.walk() if op.name == "tt.store")
        store.move_before(func.regions[0].blocks[0].ops[0])


class Crash(Pass):
    """Test pass: raises."""

    name = "crash"

    def run(self, module, ctx):
        raise KeyError("boom")


def test_pass_leaving_invalid_ir_is_named():
    trace = CompileTrace("k")
    pm = PassManager("ttir", ["canonicalize", BreakUses(), "cse"], [TraceInstrumentation(trace)])
    with pytest.raises(PassFailure) as err:
        pm.run(parse_module(IR))
    assert err.value.pass_name == "break-uses" and err.value.index == 1
    assert "does not dominate" in str(err.value)
    assert trace.passes[-1].name == "break-uses" and "verifier" in trace.passes[-1].error
    assert len(trace.passes) == 2


def test_crashing_pass_is_named_and_recorded():
    trace = CompileTrace("k")
    pm = PassManager("ttir", [Crash()], [TraceInstrumentation(trace)])
    with pytest.raises(PassFailure, match="'crash' failed: KeyError"):
        pm.run(parse_module(IR))
    assert trace.passes[0].error.startswith("KeyError")


def test_instrumentation_hooks_order():
    calls = []

    class Spy(PassInstrumentation):
        def before_pipeline(self, stage, module):
            calls.append(("start", stage))

        def before_pass(self, run, module):
            calls.append(("before", run.pass_.name))

        def after_pass(self, run, module):
            calls.append(("after", run.pass_.name, run.position))

        def after_pipeline(self, stage, module):
            calls.append(("end", stage))

    PassManager("ttir", "cse,dce", [Spy()]).run(parse_module(IR))
    assert calls == [("start", "ttir"), ("before", "cse"), ("after", "cse", 0),
                     ("before", "dce"), ("after", "dce", 1), ("end", "ttir")]


def test_pattern_sites_name_op_location_and_definition():
    ir = """
    #loc1 = loc("k.py":7:12)
    module {
      tt.func public @k(%p: !tt.ptr<i32>, %n: i32) {
        %c0 = arith.constant 0 : i32
        %x = arith.addi %n, %c0 : i32 loc(#loc1)
        tt.store %p, %x : !tt.ptr<i32>
        tt.return
      }
    }
    """
    trace = CompileTrace("k")
    module = parse_module(textwrap.dedent(ir))
    PassManager("ttir", "canonicalize", [TraceInstrumentation(trace)]).run(module)
    sites = trace.passes[0].pattern_sites
    assert {"pattern": "fold-identity", "op": "arith.addi", "loc": "k.py:7:12",
            "source": "compiler.passes.canonicalize.AlgebraicIdentity"} in sites
