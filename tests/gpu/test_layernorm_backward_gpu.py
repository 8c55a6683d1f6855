"""Layer norm's backward in the shape of Triton's tutorial 05 (tests/cpu/layernorm_kernels.py) on
the GPU, against torch's autograd: the spin-locked dw/db partial sums (many rows per lock at the
benchmark's M=4096, so the lock really contends), the column sums and dx, at the tutorial's
block sizes; and the looped forward.

    TILE_REQUIRE_GPU=1 python -m pytest -q tests/gpu/test_layernorm_backward_gpu.py
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.layernorm_kernels import backward, ln_forward

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
DTYPES = {np.dtype(np.float16): torch.float16, np.dtype(np.int32): torch.int32}


def _alloc(factory):
    return lambda shape, dtype: factory(shape, dtype=DTYPES[np.dtype(dtype)], device="cuda")


def _torch_reference(x, w, b, dy, eps=1e-5):
    """(dx, dw, db, mean, rstd) of torch's layer norm, in float32."""
    x32 = x.float().requires_grad_(True)
    w32 = w.float().requires_grad_(True)
    b32 = b.float().requires_grad_(True)
    y = torch.nn.functional.layer_norm(x32, (x.shape[1],), w32, b32, eps)
    y.backward(dy.float())
    var, mean = torch.var_mean(x.float(), dim=1, unbiased=False)
    return x32.grad, w32.grad, b32.grad, mean, 1 / torch.sqrt(var + eps)


@pytest.mark.parametrize("rows,n", [(4096, 15872), (4096, 4096), (1151, 8192), (300, 1000)])
def test_backward_matches_torch(rows, n):
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = -2.3 + 0.5 * torch.randn((rows, n), generator=gen, device="cuda", dtype=torch.float16)
    w = torch.rand((n,), generator=gen, device="cuda", dtype=torch.float16)
    b = torch.rand((n,), generator=gen, device="cuda", dtype=torch.float16)
    dy = 0.1 * torch.randn((rows, n), generator=gen, device="cuda", dtype=torch.float16)
    dx_ref, dw_ref, db_ref, mean, rstd = _torch_reference(x, w, b, dy)
    dx, dw, db = backward(x, w, dy, mean.contiguous(), rstd.contiguous(),
                          _alloc(torch.zeros), _alloc(torch.empty))
    torch.cuda.synchronize()
    torch.testing.assert_close(dx.float(), dx_ref, atol=1e-2, rtol=0)
    # dw/db add up to `rows // groups` fp16 partial sums per column, like the tutorial's
    scale = max(1.0, float(db_ref.abs().max()))
    torch.testing.assert_close(db.float(), db_ref, atol=1e-2 * scale, rtol=1e-2)
    torch.testing.assert_close(dw.float(), dw_ref, atol=1e-2 * scale, rtol=1e-2)


def test_looped_forward_matches_torch():
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows, n = 512, 15872
    x = torch.randn((rows, n), generator=gen, device="cuda", dtype=torch.float16)
    w = torch.rand((n,), generator=gen, device="cuda", dtype=torch.float16)
    b = torch.rand((n,), generator=gen, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    mean = torch.empty((rows,), device="cuda", dtype=torch.float32)
    rstd = torch.empty_like(mean)
    ln_forward[(rows,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=4096, num_warps=8)
    expected = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
    torch.testing.assert_close(y.float(), expected, atol=1e-2, rtol=0)
    var, mean_ref = torch.var_mean(x.float(), dim=1, unbiased=False)
    torch.testing.assert_close(mean, mean_ref, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(rstd, 1 / torch.sqrt(var + 1e-5), atol=1e-3, rtol=1e-3)
