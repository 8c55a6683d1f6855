"""fp8 dots too small for wgmma (2 warps) run on FMA on the H200: values against torch
(tests/cpu/test_fp8_casts.py checks their PTX and that ptxas takes it)."""
from __future__ import annotations

import pytest

from tests.cpu.test_fp8_casts import fp8_dot_kernel

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("m,n,k", [(64, 32, 32), (32, 64, 32)])
def test_fp8_fma_dot_matches_torch(dtype, m, n, k):
    torch.manual_seed(m + n)
    fp8 = getattr(torch, dtype)
    a = torch.randn(m, k, device="cuda").to(fp8)
    b = torch.randn(k, n, device="cuda").to(fp8)
    c = torch.empty(m, n, device="cuda", dtype=torch.float32)
    fp8_dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, ACC=None, num_warps=2)
    ref = a.double() @ b.double()
    assert (c.double() - ref).abs().max().item() <= 1e-2 * (1 + ref.abs().max().item())
