"""sample_kernels/attention.py (Triton tutorial 06's flash-attention forward: batched, strided)
on the GPU: causal and not, head dims 64 and 128, sequence lengths that are not a multiple of
the block, against torch's scaled_dot_product_attention (numpy when torch has no CUDA)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("shape,block_m,block_n,num_warps", [((1, 1, 1000), 64, 64, 4),
                                                             ((2, 3, 777), 64, 64, 4),
                                                             ((1, 2, 1024), 128, 64, 8),
                                                             ((1, 2, 333), 128, 64, 8)])
def test_attention_sample_against_torch(shape, head_dim, causal, block_m, block_n, num_warps):
    from sample_kernels.attention import check
    check(shape + (head_dim,), causal, block_m, block_n, num_warps, seed=head_dim)
