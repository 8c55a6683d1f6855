"""On the H200: a broadcast multiply summed over K, which combine makes a tt.dot (ieee, the
FMA path), against float64 numpy; and a device function returning on one path of a runtime
`if` (ub.poison on the other) whose returning path still stores its value."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_pass_combine import matmul_by_sum, mul_sum_case
from tests.cpu.test_runtime_locals import _stores_first, _stores_maybe

pytestmark = pytest.mark.gpu


def _run(kernel, grid, *arrays, **constexprs):
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    device = [DeviceArray.from_numpy(a) for a in arrays]
    compiled = kernel[grid](*device, **constexprs, interpret=False)
    driver.synchronize()
    return compiled, [d.to_numpy() for d in device]


@pytest.mark.parametrize("m, k, n", [(32, 16, 32), (64, 32, 16)])
def test_multiply_sum_as_dot_matches_numpy(m, k, n):
    x, y, ref = mul_sum_case(m, k, n)
    compiled, (_, _, z) = _run(matmul_by_sum, (1,), x, y, np.zeros((m, n), np.float32),
                               M=m, K=k, N=n)
    assert "tt.dot" in compiled.asm["ttir"]
    np.testing.assert_allclose(z, ref, rtol=1e-4, atol=1e-4)


def test_returning_path_of_a_poison_return_stores_its_value():
    _, (x,) = _run(_stores_first, (3,), np.array([10, 20, 30], np.int32))
    np.testing.assert_array_equal(x, [11, 20, 30])
    compiled, _ = _run(_stores_maybe, (1,), np.zeros(1, np.int32))
    assert "poison" in compiled.asm["llir"]
