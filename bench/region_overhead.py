"""The cost of in-kernel region instrumentation: each kernel plain and instrumented
(`instrument-regions` with the given mode), `do_bench` medians of the launches (buffer set-up
and read-back excluded), and the ratio; one table row per kernel and mode, JSON with `--json`.

Run on a GPU machine from the project root:
    PYTHONPATH=. python bench/region_overhead.py [--json bench/region_overhead.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compiler  # noqa: E402
import compiler.language as tl  # noqa: E402
from compiler.profiler.instrument import measure_overhead  # noqa: E402
from compiler.runtime.device_array import DeviceArray  # noqa: E402

MODES = ("instrumentation:slots=512", "instrumentation:loops=whole",
         "instrumentation:loops=body:memory=true:slots=1024")


@compiler.jit
def fma_loop(out, iters, BLOCK: tl.constexpr):
    """A compute-bound loop (a 64-deep FMA chain per iteration)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = offs.to(tl.float32)
    for _ in range(iters):
        for _k in tl.static_range(64):
            acc = acc * 0.999999 + 0.5
    tl.store(out + offs, acc)


@compiler.jit
def streaming_loop(x, out, n_tiles, BLOCK: tl.constexpr):
    """A memory-bound loop: each program sums `n_tiles` tiles of x."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for t in range(n_tiles):
        acc += tl.load(x + t * tl.num_programs(0) * BLOCK + offs)
    tl.store(out + offs, acc)


def cases():
    """(name, kernel, grid, args, kwargs) of each benchmark."""
    programs, block = 264, 256
    out = DeviceArray.empty((programs * block,), np.float32)
    x = DeviceArray.from_numpy(np.ones(programs * block * 64, np.float32))
    return [("fma_loop x200", fma_loop, (programs,), (out, 200), {"BLOCK": block}),
            ("streaming_loop x64", streaming_loop, (programs,), (x, out, 64), {"BLOCK": block})]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    rows = []
    print(f"{'kernel':<22} {'mode':<52} {'plain ms':>9} {'instr. ms':>9} {'ratio':>6}")
    for name, kernel, grid, kernel_args, kwargs in cases():
        for mode in MODES:
            cost = measure_overhead(kernel, grid, *kernel_args, mode=mode, **kwargs)
            rows.append({"kernel": name, "mode": mode, **cost})
            print(f"{name:<22} {mode:<52} {cost['plain_ms']:>9.4f} "
                  f"{cost['instrumented_ms']:>9.4f} {cost['overhead']:>5.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
