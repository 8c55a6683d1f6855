"""Unit tests of the explorer's pure pieces: lexers, diffs, the layout graph, thread ownership,
metrics, pipeline strings and the command line on saved traces."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import networkx as nx
import pytest
from pygments import lex
from pygments.token import Error, Keyword, Name

from compiler.trace import CompileTrace, PassRecord
from explorer import cli
from explorer.diff import change_counts, fold_equal, intraline_spans, side_by_side
from explorer.graph import (build_layout_graph, conversions, layout_aliases, render_clusters,
                            to_dot, to_graphml)
from explorer.lexers import MLIRLexer, PTXLexer, SASSLexer, lexer_for_stage
from explorer.metrics import count_ops, metric_rows, ptx_instruction_count, trace_metrics
from explorer.ownership import ownership_grid, tensor_shape
from compiler.inspect import describe_user_error, parse_stage_overrides
from compiler.passes.pipeline_text import PipelineError
from explorer.views.linked_view import expand_ranges, ptx_to_ttgir
from explorer.views.pipeline_editor import PassEntry, parse_pass_spec, pipeline_string

sys.path.insert(0, str(Path(__file__).parent))
from explorer_fixture import REFERENCE, have_reference, reference_trace  # noqa: E402

needs_reference = pytest.mark.skipif(not have_reference(), reason="../shared/reference absent")
BLOCKED_1D = ("#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [16], "
              "order = [0]}>")
BLOCKED_2D = ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], "
              "warpsPerCTA = [8, 1], order = [1, 0]}>")


# ---- lexers ---------------------------------------------------------------------------------
def _tokens(text, lexer):
    return [(tok, val) for tok, val in lex(text, lexer) if val.strip()]


def test_mlir_lexer_classifies_values_ops_and_types():
    line = "%x_5 = tt.load %x_4, %x_0 : tensor<4096x!tt.ptr<f32>, #blocked> loc(#loc34)"
    tokens = dict((val, tok) for tok, val in _tokens(line, MLIRLexer()))
    assert tokens["%x_5"] in Name.Variable
    assert tokens["tt.load"] in Name.Builtin
    assert tokens["!tt.ptr"] in Keyword.Type
    assert tokens["#blocked"] in Name.Decorator


def test_ptx_lexer_splits_opcode_and_modifiers():
    tokens = _tokens("\t@%p1 ld.global.v4.b32 { %r1, %r2 }, [ %rd1 + 0 ];", PTXLexer())
    assert (Name.Builtin, "ld") in tokens
    assert (Keyword.Type, ".global.v4.b32") in tokens
    assert any(tok in Keyword.Pseudo and val == "@%p1" for tok, val in tokens)


def test_sass_lexer_reads_addresses_opcodes_and_registers():
    tokens = _tokens("        /*0040*/                   IMAD.WIDE R2, R0, R3, c[0x0][0x210] ;",
                     SASSLexer())
    assert (Name.Builtin, "IMAD") in tokens
    assert (Keyword.Type, ".WIDE") in tokens
    assert (Name.Variable, "R2") in tokens


@needs_reference
@pytest.mark.parametrize("stage", ["ttir", "ttgir", "ptx"])
def test_lexers_have_no_error_tokens_on_reference_files(stage):
    text = (REFERENCE / f"softmax.{stage}").read_text()
    assert not [val for tok, val in lex(text, lexer_for_stage(stage)) if tok in Error]


def test_lexer_for_stage_uses_pygments_llvm_for_llir():
    assert type(lexer_for_stage("llir")).__name__ == "LlvmLexer"
    assert type(lexer_for_stage("source")).__name__ == "PythonLexer"


# ---- diff -----------------------------------------------------------------------------------
def test_side_by_side_pairs_replacements_with_intraline_spans():
    before = "a = 1\nb = add a, a\nc = 3\n"
    after = "a = 1\nb = mul a, a\nc = 3\nd = 4\n"
    rows = side_by_side(before, after)
    assert [r.tag for r in rows] == ["equal", "replace", "equal", "insert"]
    replaced = rows[1]
    assert replaced.left[slice(*replaced.left_spans[0])] in ("add", "ad", "a")
    assert "mul"[0] in replaced.right[slice(*replaced.right_spans[0])]
    assert rows[3].left is None and rows[3].right_no == 4
    assert change_counts(rows) == {"removed": 1, "added": 2}


def test_intraline_spans_cover_exactly_the_changed_characters():
    left, right = intraline_spans("tensor<4xf32, #blocked>", "tensor<4xf32, #blocked1>")
    assert left == [] and right == [(22, 23)]


def test_fold_equal_keeps_context_around_changes():
    before = "\n".join(f"line {i}" for i in range(40))
    after = before.replace("line 20", "LINE 20")
    folded = fold_equal(side_by_side(before, after), context=3)
    tags = [r.tag for r in folded]
    assert tags.count("fold") == 2
    assert sum(r.folded for r in folded if r.tag == "fold") == 39 - 6
    assert "replace" in tags


# ---- layout graph and ownership ----------------------------------------------------------------
@needs_reference
def test_layout_graph_of_matmul_finds_its_one_conversion():
    graph = build_layout_graph((REFERENCE / "matmul.ttgir").read_text())
    found = conversions(graph)
    assert len(found) == 1
    node, source, target = found[0]
    assert source == "#mma" and target == "#blocked"
    assert graph.nodes[node]["conversion"]
    assert "#mma" in layout_aliases((REFERENCE / "matmul.ttgir").read_text())


@needs_reference
def test_layout_graph_def_use_edges_of_softmax():
    graph = build_layout_graph((REFERENCE / "softmax.ttgir").read_text())
    assert graph.nodes["%x_5"]["op"] == "tt.load"
    assert graph.nodes["%x_5"]["layout"] == "#blocked"
    assert set(graph.predecessors("%x_5")) == {"%x_4", "%x_0", "%cst"}
    assert graph.nodes["%x_6"]["layout"] == "scalar"      # tt.reduce to a scalar
    assert "%in_ptr" in graph and graph.nodes["%in_ptr"]["op"] == "arg"
    assert not conversions(graph)


@needs_reference
def test_dot_and_graphml_exports_round_trip(tmp_path):
    graph = build_layout_graph((REFERENCE / "matmul.ttgir").read_text())
    dot = to_dot(graph)
    assert dot.startswith("digraph layouts") and "subgraph cluster_" in dot
    assert "color=red" in dot
    path = tmp_path / "g.graphml"
    path.write_text(to_graphml(graph))
    loaded = nx.read_graphml(path)
    assert loaded.number_of_nodes() == graph.number_of_nodes()
    assert loaded.number_of_edges() == graph.number_of_edges()
    drawing = render_clusters(graph)
    assert any("⇄" in line for line in drawing)


def _first_owner(text: str, shape: tuple, coord: tuple) -> tuple:
    from compiler.inspect import describe_layout
    return min(describe_layout(text, shape).owners[coord])


def test_blocked_owner_follows_size_threads_warps_and_repeats():
    assert _first_owner(BLOCKED_1D, (4096,), (5,)) == (0, 1, 1)
    assert _first_owner(BLOCKED_1D, (4096,), (128,)) == (1, 0, 0)      # next warp
    assert _first_owner(BLOCKED_1D, (4096,), (2048 + 5,)) == (0, 1, 5)  # second repetition
    assert _first_owner(BLOCKED_2D, (128, 64), (4, 16)) == (1, 2, 0)
    assert _first_owner(BLOCKED_2D, (128, 64), (1, 9)) == (0, 9, 1)


def test_ownership_grid_of_a_slice_uses_the_parent():
    aliases = {"#blocked": BLOCKED_2D,
               "#s": "#ttg.slice<{dim = 0, parent = #blocked}>"}
    grid = ownership_grid("#s", (64,), aliases, max_cols=16)
    assert grid[0][0] == (0, 0, 0) and grid[0][8] == (0, 1, 0)
    with pytest.raises(ValueError):
        ownership_grid("#ttg.nvidia_mma<{versionMajor = 3}>", (64, 64))


def test_tensor_shape_reads_the_first_tensor():
    assert tensor_shape("tensor<128x64xf16, #blocked>") == (128, 64)
    assert tensor_shape("f32") is None


# ---- metrics, pipeline strings, CLI helpers -------------------------------------------------
def test_count_ops_and_ptx_instructions():
    assert count_ops("  %a = arith.addi %x, %y : i32\n  tt.store %p, %a : !tt.ptr<i32>\n") == \
        {"arith.addi": 1, "tt.store": 1}
    ptx = ".version 8.7\n\tmov.u32 %r1, %tid.x;\n$L__tmp0:\n\t.loc 1 2 3\n\tret;\n}\n"
    assert ptx_instruction_count(ptx) == 2


def test_metric_rows_show_deltas():
    rows = metric_rows({"convert_layout": 2, "registers": 40}, {"convert_layout": 0,
                                                                "registers": 40})
    assert rows == [("convert_layout", "2", "0", "-2"), ("registers", "40", "40", "=")]


def test_pipeline_strings_round_trip():
    entries = [parse_pass_spec("canonicalize"), parse_pass_spec("loop-unroll{max-trip-count=2}"),
               PassEntry("cse", {}, enabled=False)]
    assert entries[1].options == {"max-trip-count": "2"}
    assert pipeline_string(entries) == "canonicalize,loop-unroll{max-trip-count=2}"


def test_the_editor_checks_a_pass_against_the_registry():
    with pytest.raises(PipelineError, match="did you mean 'coalesce'"):
        parse_pass_spec("coalesse")
    with pytest.raises(PipelineError, match="no option 'max-depth'"):
        parse_pass_spec("licm{max-depth=2}")


def test_ptx_to_ttgir_inverts_the_map():
    inverse = ptx_to_ttgir({"3": [[10, 12]], "4": [[12, 12], [20, 20]]})
    assert inverse[12] == [3, 4] and inverse[20] == [4] and 13 not in inverse
    assert expand_ranges([[1, 3], [7, 7]]) == {1, 2, 3, 7}


def test_stage_overrides_are_read_and_checked_by_the_one_grammar():
    assert parse_stage_overrides(["ttgir=cse,canonicalize"]) == {"ttgir": "cse,canonicalize"}
    with pytest.raises(PipelineError, match="unknown stage 'sass'"):
        parse_stage_overrides(["sass=cse"])
    with pytest.raises(PipelineError) as err:
        parse_stage_overrides(["ttgir=cse,coalesse"])
    assert "did you mean 'coalesce'" in str(err.value)
    assert str(err.value).endswith("ttgir=cse,coalesse\n              ^")


def test_describe_user_error_points_at_the_users_line(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("x = 1\ny = x / 0\n")
    try:
        exec(compile(script.read_text(), str(script), "exec"), {})
    except ZeroDivisionError as error:
        message = describe_user_error(error, script)
    assert message.startswith(f"{script}:2:5: ZeroDivisionError")
    assert message.endswith("    y = x / 0\n        ^")


@needs_reference
def test_cli_json_and_trace_file(tmp_path, capsys):
    path = tmp_path / "trace.json"
    reference_trace("softmax").save(path)
    assert cli.main(["--trace", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    kernel = data["kernels"][0]
    assert kernel["kernel"] == "softmax_kernel"
    assert kernel["metrics"]["convert_layout"] == 0
    assert kernel["changed_passes"] > 5 and kernel["passes"] == 68
    assert trace_metrics(CompileTrace.load(path))["registers"] == 32


def test_cli_reports_missing_file_and_bad_usage(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main([]) == 2


def test_cli_says_clearly_when_the_compiler_is_missing(tmp_path, capsys, monkeypatch):
    script = tmp_path / "k.py"
    script.write_text("print('hi')\n")
    monkeypatch.setitem(sys.modules, "compiler.inspect", None)
    assert cli.main([str(script), "--json"]) == 3
    assert "compiler.inspect is not available" in capsys.readouterr().err


def test_pass_record_diffs_use_trace_ir_before():
    trace = CompileTrace("k", stage_inputs={"ttir": "a\n"}, passes=[
        PassRecord("ttir", "p1", index=0, ir_after="b\n", changed=True),
        PassRecord("ttir", "p2", index=1, ir_after="b\n")])
    rows = side_by_side(trace.ir_before(trace.passes[1]), trace.passes[1].ir_after)
    assert [r.tag for r in rows] == ["equal"]


def test_unrelated_paired_lines_get_no_intraline_spans():
    assert intraline_spans("%x_6 = tt.load %x_5", "%4 = ttg.convert_layout %3 : t -> u") == \
        ([], [])


@pytest.mark.parametrize("text, shape", [(BLOCKED_1D, (4096,)), (BLOCKED_1D, (256,)),
                                         (BLOCKED_2D, (128, 64)), (BLOCKED_2D, (16, 16))])
def test_ownership_grid_is_the_compilers_layout_model(text, shape):
    from compiler.inspect import describe_layout
    owners = describe_layout(text, shape).owners
    grid = ownership_grid(text, shape, max_rows=8, max_cols=16)
    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            assert cell == min(owners[(r, c) if len(shape) > 1 else (c,)])
