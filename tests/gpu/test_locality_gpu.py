"""The two layout rewrites of the locality branch on the GPU: a loop-carried reduction carried as
thread-local partials (optimize-thread-locality; tests/cpu/test_thread_locality.py), and a
convert_layout that goes in rounds because its whole buffer would exceed the H200's shared
memory (tests/cpu/test_convert_rounds.py). Each is checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.codegen_kernels import compile_ttgir
from tests.cpu.mma_cases import compile_jit
from tests.cpu.test_convert_rounds import ROUND_PAIRS, _kernel
from tests.cpu.test_thread_locality import KERNELS, M, N, PROGRAMS, SM90, row_reduce_loop
from tests.gpu.test_codegen_gpu import launch_compiled

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("op", list(KERNELS))
@pytest.mark.parametrize("block_n,num_warps", [(32, 4), (128, 4), (256, 1)])
def test_loop_reduction_with_thread_local_partials_on_the_gpu(op, block_n, num_warps):
    code, init, reference = KERNELS[op]
    x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    y = np.zeros((M, PROGRAMS), dtype=np.float32)
    compiled, args = compile_jit(row_reduce_loop, [x, y, N],
                                 {"BLOCK_M": M, "BLOCK_N": block_n, "OP": code, "INIT": init},
                                 {"num_warps": num_warps}, None, stop_after=None, target=SM90)
    assert compiled.asm["ttgir"].count('"tt.reduce"') == 2
    out = launch_compiled(compiled, (1, PROGRAMS), args)[1].to_numpy()
    np.testing.assert_allclose(reference(out, axis=1), reference(x, axis=1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("pair", list(ROUND_PAIRS))
@pytest.mark.parametrize("backwards", [False, True])
def test_conversion_in_rounds_on_the_gpu(pair, backwards):
    src, dst, warps = ROUND_PAIRS[pair]
    if backwards:
        src, dst = dst, src
    compiled = compile_ttgir(_kernel(256, 256, src, dst, warps))
    assert compiled.metadata.shared <= 232448
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float16)
    out = launch_compiled(compiled, (1,), [x, np.zeros_like(x)])[1].to_numpy()
    np.testing.assert_array_equal(out, x)
