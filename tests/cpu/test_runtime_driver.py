"""The driver layer on a machine without a usable GPU: everything imports, `gpu_available()`
answers False without raising, and every other entry point fails with a clear error."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from compiler.runtime import driver
from compiler.runtime.device_array import DeviceArray

ROOT = Path(__file__).resolve().parents[2]
no_gpu_only = pytest.mark.skipif(driver.gpu_available(), reason="this machine has a GPU")


def test_gpu_available_is_a_cached_bool():
    first = driver.gpu_available()
    assert isinstance(first, bool)
    assert driver.gpu_available() is first


def test_check_returns_values_and_raises_named_errors():
    cu = driver.bindings()
    assert driver.check((cu.CUresult.CUDA_SUCCESS,), "cuA") is None
    assert driver.check((cu.CUresult.CUDA_SUCCESS, 7), "cuB") == 7
    assert driver.check((cu.CUresult.CUDA_SUCCESS, 1, 2), "cuC") == (1, 2)
    with pytest.raises(driver.CudaError) as info:
        driver.check((cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAlloc(1 GB)")
    err = info.value
    assert err.call == "cuMemAlloc(1 GB)" and err.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert err.code == int(cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY)
    assert str(err).startswith("cuMemAlloc(1 GB) failed: CUDA_ERROR_OUT_OF_MEMORY (")


def test_stream_handles_from_every_kind_of_stream():
    assert driver.stream_handle(None) == 0
    assert driver.stream_handle(42) == 42
    assert driver.stream_handle(types.SimpleNamespace(cuda_stream=9)) == 9
    assert driver.stream_handle(driver.bindings().CUstream(0)) == 0
    with pytest.raises(TypeError, match="cannot use str as a CUDA stream"):
        driver.stream_handle("stream")


@no_gpu_only
def test_calls_without_a_gpu_raise_cuda_unavailable():
    with pytest.raises(driver.CudaUnavailable):
        driver.device_count()
    with pytest.raises(driver.CudaUnavailable):
        driver.context()
    with pytest.raises(driver.CudaUnavailable):
        driver.load_module(".version 8.0\n.target sm_90\n")
    with pytest.raises(driver.CudaUnavailable):
        driver.mem_alloc(1024)
    with pytest.raises(driver.CudaUnavailable):
        DeviceArray.zeros((4,))


def test_zero_byte_operations_need_no_gpu():
    assert driver.mem_alloc(0) == 0
    driver.mem_free(0)
    driver.memcpy_htod(0, 0, 0)


def test_ptx_and_cubin_are_told_apart():
    assert driver._is_ptx(".version 8.0\n.target sm_90\n")
    assert driver._is_ptx(b"//\n.version 8.0\n.target sm_90\n")
    assert not driver._is_ptx(b"\x7fELF\x02\x01\x01" + b"\0" * 64)


def _run_isolated(code: str, extra_path: Path | None = None) -> subprocess.CompletedProcess:
    path = [str(extra_path)] if extra_path else []
    prelude = f"import sys; sys.path[:0] = {path!r} + [{str(ROOT)!r}]\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_import_and_graceful_failure_without_cuda_python(tmp_path):
    """A `cuda` package that cannot be imported (cuda-python absent or broken): the runtime
    still imports, gpu_available() is False, and calls say cuda-python is missing."""
    fake = tmp_path / "cuda"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('cuda-python is not installed')\n")
    result = _run_isolated("""
        from compiler.runtime import driver, launcher, device_array, cache
        assert driver.gpu_available() is False
        try:
            driver.device_count()
        except driver.CudaUnavailable as err:
            print("ERR", err)
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ERR cuda-python (cuda.bindings) cannot be imported" in result.stdout


@no_gpu_only
def test_device_array_host_side_properties_without_allocation():
    """A DeviceArray wrapping a (foreign) address: the properties launchers and the jit read."""
    import numpy as np
    array = DeviceArray((3, 4), np.float16, 0x1000, owner=False)
    assert array.data_ptr() == 0x1000 and array.dtype == np.float16
    assert array.stride() == (4, 1) and array.stride(0) == 4
    assert array.strides == (8, 2) and array.element_size() == 2
    assert array.numel() == 12 and array.nbytes == 24 and len(array) == 3
    cai = array.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f2" and cai["data"] == (0x1000, False)
    assert cai["version"] == 3
    from compiler.runtime.launcher import device_pointer
    assert device_pointer(array) == 0x1000
