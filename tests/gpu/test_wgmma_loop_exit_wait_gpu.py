"""The in-flight-wgmma loop of tests/cpu/test_wgmma_loop_exit_wait.py on the H200: values
against torch; with PREFIX each query block attends to the key blocks before it, so the first
block's programs skip the loop (the guarded path: zero output) while the others run it."""
from __future__ import annotations

import pytest

from tests.cpu.test_wgmma_loop_exit_wait import descriptors, flash_tma_kernel

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("head_dim,block_m,block_n", [(64, 128, 64), (128, 64, 64)])
@pytest.mark.parametrize("n_ctx", [256, 1024])
@pytest.mark.parametrize("prefix", [False, True])
def test_in_flight_loop_matches_torch(head_dim, block_m, block_n, n_ctx, prefix):
    torch.manual_seed(n_ctx + head_dim)
    heads = 3
    q, k, v = (torch.randn(heads * n_ctx, head_dim, device="cuda", dtype=torch.float16)
               for _ in range(3))
    o = torch.empty_like(q)
    out_m = torch.empty(heads * n_ctx, device="cuda", dtype=torch.float32)
    scale = head_dim ** -0.5
    flash_tma_kernel[(n_ctx // block_m, heads)](
        scale, out_m, *descriptors((q, k, v, o), head_dim, block_m, block_n), n_ctx,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, PREFIX=prefix, num_warps=4,
        num_stages=3)
    rows = torch.arange(n_ctx, device="cuda")
    allowed = (rows[None, :] < (rows[:, None] // block_m) * block_m) if prefix else \
        torch.ones(n_ctx, n_ctx, dtype=torch.bool, device="cuda")
    scores = (q.view(heads, n_ctx, head_dim).float() @
              k.view(heads, n_ctx, head_dim).float().transpose(1, 2)) * scale
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    ref = weights @ v.view(heads, n_ctx, head_dim).float()
    assert (o.view(heads, n_ctx, head_dim).float() - ref.float()).abs().max().item() < 2e-2
