"""The differential check on the GPU (issue 12 item 8): pipelines cut after each pass are
compiled to cubin and launched on the same inputs; a deliberately broken pass is named as the
first one whose outputs differ from the cut after no pass."""
from __future__ import annotations

import pytest

from compiler.differential import INTERPRETED_STAGES, check_passes_on_gpu
from compiler.ir import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES
from tests.cpu.broken_pass import NAME, broken_pass
from tests.cpu.test_differential import _case

pytestmark = pytest.mark.gpu


def _gpu_check(kernel: str, pipelines=None):
    text, grid, args, options = _case(kernel)
    return check_passes_on_gpu(parse_module(text), grid, args, pipelines, options)


@pytest.mark.parametrize("kernel", ["vector_add", "softmax"])
def test_cut_pipelines_keep_the_results_on_the_gpu(kernel):
    report = _gpu_check(kernel)
    assert report.ok, report.summary()
    # one check per ttir and ttgir pass of the default pipelines (a pass added there adds one)
    passes = sum(len(DEFAULT_PIPELINES[stage].split(",")) for stage in INTERPRETED_STAGES)
    assert report.mode == "gpu" and len(report.checks) == passes


def test_a_broken_pass_is_found_on_the_gpu():
    pipeline = DEFAULT_PIPELINES["ttgir"].replace("coalesce", f"coalesce,{NAME}")
    with broken_pass("ttgir"):
        report = _gpu_check("softmax", {"ttgir": pipeline})
    assert report.first is not None and report.first.name == NAME, report.summary()
    assert report.first.mismatched > 0
