"""The differential check (issue 14 item 4) and `tile-explore bisect` (issue 12 item 8): the
interpreter runs the unoptimized ttir and the module after every ttir and ttgir pass on the
same inputs; a deliberately broken pass (it swaps subtraction operands) is named as the first
pass whose results differ, with the number of wrong elements and its IR diff."""
from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.compiler import compile as compile_source
from compiler.differential import check_passes
from compiler.ir import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES
from explorer.cli import main
from tests.cpu.broken_pass import NAME, broken_pass
from tests.fuzz_pipelines import KERNELS, _sample

#: Sample kernels with a float subtraction (the broken pass changes them) and without.
SUBTRACTING = ("softmax", "layernorm")


@functools.lru_cache(maxsize=None)
def _case(kernel: str):
    """(unoptimized ttir text, grid, runtime arguments, options) of a sample kernel."""
    source, options, grid, args, _ = _sample(kernel)
    compiled = compile_source(source, options=options, pipelines={"ttir": ""},
                              stop_after="ttir")
    return compiled.trace.stage_inputs["ttir"], grid, args, options


def _check(kernel: str, pipelines=None):
    text, grid, args, options = _case(kernel)
    return check_passes(parse_module(text), grid, args, pipelines, options)


def _with_broken(stage: str, position: int) -> dict:
    passes = DEFAULT_PIPELINES[stage].split(",")
    passes.insert(position, NAME)
    return {stage: ",".join(passes)}


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_default_pipelines_keep_every_sample_kernels_results(kernel):
    report = _check(kernel)
    assert report.ok, report.summary()
    names = [c.name for c in report.checks]
    assert names == (DEFAULT_PIPELINES["ttir"].split(",") + DEFAULT_PIPELINES["ttgir"].split(","))
    assert any(c.changed for c in report.checks)


@pytest.mark.parametrize("stage,position", [("ttir", 6), ("ttgir", 2)])
def test_a_broken_pass_is_found_with_its_count_and_diff(stage, position):
    with broken_pass(stage):
        report = _check("softmax", _with_broken(stage, position))
    first = report.first
    assert first is not None and first.name == NAME
    assert (first.stage, first.position) == (stage, position)
    assert 0 < first.mismatched <= first.total == 150       # the output only: 3 rows x 50
    assert all(c.ok for c in report.checks[:report.checks.index(first)])
    diff = report.diff()
    changed = [line for line in diff.splitlines()[2:] if line[:1] in "+-"]
    assert len(changed) == 2 and all("arith.subf" in line for line in changed)
    assert f"first differing pass: {stage} pass #{position} '{NAME}'" in report.summary()
    assert f"{first.mismatched} of 150 elements differ" in report.summary()


@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kernel=st.sampled_from(KERNELS), stage=st.sampled_from(("ttir", "ttgir")),
       data=st.data())
def test_the_broken_pass_is_found_wherever_it_is(kernel, stage, data):
    position = data.draw(st.integers(0, len(DEFAULT_PIPELINES[stage].split(","))))
    with broken_pass(stage):
        report = _check(kernel, _with_broken(stage, position))
    if kernel in SUBTRACTING:
        assert report.first is not None, report.summary()
        assert (report.first.name, report.first.stage, report.first.position) == (
            NAME, stage, position)
    else:                       # nothing to swap: every pass keeps the results
        assert report.ok, report.summary()


# ---- tile-explore bisect --------------------------------------------------------------------
def test_bisect_names_the_broken_pass_of_a_script(capsys):
    pipeline = DEFAULT_PIPELINES["ttir"].replace("cse", f"cse,{NAME}")
    with broken_pass("ttir"):
        rc = main(["bisect", "sample_kernels/softmax.py", "--passes", f"ttir={pipeline}"])
    out = capsys.readouterr().out
    assert rc == 1
    assert f"softmax_kernel: first differing pass: ttir pass #6 '{NAME}' (interpreter): " in out
    assert "elements differ from the unoptimized reference" in out
    assert f"IR diff of ttir pass #6 '{NAME}':" in out
    assert "-    %row_minus_max_8 = arith.subf %row_3, %row_minus_max_7" in out
    assert "+    %row_minus_max_8 = arith.subf %row_minus_max_7, %row_3" in out


def test_bisect_of_a_good_pipeline_exits_zero(capsys):
    assert main(["bisect", "sample_kernels/vector_add.py"]) == 0
    count = len(DEFAULT_PIPELINES["ttir"].split(",")) + len(DEFAULT_PIPELINES["ttgir"].split(","))
    assert f"add_kernel: all {count} passes keep the reference results" in capsys.readouterr().out


def test_bisect_of_a_ttir_file_makes_up_inputs(tmp_path, capsys):
    path = tmp_path / "softmax_kernel.ttir"
    path.write_text(_case("softmax")[0])
    with broken_pass("ttgir"):
        rc = main(["bisect", str(path), "--passes",
                   "ttgir=" + DEFAULT_PIPELINES["ttgir"].replace("coalesce", f"coalesce,{NAME}")])
    assert rc == 1
    assert f"first differing pass: ttgir pass #2 '{NAME}'" in capsys.readouterr().out


def test_a_pipeline_that_cannot_run_is_said_so_not_blamed_on_a_pass(capsys):
    report = _check("softmax", {"ttir": "inline,coalesce"})
    assert report.first is None and not report.ok
    assert report.summary().startswith("softmax_kernel: the pipeline cannot run: "
                                       "PassOrderError: ttir pass #1 'coalesce' needs ttgir")
    assert main(["bisect", "sample_kernels/softmax.py", "--passes", "ttir=inline,coalesce"]) == 2


@pytest.mark.parametrize("argv,says", [
    (["bisect", "no-such-file.py"], "no-such-file.py: no such file"),
    (["bisect", "sample_kernels/softmax.py", "--passes", "llir=x"], "bisect checks the ttir and"),
    (["bisect", "sample_kernels/softmax.py", "--passes", "ttir=cse,coalese"], "coalese"),
    (["bisect", "sample_kernels/softmax.py", "--kernel", "nope"], "never launched kernel 'nope'"),
])
def test_bisect_errors_are_one_line_on_stderr(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
