"""Launch overhead from Python: microseconds per launch of a tiny kernel in a host loop.

Measures, layer by layer, on one GPU: the floor of the API (cuda.bindings' cuLaunchKernel with a
pre-built `void*[]`), our `Launcher` (general and bound forms, with DeviceArray and, when torch
is present, torch tensor arguments), our `@jit` kernel on a cache hit (when the front end can
compile it), and for comparison torch.add and a Triton kernel when they are importable.

`--fake` measures the same layers without a GPU: cuLaunchKernel is a stand-in that returns at
once, arrays are DeviceArrays over made-up addresses and torch-like tensors (a class from a
module named torch with `data_ptr()`, `dtype`, `is_cuda`), and compiling returns a kernel whose
launcher is real. What it prints is the Python-side cost per launch, the part we control.

    python bench/launch_overhead.py [--count 20000] [--json out.json] [--fake]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.runtime import driver  # noqa: E402
from compiler.runtime.device_array import DeviceArray  # noqa: E402
from compiler.runtime.launcher import Launcher  # noqa: E402
from tests.gpu.ptx_kernels import EMPTY  # noqa: E402


def per_launch_us(fn, count: int, sync) -> float:
    """Run `fn` `count` times after a warm-up; microseconds per call including the final sync."""
    for _ in range(200):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(count):
        fn()
    sync()
    return (time.perf_counter() - start) / count * 1e6


def ours(count: int) -> dict[str, float]:
    """Our runtime's layers on the hand-written empty kernel (ptr, i32)."""
    module = driver.load_module(EMPTY)
    fn = driver.get_function(module, "empty")
    launcher = Launcher(fn, ["ptr", "i32"], name="empty")
    buf = DeviceArray.empty(32)
    cu = driver.bindings()
    stream = cu.CUstream(0)
    launcher.pack((buf, 32))
    params = launcher.params_address
    results = {
        "cuLaunchKernel, pre-built void*[] (floor)":
            per_launch_us(lambda: cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, 0),
                          count, driver.synchronize),
        "Launcher.launch(grid, warps, shared, stream, args), DeviceArray":
            per_launch_us(lambda: launcher.launch((1,), 1, 0, None, (buf, 32)), count,
                          driver.synchronize),
    }
    run = launcher.bind(num_warps=1)
    results["bound launch(grid, args), DeviceArray"] = per_launch_us(
        lambda: run((1,), (buf, 32)), count, driver.synchronize)
    try:
        import torch
        tensor = torch.empty(32, device="cuda")
        results["bound launch(grid, args), torch tensor"] = per_launch_us(
            lambda: run((1,), (tensor, 32)), count, torch.cuda.synchronize)
    except Exception as exc:
        print(f"(torch-argument launch skipped: {type(exc).__name__}: {exc})")
    return results


JIT_SOURCE = '''
import compiler.language as tl
from compiler import jit

@jit
def tiny_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) +
             tl.load(y_ptr + offsets, mask=mask), mask=mask)
'''


def ours_jit(count: int) -> dict[str, float]:
    """Our `@jit` kernel launched on a cache hit, with DeviceArray and (when importable) torch
    arguments; skipped when the kernel cannot be compiled."""
    import importlib.util
    import tempfile
    results = {}
    with tempfile.TemporaryDirectory() as folder:    # @jit reads the kernel's source file
        path = Path(folder) / "tiny_add_module.py"
        path.write_text(JIT_SOURCE)
        try:
            spec = importlib.util.spec_from_file_location("tiny_add_module", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            x = DeviceArray.empty(32)
            kernel = module.tiny_add
            kernel[(1,)](x, x, x, 32, BLOCK=32)
            driver.synchronize()
            results["@jit kernel[grid](...), cache hit, DeviceArray"] = per_launch_us(
                lambda: kernel[(1,)](x, x, x, 32, BLOCK=32), count, driver.synchronize)
        except Exception as exc:
            print(f"(@jit launch skipped: {type(exc).__name__}: {exc})")
            return results
        try:
            import torch
            t = torch.empty(32, device="cuda")
            kernel[(1,)](t, t, t, 32, BLOCK=32)
            results["@jit kernel[grid](...), cache hit, torch tensor"] = per_launch_us(
                lambda: kernel[(1,)](t, t, t, 32, BLOCK=32), count, torch.cuda.synchronize)
        except Exception as exc:
            print(f"(@jit launch with torch tensors skipped: {type(exc).__name__}: {exc})")
    return results


# ---- --fake: the Python side only -------------------------------------------------------------

def best_us(fn, count: int, repeats: int = 15) -> float:
    """Microseconds per call of `fn`, the best of `repeats` loops of `count // repeats` calls
    (the least disturbed by other processes on a shared machine)."""
    per_loop = max(count // repeats, 100)
    for _ in range(200):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_loop):
            fn()
        best = min(best, (time.perf_counter() - start) / per_loop * 1e6)
    return best


class _TorchDtype:
    """Prints like torch.float32 (what the specializer reads of a torch dtype)."""

    def __str__(self) -> str:
        return "torch.float32"


def _torch_like_type() -> type:
    """A tensor class from a module named torch: data_ptr(), dtype, is_cuda, like torch's."""
    def __init__(self, address):
        self.address = address

    return type("Tensor", (), {"__module__": "torch", "__init__": __init__,
                               "dtype": _TorchDtype(), "is_cuda": True,
                               "data_ptr": lambda self: self.address})


def fake(count: int) -> dict[str, float]:
    """Python-side cost per launch of each layer, with a cuLaunchKernel that does nothing."""
    import importlib.util
    import tempfile

    import compiler.compiler as compile_driver
    import numpy as np
    from compiler.runtime.launcher import KernelLauncher

    def stand_in(*args):
        return (0,)

    class FakeCompiled:
        """A compiled kernel whose launcher is real (and whose cuLaunchKernel is not)."""

        num_warps = 4

        def __init__(self, src):
            self.trace = None
            launcher = Launcher("FN", list(src.signature.values()), name=src.name,
                                launch_fn=stand_in)
            self._launcher = KernelLauncher(launcher, None, 4, 0)

        def launcher(self):
            return self._launcher

    arrays = {"DeviceArray": DeviceArray((32,), np.float32, 1 << 20, owner=False),
              "torch-like tensor": _torch_like_type()(1 << 20)}
    two = Launcher("FN", ["ptr", "i32"], name="empty", launch_fn=stand_in)
    bound = two.bind(num_warps=1)
    results = {"stand-in cuLaunchKernel alone":
               best_us(lambda: stand_in("FN", 1, 1, 1, 32, 1, 1, 0, None, 0, 0), count)}
    for name, x in arrays.items():
        results[f"Launcher.launch(grid, warps, shared, stream, args), {name}"] = best_us(
            lambda: two.launch((1,), 1, 0, None, (x, 32)), count)
        results[f"bound launch(grid, args), {name}"] = best_us(lambda: bound((1,), (x, 32)),
                                                               count)
    original = compile_driver.compile
    compile_driver.compile = lambda src, options=None, pipelines=None: FakeCompiled(src)
    try:
        with tempfile.TemporaryDirectory() as folder:    # @jit reads the kernel's source file
            path = Path(folder) / "tiny_add_module.py"
            path.write_text(JIT_SOURCE)
            spec = importlib.util.spec_from_file_location("tiny_add_module", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            kernel = module.tiny_add
            kernel._default_interpret = False         # launch on the "GPU" without one
            for name, x in arrays.items():
                kernel[(1,)](x, x, x, 32, BLOCK=32)
                results[f"@jit kernel[grid](...), cache hit, {name}"] = best_us(
                    lambda: kernel[(1,)](x, x, x, 32, BLOCK=32), count)
    finally:
        compile_driver.compile = original
    return results


def others(count: int) -> dict[str, float]:
    """torch.add and a Triton kernel on 32 floats, when importable."""
    results = {}
    try:
        import torch
    except ImportError:
        print("(torch not importable: no torch/Triton comparison)")
        return results
    x = torch.randn(32, device="cuda")
    out = torch.empty_like(x)
    results["torch.add(out=) on 32 floats"] = per_launch_us(
        lambda: torch.add(x, x, out=out), count, torch.cuda.synchronize)
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def triton_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)

        results["Triton kernel[grid](...) on 32 floats"] = per_launch_us(
            lambda: triton_add[(1,)](x, out, 32, BLOCK=32), count, torch.cuda.synchronize)
    except Exception as exc:
        print(f"(Triton comparison skipped: {type(exc).__name__}: {exc})")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000, help="launches per measurement")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--fake", action="store_true",
                        help="no GPU: the Python-side cost per launch, with a stand-in "
                             "cuLaunchKernel")
    args = parser.parse_args()
    if args.fake:
        import platform
        device = f"no GPU (--fake), {platform.processor() or platform.machine()}"
        print(f"{device}, Python {platform.python_version()}, {args.count} launches each")
        results = fake(args.count)
    elif not driver.gpu_available():
        print("no usable CUDA GPU here: nothing to measure (try --fake)")
        return 1
    else:
        device = driver.device_name()
        print(f"{device}, driver {driver.driver_version()}, {args.count} launches each")
        results = {**ours(args.count), **ours_jit(args.count), **others(args.count)}
    width = max(map(len, results))
    for name, us in results.items():
        print(f"  {name:<{width}}  {us:6.2f} us/launch")
    if args.json:
        args.json.write_text(json.dumps({"device": device, "count": args.count,
                                         "us_per_launch": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
