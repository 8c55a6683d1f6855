"""Hopper wgmma matmul: correctness against torch and speed against Triton 3.6 and torch.

One kernel source (`matmul_kernel` below) is compiled by both compilers: ours through a copy of
this file's kernel with `compiler` as triton. Correctness: fp16 and bf16 at several shapes,
including ones that are not multiples of the tile; fp32 inputs (tf32 by default and "ieee");
fp16 accumulation (out_dtype). Speed: `triton.testing.do_bench` (median) for both compilers
and torch.matmul in the same process, fp16/bf16 4096^3 at 128x256x64 (8 warps, 3 stages) and
128x128x64 (4 warps, 3 stages). Writes results.json and results.md to the folder given.

Run on the H200 from the project root:
    PYTHONPATH=. python3 bench/bench_wgmma.py --out $OUT
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

KERNEL = '''
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr, ACC_F16: tl.constexpr, IMPRECISE: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_in_group = GROUP_M * num_pid_n
    group_id = pid // num_in_group
    first_m = group_id * GROUP_M
    gsz = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % num_in_group) % gsz)
    pid_n = (pid % num_in_group) // gsz
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_am[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_bn[None, :] * sbn
    if ACC_F16:
        acc = tl.zeros((BM, BN), dtype=tl.float16)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, max_num_imprecise_acc=IMPRECISE)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + scm * offs_cm[:, None] + scn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def chained_kernel(a_ptr, b_ptr, v_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr,
                   D: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    a = tl.load(a_ptr + rm[:, None] * D + rd[None, :])
    b = tl.load(b_ptr + rd[:, None] * N + rn[None, :])
    p = tl.exp(tl.dot(a, b) * 0.125).to(tl.float16)
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], tl.dot(p, v))

@triton.jit
def persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, STAGES: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    num_in_group = GROUP_M * num_pid_n
    offs_k = tl.arange(0, BK)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        group_id = tile_id // num_in_group
        first_m = group_id * GROUP_M
        gsz = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile_id % gsz)
        pid_n = (tile_id % num_in_group) // gsz
        offs_am = (pid_m * BM + tl.arange(0, BM)) % M
        offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in tl.range(0, k_tiles, num_stages=STAGES):
            kk = ki * BK + offs_k
            a = tl.load(a_ptr + offs_am[:, None] * sam + kk[None, :] * sak,
                        mask=kk[None, :] < K, other=0.0)
            b = tl.load(b_ptr + kk[:, None] * sbk + offs_bn[None, :] * sbn,
                        mask=kk[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        offs_cm = pid_m * BM + tl.arange(0, BM)
        offs_cn = pid_n * BN + tl.arange(0, BN)
        c_ptrs = c_ptr + scm * offs_cm[:, None] + scn * offs_cn[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
                 mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
'''


def load(ours: bool):
    """The kernel module, compiled by ours (`compiler`) or by Triton."""
    header = ("import compiler as triton\nimport compiler.language as tl\n" if ours else
              "import triton\nimport triton.language as tl\n")
    folder = Path(tempfile.mkdtemp())
    name = "mm_ours" if ours else "mm_triton"
    path = folder / f"{name}.py"
    path.write_text(header + KERNEL)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch(module, a, b, c, config, precision="tf32", acc_f16=False, imprecise=None):
    bm, bn, bk, warps, stages = config
    M, K = a.shape
    N = b.shape[1]
    grid = (((M + bm - 1) // bm) * ((N + bn - 1) // bn),)
    return module.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                               b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                               GROUP_M=8, PRECISION=precision, ACC_F16=acc_f16,
                               IMPRECISE=imprecise,
                               num_warps=warps, num_stages=stages)


def launch_persistent(module, a, b, c, config, num_sms):
    """The persistent matmul on `num_sms` programs (at most one per tile)."""
    bm, bn, bk, warps, stages = config
    M, K = a.shape
    N = b.shape[1]
    tiles = ((M + bm - 1) // bm) * ((N + bn - 1) // bn)
    grid = (min(num_sms, tiles),)
    module.persistent_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                   b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                                   GROUP_M=8, NUM_SMS=grid[0], STAGES=stages, num_warps=warps)


def check(torch, ours, rows):
    """Correctness cases: (name, ok, max abs error, tolerance)."""
    big, small = (128, 256, 64, 8, 3), (128, 128, 64, 4, 3)
    cases = []
    for dtype in (torch.float16, torch.bfloat16):
        for (M, N, K) in [(512, 512, 512), (1000, 1000, 1000), (77, 300, 61), (4096, 4096, 4096)]:
            for config in (big, small):
                cases.append((dtype, M, N, K, config, "tf32", False))
    cases.append((torch.float16, 640, 768, 512, small, "tf32", True))      # fp16 accumulation
    cases.append((torch.float16, 640, 768, 512, big, "tf32", True))
    cases.append((torch.float16, 77, 300, 61, small, "tf32", True))
    for precision in ("tf32", "ieee"):
        cases.append((torch.float32, 512, 384, 256, (128, 128, 32, 4, 3), precision, False))
        cases.append((torch.float32, 300, 200, 100, (128, 128, 32, 4, 3), precision, False))
    cases.append((torch.float32, 512, 384, 256, (128, 128, 32, 4, 3), "tf32x3", False))
    cases.append((torch.float32, 300, 200, 100, (128, 128, 32, 4, 3), "tf32x3", False))
    for fp8 in ("float8_e4m3fn", "float8_e5m2"):
        if hasattr(torch, fp8):
            cases.append((getattr(torch, fp8), 512, 512, 512, (128, 256, 128, 8, 3), "tf32", False))
            cases.append((getattr(torch, fp8), 200, 300, 160, (128, 128, 128, 4, 3), "tf32", False))
            cases.append((getattr(torch, fp8), 512, 512, 512, (128, 256, 128, 8, 3), "tf32",
                          False, 64))
    for dtype, M, N, K, config, precision, acc_f16, *imprecise in cases:
        imprecise = imprecise[0] if imprecise else None
        name = (f"{str(dtype).split('.')[-1]} {M}x{N}x{K} {'x'.join(map(str, config[:3]))} "
                f"{config[3]}w {config[4]}s {precision}{' acc=f16' if acc_f16 else ''}"
                f"{f' imprecise={imprecise}' if imprecise else ''}")
        try:
            torch.manual_seed(0)
            fp8 = dtype.itemsize == 1
            make = torch.float16 if fp8 else dtype
            a = torch.randn(M, K, device="cuda", dtype=make).to(dtype)
            b = torch.randn(K, N, device="cuda", dtype=make).to(dtype)
            out_dtype = torch.float16 if acc_f16 or fp8 else dtype
            c = torch.empty(M, N, device="cuda", dtype=out_dtype)
            launch(ours, a, b, c, config, precision, acc_f16, imprecise)
            torch.cuda.synchronize()
            ref = a.double() @ b.double()
            err = (c.double() - ref).abs().max().item()
            scale = K ** 0.5
            tol = {torch.float16: 2e-2, torch.bfloat16: 8e-2}.get(dtype, 0)
            if dtype == torch.float32:
                tol = 2e-2 if precision == "tf32" else 1e-3
            if acc_f16:
                tol = 1e-1
            if precision == "tf32x3":
                tol = 1e-4
            if fp8:
                tol = 2e-2
            ok = err <= tol * scale + 1e-2
            rows.append({"case": name, "ok": ok, "max_abs_err": err, "tol": tol * scale})
        except Exception:  # noqa: BLE001 - the report says what broke
            rows.append({"case": name, "ok": False, "error": traceback.format_exc()[-1500:]})
        print(rows[-1], flush=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for (M, N, K) in [(1000, 1000, 1000), (77, 300, 61), (4096, 4096, 4096)]:
        for config in (big, small):
            name = f"persistent fp16 {M}x{N}x{K} {'x'.join(map(str, config[:3]))} {config[3]}w"
            try:
                torch.manual_seed(2)
                a = torch.randn(M, K, device="cuda", dtype=torch.float16)
                b = torch.randn(K, N, device="cuda", dtype=torch.float16)
                c = torch.empty(M, N, device="cuda", dtype=torch.float16)
                launch_persistent(ours, a, b, c, config, sms)
                torch.cuda.synchronize()
                err = (c.double() - a.double() @ b.double()).abs().max().item()
                rows.append({"case": name, "ok": err <= 2e-2 * K ** 0.5 + 1e-2,
                             "max_abs_err": err})
            except Exception:  # noqa: BLE001
                rows.append({"case": name, "ok": False, "error": traceback.format_exc()[-1500:]})
            print(rows[-1], flush=True)
    for n, d in ((64, 64), (128, 64), (64, 128)):
        name = f"chained dots (register A) 128x{n}x{d} fp16"
        try:
            torch.manual_seed(1)
            a = torch.randn(128, d, device="cuda", dtype=torch.float16) * 0.3
            b = torch.randn(d, n, device="cuda", dtype=torch.float16) * 0.3
            v = torch.randn(n, d, device="cuda", dtype=torch.float16)
            o = torch.empty(128, d, device="cuda", dtype=torch.float32)
            ours.chained_kernel[(1,)](a, b, v, o, M=128, N=n, D=d, num_warps=4)
            torch.cuda.synchronize()
            p = torch.exp((a.float() @ b.float()) * 0.125).half()
            ref = p.double() @ v.double()
            err = (o.double() - ref).abs().max().item()
            rows.append({"case": name, "ok": err < 5e-2 * n ** 0.5, "max_abs_err": err})
        except Exception:  # noqa: BLE001
            rows.append({"case": name, "ok": False, "error": traceback.format_exc()[-1500:]})
        print(rows[-1], flush=True)


def timing(torch, triton, ours, theirs, rows):
    do_bench = triton.testing.do_bench
    cases = [(dtype, config, 4096, False) for dtype in (torch.float16, torch.bfloat16)
             for config in ((128, 256, 64, 8, 3), (128, 128, 64, 4, 3))]
    cases += [(torch.float16, (128, 256, 64, 8, 3), 8192, False),
              (torch.float32, (128, 128, 32, 4, 3), 4096, False),
              (torch.float8_e4m3fn, (128, 256, 128, 8, 3), 4096, False)]
    cases += [(torch.float16, (128, 128, 64, 4, 3), 4096, True)]
    for dtype, config, size, acc16 in cases:
        fp8 = dtype.itemsize == 1
        a = torch.randn(size, size, device="cuda", dtype=torch.float16).to(dtype)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16).to(dtype)
        c = torch.empty(size, size, device="cuda", dtype=torch.float16 if fp8 else dtype)
        flop = 2 * size ** 3 / 1e12
        row = {"case": f"matmul {str(dtype).split('.')[-1]} {size}^3 "
                       f"{'x'.join(map(str, config[:3]))} {config[3]}w {config[4]}s"
                       f"{' acc=f16' if acc16 else ''}"}
        try:
            start = time.perf_counter()
            launch(ours, a, b, c, config, acc_f16=acc16)
            torch.cuda.synchronize()
            row["ours_compile_s"] = time.perf_counter() - start
            t = do_bench(lambda: launch(ours, a, b, c, config, acc_f16=acc16), warmup=50,
                         rep=300, return_mode="median")
            row["ours"] = flop / (t * 1e-3)
        except Exception:  # noqa: BLE001
            row["ours_error"] = traceback.format_exc()[-1500:]
        try:
            t = do_bench(lambda: launch(theirs, a, b, c, config, acc_f16=acc16), warmup=50,
                         rep=300, return_mode="median")
            row["triton"] = flop / (t * 1e-3)
        except Exception:  # noqa: BLE001
            row["triton_error"] = traceback.format_exc()[-800:]
            row["triton"] = float("nan")
        if fp8:
            row["torch"] = float("nan")      # torch.matmul has no fp8 kernel
        else:
            t = do_bench(lambda: torch.matmul(a, b), warmup=50, rep=300,
                         return_mode="median")
            row["torch"] = flop / (t * 1e-3)
        if "ours" in row:
            row["ours/triton"] = row["ours"] / row["triton"]
            row["ours/torch"] = row["ours"] / row["torch"]
        rows.append(row)
        print(row, flush=True)


def timing_persistent(torch, triton, ours, theirs, rows):
    """The persistent matmul (one program per SM) against Triton compiling the same source."""
    do_bench = triton.testing.do_bench
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for size, config in ((4096, (128, 256, 64, 8, 3)), (4096, (128, 128, 64, 4, 3)),
                         (8192, (128, 256, 64, 8, 3))):
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        c = torch.empty(size, size, device="cuda", dtype=torch.float16)
        flop = 2 * size ** 3 / 1e12
        row = {"case": f"persistent fp16 {size}^3 {'x'.join(map(str, config[:3]))} "
                       f"{config[3]}w {config[4]}s"}
        for who, module in (("ours", ours), ("triton", theirs)):
            try:
                t = do_bench(lambda: launch_persistent(module, a, b, c, config, sms),
                             warmup=50, rep=300, return_mode="median")
                row[who] = flop / (t * 1e-3)
            except Exception:  # noqa: BLE001
                row[f"{who}_error"] = traceback.format_exc()[-800:]
                row[who] = float("nan")
        t = do_bench(lambda: torch.matmul(a, b), warmup=50, rep=300, return_mode="median")
        row["torch"] = flop / (t * 1e-3)
        row["ours/triton"] = row["ours"] / row["triton"]
        row["ours/torch"] = row["ours"] / row["torch"]
        rows.append(row)
        print(row, flush=True)


def dump_triton_ptx(torch, theirs, folder: Path) -> None:
    """Triton's PTX for the timed fp16/bf16 configs, to compare with ours (`tile-explore`)."""
    folder.mkdir(parents=True, exist_ok=True)
    for dtype in (torch.float16, torch.bfloat16):
        for config in ((128, 256, 64, 8, 3), (128, 128, 64, 4, 3)):
            a = torch.randn(512, 512, device="cuda", dtype=dtype)
            c = torch.empty(512, 512, device="cuda", dtype=dtype)
            compiled = launch(theirs, a, a, c, config)
            name = f"triton_{str(dtype).split('.')[-1]}_{'x'.join(map(str, config))}.ptx"
            (folder / name).write_text(compiled.asm["ptx"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--dump-ptx", default=None, help="folder for Triton's PTX")
    args = parser.parse_args()
    import torch
    import triton
    ours, theirs = load(True), load(False)
    result = {"correctness": [], "timing": []}
    out = Path(args.out)
    if args.dump_ptx:
        dump_triton_ptx(torch, theirs, Path(args.dump_ptx))
    try:
        check(torch, ours, result["correctness"])
        if not args.skip_timing:
            timing(torch, triton, ours, theirs, result["timing"])
            timing_persistent(torch, triton, ours, theirs, result["timing"])
    finally:
        (out / "results.json").write_text(json.dumps(result, indent=1))
    lines = ["| case | ours TFLOP/s | Triton 3.6 | torch | ours/Triton | ours/torch |",
             "|---|---|---|---|---|---|"]
    for r in result["timing"]:
        lines.append(f"| {r['case']} | {r.get('ours', float('nan')):.0f} | {r['triton']:.0f} | "
                     f"{r['torch']:.0f} | {r.get('ours/triton', float('nan')):.2f} | "
                     f"{r.get('ours/torch', float('nan')):.2f} |")
    bad = [r["case"] for r in result["correctness"] if not r["ok"]]
    lines.append(f"\ncorrectness: {len(result['correctness']) - len(bad)}/"
                 f"{len(result['correctness'])} cases pass" + (f"; failing: {bad}" if bad else ""))
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    sys.exit(0)


if __name__ == "__main__":
    main()
