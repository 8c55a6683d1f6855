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

#: numpy's function per output row of the kernel below, in order
FUNCTIONS = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "exp2": np.exp2,
             "log2": np.log2, "erf": np.vectorize(math.erf)}


@triton.jit
def _fp64_math(x_ptr, out_ptr):
    offs = tl.arange(0, 256)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.exp(x))
    tl.store(out_ptr + 256 + offs, tl.log(x))
    tl.store(out_ptr + 512 + offs, tl.sin(x))
    tl.store(out_ptr + 768 + offs, tl.cos(x))
    tl.store(out_ptr + 1024 + offs, tl.exp2(x))
    tl.store(out_ptr + 1280 + offs, tl.log2(x))
    tl.store(out_ptr + 1536 + offs, tl.math.erf(x))


def test_fp64_math_is_libdevice_accurate():
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    x = np.random.default_rng(7).uniform(0.01, 20.0, 256)
    out = DeviceArray.from_numpy(np.zeros((len(FUNCTIONS), 256), np.float64))
    _fp64_math[(1,)](DeviceArray.from_numpy(x), out, interpret=False)
    driver.synchronize()
    for row, (name, reference) in zip(out.to_numpy(), FUNCTIONS.items()):
        np.testing.assert_allclose(row, reference(x), rtol=1e-14, atol=1e-15, err_msg=name)


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
