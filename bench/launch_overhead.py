"""Launch overhead from Python: microseconds per launch of a tiny kernel in a host loop.

Measures, layer by layer, on one GPU: the floor of the API (cuda.bindings' cuLaunchKernel with a
pre-built `void*[]`), our `Launcher` (general and bound forms, with DeviceArray and, when torch
is present, torch tensor arguments), our `@jit` kernel on a cache hit (when the front end can
compile it), and for comparison torch.add and a Triton kernel when they are importable.

    python bench/launch_overhead.py [--count 20000] [--json out.json]
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
    """Our `@jit` kernel launched on a cache hit (skipped when the front end is not ready)."""
    import importlib.util
    import tempfile
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
            return {"@jit kernel[grid](...), cache hit, DeviceArray":
                    per_launch_us(lambda: kernel[(1,)](x, x, x, 32, BLOCK=32), count,
                                  driver.synchronize)}
        except Exception as exc:
            print(f"(@jit launch skipped: {type(exc).__name__}: {exc})")
            return {}


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
    args = parser.parse_args()
    if not driver.gpu_available():
        print("no usable CUDA GPU here: nothing to measure")
        return 1
    print(f"{driver.device_name()}, driver {driver.driver_version()}, {args.count} launches each")
    results = {**ours(args.count), **ours_jit(args.count), **others(args.count)}
    width = max(map(len, results))
    for name, us in results.items():
        print(f"  {name:<{width}}  {us:6.2f} us/launch")
    if args.json:
        args.json.write_text(json.dumps({"device": driver.device_name(), "count": args.count,
                                         "us_per_launch": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
