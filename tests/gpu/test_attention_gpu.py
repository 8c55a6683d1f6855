"""The tutorial-style flash-attention forward (tests/cpu/test_attention_simt.py) on the GPU:
causal and not, head dims 64 and 128, sequence lengths that are not a multiple of the block,
against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_attention_simt import _reference, attention_fwd

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_ctx,head_dim,block_m,num_warps", [(1000, 64, 64, 4),
                                                              (777, 128, 64, 4),
                                                              (1024, 64, 128, 8)])
def test_attention_forward_on_the_gpu(n_ctx, head_dim, block_m, num_warps, causal):
    from compiler.runtime.arrays import empty_like, to_device, to_host
    rng = np.random.default_rng(n_ctx + head_dim)
    q, k, v = (rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = empty_like(q)
    scale = float(1.0 / np.sqrt(head_dim))
    grid = (-(-n_ctx // block_m),)
    attention_fwd[grid](to_device(q), to_device(k), to_device(v), o, n_ctx, scale,
                        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=64, CAUSAL=causal,
                        num_warps=num_warps)
    np.testing.assert_allclose(to_host(o).astype(np.float32), _reference(q, k, v, scale, causal),
                               atol=3e-3, rtol=1e-2)
