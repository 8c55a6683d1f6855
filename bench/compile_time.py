"""Benchmark: compile time with and without per-pass IR snapshots.

The issue's budget: with snapshots on, compile time may grow by at most 25%. This script
compiles each reference kernel's ttir (../shared/reference) several times with `snapshots=True`
and `snapshots=False`, alternating, and prints a table (also written to bench/compile_time.md
with --record).

    python bench/compile_time.py [--repeat 7] [--stop-after ptx] [--record]

It compiles as far as `--stop-after` (default: the last stage that works here, ptx with a working
codegen). Snapshots cost time only in the pass stages, so the table also shows that cost over the
whole compile, which is less sensitive to noise from other processes.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REFERENCE = ROOT.parent / "shared" / "reference" / "triton-3.6-h200"

from compiler.compiler import compile  # noqa: E402


def inputs() -> dict[str, Path]:
    """Name -> ttir file to compile from."""
    return {name: REFERENCE / f"{name}.ttir" for name in ("add", "softmax", "layernorm", "matmul")
            if (REFERENCE / f"{name}.ttir").is_file()}


def usable_stop(path: Path, wanted: str | None) -> str:
    """The latest stage (from `wanted` backwards) that compiles on this machine."""
    for stage in ([wanted] if wanted else []) + ["ptx", "llir", "ttgir", "ttir"]:
        try:
            compile(path, {"build_cubin": False, "build_sass": False}, stop_after=stage)
            return stage
        except Exception:  # noqa: BLE001 - a stage not built yet: try an earlier one
            continue
    raise SystemExit(f"{path} does not compile even to ttir")


def _compile_once(path: Path, snapshots: bool, stop: str) -> tuple[float, float]:
    start = time.perf_counter()
    kernel = compile(path, {"snapshots": snapshots, "build_cubin": False, "build_sass": False},
                     stop_after=stop)
    total = (time.perf_counter() - start) * 1e3
    times = kernel.trace.stage_times_ms
    return total, times.get("ttir", 0.0) + times.get("ttgir", 0.0)


def time_compiles(path: Path, stop: str, repeat: int) -> dict[bool, tuple[float, float]]:
    """(fastest whole compile, median pass-stage time) in ms with snapshots on and off. The two
    settings alternate run by run, so load from other processes hits both alike; the fastest
    run is the least disturbed one."""
    runs: dict[bool, list] = {True: [], False: []}
    for _ in range(repeat):
        for snapshots in (False, True):
            runs[snapshots].append(_compile_once(path, snapshots, stop))
    return {flag: (min(r[0] for r in rs), statistics.median(r[1] for r in rs))
            for flag, rs in runs.items()}


def main() -> None:
    """Time every input, print the table, and record it with --record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--stop-after", default=None)
    parser.add_argument("--record", action="store_true", help="write bench/compile_time.md")
    args = parser.parse_args()
    rows = []
    for name, path in inputs().items():
        stop = usable_stop(path, args.stop_after)
        compile(path, {"build_cubin": False, "build_sass": False}, stop_after=stop)   # warm up
        timings = time_compiles(path, stop, args.repeat)
        (on_total, on_passes), (off_total, off_passes) = timings[True], timings[False]
        rows.append((name, stop, off_total, on_total, 100 * (on_total / off_total - 1),
                     off_passes, on_passes, 100 * (on_passes - off_passes) / off_total))
    header = ("| kernel | compiled to | whole compile, no snapshots (ms) | with snapshots (ms) | "
              "overhead | pass stages off (ms) | pass stages on (ms) | snapshot cost / compile |\n"
              "|---|---|---|---|---|---|---|---|")
    lines = [header] + [f"| {n} | {s} | {a:.1f} | {b:.1f} | {o:+.1f}% | {c:.1f} | {d:.1f} | "
                        f"{x:+.1f}% |" for n, s, a, b, o, c, d, x in rows]
    table = "\n".join(lines)
    print(table)
    worst = max((r[4] for r in rows), default=0.0)
    worst_cost = max((r[7] for r in rows), default=0.0)
    summary = (f"worst overhead of the whole compile: {worst:+.1f}%; worst snapshot cost "
               f"(pass-stage time added, over the compile without snapshots): "
               f"{worst_cost:+.1f}% (budget: +25%)")
    print("\n" + summary)
    if args.record:
        out = ROOT / "bench" / "compile_time.md"
        out.write_text("# Compile time with and without pass snapshots\n\n"
                       f"`python bench/compile_time.py --repeat {args.repeat} --record`, "
                       f"{args.repeat} compiles each with and without snapshots, on the "
                       "project's CPU machine "
                       "(2 cores shared with other jobs, so single runs are noisy: whole-compile "
                       "times are the fastest of the runs, pass-stage times the median).\n\n"
                       + table + "\n\n" + summary + ".\n")
        print(f"recorded in {out}")


if __name__ == "__main__":
    main()
