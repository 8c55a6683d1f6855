"""The broadcast-product matmul of Triton's test_dot_mulbroadcasted on the GPU (x 256x160,
y 160x192, blocks 128x32x32, 4 warps, 2-4 stages): combine makes its sum of products an ieee
FMA `tt.dot`, whose loads the pipeliner copies by cp.async, one group per copy, each step waiting
for its own two (`ttg.async_wait %x, %y {num = 2 : i32}` with 3 stages); z against numpy, and
the launch handle's ttir and ttgir checked as that test checks them."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.cpu.test_pipeline_fma_dot import BLOCKS, broadcast_product_matmul

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("stages,num", [(3, 2), (2, 0), (4, 4)])
def test_broadcast_product_matmul_matches_numpy(stages, num):
    from compiler.runtime.arrays import to_device, to_host
    m, n, k = 256, 192, 160
    rng = np.random.RandomState(17)
    x = (rng.standard_normal((m, k)) * 0.1).astype(np.float32)
    y = (rng.standard_normal((k, n)) * 0.1).astype(np.float32)
    z = to_device(rng.standard_normal((m, n)).astype(np.float32))    # every element written
    grid = (m // BLOCKS["BM"], n // BLOCKS["BN"])
    handle = broadcast_product_matmul[grid](to_device(x), to_device(y), z, m, n, k, **BLOCKS,
                                            num_stages=stages)
    # products in fp32 (ieee), only the order of the sums differs from numpy's
    np.testing.assert_allclose(to_host(z), x @ y, atol=1e-5, rtol=1e-5)
    assert "tt.dot" in handle.asm["ttir"]
    assert re.search(rf"ttg.async_wait %.* {{num = {num} : i32}}", handle.asm["ttgir"])
    assert "cp.async.cg.shared.global" in handle.asm["ptx"]
