"""On the GPU: double-precision math through libdevice (values against numpy at libdevice's
accuracy), and the warp-shuffle gather (against numpy, bit exact). CPU tests check the code
shape (tests/cpu/test_libdevice_fp64.py, tests/cpu/test_gather_warp_shuffle.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl

pytestmark = pytest.mark.gpu

#: numpy's function per WHICH of the kernel below, in order
FUNCTIONS = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "exp2": np.exp2,
             "log2": np.log2, "erf": np.vectorize(math.erf)}


@triton.jit
def _fp64_math(x_ptr, out_ptr, WHICH: tl.constexpr):
    offs = tl.arange(0, 256)
    x = tl.load(x_ptr + offs)
    if WHICH == 0:
        y = tl.exp(x)
    elif WHICH == 1:
        y = tl.log(x)
    elif WHICH == 2:
        y = tl.sin(x)
    elif WHICH == 3:
        y = tl.cos(x)
    elif WHICH == 4:
        y = tl.exp2(x)
    elif WHICH == 5:
        y = tl.log2(x)
    else:
        y = tl.math.erf(x)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("which, name", list(enumerate(FUNCTIONS)))
def test_fp64_math_is_libdevice_accurate(which, name):
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    x = np.random.default_rng(which).uniform(0.01, 20.0, 256)
    out = DeviceArray.from_numpy(np.zeros(256, np.float64))
    _fp64_math[(1,)](DeviceArray.from_numpy(x), out, WHICH=which, interpret=False)
    driver.synchronize()
    np.testing.assert_allclose(out.to_numpy(), FUNCTIONS[name](x), rtol=1e-14, atol=1e-15)


def test_warp_shuffle_gather_is_exact(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs torch with CUDA")
    from tests.cpu.test_gather_warp_shuffle import IDX, IDX_REG_LANE, _gather_ttgir
    for layout in (IDX, IDX_REG_LANE):
        path = tmp_path / "gather.ttgir"
        path.write_text(_gather_ttgir(layout))
        kernel = triton.compile(str(path))
        assert "nvvm.shfl.sync.idx" in kernel.asm["llir"]
        src = torch.randn(32, 16, device="cuda")
        idx = torch.randint(0, 32, (32, 16), device="cuda", dtype=torch.int32)
        out = torch.zeros(32, 16, device="cuda")
        kernel[(1, 1, 1)](src, idx, out)
        torch.testing.assert_close(out, torch.gather(src, 0, idx.long()), rtol=0, atol=0)
