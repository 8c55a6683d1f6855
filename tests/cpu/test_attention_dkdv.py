"""Tutorial 06's backward dK/dV loop on sm_90 with the tutorial's launch constants (4 warps,
5 stages, BLOCK_M1 32, BLOCK_N1 128, BLK_SLICE_FACTOR 2). Its Q^T tile is read twice (by
k @ qT and, transposed back, by dS^T @ Q) and its M and Delta row blocks are loaded every step.
Triton copies all four loads of a step asynchronously, Q^T into one ring; ours once loaded Q^T
synchronously into two buffers of different nvmma layouts (two stores per step) and M and Delta
with plain global loads the step waited for. These tests pin the pipelined form (FileCheck on
the ttgir) and check the numbers in the interpreter and the hazards statically."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.runtime.interpreter import interpret
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import compile_jit
from tests.cpu.test_attention_dq import case
from tests.cpu.wgmma_hazards import unbarriered_async_copies, wgmma_read_races

CONSTS = {"BM": 32, "BN": 128, "SLICE": 2, "HD": 64}
OPTIONS = {"num_warps": 4, "num_stages": 5}


@triton.jit
def dkdv_steps(dk, dv, Q, k, v, DO, M, D, stride_tok, BM: tl.constexpr, BN: tl.constexpr,
               HD: tl.constexpr, start_n, start_m, num_steps, MASK: tl.constexpr):
    """dk, dv over `num_steps` row blocks of BM queries from start_m (qT loaded transposed
    and read twice; M and Delta loaded per step)."""
    offs_m = start_m + tl.arange(0, BM)
    offs_n = start_n + tl.arange(0, BN)
    offs_k = tl.arange(0, HD)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None]
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :]
    curr_m = start_m
    for blk in range(num_steps):
        qT = tl.load(qT_ptrs)
        offs_m = curr_m + tl.arange(0, BM)
        m = tl.load(M + offs_m)
        pT = tl.math.exp2(tl.dot(k, qT) - m[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(tl.float16), do)
        Di = tl.load(D + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = (pT * (dpT - Di[None, :])).to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        curr_m += BM
        qT_ptrs += BM * stride_tok
        do_ptrs += BM * stride_tok
    return dk, dv


@triton.jit
def dkdv_kernel(Q, K, V, DO, DK, DV, M, D, stride_tok, BM: tl.constexpr, BN: tl.constexpr,
                SLICE: tl.constexpr, HD: tl.constexpr):
    """One BN-key block of dk and dv: the diagonal in BM/SLICE-high masked steps, then the
    queries below it in BM-high steps (dk scaled by sm_scale 0.5 at the end)."""
    start_n = tl.program_id(0) * BN
    offs_n = start_n + tl.arange(0, BN)
    offs_k = tl.arange(0, HD)
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :])
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :])
    dk = tl.zeros([BN, HD], dtype=tl.float32)
    dv = tl.zeros([BN, HD], dtype=tl.float32)
    MBM: tl.constexpr = BM // SLICE
    num_steps = BN // MBM
    dk, dv = dkdv_steps(dk, dv, Q, k, v, DO, M, D, stride_tok, MBM, BN, HD, start_n, start_n,
                        num_steps, MASK=True)
    start_m = start_n + num_steps * MBM
    num_steps = (tl.num_programs(0) * BN - start_m) // BM
    dk, dv = dkdv_steps(dk, dv, Q, k, v, DO, M, D, stride_tok, BM, BN, HD, start_n, start_m,
                        num_steps, MASK=False)
    tl.store(DV + offs_n[:, None] * stride_tok + offs_k[None, :], dv)
    tl.store(DK + offs_n[:, None] * stride_tok + offs_k[None, :], dk * 0.5)


def references(n: int, hd: int = 64):
    """Inputs as tutorial 06's backward gets them and float64 dk, dv."""
    q, k_arg, v, do, M, D, _ = case(n, hd)
    qf, vf, dof = (x.astype(np.float64) for x in (q, v, do))
    kf = k_arg.astype(np.float64)               # pre-scaled by sm_scale / ln 2
    s2 = qf @ kf.T                              # log2-domain scores
    s2[np.triu(np.ones((n, n), bool), 1)] = -np.inf
    p = np.exp2(s2 - M.astype(np.float64)[:, None])
    ref_dv = p.T @ dof
    ds = p * (dof @ vf.T - D.astype(np.float64)[:, None])
    ref_dk = ds.T @ qf * 0.5
    return (q, k_arg, v, do, M, D), ref_dk, ref_dv


def compile_dkdv(n: int, stop_after: str = "ttgir", options: dict | None = None):
    """The dk/dv kernel for sm_90 with the tutorial's constants; (compiled, runtime args,
    dk, dv, reference dk, reference dv)."""
    (q, k, v, do, M, D), ref_dk, ref_dv = references(n)
    dk, dv = np.zeros_like(q), np.zeros_like(q)
    compiled, runtime = compile_jit(dkdv_kernel, [q, k, v, do, dk, dv, M, D, q.shape[1]],
                                    CONSTS, options or OPTIONS, None, stop_after=stop_after,
                                    target={"arch": 90})
    return compiled, runtime, dk, dv, ref_dk, ref_dv


def test_each_step_copies_qT_once_and_m_and_delta_asynchronously():
    compiled, *_ = compile_dkdv(512)
    # per loop: rings for qT (one, in the transposed 128-byte layout), dO, M and Delta; the
    # body reads M and Delta back from their slots and loads nothing from global memory
    loop = """
        CHECK: ttg.local_alloc {{.*}}: () -> !ttg.memdesc<5x64x16xf16, [[QT:#shared[0-9]*]], #smem, mutable>
        CHECK-NEXT: ttg.local_alloc {{.*}}: () -> !ttg.memdesc<5x16x64xf16
        CHECK-NEXT: ttg.local_alloc {{.*}}: () -> !ttg.memdesc<5x16xf32, [[VEC:#shared[0-9]*]], #smem, mutable>
        CHECK-NEXT: ttg.local_alloc {{.*}}: () -> !ttg.memdesc<5x16xf32, [[VEC]], #smem, mutable>
        CHECK: scf.for
        CHECK-NOT: tt.load
        CHECK-NOT: ttg.local_alloc %
        CHECK: ttg.local_load {{.*}} : !ttg.memdesc<16xf32, [[VEC]], #smem, mutable> -> tensor<16xf32
        CHECK: ttng.warp_group_dot
        CHECK: ttg.local_load {{.*}} : !ttg.memdesc<16xf32, [[VEC]], #smem, mutable> -> tensor<16xf32
        CHECK: ttg.memdesc_trans {{.*}} !ttg.memdesc<64x16xf16, [[QT]], #smem, mutable> -> !ttg.memdesc<16x64xf16
        CHECK: ttg.async_copy_global_to_local {{.*}} -> <64x16xf16, [[QT]], #smem, mutable>
        CHECK: ttg.async_copy_global_to_local {{.*}} -> <16xf32, [[VEC]], #smem, mutable>
        CHECK: scf.yield
    """
    text = compiled.asm["ttgir"]
    filecheck(text, loop)
    assert "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = true" in text
    assert "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>" in text


def test_each_value_goes_to_shared_memory_once():
    """k and v (and their transposes, which keep every element in its thread) are each
    written to one nvmma buffer that every wgmma reading them shares: no value is allocated
    twice (before the reshape/trans change, a second alloc in another nvmma layout was made
    and then fused into the first)."""
    from compiler.dialects.ttg import LocalAllocOp
    compiled, *_ = compile_dkdv(512)
    sources = [op.operands[0] for op in compiled.ttgir_module.walk()
               if isinstance(op, LocalAllocOp) and op.operands]
    assert sources and len(set(map(id, sources))) == len(sources)


def test_no_hazards_between_the_rings_and_the_wgmmas():
    compiled, *_ = compile_dkdv(512, stop_after="ptx")
    assert wgmma_read_races(compiled.ttgir_module.functions()[0]) == []
    assert unbarriered_async_copies(compiled.asm["ptx"]) == []
    assert "cp.async.ca.shared.global" in compiled.asm["ptx"]      # M and Delta, 4 bytes


@pytest.mark.parametrize("stages", [OPTIONS["num_stages"], 2])
def test_dk_and_dv_match_numpy(stages):
    compiled, runtime, dk, dv, ref_dk, ref_dv = compile_dkdv(
        256, options={**OPTIONS, "num_stages": stages})
    interpret(compiled.ttgir_module, (256 // CONSTS["BN"],), runtime)
    np.testing.assert_allclose(dv.astype(np.float64), ref_dv, atol=2e-2, rtol=0)
    np.testing.assert_allclose(dk.astype(np.float64), ref_dk, atol=2e-2, rtol=0)
