"""Issue 10's matmul acceptance run: each compiler's best of one config list, side by side.

The same kernel source (`bench_wgmma.KERNEL`'s `matmul_kernel`) is compiled by ours and by
Triton 3.6 for every config of the list below, which is the CUDA config list of Triton's matmul
tutorial (03) written out as data (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages; GROUP_M 8). For
each case (fp16 and bf16 at 4096^3 and 8192^3, fp32 inputs through tf32 and fp8 e4m3 at 4096^3)
every config is timed for both compilers with `triton.testing.do_bench` (median, interleaved
ours/Triton per config), torch.matmul once, and each compiler's best is reported with its
config. A config a compiler refuses (shared memory, registers) is recorded with its error.
Checks in the same run: the best config of ours against torch (fp64 reference), ours' spills
and registers (`n_spills`, `n_regs`) for every config, the tensor-core instruction in the PTX
of ours' best config (`wgmma`, or `mma.sync` for the 2-warp tf32 configs Triton runs on it too).

Run on the H200 from the project root (about 6 minutes):
    PYTHONPATH=. python3 bench/matmul_best_of.py --out $OUT [--cases fp16-4096 bf16-8192] [--rounds R]
Writes matmul_best_of.json and matmul_best_of.md to OUT.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_wgmma  # noqa: E402  (the shared kernel source and launcher)
from sample_kernels.matmul import FP8_CONFIGS, FP16_CONFIGS  # noqa: E402

#: Triton's tutorial 03 CUDA configs, (BM, BN, BK, warps, stages): the lists the sample matmul
#: is autotuned over (fp16/bf16 ones, then the fp8 ones), timed here for every dtype
CONFIGS = FP16_CONFIGS + FP8_CONFIGS
CASES = {"fp16-4096": ("float16", 4096), "fp16-8192": ("float16", 8192),
         "bf16-4096": ("bfloat16", 4096), "bf16-8192": ("bfloat16", 8192),
         "tf32-4096": ("float32", 4096), "fp8e4m3-4096": ("float8_e4m3fn", 4096)}
TOLERANCE = {"float16": 2e-2, "bfloat16": 8e-2, "float32": 2e-2, "float8_e4m3fn": 2e-2}


def _time(do_bench, fn) -> float:
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def _config_name(config) -> str:
    """'BMxBNxBK Ww Ss' of a (BM, BN, BK, warps, stages) config, '-' for none."""
    return "x".join(map(str, config[:3])) + f" {config[3]}w {config[4]}s" if config else "-"


def run_case(torch, triton, ours, theirs, name: str, rounds: int = 1) -> dict:
    """Every config for both compilers on one case; each compiler's best and its checks. With
    `rounds` > 1 each config is timed that many times, ours and Triton's alternating, and the
    median is kept (one measurement of the same config moved 0.98-1.07 between H200 runs)."""
    dtype_name, size = CASES[name]
    dtype = getattr(torch, dtype_name)
    fp8 = dtype.itemsize == 1
    torch.manual_seed(0)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16).to(dtype)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16).to(dtype)
    if fp8:                      # wgmma reads fp8 B K-major only: B as the transpose of a row-major
        b = b.T.contiguous().T
    c = torch.empty(size, size, device="cuda", dtype=torch.float16 if fp8 else dtype)
    flop = 2 * size ** 3 / 1e12
    row = {"case": name, "configs": {}}
    best = {"ours": (0.0, None), "triton": (0.0, None)}
    for config in CONFIGS:
        runnable = []
        for who, module in (("ours", ours), ("triton", theirs)):
            key = f"{who} {_config_name(config)}"
            entry = row["configs"][key] = {}
            try:
                start = time.perf_counter()
                kernel = bench_wgmma.launch(module, a, b, c, config)
                torch.cuda.synchronize()
                entry["first_call_s"] = round(time.perf_counter() - start, 2)
                for attr in ("n_regs", "n_spills"):
                    entry[attr] = getattr(kernel, attr, None)
                entry["rounds"] = []
                runnable.append((who, module, entry))
            except Exception as err:  # noqa: BLE001 - the report says what broke
                entry["error"] = f"{type(err).__name__}: {str(err).strip()[:300]}"
        for _ in range(rounds):
            for who, module, entry in runnable:
                t = _time(triton.testing.do_bench,
                          lambda: bench_wgmma.launch(module, a, b, c, config))
                entry["rounds"].append(flop / (t * 1e-3))
        for who, module, entry in runnable:
            entry["tflops"] = statistics.median(entry["rounds"])
            if entry["tflops"] > best[who][0]:
                best[who] = (entry["tflops"], config)
    if not fp8:
        row["torch"] = flop / (_time(triton.testing.do_bench, lambda: torch.matmul(a, b)) * 1e-3)
    for who in ("ours", "triton"):
        row[who], row[f"{who}_config"] = best[who]
    row["ours/triton"] = row["ours"] / row["triton"] if row["triton"] else None
    if best["ours"][1] is not None:
        row.update(check_best(torch, ours, dtype, best["ours"][1]))
    print(json.dumps({k: v for k, v in row.items() if k != "configs"}), flush=True)
    return row


def check_best(torch, ours, dtype, config) -> dict:
    """Ours' best config against an fp64 reference on a ragged shape and at 2048^3, and the
    tensor-core instruction in its PTX."""
    out = {}
    for M, N, K in ((2048, 2048, 2048), (1000, 1100, 300)):
        torch.manual_seed(1)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16).to(dtype)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16).to(dtype)
        if dtype.itemsize == 1:
            b = b.T.contiguous().T
        c = torch.empty(M, N, device="cuda", dtype=torch.float16 if dtype.itemsize == 1 else dtype)
        kernel = bench_wgmma.launch(ours, a, b, c, config)
        torch.cuda.synchronize()
        err = (c.double() - a.double() @ b.double()).abs().max().item()
        tol = TOLERANCE[str(dtype).split(".")[-1]] * K ** 0.5 + 1e-2
        out[f"check {M}x{N}x{K}"] = {"max_abs_err": err, "tol": tol, "ok": err <= tol}
    ptx = kernel.asm["ptx"]
    # the tensor-core instruction: wgmma, or mma.sync where Triton uses it too (2-warp tf32)
    out["mma"] = "wgmma" if "wgmma.mma_async" in ptx else "mma.sync" if "mma.sync" in ptx else None
    return out


def write_markdown(rows: list, path: Path) -> None:
    lines = ["| case | ours (config) | Triton 3.6 (config) | torch | ours/Triton | ours' spills at best | instruction, checks |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | error: {r['error'][:120]} | | | | | |")
            continue
        best_key = f"ours {_config_name(r['ours_config'])}" if r.get("ours_config") else None
        spills = r["configs"].get(best_key, {}).get("n_spills") if best_key else None
        checks = all(v["ok"] for k, v in r.items() if k.startswith("check ")) and \
            r.get("mma") is not None
        ratio = f"{r['ours/triton']:.3f}" if r.get("ours/triton") else "-"
        torch_col = f"{r['torch']:.0f}" if r.get("torch") else "-"
        lines.append(f"| {r['case']} | {r['ours']:.0f} ({_config_name(r['ours_config'])}) | "
                     f"{r['triton']:.0f} ({_config_name(r['triton_config'])}) | {torch_col} | {ratio} | "
                     f"{spills} | {r.get('mma')} {'ok' if checks else 'FAILED'} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--rounds", type=int, default=1,
                        help="time each config this many times, ours and Triton's "
                             "alternating, and keep the median (default 1)")
    args = parser.parse_args()
    import torch
    import triton
    ours, theirs = bench_wgmma.load(True), bench_wgmma.load(False)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.cases:
        try:
            rows.append(run_case(torch, triton, ours, theirs, name, args.rounds))
        except Exception:  # noqa: BLE001
            rows.append({"case": name, "error": traceback.format_exc()[-1500:]})
            print(rows[-1]["error"], flush=True)
        (out / "matmul_best_of.json").write_text(json.dumps(rows, indent=1))
        write_markdown(rows, out / "matmul_best_of.md")
    print((out / "matmul_best_of.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
