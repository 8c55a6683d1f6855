"""The `pipeline` ttgir pass on the sample matmul: FileCheck of the prologue, the pipelined K
loop and the epilogue; the loops it must leave alone (no dot, num_stages=1); the printed form
round-trips through the parser; and ptxas accepts the result with cp.async and no spills."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module
from compiler.passes.manager import DEFAULT_PIPELINES
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import compile_jit
from tests.cpu.pass_helpers import run_pipeline
from tests.cpu.pipeline_cases import WITH_PIPELINE, compile_matmul

PATTERN_PREFIX = "scf.for -> "


def _ttgir(compiled) -> str:
    text = print_module(compiled.ttgir_module)
    return text[:text.index("#loc =")] if "#loc =" in text else text


def test_pipelines_the_matmul_k_loop_with_three_stages():
    compiled, _, _ = compile_matmul(256, 256, 256, (128, 128, 64), 4, num_stages=3)
    filecheck(_ttgir(compiled), """
        CHECK: %[[A:[a-z_0-9]+]] = ttg.local_alloc {{.*}}: () -> !ttg.memdesc<3x128x64xf16, #shared, #smem, mutable>
        CHECK: %[[B:[a-z_0-9]+]] = ttg.local_alloc {{.*}}: () -> !ttg.memdesc<3x64x128xf16, #shared, #smem, mutable>
        CHECK: ttg.memdesc_index %[[A]][
        CHECK-NEXT: %[[CA0:[a-z_0-9]+]] = ttg.async_copy_global_to_local {{.*}} mask {{.*}} -> <128x64xf16
        CHECK-NEXT: %[[GA0:[a-z_0-9]+]] = ttg.async_commit_group tokens %[[CA0]]
        CHECK: ttg.memdesc_index %[[B]][
        CHECK-NEXT: %[[CB0:[a-z_0-9]+]] = ttg.async_copy_global_to_local {{.*}} mask
        CHECK-NEXT: %[[GB0:[a-z_0-9]+]] = ttg.async_commit_group tokens %[[CB0]]
        CHECK: ttg.async_copy_global_to_local
        CHECK-NEXT: %[[GA1:[a-z_0-9]+]] = ttg.async_commit_group
        CHECK: ttg.async_copy_global_to_local
        CHECK-NEXT: %[[GB1:[a-z_0-9]+]] = ttg.async_commit_group
        CHECK-NOT: ttg.async_copy_global_to_local
        CHECK: scf.for {{.*}}, %[[TA0:[a-z_0-9]+]] = %[[GA0]], %[[TA1:[a-z_0-9]+]] = %[[GA1]], %[[TB0:[a-z_0-9]+]] = %[[GB0]], %[[TB1:[a-z_0-9]+]] = %[[GB1]])
        CHECK-NEXT: %[[W:[a-z_0-9]+]] = ttg.async_wait %[[TA0]], %[[TB0]] {num = 2 : i32}
        CHECK-NEXT: ttg.memdesc_index %[[A]][%
        CHECK-NEXT: ttg.memdesc_index %[[B]][%
        CHECK-NOT: tt.load
        CHECK: ttg.async_copy_global_to_local
        CHECK-NEXT: %[[NA:[a-z_0-9]+]] = ttg.async_commit_group
        CHECK: ttg.async_copy_global_to_local
        CHECK-NEXT: %[[NB:[a-z_0-9]+]] = ttg.async_commit_group
        CHECK: ttg.local_load {{.*}} token %[[W]] :
        CHECK: ttg.local_load {{.*}} token %[[W]] :
        CHECK: tt.dot
        CHECK: scf.yield {{.*}}, %[[TA1]], %[[NA]], %[[TB1]], %[[NB]] :
        CHECK: ttg.async_wait {num = 0 : i32}
        CHECK-NEXT: ttg.local_dealloc %[[A]]
        CHECK-NEXT: ttg.local_dealloc %[[B]]
        CHECK-NOT: tt.load
        CHECK: tt.store
    """)
    fired = compiled.trace.passes
    assert any(PATTERN_PREFIX + "3-stage cp.async pipeline" in r.patterns for r in fired
               if r.name == "pipeline")


@pytest.mark.parametrize("stages,wait", [(2, 0), (4, 4)])
def test_stage_count_sets_prologue_and_wait(stages, wait):
    # one group per copy (two a step): the wait leaves the stages-2 later steps' groups pending
    compiled, _, _ = compile_matmul(128, 128, 128, (64, 64, 32), 4, num_stages=stages)
    text = _ttgir(compiled)
    loop_at = text.index("scf.for")
    assert text[:loop_at].count("ttg.async_commit_group") == 2 * (stages - 1)
    assert re.search(rf"ttg.async_wait %\w+, %\w+ {{num = {wait} : i32}}", text[loop_at:])
    assert f"!ttg.memdesc<{stages}x64x32xf16" in text


def test_leaves_loops_alone_with_one_stage():
    compiled, _, _ = compile_matmul(128, 128, 128, (64, 64, 32), 4, num_stages=1)
    text = _ttgir(compiled)
    assert "async" not in text and "memdesc_index" not in text
    assert "tt.load" in text[text.index("scf.for"):]


@triton.jit
def loop_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Sums `n` floats in BLOCK-sized chunks: a loop of loads without any dot."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
    tl.store(out_ptr + offs, acc)


def test_leaves_loops_without_dots_alone():
    x = np.zeros(1000, np.float32)
    out = np.zeros(128, np.float32)
    compiled, _ = compile_jit(loop_sum_kernel, [x, out, 1000], {"BLOCK": 128},
                              {"num_warps": 4, "num_stages": 3}, WITH_PIPELINE)
    text = _ttgir(compiled)
    assert "async" not in text and "memdesc" not in text
    pipeline_runs = [r for r in compiled.trace.passes if r.name == "pipeline"]
    assert pipeline_runs and not pipeline_runs[0].patterns and not pipeline_runs[0].changed


def test_pipelined_ttgir_round_trips_and_verifies():
    compiled, _, _ = compile_matmul(256, 256, 256, (128, 128, 64), 4)
    text = print_module(compiled.ttgir_module)
    module = parse_module(text)
    verify_module(module)
    assert print_module(module) == text


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
@pytest.mark.parametrize("block,warps", [((128, 128, 64), 4), ((128, 128, 64), 8),
                                         ((128, 256, 64), 8)])
def test_ptxas_accepts_pipelined_matmul_without_spills(block, warps, monkeypatch):
    monkeypatch.setenv("TILE_ALWAYS_COMPILE", "1")
    compiled, _, _ = compile_matmul(4096, 4096, 4096, block, warps, stop_after="cubin")
    ptx = compiled.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx
    assert "cp.async.commit_group" in ptx and "cp.async.wait_group 2" in ptx
    info = compiled.trace.cubin_info
    assert info.get("registers"), info
    assert info["spill_stores"] == 0 and info["spill_loads"] == 0, info["report"]


def test_pass_option_overrides_the_compile_option():
    pipeline = WITH_PIPELINE.replace("pipeline,", "pipeline{num-stages=4},")
    compiled, _, _ = compile_matmul(128, 128, 128, (64, 64, 32), 4, num_stages=3,
                                    pipeline=pipeline)
    runs = [r for r in compiled.trace.passes if r.name == "pipeline"]
    assert runs[0].options == {"num-stages": 4}
    assert runs[0].patterns == {PATTERN_PREFIX + "4-stage cp.async pipeline": 1}
    assert "!ttg.memdesc<4x64x32xf16" in _ttgir(compiled)


REFERENCE = Path(__file__).parents[2] / "../shared/reference/triton-3.6-h200/matmul.ttir"


@pytest.mark.skipif(shutil.which("ptxas") is None or not REFERENCE.exists(),
                    reason="ptxas or Triton's reference matmul.ttir missing")
@pytest.mark.parametrize("num_warps", [8])     # its 128x256 fp32 accumulator needs 8 warps
def test_ptxas_accepts_pipelined_reference_matmul(num_warps):
    pipeline = DEFAULT_PIPELINES["ttgir"].replace(
        "convert-triton-to-tritongpu", f"convert-triton-to-tritongpu{{num-warps={num_warps}}}")
    text, _ = run_pipeline(REFERENCE.read_text(), pipeline, stage="ttgir")
    assert "ttg.async_copy_global_to_local" in text
    from .codegen_kernels import compile_ttgir
    result = compile_ttgir(text)
    assert "cp.async.cg.shared.global" in result.asm["ptx"]
    info = result.trace.cubin_info
    assert info["spill_stores"] == 0 and info["spill_loads"] == 0, info["report"]
