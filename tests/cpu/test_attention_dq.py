"""Tutorial 06's backward dq loop (two transposed loads per step, kT read twice) on sm_90 with
the tutorial's launch constants (4 warps, 5 stages, BLOCK_M2 128, BLOCK_N2 32, BLK_SLICE_FACTOR
2). On the H200 its dq was wrong at N=1024 while dk and dv were right: the last wgmma of the
step (dq += dS @ kT^T, B a transposed register tile stored to shared memory in the loop) stayed
in flight into the next step, and the allocator had given that buffer's bytes to the next
step's kT tile, stored before the next wait (a race the interpreter cannot see). The check of
tests/cpu/wgmma_hazards.py finds it statically; the interpreter checks the numbers."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.runtime.interpreter import interpret
from tests.cpu.mma_cases import compile_jit
from tests.cpu.wgmma_hazards import unbarriered_async_copies, wgmma_read_races

RCP_LN2 = 1.4426950408889634
#: the tutorial's _attn_bwd launch constants for the dq half
CONSTS = {"BM": 128, "BN": 32, "SLICE": 2, "HD": 64}
OPTIONS = {"num_warps": 4, "num_stages": 5}


@triton.jit
def dq_steps(dq, q, K, V, do, m, D, stride_tok, BM: tl.constexpr, BN: tl.constexpr,
             HD: tl.constexpr, start_m, start_n, num_steps, MASK: tl.constexpr):
    """dq += dS @ K over `num_steps` column blocks of BN keys from start_n (kT and vT loaded
    transposed, kT read twice: by q @ kT and, transposed back, by dS @ K)."""
    offs_m = start_m + tl.arange(0, BM)
    offs_n = start_n + tl.arange(0, BN)
    offs_k = tl.arange(0, HD)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None]
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None]
    Di = tl.load(D + offs_m)
    curr_n = start_n
    for blk in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m)
        if MASK:
            offs_n = curr_n + tl.arange(0, BN)
            mask = (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(mask, p, 0.0)
        dp = tl.dot(do, vT).to(tl.float32)
        ds = (p * (dp - Di[:, None])).to(tl.float16)
        dq += tl.dot(ds, tl.trans(kT))
        curr_n += BN
        kT_ptrs += BN * stride_tok
        vT_ptrs += BN * stride_tok
    return dq


@triton.jit
def dq_kernel(Q, K, V, DO, DQ, M, D, stride_tok, BM: tl.constexpr, BN: tl.constexpr,
              SLICE: tl.constexpr, HD: tl.constexpr):
    """One BM-row block of dq: the diagonal in BN/SLICE-wide masked steps, then the keys left
    of it in BN-wide steps; dq scaled by ln 2 at the end (k came pre-scaled by 1/ln 2)."""
    pid = tl.program_id(0)
    start_m = pid * BM
    end_n = start_m + BM
    MBN: tl.constexpr = BN // SLICE
    offs_m = start_m + tl.arange(0, BM)
    offs_k = tl.arange(0, HD)
    q = tl.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :])
    do = tl.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :])
    dq = tl.zeros([BM, HD], dtype=tl.float32)
    m = tl.load(M + offs_m)[:, None]
    num_steps = BM // MBN
    dq = dq_steps(dq, q, K, V, do, m, D, stride_tok, BM, MBN, HD, start_m,
                  end_n - num_steps * MBN, num_steps, MASK=True)
    end_n -= num_steps * MBN
    num_steps = end_n // BN
    dq = dq_steps(dq, q, K, V, do, m, D, stride_tok, BM, BN, HD, start_m,
                  end_n - num_steps * BN, num_steps, MASK=False)
    dq *= 0.6931471824645996
    tl.store(DQ + offs_m[:, None] * stride_tok + offs_k[None, :], dq)


def case(n: int, hd: int = 64, seed: int = 0):
    """Causal attention inputs for one head (q, k, v, do: normal, as the tutorial draws them)
    and the backward's operands as its launcher prepares them: k pre-scaled by sm_scale/ln 2,
    M the rows' log2-sum-exp, D the rows' o.do; returns them with the float64 reference dq."""
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((n, hd)) * 0.5).astype(np.float16)
    k = (rng.standard_normal((n, hd)) * 0.5).astype(np.float16)
    v = (rng.standard_normal((n, hd)) * 0.5).astype(np.float16)
    do = rng.standard_normal((n, hd)).astype(np.float16)
    scale = 0.5
    qf, kf, vf, dof = (x.astype(np.float64) for x in (q, k, v, do))
    s = qf @ kf.T * scale
    s[np.triu(np.ones((n, n), bool), 1)] = -np.inf
    mx = s.max(1, keepdims=True)
    e = np.exp(s - mx)
    l = e.sum(1, keepdims=True)
    p = e / l
    o = p @ vf
    dp = dof @ vf.T
    delta = (o * dof).sum(1)
    ds = p * (dp - delta[:, None])
    ref_dq = ds @ kf * scale
    k_arg = (k.astype(np.float32) * (scale * RCP_LN2)).astype(np.float16)
    M = ((mx[:, 0] + np.log(l[:, 0])) * RCP_LN2).astype(np.float32)
    return q, k_arg, v, do, M, delta.astype(np.float32), ref_dq


def compile_dq(n: int, arch: int = 90, options: dict | None = None,
               stop_after: str = "ttgir"):
    """The dq kernel compiled for sm_`arch` with the tutorial's constants, for an n-token head,
    up to `stop_after`; returns (compiled, runtime arguments, dq array, reference dq)."""
    q, k, v, do, M, D, ref = case(n)
    dq = np.zeros_like(q)
    compiled, runtime = compile_jit(dq_kernel, [q, k, v, do, dq, M, D, q.shape[1]], CONSTS,
                                    options or OPTIONS, None, stop_after=stop_after,
                                    target={"arch": arch})
    return compiled, runtime, dq, ref


def test_no_wgmma_reads_a_buffer_that_the_next_step_overwrites():
    compiled, *_ = compile_dq(1024)
    func = compiled.ttgir_module.functions()[0]
    assert "ttng.warp_group_dot" in compiled.asm["ttgir"]
    assert wgmma_read_races(func) == []


@pytest.mark.parametrize("stages", [OPTIONS["num_stages"], 3])
@pytest.mark.parametrize("arch", [90, 80])
def test_no_async_copy_overwrites_bytes_another_warp_may_still_read(arch, stages):
    # each loop's multi-buffer reuses the bytes of the conversion scratch that broadcasts `m`
    # to the dot layout just before it; without a barrier between that scratch's reads and the
    # first prefetch (and with LLVM free to sink the reads past the copies), some warps read
    # vT data as `m` (huge dq rows on the H200 at stages 3 and 5, right at stages 1)
    compiled, *_ = compile_dq(1024, arch, {**OPTIONS, "num_stages": stages}, stop_after="ptx")
    assert "cp.async.cg.shared.global" in compiled.asm["ptx"]
    assert unbarriered_async_copies(compiled.asm["ptx"]) == []
    copies = [line for line in compiled.asm["llir"].splitlines()
              if "cp.async.c" in line and ".shared.global" in line]
    assert copies and all("~{memory}" in line for line in copies)


@pytest.mark.parametrize("arch", [90, 80])
def test_dq_matches_numpy_at_1024_tokens(arch):
    compiled, runtime, dq, ref = compile_dq(1024, arch)
    interpret(compiled.ttgir_module, (1024 // CONSTS["BM"],), runtime)
    np.testing.assert_allclose(dq.astype(np.float64), ref, atol=1e-2, rtol=0)
