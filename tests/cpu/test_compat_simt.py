"""The plugin that runs Triton's .ttgir layout tests without a GPU (tests/compat_simt.py):
`triton.compile(path)` compiles through ptxas and its launch runs on the SIMT evaluator over the
CPU tensors' own memory, taking tensors or their `data_ptr()`s as Triton's tests pass them."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.compat_simt import SimulatedKernel, simulated_compile  # noqa: E402
from tests.cpu.test_ttgir_triton_forms import SCAN  # noqa: E402


def _kernel(tmp_path) -> SimulatedKernel:
    path = tmp_path / "scan.ttgir"
    path.write_text(SCAN)
    return simulated_compile(str(path))


def test_launch_runs_on_the_cpu_tensors(tmp_path):
    kernel = _kernel(tmp_path)
    assert kernel.asm["cubin"] and "scan" in kernel.asm["ptx"]
    x = np.random.RandomState(17).randint(-100, 100, (32, 16)).astype(np.int32)
    x_t, z_t = torch.tensor(x), torch.zeros((32, 16), dtype=torch.int32)
    kernel[(1, 1, 1)](x_t, z_t)
    np.testing.assert_array_equal(z_t.numpy(), np.cumsum(x, axis=1))


def test_launch_takes_data_pointers(tmp_path):
    kernel = _kernel(tmp_path)
    x_t = torch.arange(32 * 16, dtype=torch.int32).reshape(32, 16)
    z_t = torch.zeros_like(x_t)
    kernel[(1, 1, 1)](x_t.data_ptr(), z_t.data_ptr())
    np.testing.assert_array_equal(z_t.numpy(), np.cumsum(x_t.numpy(), axis=1))


def test_access_outside_the_tensors_is_refused(tmp_path):
    kernel = _kernel(tmp_path)
    small = torch.zeros(16, dtype=torch.int32)        # the kernel reads a 32x16 tile
    with pytest.raises(IndexError, match="outside the kernel's tensors"):
        kernel[(1, 1, 1)](small, torch.zeros((32, 16), dtype=torch.int32))
