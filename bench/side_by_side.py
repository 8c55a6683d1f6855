"""What the static comparison scripts (tutorial05_compile.py, tutorial06_registers.py) share:
a real Triton 3.6 compiling for sm_90 on a machine without a GPU, ptxas's report on a PTX, and
the two worker processes (ours with `triton` aliased, the real Triton on its own path) whose
JSON results the script tabulates."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_target():
    """Make the real Triton's active driver one that needs no GPU (tutorials ask it for the
    device and the target at import) and return its `GPUTarget("cuda", 90, 32)`."""
    import torch
    import triton as real
    from triton.backends.compiler import GPUTarget
    target = GPUTarget("cuda", 90, 32)

    class CpuDriver:
        def get_active_torch_device(self):
            return torch.device("cpu")

        def get_current_target(self):
            return target

    real.runtime.driver.set_active(CpuDriver())
    return target


def ptxas_report(ptx: str, cubin: Path | None = None) -> dict:
    """Registers, spill store bytes and C75xx performance warnings of `ptxas -arch=sm_90a -v`
    on `ptx` (the cubin is written to `cubin` when given)."""
    from compiler.codegen.toolchain import find_tool
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        out = cubin or Path(tmp) / "k.cubin"
        run = subprocess.run([find_tool("ptxas"), "-arch=sm_90a", "-v", str(src), "-o",
                              str(out)], capture_output=True, text=True)
    registers = re.search(r"Used (\d+) registers", run.stderr)
    spills = re.search(r"(\d+) bytes spill stores", run.stderr)
    return {"registers": int(registers.group(1)) if registers else None,
            "spills": int(spills.group(1)) if spills else None,
            "warnings": sorted(set(re.findall(r"\((C75\d\d)\)", run.stderr)))}


def main(script: str, description: str, ours, triton, table) -> int:
    """The command line of a side-by-side script: `TUTORIAL [--triton-path DIR]`. Each compiler
    runs `script --worker` in a process of its own (`ours(path)` / `triton(path)` return a
    JSON-able dict); then `table(results)` prints, results keyed "ours" and, with DIR,
    "Triton 3.6"."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("tutorial")
    parser.add_argument("--triton-path", default=None)
    parser.add_argument("--deps-path", default=None,
                        help="a folder (or os.pathsep-separated folders) both workers also "
                             "import from, e.g. where torch is installed: each worker's "
                             "PYTHONPATH is otherwise only its compiler's, so neither sees "
                             "the other compiler")
    parser.add_argument("--worker", choices=["ours", "triton"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = os.path.abspath(args.tutorial)
    if args.worker:
        print(json.dumps((ours if args.worker == "ours" else triton)(path)))
        return 0
    results = {}
    for who, worker, extra in (("ours", "ours", str(ROOT)),
                               ("Triton 3.6", "triton", args.triton_path)):
        if extra is None:
            continue
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (extra, args.deps_path) if p))
        run = subprocess.run([sys.executable, script, path, "--worker", worker], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{who} failed:\n{run.stderr[-2000:]}")
            return 1
        results[who] = json.loads(run.stdout.strip().splitlines()[-1])
    table(results)
    return 0
