"""The codegen on a GPU: Triton's reference ttgir kernels and the small ttgir kernels of
tests/cpu/codegen_kernels.py, compiled to cubins here, launched through the runtime driver and
checked against numpy (the cases of tests/cpu/codegen_cases.py, which the CPU tier also runs on
its SIMT evaluator)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.codegen_cases import CASES, REFERENCE
from tests.cpu.codegen_kernels import KERNELS

pytestmark = pytest.mark.gpu


def _launch(ttgir_text: str, grid, args) -> list:
    """Compile, load and launch one kernel; returns the device arrays of the array arguments."""
    from tests.cpu.codegen_kernels import compile_ttgir
    return launch_compiled(compile_ttgir(ttgir_text), grid, args)


def launch_compiled(result, grid, args) -> list:
    """Load and launch a compiled kernel; returns the arguments as passed (arrays on the GPU)."""
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    from compiler.runtime.launcher import Launcher

    image = result.asm["cubin"] if "cubin" in result.asm else result.asm["ptx"]
    module = driver.load_module(image)
    fn = driver.get_function(module, result.name)
    shared = result.metadata.shared
    if shared > 48 * 1024:
        driver.set_dynamic_shared_memory(fn, shared)
    launch = Launcher(fn, result.metadata.arg_kinds, name=result.name).bind(
        result.num_warps, shared)
    device = [DeviceArray.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray)
              else a for a in args]
    launch(tuple(grid), device)
    driver.synchronize()
    return device


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_on_the_gpu(name):
    if name in ("add", "softmax", "layernorm") and not REFERENCE.is_dir():
        pytest.skip("../shared/reference is not present")
    text, grid, args, check = CASES[name](np.random.default_rng(1234))
    device = _launch(text, grid, args)
    check(lambda i: device[i].to_numpy())


def test_device_print(capfd):
    x = np.array([1, 5, 8, 1000], dtype=np.int32)
    _launch(KERNELS["while_print_assert"](), (4,), [x, np.zeros(4, np.int32)])
    assert " k: 10" in capfd.readouterr().out
