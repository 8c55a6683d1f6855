"""A pytest plugin that runs Triton's `.ttgir` layout tests (test_core.py's test_convert2d,
test_reduce_layouts, test_local_load_store_dot, ...) on a machine without a GPU.

Those tests write a `.ttgir` file, `triton.compile` it and launch it on one CTA with torch
tensors (or their `data_ptr()`s). With this plugin loaded after the compatibility harness
(`-p run_test_core -p tests.compat_simt`, harness mode `gpu`, `--device=cpu`), `triton.compile`
compiles the file with our compiler through every stage (ptxas included, so the PTX must be
accepted) and the launch runs the unoptimized LLVM lowering of the same module in the SIMT
evaluator of tests/cpu/simt.py, reading and writing the CPU tensors' own memory. The evaluator
checks every access's alignment as the GPU would (`simt.Misaligned`) and refuses accesses
outside the kernel's tensors. The test functions themselves run unmodified.
COMPAT_SIMT_PARSE_ONLY=1 stops at parsing and verifying each test's text.

`scripts/triton_layout_tests.sh` runs the layout tests of issue 9 this way.
"""
from __future__ import annotations

import ctypes
import gc
import os

import numpy as np
import pytest

from tests.cpu import simt

#: COMPAT_SIMT_PARSE_ONLY=1 (read once, here): `triton.compile` of a .ttgir only parses and
#: verifies it, then skips the test: a quick pass over every parametrization's text.
PARSE_ONLY = os.environ.get("COMPAT_SIMT_PARSE_ONLY") == "1"


class HostMemory(simt.Memory):
    """Global memory that is the host's own: pointer arguments are the CPU tensors' addresses,
    and an access must fall inside one of the `ranges` (address, nbytes) the launch knows."""

    def __init__(self, ranges):
        super().__init__()
        self.ranges = list(ranges)

    def _inside(self, address: int, nbytes: int) -> bool:
        return any(lo <= address and address + nbytes <= lo + size for lo, size in self.ranges)

    def _is_host(self, address: int) -> bool:
        return (address >> simt.GLOBAL_SHIFT) not in (simt.SHARED_TAG, simt.LOCAL_TAG)

    def load(self, addresses, nbytes, active):
        out = np.zeros(len(addresses), dtype=np.uint64)
        for t in np.nonzero(active)[0]:
            address = int(addresses[t])
            if not self._is_host(address):
                one = np.zeros(len(addresses), dtype=bool)
                one[t] = True
                out[t] = super().load(addresses, nbytes, one)[t]
                continue
            if not self._inside(address, nbytes):
                raise IndexError(f"thread {t}: load of {nbytes} bytes at {address:#x} is outside "
                                 f"the kernel's tensors")
            out[t] = int.from_bytes(ctypes.string_at(address, nbytes), "little")
        return out

    def store(self, addresses, values, nbytes, active):
        for t in np.nonzero(active)[0]:
            address = int(addresses[t])
            if not self._is_host(address):
                one = np.zeros(len(addresses), dtype=bool)
                one[t] = True
                super().store(addresses, values, nbytes, one)
                continue
            if not self._inside(address, nbytes):
                raise IndexError(f"thread {t}: store of {nbytes} bytes at {address:#x} is "
                                 f"outside the kernel's tensors")
            data = int(values[t]).to_bytes(nbytes, "little")
            ctypes.memmove(address, data, nbytes)


def _tensor_range(value):
    """(address, nbytes) of a torch tensor, or of the tensor whose storage starts at the integer
    address `value` (the tests pass `x.data_ptr()`); None for other values."""
    import torch
    if isinstance(value, torch.Tensor):
        return value.data_ptr(), value.untyped_storage().nbytes()
    if isinstance(value, int) and value > (1 << 20):
        for obj in gc.get_objects():     # type(), not isinstance: no lazy module wakes up
            if issubclass(type(obj), torch.Tensor) and obj.device.type == "cpu" \
                    and obj.data_ptr() == value:
                return value, obj.untyped_storage().nbytes()
    return None


class SimulatedKernel:
    """What `triton.compile(path)` returns under this plugin: the compiled kernel's stages
    (`asm`, `metadata`, ...) and a launch `kernel[grid](*args)` run by the SIMT evaluator."""

    def __init__(self, compiled, lowered):
        self._compiled = compiled
        self._lowered = lowered

    def __getattr__(self, name):
        return getattr(self._compiled, name)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, *args)

    def run(self, grid, *args):
        """Launch on `grid` with the tests' arguments (tensors, data pointers, scalars)."""
        values, ranges = [], []
        for a in args:
            span = _tensor_range(a)
            if span is not None:
                ranges.append(span)
                values.append(span[0])
            else:
                values.append(a)
        memory = HostMemory(ranges)
        fn = next(f for f in self._lowered.llvm_module.functions if f.name == self._lowered.name)
        grid = tuple(grid) + (1,) * (3 - len(grid))
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    simt.CTA(fn, self._lowered.num_warps, memory, (x, y, z), grid, values,
                             self._lowered.shared_bytes).run()
        return self


def simulated_compile(src, *args, **kwargs):
    """`triton.compile` for a `.ttgir` path: every stage of ours (to cubin), plus the
    unoptimized lowering the SIMT evaluator runs. Other sources compile as usual."""
    from pathlib import Path

    from compiler.codegen.lowering import LoweringOptions, lower_module
    from compiler.compiler import compile as real_compile
    from compiler.ir import parse_module, verify_module
    if PARSE_ONLY and str(src).endswith(".ttgir"):
        verify_module(parse_module(Path(src).read_text(), str(src)))
        pytest.skip("parsed and verified (COMPAT_SIMT_PARSE_ONLY=1)")
    compiled = real_compile(src, *args, **kwargs)
    if not isinstance(src, (str, Path)) or not str(src).endswith(".ttgir"):
        return compiled
    lowered = lower_module(parse_module(Path(src).read_text(), str(src)),
                           LoweringOptions(optimize=False))
    return SimulatedKernel(compiled, lowered)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Before the harness configures: point `triton.compile` at `simulated_compile`, and have
    torch report the simulated device's compute capability (9, 0) and name, which Triton's
    test helpers ask torch for, so the tests pick their sm_90 (32-thread warp, mma v3) cases."""
    import torch

    import compiler
    compiler.compile = simulated_compile
    torch.cuda.get_device_capability = lambda device=None: (9, 0)
    torch.cuda.get_device_name = lambda device=None: "simulated sm_90 (tests/compat_simt.py)"
