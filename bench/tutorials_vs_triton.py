"""Triton's tutorials' own benchmarks, run unmodified by the real Triton and by ours in one run,
side by side (issue 11: each within 10% of the real Triton's numbers).

usage: python bench/tutorials_vs_triton.py --refs DIR [--only 01 03] [--points K] [--out DIR]

DIR holds Triton's tutorial files (reference data, never part of this repository; see
shared/tools/triton-compat/README.md). Each tutorial runs as `__main__` in a fresh process, once
with the installed Triton and once with `triton` aliased to this compiler
(`compiler.triton_alias.install()`); nothing in the tutorial is edited. The harness only wraps
`triton.testing.Mark`'s measuring function to record every point it returns (a point that
raises is recorded with its error, reported as NaN to the tutorial, and the sweep goes on), and keeps K of
each benchmark's x values (evenly spaced, first and last included; 0 keeps all), since the
tutorials' full sweeps take longer than a device call. For each point and provider it prints
ours / Triton; a provider measured by both runs that is not a Triton kernel (torch, cuBLAS) is
the noise floor of the comparison: its ratio should be about 1.
Writes OUT/tutorials_vs_triton.json and .md. Needs a GPU, torch and the real Triton.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

TUTORIALS = ("01-vector-add.py", "02-fused-softmax.py", "03-matrix-multiplication.py",
             "04-low-memory-dropout.py", "05-layer-norm.py", "06-fused-attention.py")
PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs inside the tutorial's process: alias (ours only), cut x values, record the points.
_BOOT = r"""
import json, os, runpy, sys, time
who, path, points, record = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if who == "ours":
    sys.path.insert(0, {project!r})
    from compiler import triton_alias
    triton_alias.install()
import triton.testing as testing
points_seen = []
orig_bench_init = testing.Benchmark.__init__
def bench_init(self, *a, **k):
    orig_bench_init(self, *a, **k)
    xs = list(self.x_vals)
    if points and len(xs) > points:
        keep = sorted({{round(i * (len(xs) - 1) / (points - 1)) for i in range(points)}}) \
            if points > 1 else [0]
        self.x_vals = [xs[i] for i in keep]
testing.Benchmark.__init__ = bench_init
orig_mark_init = testing.Mark.__init__
def mark_init(self, fn, benchmarks):
    def measured(**kwargs):
        t0 = time.time()
        args = {{k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                for k, v in kwargs.items()}}
        try:
            value = fn(**kwargs)
        except Exception as err:    # one point a compiler cannot run: record it, go on
            points_seen.append({{"args": args, "error": f"{{type(err).__name__}}: {{err}}"[:400],
                                "seconds": round(time.time() - t0, 2)}})
            print("POINT FAILED", args, type(err).__name__, str(err)[:200], flush=True)
            with open(record, "w") as fh:
                json.dump(points_seen, fh)
            return float("nan")
        first = value[0] if isinstance(value, (tuple, list)) else value
        points_seen.append({{"args": args, "value": float(first),
                            "seconds": round(time.time() - t0, 2)}})
        with open(record, "w") as fh:
            json.dump(points_seen, fh)
        return value
    orig_mark_init(self, measured, benchmarks)
testing.Mark.__init__ = mark_init
os.chdir(os.path.dirname(path))
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
print("TUTORIAL DONE", who, os.path.basename(path), flush=True)
"""


def run_one(who: str, path: str, points: int, out: str, timeout: int) -> dict:
    """Run one tutorial under one compiler; return its recorded points, status and log tail."""
    tag = f"{os.path.basename(path)[:2]}-{who}"
    record = os.path.join(out, f"{tag}.points.json")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    if who == "real":
        env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                            if p and os.path.abspath(p) != PROJECT)
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-c", _BOOT.format(project=PROJECT), who, path,
                               str(points), record], env=env, capture_output=True, text=True,
                              timeout=timeout)
        log, ok = proc.stdout + proc.stderr, proc.returncode == 0 and "TUTORIAL DONE" in proc.stdout
    except subprocess.TimeoutExpired as exc:
        log = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        ok = False
        log += f"\n[timed out after {timeout} s]"
    with open(os.path.join(out, f"{tag}.log"), "w") as fh:
        fh.write(log)
    points_seen = json.load(open(record)) if os.path.exists(record) else []
    return {"ok": ok, "seconds": round(time.time() - t0, 1), "points": points_seen,
            "tail": log.strip().splitlines()[-3:] if log.strip() else []}


def _key(point: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in point["args"].items()))


def compare(name: str, ours: dict, real: dict) -> list:
    """One row per point measured by both: (args, provider, ours, real, ratio)."""
    real_by_key = {_key(p): p for p in real["points"]}
    rows = []
    for p in ours["points"]:
        r = real_by_key.get(_key(p))
        if r is None:
            continue
        if "error" in p or "error" in r:    # a point one compiler could not run
            rows.append({"tutorial": name, "args": p["args"], "ours": p.get("value"),
                         "real": r.get("value"), "ratio": None,
                         "error": "ours: " + p["error"] if "error" in p else
                         "Triton 3.6: " + r["error"]})
            continue
        rows.append({"tutorial": name, "args": p["args"], "ours": p["value"], "real": r["value"],
                     "ratio": p["value"] / r["value"] if r["value"] else None})
    return rows


def _provider(args: dict) -> str:
    return str(args.get("provider", args.get("backend", "")))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--refs", required=True, help="folder with Triton's tutorial files")
    p.add_argument("--only", nargs="*", help="tutorial name prefixes, e.g. 01 06")
    p.add_argument("--points", type=int, default=1, help="x values kept per benchmark (0: all)")
    p.add_argument("--out", default="tutorials_vs_triton")
    p.add_argument("--timeout", type=int, default=300, help="seconds per tutorial and compiler")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    names = [t for t in TUTORIALS if not args.only or any(t.startswith(o) for o in args.only)]
    results, rows = {}, []
    for name in names:
        path = os.path.abspath(os.path.join(args.refs, name))
        if not os.path.exists(path):
            print(f"{name}: missing in {args.refs}")
            continue
        for who in ("real", "ours"):
            res = run_one(who, path, args.points, args.out, args.timeout)
            results[f"{name}:{who}"] = res
            print(f"{name} {who}: {'ok' if res['ok'] else 'FAILED'} in {res['seconds']} s, "
                  f"{len(res['points'])} points", flush=True)
            if not res["ok"]:
                print("   " + "\n   ".join(res["tail"]))
        rows += compare(name, results[f"{name}:ours"], results[f"{name}:real"])
    lines = ["| tutorial | point | provider | ours | Triton 3.6 | ours / Triton |", "|---|---|---|---|---|---|"]
    for r in rows:
        point = ", ".join(f"{k}={v}" for k, v in r["args"].items()
                          if k not in ("provider", "backend"))
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else \
            f"- ({r['error'][:80]})" if r.get("error") else "-"
        ours_value = f"{r['ours']:.4g}" if r["ours"] is not None else "failed"
        real_value = f"{r['real']:.4g}" if r["real"] is not None else "failed"
        lines.append(f"| {r['tutorial'][:2]} | {point} | {_provider(r['args'])} | {ours_value} | "
                     f"{real_value} | {ratio} |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "tutorials_vs_triton.md"), "w") as fh:
        fh.write(text + "\n")
    with open(os.path.join(args.out, "tutorials_vs_triton.json"), "w") as fh:
        json.dump({"runs": {k: {kk: vv for kk, vv in v.items() if kk != "tail"}
                            for k, v in results.items()}, "rows": rows}, fh, indent=1)
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
