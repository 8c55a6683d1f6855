"""Our kernels against Triton 3.6's on the same GPU, in one process, with the same timing.

Both compilers run the very same kernel source (`kernels.py` of the reference folder): Triton's
copy imports the real `triton`, ours is the same file with its imports pointed at `compiler`.
Timing is `triton.testing.do_bench` (CUDA events, warm-up, median) for both, on random data.
Prints one table row per case with GB/s (or TFLOP/s) and the ratio ours / Triton, and writes the
rows as JSON to the path given by `--json`.

Run on a GPU machine from the project root:
    PYTHONPATH=. python bench/bench_vs_triton.py --reference ../shared/reference/triton-3.6-h200
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def load_kernels(reference: Path, ours: bool):
    """Import the reference kernels.py, as is (Triton) or with imports pointed at our compiler."""
    source = (reference / "kernels.py").read_text()
    if ours:
        source = source.replace("import torch, triton, triton.language as tl",
                                "import torch\nimport compiler as triton\n"
                                "import compiler.language as tl")
    folder = Path(tempfile.mkdtemp())
    name = "kernels_ours" if ours else "kernels_triton"
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(fn, do_bench):
    fn()
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def run_cases(torch, triton, ours, theirs):
    """Time every case for ours, Triton and torch; yields result rows."""
    do_bench = triton.testing.do_bench
    cdiv = triton.cdiv
    rows = []

    n = 1 << 28
    x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda"); o = torch.empty_like(x)
    gb = 3 * 4 * n / 1e9
    grid = (cdiv(n, 1024),)
    t_ours = bench(lambda: ours.add_kernel[grid](x, y, o, n, BLOCK=1024), do_bench)
    assert torch.allclose(o, x + y), "vector add: our result is wrong"
    t_tri = bench(lambda: theirs.add_kernel[grid](x, y, o, n, BLOCK=1024), do_bench)
    t_torch = bench(lambda: torch.add(x, y, out=o), do_bench)
    rows.append(("vector add 2^28 fp32", "GB/s", gb / (t_ours * 1e-3), gb / (t_tri * 1e-3),
                 gb / (t_torch * 1e-3)))
    del x, y, o

    for M, N, warps in [(4096, 4096, 16), (16384, 1024, 4), (4096, 16384, 16)]:
        X = torch.randn(M, N, device="cuda"); Y = torch.empty_like(X)
        block = triton.next_power_of_2(N)
        gb = 2 * 4 * M * N / 1e9
        run = lambda k: k.softmax_kernel[(M,)](Y, X, X.stride(0), Y.stride(0), N, BLOCK=block,
                                               num_warps=warps)
        t_ours = bench(lambda: run(ours), do_bench)
        assert torch.allclose(Y, torch.softmax(X, dim=1), atol=1e-6), "softmax: ours is wrong"
        t_tri = bench(lambda: run(theirs), do_bench)
        t_torch = bench(lambda: torch.softmax(X, dim=1), do_bench)
        rows.append((f"softmax fp32 {M}x{N} ({warps} warps)", "GB/s", gb / (t_ours * 1e-3),
                     gb / (t_tri * 1e-3), gb / (t_torch * 1e-3)))
        del X, Y

    M, N = 4096, 8192
    X = torch.randn(M, N, device="cuda", dtype=torch.float16); Y = torch.empty_like(X)
    W = torch.rand(N, device="cuda", dtype=torch.float16)
    B = torch.rand(N, device="cuda", dtype=torch.float16)
    gb = (2 * M * N + 2 * N) * 2 / 1e9
    run = lambda k: k.layernorm_kernel[(M,)](X, Y, W, B, X.stride(0), N, 1e-5, BLOCK=8192,
                                             num_warps=8)
    t_ours = bench(lambda: run(ours), do_bench)
    ref = torch.nn.functional.layer_norm(X.float(), (N,), W.float(), B.float(), 1e-5).half()
    assert torch.allclose(Y.float(), ref.float(), atol=2e-2), "layernorm: ours is wrong"
    t_tri = bench(lambda: run(theirs), do_bench)
    t_torch = bench(lambda: torch.nn.functional.layer_norm(X, (N,), W, B, 1e-5), do_bench)
    rows.append(("layernorm fwd fp16 4096x8192", "GB/s", gb / (t_ours * 1e-3),
                 gb / (t_tri * 1e-3), gb / (t_torch * 1e-3)))
    return rows


def run_matmul(torch, triton, ours, theirs, size=4096, config=(128, 128, 64, 8, 4)):
    """fp16 matmul, same tile config for both compilers; TFLOP/s (Triton's best config in
    MEASURED.md is 128x256x64 with 8 warps and 3 stages: its wgmma path)."""
    do_bench = triton.testing.do_bench
    bm, bn, bk, group, warps = config
    A = torch.randn(size, size, device="cuda", dtype=torch.float16)
    B = torch.randn(size, size, device="cuda", dtype=torch.float16)
    C = torch.empty(size, size, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)
    run = lambda k: k.matmul_kernel[grid](A, B, C, size, size, size, A.stride(0), A.stride(1),
                                          B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                                          BM=bm, BN=bn, BK=bk, GROUP_M=group, num_warps=warps)
    flop = 2 * size ** 3 / 1e12
    start = time.perf_counter()
    run(ours)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - start
    t_ours = bench(lambda: run(ours), do_bench)
    assert torch.allclose(C.float(), (A.float() @ B.float()), atol=1e-1, rtol=1e-2), \
        "matmul: ours is wrong"
    t_tri = bench(lambda: run(theirs), do_bench)
    t_torch = bench(lambda: torch.matmul(A, B), do_bench)
    return (f"matmul fp16 {size}^3 {bm}x{bn}x{bk} {warps}w (ours compiled in {compile_s:.0f} s)",
            "TFLOP/s", flop / (t_ours * 1e-3), flop / (t_tri * 1e-3), flop / (t_torch * 1e-3))


def launch_overhead(torch, triton, ours, theirs, count=20000):
    """Microseconds per launch of a tiny add in a host loop (cache hit), ours / Triton / torch."""
    x = torch.randn(32, device="cuda"); y = torch.randn(32, device="cuda"); o = torch.empty_like(x)
    results = []
    for fn in (lambda: ours.add_kernel[(1,)](x, y, o, 32, BLOCK=32),
               lambda: theirs.add_kernel[(1,)](x, y, o, 32, BLOCK=32),
               lambda: torch.add(x, y, out=o)):
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(count):
            fn()
        torch.cuda.synchronize()
        results.append((time.perf_counter() - start) / count * 1e6)
    return results


COLD_SCRIPT = """
import sys, time, importlib.util, torch
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import bench.bench_vs_triton as b
from pathlib import Path
mod = b.load_kernels(Path({reference!r}), ours={ours})
import importlib
x = torch.randn(4096, device='cuda'); y = torch.randn_like(x); o = torch.empty_like(x)
t0 = time.perf_counter()
{call}
torch.cuda.synchronize()
print(time.perf_counter() - t0)
"""


def cold_compile(root: Path, reference: Path, cache_dir: str):
    """Seconds to compile+launch each kernel in a fresh process with an empty cache."""
    calls = {
        "add": "mod.add_kernel[(4,)](x, y, o, 4096, BLOCK=1024)",
        "softmax": "X = torch.randn(64, 4096, device='cuda'); Y = torch.empty_like(X)\n"
                   "mod.softmax_kernel[(64,)](Y, X, X.stride(0), Y.stride(0), 4096, "
                   "BLOCK=4096, num_warps=16)",
        "layernorm": "X = torch.randn(64, 8192, device='cuda', dtype=torch.float16); "
                     "Y = torch.empty_like(X)\nW = torch.rand(8192, device='cuda', "
                     "dtype=torch.float16); B = torch.rand_like(W)\n"
                     "mod.layernorm_kernel[(64,)](X, Y, W, B, X.stride(0), 8192, 1e-5, "
                     "BLOCK=8192, num_warps=8)",
    }
    # Byte-compile our modules once (a fresh checkout has no .pyc files; Triton's install has).
    prime = ("import compiler.compiler, compiler.frontend, compiler.codegen.lowering, "
             "compiler.runtime.launcher, compiler.runtime.driver, compiler.passes.manager as m; "
             "m.load_all_passes()")
    subprocess.run([sys.executable, "-c", prime], cwd=str(root), check=True)
    out = {}
    for name, call in calls.items():
        times = []
        for ours in (True, False):
            with tempfile.TemporaryDirectory() as cache:
                env = {"TILE_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache,
                       "PATH": "/usr/local/cuda/bin:/usr/bin:/bin"}
                import os
                env = {**os.environ, **env}
                script = COLD_SCRIPT.format(root=str(root), reference=str(reference), ours=ours,
                                            call=call)
                res = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                     text=True, env=env)
                if res.returncode != 0:
                    times.append(None)
                    print(f"cold compile {name} ours={ours} failed:\n{res.stderr[-2000:]}")
                else:
                    times.append(float(res.stdout.strip().splitlines()[-1]))
        out[name] = times
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--matmul", action="store_true", help="also time the fp16 matmul")
    args = parser.parse_args()
    import torch
    import triton
    ours = load_kernels(args.reference, ours=True)
    theirs = load_kernels(args.reference, ours=False)
    print(f"GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"triton {triton.__version__}")
    rows = run_cases(torch, triton, ours, theirs)
    if args.matmul:
        rows.append(run_matmul(torch, triton, ours, theirs))
    print(f"{'case':40s} {'unit':7s} {'ours':>9s} {'triton':>9s} {'torch':>9s} {'ours/triton':>12s}")
    for name, unit, o, t, th in rows:
        print(f"{name:40s} {unit:7s} {o:9.0f} {t:9.0f} {th:9.0f} {o / t:12.3f}")
    lo = launch_overhead(torch, triton, ours, theirs)
    print(f"launch overhead us/launch: ours {lo[0]:.1f}  triton {lo[1]:.1f}  torch {lo[2]:.1f}")
    cold = {} if args.skip_cold else cold_compile(Path.cwd(), args.reference.resolve(),
                                                  tempfile.mkdtemp())
    for name, (o, t) in cold.items():
        print(f"cold compile {name}: ours {o if o is None else round(o, 2)} s, "
              f"triton {t if t is None else round(t, 2)} s")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "launch_us": lo, "cold_s": cold},
                                        indent=1))


if __name__ == "__main__":
    main()
