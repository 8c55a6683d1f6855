"""Benchmark: compile time with and without per-pass IR snapshots, and against another revision.

Two questions, two modes:

* `python bench/compile_time.py [--repeat 7] [--stop-after ptx] [--record]`: the cost of
  snapshots. Each reference kernel's ttir (../shared/reference, or $TILE_REFERENCE_DIR) is
  compiled several times with
  `snapshots=True` and `snapshots=False`, alternating, into a table (also written to
  bench/compile_time.md with --record). The issue's budget: snapshots may add at most 25%.

* `python bench/compile_time.py --against REV [--repeat 5] [--record]`: whether this tree
  compiles the sample kernels slower than revision REV (a commit of this repository, exported
  with `git archive` into a temporary folder, or the path of another checkout). It measures
  CPU time (`time.process_time`, so other processes' load counts less than in wall time) of
  compiling to PTX with snapshots on: add, softmax and layernorm from their reference ttir
  (sm_90), matmul (sm_80), and the attention sample through the jit/ASTSource path, front end
  included (sm_90; "n/a" where that tree cannot compile it). Each round starts one process
  per tree, the two trees alternating, and each process keeps the fastest of `--runs`
  compiles; the table shows the fastest over all rounds, the least disturbed one (the machine
  is shared, so single runs are noisy).

With --record, the table goes into bench/compile_time.md under its mode's heading, the other
mode's section kept.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = Path(os.environ.get("TILE_REFERENCE_DIR",
                                ROOT.parent / "shared" / "reference" / "triton-3.6-h200"))
RECORD = ROOT / "bench" / "compile_time.md"

#: The kernels of the --against comparison: name -> (reference ttir or None for the jit path,
#: arch).
AGAINST_KERNELS = {"add": ("add", 90), "softmax": ("softmax", 90),
                   "layernorm": ("layernorm", 90), "matmul": ("matmul", 80),
                   "attention": (None, 90)}


def inputs() -> dict[str, Path]:
    """Name -> ttir file to compile from."""
    return {name: REFERENCE / f"{name}.ttir" for name in ("add", "softmax", "layernorm", "matmul")
            if (REFERENCE / f"{name}.ttir").is_file()}


def usable_stop(path: Path, wanted: str | None) -> str:
    """The latest stage (from `wanted` backwards) that compiles on this machine."""
    from compiler.compiler import compile
    for stage in ([wanted] if wanted else []) + ["ptx", "llir", "ttgir", "ttir"]:
        try:
            compile(path, {"build_cubin": False, "build_sass": False}, stop_after=stage)
            return stage
        except Exception:  # noqa: BLE001 - a stage not built yet: try an earlier one
            continue
    raise SystemExit(f"{path} does not compile even to ttir")


def _compile_once(path: Path, snapshots: bool, stop: str) -> tuple[float, float]:
    from compiler.compiler import compile
    start = time.process_time()
    kernel = compile(path, {"snapshots": snapshots, "build_cubin": False, "build_sass": False},
                     stop_after=stop)
    total = (time.process_time() - start) * 1e3
    times = kernel.trace.stage_times_ms
    return total, times.get("ttir", 0.0) + times.get("ttgir", 0.0)


def time_compiles(path: Path, stop: str, repeat: int) -> dict[bool, tuple[float, float]]:
    """(fastest whole compile in CPU time, median pass-stage wall time from the trace) in ms with
    snapshots on and off. The two settings alternate run by run, so load from other processes
    hits both alike; the fastest run is the least disturbed one."""
    runs: dict[bool, list] = {True: [], False: []}
    for _ in range(repeat):
        for snapshots in (False, True):
            runs[snapshots].append(_compile_once(path, snapshots, stop))
    return {flag: (min(r[0] for r in rs), statistics.median(r[1] for r in rs))
            for flag, rs in runs.items()}


def snapshot_table(repeat: int, stop_after: str | None) -> tuple[str, str]:
    """The snapshots on/off table and its summary line."""
    from compiler.compiler import compile
    rows = []
    for name, path in inputs().items():
        stop = usable_stop(path, stop_after)
        compile(path, {"build_cubin": False, "build_sass": False}, stop_after=stop)   # warm up
        timings = time_compiles(path, stop, repeat)
        (on_total, on_passes), (off_total, off_passes) = timings[True], timings[False]
        rows.append((name, stop, off_total, on_total, 100 * (on_total / off_total - 1),
                     off_passes, on_passes, 100 * (on_passes - off_passes) / off_total))
    header = ("| kernel | compiled to | whole compile, no snapshots (ms) | with snapshots (ms) | "
              "overhead | pass stages off (ms) | pass stages on (ms) | snapshot cost / compile |\n"
              "|---|---|---|---|---|---|---|---|")
    lines = [header] + [f"| {n} | {s} | {a:.1f} | {b:.1f} | {o:+.1f}% | {c:.1f} | {d:.1f} | "
                        f"{x:+.1f}% |" for n, s, a, b, o, c, d, x in rows]
    worst = max((r[4] for r in rows), default=0.0)
    summary = (f"worst overhead of the whole compile (CPU time): {worst:+.1f}% (budget: +25%); "
               f"the pass-stage columns are wall-clock medians from the trace, for where the "
               f"time goes (they move with the machine's load)")
    return "\n".join(lines), summary


# ---- --against: this tree against another revision ------------------------------------------
def _attention_source():
    """The attention sample's kernel as an ASTSource (64x64 blocks, head dim 64, non-causal),
    as `attention_kernel[grid](...)` would compile it."""
    import inspect
    from compiler.runtime.specialization import ASTSource
    from sample_kernels.attention import attention_kernel
    fn = getattr(attention_kernel, "fn", attention_kernel)
    constexprs = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": False}
    signature = {}
    for name in inspect.signature(fn).parameters:
        if name in constexprs:
            continue
        signature[name] = "*fp16" if name.endswith("_ptr") else \
            "fp32" if name == "sm_scale" else "i32"
    return ASTSource(attention_kernel, signature, constexprs)


def worker(kernels: list[str], runs: int) -> dict:
    """In a process whose `compiler` is the tree under test: name -> fastest CPU ms of `runs`
    compiles to PTX with snapshots (after one warm-up), or None when the tree cannot."""
    from compiler.compiler import compile
    out: dict = {}
    for name in kernels:
        ttir, arch = AGAINST_KERNELS[name]
        options = {"snapshots": True, "build_cubin": False, "build_sass": False, "arch": arch}
        try:
            src = REFERENCE / f"{ttir}.ttir" if ttir else _attention_source()
            compile(src, options, stop_after="ptx")
        except Exception:  # noqa: BLE001 - this tree cannot compile it: reported as n/a
            out[name] = None
            continue
        best = float("inf")
        for _ in range(runs):
            start = time.process_time()
            compile(src, options, stop_after="ptx")
            best = min(best, (time.process_time() - start) * 1e3)
        out[name] = best
    return out


def export_revision(rev: str, into: Path) -> Path:
    """A tree of `rev`: an existing folder as it is, else `git archive` of the commit."""
    path = Path(rev)
    if path.is_dir():
        return path.resolve()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into)
    return into


def _run_worker(tree: Path, kernels: list[str], runs: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--runs", str(runs),
               "--kernels", ",".join(kernels)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"the benchmark failed in {tree}:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def against_table(rev: str, repeat: int, runs: int) -> tuple[str, str]:
    """This tree against `rev`: the table of fastest CPU times and its summary line."""
    kernels = list(AGAINST_KERNELS)
    with tempfile.TemporaryDirectory(prefix="compile-time-") as tmp:
        other = export_revision(rev, Path(tmp))
        best: dict = {"other": {}, "this": {}}
        for _ in range(repeat):
            for side, tree in (("other", other), ("this", ROOT)):
                for name, ms in _run_worker(tree, kernels, runs).items():
                    failed = ms is None or (name in best[side] and best[side][name] is None)
                    best[side][name] = None if failed else \
                        min(ms, best[side].get(name, float("inf")))
    header = (f"| kernel | {rev} (ms) | this tree (ms) | change |\n|---|---|---|---|")
    rows, changes = [], []
    for name in kernels:
        a, b = best["other"].get(name), best["this"].get(name)
        change = "n/a" if a is None or b is None else f"{100 * (b / a - 1):+.1f}%"
        if a is not None and b is not None:
            changes.append(100 * (b / a - 1))
        rows.append(f"| {name} | {'n/a' if a is None else f'{a:.1f}'} | "
                    f"{'n/a' if b is None else f'{b:.1f}'} | {change} |")
    summary = (f"slowest change against {rev}: {max(changes):+.1f}%" if changes
               else "nothing both trees compile")
    return "\n".join([header] + rows), summary


def record(section: str, text: str) -> None:
    """Write `text` under the heading `## section` of bench/compile_time.md, keeping the rest."""
    old = RECORD.read_text() if RECORD.is_file() else "# Compile time\n"
    parts = re.split(r"(?m)^## ", old)
    head, sections = parts[0], {p.split("\n", 1)[0]: p for p in parts[1:]}
    sections[section] = f"{section}\n\n{text.strip()}\n\n"
    RECORD.write_text(head.rstrip() + "\n\n" + "".join("## " + sections[k] for k in sections))
    print(f"recorded in {RECORD}")


def main() -> None:
    """Run the mode the arguments ask for, print its table, and record it with --record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=None,
                        help="rounds (default 7 for snapshots, 5 with --against)")
    parser.add_argument("--stop-after", default=None)
    parser.add_argument("--against", metavar="REV", default=None,
                        help="compare with a commit (or the path of another checkout)")
    parser.add_argument("--runs", type=int, default=3, help="compiles per process (--against)")
    parser.add_argument("--record", action="store_true", help="write bench/compile_time.md")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kernels", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.kernels.split(","), args.runs)))
        return
    sys.path.insert(0, str(ROOT))
    if args.against:
        repeat = args.repeat or 5
        table, summary = against_table(args.against, repeat, args.runs)
        section = f"Against {args.against}"
        note = (f"`python bench/compile_time.py --against {args.against} --repeat {repeat} "
                f"--runs {args.runs} --record`: CPU time of compiling to PTX with snapshots "
                f"on, the fastest of {repeat} rounds x {args.runs} compiles per tree, the trees "
                "alternating, on the project's CPU machine (2 cores shared with other jobs).")
    else:
        repeat = args.repeat or 7
        table, summary = snapshot_table(repeat, args.stop_after)
        section = "With and without pass snapshots"
        note = (f"`python bench/compile_time.py --repeat {repeat} --record`, {repeat} compiles "
                "each with and without snapshots, on the project's CPU machine (2 cores shared "
                "with other jobs, so single runs are noisy: whole-compile times are the "
                "fastest of the runs in CPU time, pass-stage times the median of the trace's "
                "wall-clock stage times).")
    print(table)
    print("\n" + summary)
    if args.record:
        record(section, f"{note}\n\n{table}\n\n{summary}.")


if __name__ == "__main__":
    main()
