"""tl.dot_scaled and the fp8 casts on the H200: the compiled kernels give what the interpreter
gives (tests/cpu/test_dot_scaled.py checks the interpreter against a numpy model)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_dot_scaled import (_fp8_cast_kernel, _reference, _scaled_kernel,
                                       random_bytes)
import compiler.language as tl

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("fa, fb, lhs_scaled", [("e2m1", "e4m3", True), ("e4m3", "e2m1", False),
                                                ("e5m2", "e5m2", True), ("e2m1", "bf16", True),
                                                ("e4m3", "fp16", True)])
@pytest.mark.parametrize("M, N, K", [(32, 32, 64), (128, 64, 128)])
def test_scaled_dot_matches_the_numpy_model_on_the_device(fa, fb, lhs_scaled, M, N, K):
    rng = np.random.default_rng(11)
    x = random_bytes(rng, (M, K // 2 if fa == "e2m1" else K), fa)
    y = random_bytes(rng, (K // 2 if fb == "e2m1" else K, N), fb)
    low, high = (120, 134) if "fp16" in (fa, fb) else (100, 150)
    sx = rng.integers(low, high, (M, K // 32), dtype=np.uint8) if lhs_scaled else None
    sy = None if lhs_scaled else rng.integers(low, high, (N, K // 32), dtype=np.uint8)
    dev = [torch.from_numpy(np.ascontiguousarray(v)).cuda() if v is not None else
           torch.zeros(1, dtype=torch.uint8, device="cuda") for v in (x, sx, y, sy)]
    out = torch.zeros((M, N), dtype=torch.float32, device="cuda")
    _scaled_kernel[(1,)](dev[0], dev[1], dev[2], dev[3], out, M, N, K, fa, fb, x.shape[1],
                         y.shape[0], sx is not None, sy is not None, False)
    want, bound = _reference(fa, fb, x, y, sx, sy)
    got = out.cpu().numpy()
    assert np.all(np.abs(got - want) <= 1e-5 * bound + 1e-30)


@pytest.mark.parametrize("fmt", [tl.float8e4nv, tl.float8e5])
@pytest.mark.parametrize("to, torch_to", [(tl.bfloat16, "bfloat16"), (tl.float32, "float32"),
                                          (tl.float16, "float16")])
def test_fp8_casts_agree_with_the_interpreter(fmt, to, torch_to):
    bits = np.arange(128, dtype=np.uint8) * 2 + 1          # odd codes: both signs' halves
    bits[::3] ^= 0x80
    finite = {tl.float8e4nv: 0x7F, tl.float8e5: 0x7C}[fmt]
    bits = np.where(bits & finite == finite, bits & 0x83, bits).astype(np.uint8)
    wide = torch.empty(128, dtype=getattr(torch, torch_to), device="cuda")
    back = torch.empty(128, dtype=torch.uint8, device="cuda")
    _fp8_cast_kernel[(1,)](torch.from_numpy(bits).cuda(), wide, back, FMT=fmt, TO=to)
    ref_wide = torch.empty(128, dtype=getattr(torch, torch_to))
    ref_back = torch.empty(128, dtype=torch.uint8)
    _fp8_cast_kernel[(1,)](torch.from_numpy(bits), ref_wide, ref_back, FMT=fmt, TO=to,
                           interpret=True)
    torch.testing.assert_close(wide.cpu(), ref_wide, rtol=0, atol=0)
    np.testing.assert_array_equal(back.cpu().numpy(), bits)
