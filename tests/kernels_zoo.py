"""A catalogue of small Triton-style kernels, each with a numpy reference and a maker of fresh
random inputs of awkward sizes (never a multiple of the block), shared by the CPU pipeline tier
(tests/cpu/test_pipeline_kernels.py) and the GPU tier (tests/gpu/test_kernels_gpu.py).

The kernels live in families, one module each under tests/zoo/ (elementwise, integers, casts,
reductions, scans, memory, control, atomics, dots, the tl.* library functions and the
sample kernels); each family lists its
entries in `ENTRIES`, and `ZOO` here joins them.

A `ZooKernel` names a jitted kernel and a `make(rng) -> Case`; a `Case` holds the launch
arguments (numpy arrays and Python scalars, in parameter order), the grid, the constexprs and
launch options, which argument positions the kernel writes, and numpy's expected values for
them. The runners below launch a case in the interpreter, compile it with `warmup`, or launch
it on the GPU, always on copies of the case's arrays so one case can feed every runner.
"""
from __future__ import annotations

import os

import numpy as np

from tests.zoo import (atomics, casts, control, dots, elementwise, integers, language, memory,
                       reductions, scans)
from tests.zoo.case import Case, Tolerance, ZooKernel, EXACT

__all__ = ["Case", "Tolerance", "ZooKernel", "EXACT", "ZOO", "BY_NAME", "zoo_seed", "make_case",
           "run_interpreter", "warmup", "run_compiled_ttir", "run_gpu", "assert_close",
           "check_outputs"]

#: Every catalogue entry, family by family.
ZOO: list = [entry for family in (elementwise, integers, casts, reductions, scans, memory, control,
                                  atomics, dots, language)
             for entry in family.ENTRIES]
BY_NAME: dict = {entry.name: entry for entry in ZOO}
assert len(BY_NAME) == len(ZOO), "two zoo entries share a name"


# ---- runners ----------------------------------------------------------------------------------


def zoo_seed(name: str, seed: int | None = None) -> int:
    """The seed of one kernel's inputs: `seed` or the TILE_ZOO_SEED environment variable when
    given (used as is, so a seed printed by a failing test replays it), else fresh entropy."""
    if seed is None and os.environ.get("TILE_ZOO_SEED"):
        seed = int(os.environ["TILE_ZOO_SEED"])
    if seed is None:
        return int(np.random.SeedSequence().entropy % 2**32)
    return seed % 2**32


def make_case(entry: ZooKernel, seed: int) -> Case:
    """A fresh case of `entry` from `seed`."""
    return entry.make(np.random.default_rng(seed))


def run_interpreter(entry: ZooKernel, case: Case) -> dict:
    """Launch `case` through the numpy interpreter on copies; returns its written outputs."""
    args = case.fresh_args()
    entry.kernel[case.grid](*args, **case.constexprs, **case.options, interpret=True)
    return entry.outputs(case, args)


def warmup(entry: ZooKernel, case: Case):
    """Compile `case`'s specialization through the whole pipeline (no launch)."""
    return entry.kernel.warmup(*case.fresh_args(), grid=case.grid, **case.constexprs,
                               **case.options)


def run_compiled_ttir(entry: ZooKernel, case: Case, compiled) -> dict:
    """Interpret the compiled kernel's optimized ttir (after every ttir pass) on copies of the
    case's arguments; returns the written outputs by argument position."""
    from compiler.ir import parse_module
    from compiler.runtime.interpreter import interpret

    args = case.fresh_args()
    fn = entry.kernel
    bound, key = fn.bind(*args, **case.constexprs, **case.options)[:2]
    runtime = [bound[i] for i in fn._specialization(key, bound).runtime_params]
    module = parse_module(compiled.asm["ttir"], f"{entry.name}.ttir")
    interpret(module, case.grid, runtime, kernel_name=compiled.name)
    return entry.outputs(case, args)


def run_gpu(entry: ZooKernel, case: Case) -> dict:
    """Launch `case` on the GPU with DeviceArrays (copies of the inputs); returns the outputs
    brought back to numpy."""
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray

    args = [DeviceArray.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
            for a in case.args]
    entry.kernel[case.grid](*args, **case.constexprs, **case.options, interpret=False)
    driver.synchronize()
    return entry.outputs(case, [a.to_numpy() if isinstance(a, DeviceArray) else a for a in args])


def assert_close(got: np.ndarray, want: np.ndarray, tol: Tolerance, what: str) -> None:
    """Compare one output: dtype and shape equal, then exact or within `tol`."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if tol.rtol == 0 and tol.atol == 0:
        if got.dtype.kind == "f":
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                          want.view(f"u{want.itemsize}"), err_msg=what)
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=tol.rtol, atol=tol.atol, err_msg=f"{what} ({tol.why})")


def check_outputs(got: dict, want: dict, tol: Tolerance, what: str) -> None:
    """Compare every written output of a case."""
    for index, expected in want.items():
        assert_close(got[index], expected, tol, f"{what}, argument {index}")
