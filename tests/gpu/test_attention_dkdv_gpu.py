"""Tutorial 06's backward dK/dV loop on the H200 with the tutorial's launch constants (4 warps,
5 stages, BLOCK_M1 32, BLOCK_N1 128, BLK_SLICE_FACTOR 2) against the float64 reference of
tests/cpu/test_attention_dkdv.py: Q^T copied once into a ring read directly and transposed,
M and Delta copied into rings of their own and read back from shared memory."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_attention_dkdv import CONSTS, OPTIONS, dkdv_kernel, references

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("stages", [OPTIONS["num_stages"], 3, 1])
@pytest.mark.parametrize("n", [1024, 2048])
def test_dk_dv_against_reference(n, stages):
    inputs, ref_dk, ref_dv = references(n)
    q, k, v, do, M, D = (torch.from_numpy(a).cuda() for a in inputs)
    dk, dv = torch.zeros_like(q), torch.zeros_like(q)
    kernel = dkdv_kernel[(n // CONSTS["BN"],)](q, k, v, do, dk, dv, M, D, q.shape[1], **CONSTS,
                                               num_warps=OPTIONS["num_warps"],
                                               num_stages=stages)
    torch.cuda.synchronize()
    assert "wgmma.mma_async" in kernel.asm["ptx"]
    np.testing.assert_allclose(dv.double().cpu().numpy(), ref_dv, atol=2e-2, rtol=0)
    np.testing.assert_allclose(dk.double().cpu().numpy(), ref_dk, atol=2e-2, rtol=0)
