"""The launch-side parts of the GPU path that Triton's language tests exercise and the CPU tier
cannot run (tests/cpu/test_compat_gpu.py checks what they compile to): an older arch= runs
through the driver's JIT of the PTX, u64 ints pack unsigned, pinned host memory is passed,
the timer and SM id read real registers, tl.assume and cache hints keep results right."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_compat_gpu import (_copy_kernel, _named_kernel, _scale_kernel,
                                       _timer_kernel)

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("arch", ["sm80", "sm90", "sm70"])
def test_an_older_arch_runs_on_the_device(arch):
    data = torch.randn(128, device="cuda")
    out = torch.empty_like(data)
    compiled = _scale_kernel[(1,)](data, out, arch=arch)
    torch.testing.assert_close(out, data * 1.5 + 1.0)
    assert f'"cuda:{arch[2:]}"' in compiled.asm["ttgir"]


@pytest.mark.parametrize("value", [2 ** 31, 2 ** 63, 2 ** 64 - 1])
def test_large_ints_launch(value):
    x = torch.zeros(1, device="cuda")
    compiled = _named_kernel[(1,)](value, 1, x)
    assert compiled.name.startswith("kernel_")


def test_pinned_host_memory_is_passed_and_cpu_memory_refused():
    pinned = torch.zeros(1024, pin_memory=True)
    _named_kernel[(1,)](5, 1, pinned)
    with pytest.raises(ValueError, match="host array"):
        _named_kernel[(1,)](5, 1, torch.zeros(1024))


def test_globaltimer_advances_and_smid_is_read():
    out1 = torch.zeros(128, dtype=torch.int64, device="cuda")
    out2 = torch.zeros(2, dtype=torch.int64, device="cuda")
    _timer_kernel[(1,)](out1, out2)
    torch.cuda.synchronize()
    assert out2[0].item() >= 0 and 0 <= out2[1].item() < 1024
    assert (out1 == 1).all()


@pytest.mark.parametrize("load, store, evict", [(".ca", ".cs", ""), (".cg", ".wt", ""),
                                                ("", "", "evict_last")])
def test_cache_hints_keep_the_copy_exact(load, store, evict):
    src = torch.randn(128, device="cuda")
    dst = torch.empty_like(src)
    _copy_kernel[(1,)](dst, src, LOAD=load, STORE=store, EVICT=evict, num_warps=1)
    np.testing.assert_array_equal(dst.cpu().numpy(), src.cpu().numpy())


def test_cooperative_launch_runs_and_an_oversized_grid_is_refused():
    from compiler.runtime import driver
    from compiler.runtime.errors import OutOfResources

    src = torch.randn(128, device="cuda")
    dst = torch.empty_like(src)
    _copy_kernel[(2,)](dst, src, LOAD="", STORE="", EVICT="", num_warps=4,
                       launch_cooperative_grid=True)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(dst.cpu().numpy(), src.cpu().numpy())
    sms = driver.device_attribute("MULTIPROCESSOR_COUNT")
    with pytest.raises(OutOfResources, match="cooperative launch"):
        _copy_kernel[(sms * 64 + 1,)](dst, src, LOAD="", STORE="", EVICT="", num_warps=4,
                                      launch_cooperative_grid=True)
