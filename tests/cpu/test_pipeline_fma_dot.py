"""The K loop of a broadcast-product matmul (`sum(x[:, :, None] * y[None, :, :], axis=1)`, fp32),
which combine turns into an ieee `tt.dot` that runs on FMAs, is software-pipelined the way Triton
3.6 pipelines it, for the shape of Triton's test_dot_mulbroadcasted (x 256x160, y 160x192, blocks
128x32x32, 4 warps, 3 stages): both loads become cp.async copies, each committed as a group of
its own; the loop carries the groups' `!ttg.async.token`s, and each step waits for its own two
groups with `ttg.async_wait %x, %y {num = 2 : i32}` (the next step's two stay in flight) and
reads its slots with `ttg.local_load ... token` of that wait. The numbers are checked on the
SIMT evaluator, where a cp.async lands only at the wait that retires its group, so a wait one
group short reads stale data; ptxas builds the PTX."""
from __future__ import annotations

import re

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.codegen.loop_stats import ptx_loop
from compiler.codegen.toolchain import find_tool
from compiler.ir import parse_module, print_module
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import compile_jit, run_on_simt

BLOCKS = {"BM": 128, "BN": 32, "BK": 32}
needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


@triton.jit
def broadcast_product_matmul(X, Y, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Z = X @ Y for row-major X (M, K), Y (K, N): each K step's block product written as a
    broadcast multiply summed over K."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for step in range(0, K // BK):
        x = tl.load(X + rows[:, None] * K + step * BK + ks[None, :])
        y = tl.load(Y + (step * BK + ks[:, None]) * N + cols[None, :])
        product = tl.expand_dims(x, 2) * tl.expand_dims(y, 0)
        acc = tl.sum(product, axis=1) + acc
    tl.store(Z + rows[:, None] * N + cols[None, :], acc)


def _compile(m: int = 256, n: int = 192, k: int = 160, stages: int = 3,
             stop_after: str | None = "ttgir"):
    """(compiled, runtime args, z, numpy's x @ y) for sm_90."""
    rng = np.random.default_rng(m + n + k + stages)
    x = (rng.standard_normal((m, k)) * 0.1).astype(np.float32)
    y = (rng.standard_normal((k, n)) * 0.1).astype(np.float32)
    z = np.zeros((m, n), np.float32)
    compiled, runtime = compile_jit(broadcast_product_matmul, [x, y, z],
                                    {"M": m, "N": n, "K": k, **BLOCKS},
                                    {"num_warps": 4, "num_stages": stages}, None,
                                    stop_after=stop_after, target={"arch": 90})
    return compiled, runtime, z, x @ y


def _grid(z) -> tuple:
    return (z.shape[0] // BLOCKS["BM"], z.shape[1] // BLOCKS["BN"], 1)


def test_the_broadcast_product_becomes_an_ieee_fma_dot():
    compiled, *_ = _compile()
    assert re.search(r"tt\.dot .*inputPrecision = ieee", compiled.asm["ttir"])
    assert "tt.reduce" not in compiled.asm["ttir"]
    ttgir = compiled.asm["ttgir"]
    assert "ttng.warp_group_dot" not in ttgir and "#ttg.nvidia_mma" not in ttgir   # FMAs


def test_the_fma_dots_loads_are_pipelined_with_one_group_per_copy():
    compiled, *_ = _compile()
    ttgir = compiled.asm["ttgir"]
    filecheck(ttgir[:ttgir.index("#loc =")], """
        CHECK: %[[X:[a-z_0-9]+]] = ttg.local_alloc {{.*}}: () -> !ttg.memdesc<3x128x32xf32, [[S:#shared[0-9]*]], #smem, mutable>
        CHECK: %[[Y:[a-z_0-9]+]] = ttg.local_alloc {{.*}}: () -> !ttg.memdesc<3x32x32xf32, [[S]], #smem, mutable>
        CHECK: %[[CX0:[a-z_0-9]+]] = ttg.async_copy_global_to_local {{.*}} -> <128x32xf32, [[S]], #smem, mutable>
        CHECK-NEXT: %[[GX0:[a-z_0-9]+]] = ttg.async_commit_group tokens %[[CX0]]
        CHECK: %[[CY0:[a-z_0-9]+]] = ttg.async_copy_global_to_local {{.*}} -> <32x32xf32, [[S]], #smem, mutable>
        CHECK-NEXT: %[[GY0:[a-z_0-9]+]] = ttg.async_commit_group tokens %[[CY0]]
        CHECK: %[[CX1:[a-z_0-9]+]] = ttg.async_copy_global_to_local
        CHECK-NEXT: %[[GX1:[a-z_0-9]+]] = ttg.async_commit_group tokens %[[CX1]]
        CHECK: %[[CY1:[a-z_0-9]+]] = ttg.async_copy_global_to_local
        CHECK-NEXT: %[[GY1:[a-z_0-9]+]] = ttg.async_commit_group tokens %[[CY1]]
        CHECK-NOT: ttg.async_copy_global_to_local
        CHECK: scf.for {{.*}}, %[[TX0:[a-z_0-9]+]] = %[[GX0]], %[[TX1:[a-z_0-9]+]] = %[[GX1]], %[[TY0:[a-z_0-9]+]] = %[[GY0]], %[[TY1:[a-z_0-9]+]] = %[[GY1]]) -> ({{.*}}, !ttg.async.token, !ttg.async.token, !ttg.async.token, !ttg.async.token)
        CHECK-NEXT: %[[W:[a-z_0-9]+]] = ttg.async_wait %[[TX0]], %[[TY0]] {num = 2 : i32}
        CHECK-NEXT: %[[SX:[a-z_0-9]+]] = ttg.memdesc_index %[[X]][
        CHECK-NEXT: %[[SY:[a-z_0-9]+]] = ttg.memdesc_index %[[Y]][
        CHECK-NOT: tt.load
        CHECK: ttg.async_copy_global_to_local
        CHECK-NEXT: %[[NX:[a-z_0-9]+]] = ttg.async_commit_group tokens
        CHECK: ttg.async_copy_global_to_local
        CHECK-NEXT: %[[NY:[a-z_0-9]+]] = ttg.async_commit_group tokens
        CHECK: %[[A:[a-z_0-9]+]] = ttg.local_load %[[SX]] token %[[W]] : !ttg.memdesc<128x32xf32, [[S]], #smem, mutable> -> tensor<128x32xf32, #dot_op
        CHECK-NEXT: %[[B:[a-z_0-9]+]] = ttg.local_load %[[SY]] token %[[W]] : !ttg.memdesc<32x32xf32, [[S]], #smem, mutable> -> tensor<32x32xf32, #dot_op
        CHECK-NEXT: tt.dot %[[A]], %[[B]], {{.*}} inputPrecision = ieee
        CHECK: scf.yield {{.*}}, %[[TX1]], %[[NX]], %[[TY1]], %[[NY]] :
        CHECK-NEXT: }
        CHECK-NEXT: ttg.async_wait {num = 0 : i32}
        CHECK-NEXT: ttg.local_dealloc %[[X]]
        CHECK-NEXT: ttg.local_dealloc %[[Y]]
    """)
    # the check of Triton's test_dot_mulbroadcasted
    assert re.search(r"ttg.async_wait %.* {num = 2 : i32}", ttgir)
    fired = [run for run in compiled.trace.passes if run.name == "pipeline"]
    assert fired[0].patterns == {"scf.for -> 3-stage cp.async pipeline": 1}


@pytest.mark.parametrize("stages,num", [(2, 0), (4, 4)])
def test_the_wait_leaves_the_later_steps_groups_pending(stages, num):
    ttgir = _compile(128, 32, stages=stages)[0].asm["ttgir"]
    loop = ttgir[ttgir.index("scf.for"):]
    assert loop.count("!ttg.async.token") == 2 * (stages - 1) * 2     # iter args, results
    assert re.search(rf"= ttg.async_wait %\w+, %\w+ {{num = {num} : i32}}", loop)


@pytest.mark.parametrize("m,n,stages", [(256, 64, 3), (128, 32, 2), (128, 32, 4)])
def test_the_pipelined_kernel_matches_numpy_on_the_simt_evaluator(m, n, stages):
    compiled, runtime, z, expected = _compile(m, n, stages=stages)
    out = run_on_simt(compiled, _grid(z), runtime, [z])[0]
    np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)


class _Stand:
    """A compiled kernel standing for another ttgir module (a hand-edited one)."""

    def __init__(self, module):
        self.ttgir_module = module


def test_a_wait_that_leaves_this_steps_y_in_flight_reads_stale_data():
    compiled, runtime, z, expected = _compile(128, 32)
    text = print_module(compiled.ttgir_module)
    assert text.count(" {num = 2 : i32}") == 1
    broken = parse_module(text.replace(" {num = 2 : i32}", " {num = 3 : i32}"))
    out = run_on_simt(_Stand(broken), _grid(z), runtime, [z])[0]
    assert np.abs(out - expected).max() > 0.05


def test_the_tokens_lower_to_no_registers():
    # the loop header's phis: the induction variable, the accumulator's 32 registers a thread
    # and the two slot indices, none for the four carried tokens
    compiled, *_ = _compile()
    llvm_ir = lower_module(compiled.ttgir_module, LoweringOptions(optimize=False)).llvm_ir
    block = llvm_ir[llvm_ir.index("for.header:"):].splitlines()[1:]
    phis = next(i for i, line in enumerate(block) if " = phi " not in line)
    assert phis == 1 + 32 + 2


@needs_ptxas
def test_ptxas_builds_the_pipelined_kernel(monkeypatch):
    monkeypatch.setenv("TILE_ALWAYS_COMPILE", "1")
    compiled, *_ = _compile(stop_after="cubin")
    ptx = compiled.asm["ptx"]
    loop = "\n".join(ptx_loop(ptx))
    assert ptx.count("cp.async.commit_group") == 6        # 2 per prologue step, 2 per loop step
    assert re.findall(r"cp\.async\.wait_group (\d+)", loop) == ["2"]
    assert loop.count("cp.async.commit_group") == 2
    assert "cp.async.cg.shared.global" in loop                 # 16-byte copies
    info = compiled.trace.cubin_info
    assert info["registers"] > 0 and info["spill_stores"] == 0, info["report"]
