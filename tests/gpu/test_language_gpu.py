"""tl.inline_asm_elementwise on the GPU (the interpreter refuses it, so numpy is the reference);
the other new tl.* functions run on the GPU against the interpreter through the zoo
(tests/zoo/language.py, tests/gpu/test_kernels_gpu.py)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_language_functions import inline_asm_kernel, inline_asm_packed_kernel

pytestmark = pytest.mark.gpu


def test_inline_asm_funnel_shift_matches_numpy():
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    out = DeviceArray.from_numpy(np.zeros(256, np.uint32))
    inline_asm_kernel[(1,)](DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), out,
                            BLOCK=256, interpret=False)
    driver.synchronize()
    wide = (y.astype(np.uint64) << np.uint64(32)) | x.astype(np.uint64)
    expected = ((wide << np.uint64(8)) >> np.uint64(32)).astype(np.uint32)
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_packed_inline_asm_shifts_four_bytes_at_once():
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    x = np.random.default_rng(12).integers(0, 256, 512).astype(np.uint8)
    y = DeviceArray.from_numpy(np.zeros(512, np.uint8))
    inline_asm_packed_kernel[(1,)](DeviceArray.from_numpy(x), y, BLOCK=512, interpret=False)
    driver.synchronize()
    np.testing.assert_array_equal(y.to_numpy(), (x << 3).astype(np.uint8))
