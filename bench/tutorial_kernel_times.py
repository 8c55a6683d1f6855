"""Per-kernel GPU durations (torch.profiler) of tutorial benchmark points, ours vs the real Triton
3.6, each in a fresh process, plus the autotuners' choices and per-config times (tutorial 03 at
256^3, tutorial 06's forward at N_CTX=1024). It tells a host-bound benchmark point (kernels fast,
the point slow) from a slow kernel, and which kernel of a multi-kernel point costs the time.

usage (on a GPU machine, from the project root):
    python3 bench/tutorial_kernel_times.py REFS
REFS holds Triton's tutorial files (reference data, never part of this repository).
DIAG_CASES="03 05 06" picks tutorials, DIAG_WHO="real ours" the compilers, DIAG_T the seconds
each child process may take. Prints one JSON line per case and compiler."""
import json
import os
import subprocess
import sys

REFS = os.path.abspath(sys.argv[1])
REFS = os.path.abspath(sys.argv[1])
CHILD = r'''
import os, sys, time, json, runpy
who, refs = sys.argv[1], sys.argv[2]
if who == "ours":
    sys.path.insert(0, os.getcwd()); from compiler import triton_alias; triton_alias.install()
import torch, triton, triton.testing
from torch.profiler import profile, ProfilerActivity
triton.testing.Mark.run = lambda *a, **k: None
os.chdir(refs)
def prof(name, fn):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        value = fn(); torch.cuda.synchronize()
    kern = sorted(((e.key[:60], round(e.device_time_total / max(e.count, 1), 2), e.count) for e in p.key_averages() if e.device_time_total > 0), key=lambda k: -k[1] * k[2])[:6]
    print("RESULT " + json.dumps({"case": name, "value": value if isinstance(value, (int, float)) else str(value)[:80], "kernels_us": kern}), flush=True)
CASES = os.environ.get("DIAG_CASES", "03 05 06").split()
try:
    assert "03" in CASES, "skipped"
    g = runpy.run_path(os.path.join(refs, "03-matrix-multiplication.py"), run_name="t03")
    mk = g["matmul_kernel"]
    a = torch.randn(256, 256, device="cuda", dtype=torch.float16); b = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    g["matmul"](a, b); torch.cuda.synchronize()
    t = {str(k): (v[0] if isinstance(v, (list, tuple)) else v) for k, v in (getattr(mk, "configs_timings", None) or {}).items()}
    print("RESULT " + json.dumps({"case": "03 autotune 256", "best": str(mk.best_config), "timings_ms": t}), flush=True)
    prof("03 matmul 256 x20", lambda: [g["matmul"](a, b) for _ in range(20)] and 0)
    prof("03 do_bench 256", lambda: triton.testing.do_bench(lambda: g["matmul"](a, b)))
except (Exception, AssertionError) as e: print("RESULT " + json.dumps({"case": "03", "error": repr(e)[:300]}))
try:
    assert "05" in CASES, "skipped"
    g5 = runpy.run_path(os.path.join(refs, "05-layer-norm.py"), run_name="t05")
    prof("05 bwd N=15872", lambda: g5["bench_layer_norm"].fn(M=4096, N=15872, dtype=torch.float16, provider="triton", mode="backward")[0])
except (Exception, AssertionError) as e: print("RESULT " + json.dumps({"case": "05", "error": repr(e)[:300]}))
try:
    assert "06" in CASES, "skipped"
    g6 = runpy.run_path(os.path.join(refs, "06-fused-attention.py"), run_name="t06")
    f = g6["bench_flash_attention"].fn
    prof("06 fwd N=1024 causal (tunes)", lambda: f(BATCH=4, H=32, N_CTX=1024, HEAD_DIM=64, causal=True, mode="fwd", provider="triton-fp16"))
    kt = g6["_attn_fwd_tma"]
    print("RESULT " + json.dumps({"case": "06 tuned at N=1024", "best": str(kt.best_config), "timings_ms": {str(k): (v[0] if isinstance(v, (list, tuple)) else v) for k, v in (getattr(kt, "configs_timings", None) or {}).items()}}), flush=True)
    prof("06 fwd N=1024 noncausal", lambda: f(BATCH=4, H=32, N_CTX=1024, HEAD_DIM=64, causal=False, mode="fwd", provider="triton-fp16"))
    prof("06 bwd N=1024 causal", lambda: f(BATCH=4, H=32, N_CTX=1024, HEAD_DIM=64, causal=True, mode="bwd", provider="triton-fp16"))
    prof("06 bwd N=16384 causal", lambda: f(BATCH=4, H=32, N_CTX=16384, HEAD_DIM=64, causal=True, mode="bwd", provider="triton-fp16"))
except (Exception, AssertionError) as e: print("RESULT " + json.dumps({"case": "06", "error": repr(e)[:300]}))
'''
for who in os.environ.get("DIAG_WHO", "real ours").split():
    env = dict(os.environ)
    if who == "real":
        env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != os.getcwd())
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, who, REFS], env=env, capture_output=True, text=True, timeout=int(os.environ.get("DIAG_T", "140")))
        out = p.stdout; tail = p.stderr[-1200:] if p.returncode else ""
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""); tail = "timed out"
    for l in out.splitlines():
        if l.startswith("RESULT "): print(who, l[7:], flush=True)
    if tail: print(who, "tail:", tail)
