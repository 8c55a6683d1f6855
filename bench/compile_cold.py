"""Benchmark: cold compile time of the Hopper kernels, ours vs Triton 3.6 (issue 10).

Each measurement is a fresh Python process with empty caches (TRITON_CACHE_DIR and
TILE_CACHE_DIR point at new temporary folders) that imports the compiler, builds the inputs,
and times the first launch of one kernel up to `torch.cuda.synchronize()`: the compile, the
module load and one run. Imports and input creation are outside the timed part. The same kernel
source is compiled by both (`bench/bench_wgmma.py`'s matmul and `sample_kernels/attention.py`).
Medians of `--repeat` processes per (kernel, compiler).

Run on the H200 from the project root:
    PYTHONPATH=. python3 bench/compile_cold.py --repeat 3 [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "matmul fp16 128x256x64 8w 3s": ("matmul", (128, 256, 64, 8, 3), "float16"),
    "matmul bf16 128x128x64 4w 3s": ("matmul", (128, 128, 64, 4, 3), "bfloat16"),
    "matmul fp8 128x256x128 8w 3s": ("matmul", (128, 256, 128, 8, 3), "float8_e4m3fn"),
    "attention D64 128x64 8w 3s": ("attention", (64, 128, 64, 8, 3), "float16"),
    "attention D128 128x128 8w 3s": ("attention", (128, 128, 128, 8, 3), "float16"),
}

# The child: argv = [who, kind, config json, dtype]; prints the seconds of the first launch.
CHILD = r"""
import json, sys, time
sys.path.insert(0, {bench!r}); sys.path.insert(0, {root!r})
import torch
who, kind, config, dtype = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
ours = who == "ours"
if kind == "matmul":
    import bench_wgmma as b
    module = b.load(ours)
    size = 2048
    a = torch.randn(size, size, device="cuda", dtype=torch.float16).to(getattr(torch, dtype))
    bb = torch.randn(size, size, device="cuda", dtype=torch.float16).to(getattr(torch, dtype))
    c = torch.empty(size, size, device="cuda",
                    dtype=torch.float16 if dtype.startswith("float8") else getattr(torch, dtype))
    torch.cuda.synchronize()
    start = time.perf_counter()
    b.launch(module, a, bb, c, tuple(config))
else:
    import bench_attention as b
    module = b.load(ours)
    d, bm, bn, warps, stages = config
    q, k, v, o = b._tensors(torch, 1024, d)
    torch.cuda.synchronize()
    start = time.perf_counter()
    b.launch(module, q, k, v, o, False, (bm, bn, warps, stages))
torch.cuda.synchronize()
print("SECONDS", time.perf_counter() - start)
"""


def cold_once(who: str, kind: str, config, dtype: str) -> float:
    """One fresh process, empty caches: seconds of the first launch."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=f"{cache}/triton", TILE_CACHE_DIR=f"{cache}/tile")
        if who == "triton":     # the real Triton: our tree must not shadow it
            env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                if p and Path(p).resolve() != ROOT)
        script = CHILD.format(bench=str(ROOT / "bench"), root=str(ROOT) if who == "ours" else "")
        proc = subprocess.run([sys.executable, "-c", script, who, kind, json.dumps(config), dtype],
                              env=env, capture_output=True, text=True, timeout=600, cwd=cache)
    for line in proc.stdout.splitlines():
        if line.startswith("SECONDS "):
            return float(line.split()[1])
    raise RuntimeError(f"{who} {kind} {config}: no time\n{proc.stdout[-800:]}\n{proc.stderr[-1500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    print(f"{'case':34} {'ours s':>8} {'triton s':>9} {'ours/triton':>12}")
    for name, (kind, config, dtype) in CASES.items():
        row = {"case": name}
        for who in ("ours", "triton"):
            try:
                row[who] = statistics.median(cold_once(who, kind, list(config), dtype)
                                             for _ in range(args.repeat))
            except Exception as error:  # noqa: BLE001 - the table says what broke
                row[f"{who}_error"] = str(error)[-600:]
        ratio = row["ours"] / row["triton"] if "ours" in row and "triton" in row else float("nan")
        row["ours/triton"] = ratio
        rows.append(row)
        print(f"{name:34} {row.get('ours', float('nan')):8.2f} {row.get('triton', float('nan')):9.2f} "
              f"{ratio:12.2f}", flush=True)
        for key in ("ours_error", "triton_error"):
            if key in row:
                print(f"  {key}: {row[key]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
