"""Does occupancy explain the 128x128x32 4w 4s matmul lag? Ours at three CTAs an SM against
ours held to two (the hypothesis of bench/RESULTS.md: ours uses 168 registers, Triton 216).

The same compiled kernel of ours (bench_wgmma's `matmul_kernel`, fp16 4096^3) is launched as it
is and with its dynamic shared memory padded so that only two CTAs fit an SM (the kernel reads
none of the extra bytes), and Triton 3.6's build of the same source beside them; each is timed
with `triton.testing.do_bench` (median), in interleaved rounds. The occupancy of each launch is
read from the driver (cuOccupancyMaxActiveBlocksPerMultiprocessor). The result is checked
against torch for each variant.

Run on the H200 from the project root:
    PYTHONPATH=. python3 bench/matmul_occupancy.py [--rounds 5] [--config 128 128 32 4 4]
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_wgmma  # noqa: E402


def _padded_launch(module, kernel, target_ctas: int):
    """Swap the jit's launch of `kernel` for one whose dynamic shared memory leaves room for
    `target_ctas` CTAs an SM only; returns (CTAs an SM before, after)."""
    from compiler.runtime import driver
    from compiler.runtime.launcher import Launcher
    entries = [e for e in module.matmul_kernel._gpu_cache.values() if e.kernel is kernel]
    entry = entries[0]
    meta = kernel.metadata
    threads = 32 * meta.num_warps
    function = Launcher.for_kernel(kernel).loaded.function
    before = driver.max_active_blocks_per_sm(function, threads, meta.shared)
    per_sm = driver.device_attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 0)
    shared = per_sm // target_ctas - 2048           # the driver reserves 1 KiB a CTA
    proxy = types.SimpleNamespace(asm=kernel.asm, name=kernel.name, options=kernel.options,
                                  metadata=dataclasses.replace(meta, shared=shared),
                                  ttgir_module=kernel.ttgir_module)
    padded = Launcher.for_kernel(proxy)
    after = driver.max_active_blocks_per_sm(padded.loaded.function, threads, shared)
    entry.launch = padded.launch_addresses if entry.takes_addresses else padded.launch
    return before, after, shared


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--config", type=int, nargs=5, default=[128, 128, 32, 4, 4])
    args = parser.parse_args(argv)
    import torch
    import triton
    config = tuple(args.config)
    ours, padded_module, theirs = bench_wgmma.load(True), bench_wgmma.load(True), \
        bench_wgmma.load(False)
    n = args.size
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    want = (a.float() @ b.float())
    variants = {}
    for label, module in (("ours", ours), ("ours, 2 CTAs/SM", padded_module),
                          ("triton", theirs)):
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        kernel = bench_wgmma.launch(module, a, b, c, config)
        if label.startswith("ours, "):
            before, after, shared = _padded_launch(module, kernel, 2)
            print(f"padded: {kernel.metadata.shared} -> {shared} bytes of shared memory, "
                  f"CTAs/SM {before} -> {after}", flush=True)
        variants[label] = (module, c)
    flops = 2 * n ** 3
    times = {label: [] for label in variants}
    for _ in range(args.rounds):
        for label, (module, c) in variants.items():
            ms = triton.testing.do_bench(lambda: bench_wgmma.launch(module, a, b, c, config),
                                         warmup=25, rep=100, return_mode="median")
            times[label].append(flops / ms / 1e9)
    failed = 0
    base = statistics.median(times["triton"])
    for label, (module, c) in variants.items():
        c.zero_()
        bench_wgmma.launch(module, a, b, c, config)
        torch.cuda.synchronize()
        ok = torch.allclose(c.float(), want, atol=0.5, rtol=2e-2)
        failed += not ok
        tflops = statistics.median(times[label])
        print(f"{'x'.join(map(str, config[:3]))} {config[3]}w {config[4]}s {label:16s} "
              f"{tflops:6.1f} TFLOP/s (rounds {', '.join(f'{t:.0f}' for t in times[label])}) "
              f"ratio {tflops / base:.3f} {'ok' if ok else 'WRONG'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
