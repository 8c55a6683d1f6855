"""Tutorial 06's backward dq loop on the H200 with the tutorial's launch constants (4 warps,
5 stages, BLOCK_M2 128, BLOCK_N2 32, BLK_SLICE_FACTOR 2) at N=1024, against the float64
reference of tests/cpu/test_attention_dq.py: the shape whose dq came out wrong when its last
wgmma stayed in flight over a buffer that the next step overwrote."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_attention_dq import CONSTS, OPTIONS, case, dq_kernel

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("stages", [OPTIONS["num_stages"], 3, 1])
@pytest.mark.parametrize("n", [1024, 2048])
def test_dq_against_reference(n, stages):
    q, k, v, do, M, D, ref = (torch.from_numpy(a).cuda() if a.dtype != np.float64 else a
                              for a in case(n))
    dq = torch.zeros_like(q)
    kernel = dq_kernel[(n // CONSTS["BM"],)](q, k, v, do, dq, M, D, q.shape[1], **CONSTS,
                                             num_warps=OPTIONS["num_warps"], num_stages=stages)
    torch.cuda.synchronize()
    assert "wgmma.mma_async" in kernel.asm["ptx"]
    np.testing.assert_allclose(dq.double().cpu().numpy(), ref, atol=1e-2, rtol=0)
