"""Tensor-core dots on the GPU: the zoo's fp16/bf16 dot kernels and the sample matmul at awkward
sizes (128x128x64 tiles with 4 and 8 warps, and smaller tiles), compiled with the default
pipeline (which moves them onto mma.sync m16n8k16), against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from sample_kernels.matmul import matmul, matmul_kernel
from tests.cpu.mma_cases import compile_jit
from tests.kernels_zoo import BY_NAME, check_outputs, make_case, run_gpu, zoo_seed

pytestmark = pytest.mark.gpu

ZOO_DOTS = ["dot_f16", "dot_trans_b", "matmul_f32_bf16", "matmul_block16", "matmul_block32"]


@pytest.mark.parametrize("draw", [0, 1])
@pytest.mark.parametrize("name", ZOO_DOTS)
def test_zoo_dots_on_tensor_cores(name, draw):
    entry = BY_NAME[name]
    seed = zoo_seed(name) + draw
    case = make_case(entry, seed)
    compiled, _ = compile_jit(entry.kernel, case.fresh_args(), case.constexprs, case.options,
                              None, stop_after=None)
    assert "mma.sync.aligned.m16n8k16" in compiled.asm["ptx"], name
    check_outputs(run_gpu(entry, case), case.expected, entry.gpu,
                  f"{name}: GPU vs numpy (seed {seed})")


@pytest.mark.parametrize("m,n,k,blocks,num_warps", [
    (300, 277, 190, (128, 128, 64), 4),
    (300, 277, 190, (128, 128, 64), 8),
    (129, 513, 71, (64, 64, 32), 4),
    (1000, 1000, 1000, (128, 128, 64), 8),
])
def test_sample_matmul_at_awkward_sizes(m, n, k, blocks, num_warps):
    from compiler.runtime.arrays import to_device, to_host
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bm, bn, bk = blocks
    compiled, _ = compile_jit(matmul_kernel, [a, b, np.zeros((m, n), np.float16), m, n, k, k, 1,
                                              n, 1, n, 1],
                              {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                               "GROUP_SIZE_M": 8}, {"num_warps": num_warps}, None,
                              stop_after=None)
    assert "mma.sync.aligned.m16n8k16" in compiled.asm["ptx"]
    c = to_host(matmul(to_device(a), to_device(b), m, n, k, block_m=bm, block_n=bn, block_k=bk,
                       group_m=8, num_warps=num_warps))
    expected = a.astype(np.float32) @ b.astype(np.float32)
    # fp16 output of fp32 sums: one fp16 rounding (2^-11 relative) of values up to ~4 sqrt(k)
    np.testing.assert_allclose(c.astype(np.float32), expected, rtol=2e-3,
                               atol=2e-3 * np.sqrt(k) * 4)
