"""The interpreter on a GPU host, as Triton's interpreter runs there: `driver.active` stays the
CUDA driver while kernels are interpreted (TILE_INTERPRET=1), its torch device is CUDA, and an
interpreted launch takes CUDA tensors (staged through host memory) and writes its results
back to them. The layer-norm-style fp16 partial sums checked here are what tutorial 05
compares against torch's CUDA reference (which, unlike torch's CPU fp16 backward, accumulates
in fp32)."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def test_driver_stays_cuda_while_interpreting(monkeypatch):
    from compiler.runtime import active_driver
    monkeypatch.setenv("TILE_INTERPRET", "1")
    active_driver.active.cache_clear()
    try:
        driver = active_driver.active()
        assert isinstance(driver, active_driver.CudaDriver)
        assert driver.get_active_torch_device().type == "cuda"
        assert driver.get_current_target().arch >= 90
    finally:
        active_driver.active.cache_clear()


@triton.jit
def partial_sums_kernel(DY, DB, GROUPS: tl.constexpr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    dy = tl.load(DY + row * N + cols).to(tl.float32)
    slot = DB + (row % GROUPS) * N + cols
    tl.store(slot, tl.load(slot) + dy.to(tl.float16))          # fp16 partial sums


def test_interpreted_launch_on_cuda_tensors_writes_them_back():
    m, n, groups = 300, 256, 16
    dy = (0.1 * torch.randn(m, n, device="cuda")).half()
    partial = torch.zeros(groups, n, dtype=torch.float16, device="cuda")
    partial_sums_kernel[(m,)](dy, partial, GROUPS=groups, N=n, interpret=True)
    assert partial.device.type == "cuda"
    expected = torch.zeros(groups, n, dtype=torch.float16)
    host = dy.cpu()
    for r in range(m):                       # the same fp16 additions, in launch order
        expected[r % groups] += host[r]
    np.testing.assert_array_equal(partial.cpu().numpy(), expected.numpy())
    total = partial.float().sum(0)
    torch.testing.assert_close(total, dy.float().sum(0), atol=1e-2, rtol=0)
