"""The shared-memory round trips of tests/cpu/test_matrix_memory.py on the GPU: each tile goes
through its buffer (ldmatrix / stmatrix where the offsets map allows, vector accesses
elsewhere) and comes back exact. The `vec = 4` and kWidth 4 cases are the layouts of Triton's
test_local_load_store_dot that raised "misaligned address" / an IndexError on the H200."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_matrix_memory import CASES, NUMPY, _case_text

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_tile_comes_back_on_the_gpu(name):
    from tests.cpu.codegen_kernels import compile_ttgir
    from tests.gpu.test_codegen_gpu import launch_compiled

    case = next(c for c in CASES if c[0] == name)
    shape, ty = case[1], case[2]
    compiled = compile_ttgir(_case_text(case))
    assert ("stmatrix" in compiled.asm["ptx"]) is case[9]
    data = (np.arange(shape[0] * shape[1]) % 2048).reshape(shape).astype(NUMPY[ty])
    out = launch_compiled(compiled, (1,), [data, np.zeros_like(data)])[1].to_numpy()
    np.testing.assert_array_equal(out.reshape(shape), data)
