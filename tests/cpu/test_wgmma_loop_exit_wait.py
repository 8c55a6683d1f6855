"""A loop that leaves its wgmma groups in flight waits on its exit path, before the path that
skips the loop joins it (compiler.codegen.lower_control). Before, the join came first: the
skipping path's zero accumulators were set in a block that ptxas lays out between the loop's
wgmmas and their wait, and ptxas serialized every wgmma of the loop (warning C7515). Found on
Triton's tutorial 06 `_attn_fwd_tma`; `flash_tma_kernel` below is our own kernel of that shape
(descriptor loads in a loop of its own function, q k^T then p v with the accumulator in flight
at the loop's exit)."""
from __future__ import annotations

import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.toolchain import find_tool
from tests.cpu.test_tensor_descriptors import _attend_block

torch = pytest.importorskip("torch")
needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


@triton.jit
def flash_tma_kernel(sm_scale, Out_m, desc_q, desc_k, desc_v, desc_o, N_CTX,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     PREFIX: tl.constexpr = False):
    """Flash attention over rows [0, N_CTX) of each head (the online-softmax loop of
    tests/cpu/test_tensor_descriptors.py), or with PREFIX over the key blocks before the
    query block only (the first query block skips the loop)."""
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N_CTX
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = start_m * BLOCK_M if PREFIX else N_CTX
    acc, l_i, m_i = _attend_block(acc, l_i, m_i, q, desc_k, desc_v, row0, hi,
                                  sm_scale * 1.44269504, BLOCK_N)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(Out_m + tl.program_id(1) * N_CTX + offs_m, m_i + tl.math.log2(l_i))
    desc_o.store([row0 + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


def descriptors(tensors, head_dim, block_m, block_n):
    """Host descriptors over [rows, head_dim] views, in the kernel's argument order."""
    from compiler.tools.tensor_descriptor import TensorDescriptor
    q, k, v, o = tensors
    return [TensorDescriptor(t, shape=[t.shape[0], head_dim], strides=[head_dim, 1],
                             block_shape=[rows, head_dim])
            for t, rows in ((q, block_m), (k, block_n), (v, block_n), (o, block_m))]


@needs_ptxas
@pytest.mark.parametrize("head_dim,block_m,block_n", [(64, 128, 64), (128, 64, 64)])
@pytest.mark.parametrize("prefix", [False, True])
def test_in_flight_loop_keeps_its_wgmma_chains(head_dim, block_m, block_n, prefix):
    rows = 2 * 1024
    tensors = [torch.empty((rows, head_dim), dtype=torch.float16) for _ in range(4)]
    out_m = torch.empty(rows, dtype=torch.float32)
    kernel = flash_tma_kernel.warmup(0.5, out_m, *descriptors(tensors, head_dim, block_m, block_n),
                                     1024, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                                     PREFIX=prefix, num_warps=4, num_stages=3, grid=(1,))
    report = kernel.trace.cubin_info["report"]
    assert "wgmma" in kernel.asm["ptx"]
    assert "C7515" not in report, report
    ptx = kernel.asm["ptx"]
    # the loop's exit path waits before the join: two waits after the last commit
    tail = ptx[ptx.rindex("wgmma.commit_group"):]
    assert tail.count("wgmma.wait_group.sync.aligned 0") >= 2
