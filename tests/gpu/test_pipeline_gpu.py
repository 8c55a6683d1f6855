"""The software-pipelined (cp.async, num_stages) sample matmul on the GPU against numpy: sizes
whose strides allow 16-byte copies but whose M, N, K are not multiples of the block, with 2-4
stages and 4 or 8 warps, plus odd strides (too narrow for cp.async: left unpipelined)."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
from sample_kernels.matmul import matmul_kernel
from tests.cpu.mma_cases import compile_jit

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("m,n,k,blocks,num_warps,num_stages", [
    (300, 272, 208, (128, 128, 64), 4, 3),
    (300, 272, 208, (128, 128, 64), 8, 3),
    (257, 528, 176, (128, 256, 64), 8, 3),
    (129, 512, 80, (64, 64, 32), 4, 4),
    (129, 512, 80, (64, 64, 32), 4, 2),
    (1024, 1024, 1024, (128, 128, 64), 4, 3),
    (77, 93, 61, (32, 32, 32), 4, 3),
])
def test_pipelined_matmul_matches_numpy(m, n, k, blocks, num_warps, num_stages):
    from compiler.runtime.arrays import empty_like, to_device, to_host
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bm, bn, bk = blocks
    meta = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}
    options = {"num_warps": num_warps, "num_stages": num_stages}
    compiled, _ = compile_jit(matmul_kernel, [a, b, np.zeros((m, n), np.float16), m, n, k, k, 1,
                                              n, 1, n, 1], meta, options, None, stop_after=None)
    if k % 8 == 0 and n % 8 == 0:     # 16-byte rows: pipelined with 16-byte cp.async
        assert "ttg.async_copy_global_to_local" in compiled.asm["ttgir"]
        assert "cp.async.cg.shared.global" in compiled.asm["ptx"]
    else:                              # 2-byte accesses: left as synchronous loads
        assert "ttg.async_copy_global_to_local" not in compiled.asm["ttgir"]
    c = empty_like(np.empty((m, n), dtype=np.float16))
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](to_device(a), to_device(b), c, m, n, k, k, 1, n, 1, n, 1, **meta,
                        **options)
    expected = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(to_host(c).astype(np.float32), expected, rtol=2e-3,
                               atol=2e-3 * np.sqrt(k) * 4)
