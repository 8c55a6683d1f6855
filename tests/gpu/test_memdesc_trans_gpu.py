"""Transposed wgmma operands read through `ttg.memdesc_trans` views on the H200: tutorial 06's
shape (`k = desc_k.load(...).T`, K and V both in TMA rings) against numpy at the configs whose
registers the view cut (D128 64x64 and D64 128x64, 4 warps), and a pointer-loaded b^T matmul
and a^T matmul (f16 read M-major, tf32 K-major; cp.async rings, the view feeding wgmma) against
torch."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_memdesc_trans import _matmul_view
from tests.cpu.test_tensor_descriptors import _attention_desc, _reference

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n_ctx,head_dim,block_m,block_n", [(1000, 128, 64, 64),
                                                            (4096, 64, 128, 64)])
def test_attention_with_k_read_through_a_view(n_ctx, head_dim, block_m, block_n):
    from compiler.tools.tensor_descriptor import TensorDescriptor
    rng = np.random.default_rng(head_dim)
    host = [rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3)]
    q, k, v = (torch.from_numpy(a).cuda() for a in host)
    o = torch.zeros_like(q)
    descs = [TensorDescriptor.from_tensor(t, [b, head_dim])
             for t, b in ((q, block_m), (k, block_n), (v, block_n), (o, block_m))]
    scale = float(1 / np.sqrt(head_dim))
    kernel = _attention_desc[(-(-n_ctx // block_m), 1)](
        scale, *descs, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=4, num_stages=3, tma=True)
    np.testing.assert_allclose(o.float().cpu().numpy(), _reference(*host, scale), atol=3e-3,
                               rtol=1e-2)
    assert "ttg.memdesc_trans" in kernel.asm["ttgir"]


@pytest.mark.parametrize("k", [128, 512])
def test_pointer_loaded_b_transposed_matmul(k):
    torch.manual_seed(k)
    a = torch.randn(64, k, dtype=torch.float16, device="cuda")
    bt = torch.randn(64, k, dtype=torch.float16, device="cuda")
    c = torch.zeros(64, 64, dtype=torch.float32, device="cuda")
    _matmul_view[(1,)](a, bt, c, k, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, A_TRANSPOSED=False,
                       num_warps=4, num_stages=3)
    torch.testing.assert_close(c, a.float() @ bt.float().T, rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", ["float16", "float32"], ids=["f16", "tf32"])
def test_a_transposed_matmul(dtype):
    torch.manual_seed(5)
    dt = getattr(torch, dtype)
    at = torch.randn(256, 64, dtype=dt, device="cuda")
    b = torch.randn(256, 64, dtype=dt, device="cuda")
    c = torch.zeros(64, 64, dtype=torch.float32, device="cuda")
    _matmul_view[(1,)](at, b, c, 256, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, A_TRANSPOSED=True,
                       num_warps=4, num_stages=3)
    torch.testing.assert_close(c, at.float().T @ b.float(), rtol=1e-2, atol=2e-1)
