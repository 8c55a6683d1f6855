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


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_tuned_attention_sample_against_torch(head_dim, causal):
    import numpy as np

    from compiler.runtime.arrays import to_device, to_host
    from sample_kernels.attention import (attention_kernel_tuned, reference, torch_reference,
                                          tuned_attention)
    shape = (1, 2, 1000, head_dim)
    rng = np.random.default_rng(head_dim + causal)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    sm_scale = float(1.0 / np.sqrt(head_dim))
    o = to_host(tuned_attention(to_device(q), to_device(k), to_device(v), shape, causal,
                                sm_scale)).astype(np.float32)
    expected = torch_reference(q, k, v, causal, sm_scale)
    if expected is None:
        expected = reference(q, k, v, causal, sm_scale)
    np.testing.assert_allclose(o, expected, atol=3e-3, rtol=1e-2)
    assert attention_kernel_tuned.best_config is not None
