"""sample_kernels/matmul.py's autotuned matmul on the GPU (issue 10): fp16, bf16 and fp8 e4m3
against torch, on shapes that are not multiples of any tutorial tile."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype_name,shape", [("float16", (1000, 1100, 300)),
                                              ("bfloat16", (777, 515, 256)),
                                              ("float8_e4m3fn", (640, 1000, 384))])
def test_tuned_matmul_against_torch(dtype_name, shape):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    from sample_kernels.matmul import matmul_kernel_fp8, matmul_kernel_fp16, tuned_matmul

    dtype = getattr(torch, dtype_name)
    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(k)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=gen).to(dtype)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=gen).to(dtype)
    c = tuned_matmul(a, b)
    fp8 = "float8" in dtype_name
    assert c.dtype == (torch.float16 if fp8 else dtype) and c.shape == (m, n)
    expected = a.float() @ b.float()
    tol = (8e-2 if dtype_name == "bfloat16" else 2e-2) * k ** 0.5
    assert (c.float() - expected).abs().max().item() <= tol
    tuned = matmul_kernel_fp8 if fp8 else matmul_kernel_fp16
    assert tuned.best_config is not None
