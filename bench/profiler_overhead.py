"""The profiler's overhead per launch: a loop of tiny launches of our `@jit` kernel, plain and
inside a profiling session, for each way of timing (issue 13's target: at most 1.5x plain).

On a GPU it times `--count` launches of a one-warp kernel (best of `--repeats` loops, one
synchronization at the end of each) with no session, then in a session inside a scope with
CUPTI (the default activity kinds, and with `--kinds` each other choice of API kinds: does a
scope still get our kernels and torch's without them?), CUPTI with hook="triton" (one id
pushed per launch), and CUDA events. Each case also reports where the kernels landed (ours
under the scope, torch's under the scope, untagged), so a cheaper setting that loses
attribution shows as such.

`--fake` measures the host side alone without a GPU: the kernel's cuLaunchKernel is a
stand-in that returns at once, CUPTI is a stand-in module whose calls do nothing, and CUDA
events are stand-in driver calls. What it prints is the Python work the profiler adds per
launch.

    python bench/profiler_overhead.py [--count 10000] [--repeats 3] [--kinds] [--json F]
    python bench/profiler_overhead.py --fake
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import types
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import compiler.profiler as proton  # noqa: E402
from compiler.profiler import cupti_timer  # noqa: E402
from compiler.profiler.state import STATE  # noqa: E402
from compiler.runtime import driver  # noqa: E402

KERNEL_SOURCE = '''
import compiler.language as tl
from compiler import jit

@jit
def tiny(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs.to(tl.float32))
'''

#: (label, backend, hook, API kinds or None for the default) of each profiled case.
CASES = [("cupti", "cupti", None, None), ("cupti, hook=triton", "cupti", "triton", None),
         ("cuda_events", "cuda_events", None, None)]
#: Calls into the stand-in CUPTI and event driver (`--fake`), by name.
CALLS: Counter = Counter()
#: The other API kind choices `--kinds` measures.
KIND_CHOICES = [("DRIVER",), ("RUNTIME",), ()]


def load_kernel(folder: Path):
    """The tiny kernel, from a module file (the jit reads its source)."""
    path = folder / "tiny_profiled.py"
    path.write_text(KERNEL_SOURCE)
    spec = importlib.util.spec_from_file_location("tiny_profiled", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.tiny


def loop_us(kernel, out, count: int, repeats: int, sync) -> float:
    """Microseconds per launch: the best of `repeats` loops of `count` launches."""
    best = float("inf")
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        for _ in range(count):
            kernel[(1,)](out, BLOCK=32)
        sync()
        best = min(best, (time.perf_counter() - start) / count * 1e6)
    return best


def _kernel_counts(node, inside=False, found=None) -> dict:
    """{kernel name: (count under the scope "loop", count elsewhere)} of a hatchet tree."""
    found = {} if found is None else found
    inside = inside or node["frame"]["name"] == "loop"
    if not node["children"] and node["metrics"].get("count"):
        under, other = found.get(node["frame"]["name"], (0, 0))
        count = node["metrics"]["count"]
        found[node["frame"]["name"]] = (under + count, other) if inside else (under,
                                                                              other + count)
    for child in node["children"]:
        _kernel_counts(child, inside, found)
    return found


def profiled(kernel, out, folder: Path, label: str, backend: str, hook, kinds, count: int,
             repeats: int, sync, torch_kernel=None) -> dict:
    """One profiled case: its time per launch and where its kernels landed."""
    default = getattr(cupti_timer, "API_KINDS", None)     # (None: a tree before the setting)
    if kinds is not None:
        cupti_timer.API_KINDS = kinds
    if hook == "triton":                # a per-launch name and metric: one id per launch
        kernel.launch_metadata = lambda grid, k, args: {"name": "tiny", "bytes": 128}
    try:
        session = proton.start(str(folder / label.replace(" ", "_").replace(",", "")),
                               backend=backend, hook=hook)
        with proton.scope("loop"):
            CALLS.clear()
            us = loop_us(kernel, out, count, repeats, sync)
            calls = {name: n / (count * repeats) for name, n in sorted(CALLS.items())}
            if torch_kernel is not None:
                torch_kernel()
        [path] = proton.finalize(session)
    finally:
        cupti_timer.API_KINDS = default
        kernel.launch_metadata = None
    root = json.loads(path.read_text())[0]
    counts = _kernel_counts(root)
    ours = {n: c for n, c in counts.items() if n.startswith("tiny")}
    return {"us_per_launch": us, "api_kinds": list(kinds if kinds is not None else default)
            if backend == "cupti" and default is not None else None,
            "ours_under_scope": sum(c[0] for c in ours.values()),
            "ours_elsewhere": sum(c[1] for c in ours.values()),
            "ours_names": sorted(ours),
            "others_under_scope": sum(c[0] for n, c in counts.items() if n not in ours),
            "untagged": root["metadata"]["timing"].get("untagged_kernels", 0),
            "stand_in_calls_per_launch": calls}


def run_cases(kernel, out, count: int, repeats: int, sync, kinds: bool,
              torch_kernel=None) -> dict:
    """Plain, then every case of `CASES` (and of `KIND_CHOICES` with `kinds`)."""
    for _ in range(200):                           # compile, make the fast launch
        kernel[(1,)](out, BLOCK=32)
    sync()
    results = {"plain": {"us_per_launch": loop_us(kernel, out, count, repeats, sync)}}
    cases = list(CASES)
    if kinds:
        cases += [(f"cupti, API kinds {'+'.join(k) or 'none'}", "cupti", None, k)
                  for k in KIND_CHOICES]
    with tempfile.TemporaryDirectory() as folder:
        for label, backend, hook, api in cases:
            try:
                results[label] = profiled(kernel, out, Path(folder), label, backend, hook, api,
                                          count, repeats, sync, torch_kernel)
            except Exception as err:  # noqa: BLE001 - a case that cannot run here is reported
                results[label] = {"error": f"{type(err).__name__}: {err}"}
    plain = results["plain"]["us_per_launch"]
    for result in results.values():
        if "us_per_launch" in result:
            result["ratio"] = result["us_per_launch"] / plain
    return results


# ---- --fake: the host side alone ------------------------------------------------------------

class _StandInCupti:
    """`cupti.cupti` whose calls do nothing (no records come: kernels end up nowhere)."""

    ActivityKind = types.SimpleNamespace(CONCURRENT_KERNEL=10, EXTERNAL_CORRELATION=40,
                                         RUNTIME=5, DRIVER=6)
    ExternalCorrelationKind = types.SimpleNamespace(CUSTOM2=7)

    def activity_register_callbacks(self, requested, completed): ...
    def activity_enable(self, kind): ...
    def activity_disable(self, kind): ...
    def activity_push_external_correlation_id(self, kind, external_id):
        CALLS["cuptiActivityPushExternalCorrelationId"] += 1

    def activity_pop_external_correlation_id(self, kind):
        CALLS["cuptiActivityPopExternalCorrelationId"] += 1

    def activity_flush_all(self, flag): ...
    def get_timestamp(self): return 0


class _StandInEvents:
    """The driver's event calls, doing nothing."""

    CUevent_flags = types.SimpleNamespace(CU_EVENT_DEFAULT=0)

    def cuEventCreate(self, flags):
        CALLS["cuEventCreate"] += 1
        return 0, object()

    def cuEventRecord(self, event, stream):
        CALLS["cuEventRecord"] += 1
        return (0,)

    def cuEventSynchronize(self, event):
        CALLS["cuEventSynchronize"] += 1
        return (0,)

    def cuEventElapsedTime(self, start, end):
        CALLS["cuEventElapsedTime"] += 1
        return 0, 0.001

    def cuEventDestroy(self, event):
        return (0,)


def fake(count: int, repeats: int) -> dict:
    """The cases on a stand-in GPU (see the module doc)."""
    import numpy as np

    import compiler.compiler as compile_driver
    from compiler.runtime.device_array import DeviceArray
    from compiler.runtime.launcher import KernelLauncher, Launcher

    def stand_in(*args):
        return (0,)

    class StandInCompiled:
        """A compiled kernel whose launcher is real (and whose cuLaunchKernel is not)."""

        def __init__(self, src):
            self.trace = None
            self.name = src.name
            self.num_warps = 1
            launcher = Launcher("FN", list(src.signature.values()), name=src.name,
                                launch_fn=stand_in)
            self._launcher = KernelLauncher(launcher, None, 1, 0)

        def launcher(self):
            return self._launcher

    patches = [(driver, "gpu_available", lambda: True),
               (driver, "synchronize", lambda device=0: None),
               (driver, "device_capability", lambda device=0: (9, 0)),
               (driver, "device_name", lambda device=0: "stand-in"),
               (driver, "device_attribute", lambda name, device=0: 1),
               (driver, "bindings", lambda: _StandInEvents()),
               (driver, "context", lambda device=0: None),
               (compile_driver, "compile",
                lambda src, options=None, pipelines=None: StandInCompiled(src))]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    sys.modules["cupti"] = types.SimpleNamespace(cupti=_StandInCupti())
    try:
        with tempfile.TemporaryDirectory() as folder:
            kernel = load_kernel(Path(folder))
            kernel._default_interpret = False          # launch on the "GPU" without one
            out = DeviceArray((32,), np.float32, 1 << 20, owner=False)
            return run_cases(kernel, out, count, repeats, lambda: None, kinds=False)
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
        del sys.modules["cupti"]


def gpu(count: int, repeats: int, kinds: bool) -> dict:
    """The cases on the GPU, with a torch kernel in the scope when torch is importable."""
    import numpy as np

    from compiler.runtime.device_array import DeviceArray

    torch_kernel = None
    try:
        import torch
        a = torch.ones(64, device="cuda")
        torch_kernel = lambda: a.mul_(1.0)             # noqa: E731 - one torch kernel
    except Exception:                                  # noqa: BLE001 - torch is optional
        print("(torch not importable: no torch kernel in the scope)")
    with tempfile.TemporaryDirectory() as folder:
        kernel = load_kernel(Path(folder))
        out = DeviceArray.empty((32,), np.float32)
        return run_cases(kernel, out, count, repeats, driver.synchronize, kinds, torch_kernel)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="launches per loop")
    parser.add_argument("--repeats", type=int, default=3, help="loops per case (best kept)")
    parser.add_argument("--kinds", action="store_true",
                        help="also measure CUPTI with each other choice of API activity kinds")
    parser.add_argument("--fake", action="store_true", help="no GPU: the host side alone")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.fake:
        device = "no GPU (--fake: stand-in cuLaunchKernel, CUPTI and events)"
        results = fake(args.count, args.repeats)
    elif not driver.gpu_available():
        print("no usable CUDA GPU here: nothing to measure (try --fake)")
        return 1
    else:
        device = driver.device_name()
        results = gpu(args.count, args.repeats, args.kinds)
    assert not STATE.sessions
    print(f"{device}: {args.count} launches per loop, best of {args.repeats}")
    width = max(map(len, results))
    for label, result in results.items():
        if "error" in result:
            print(f"  {label:<{width}}  {result['error']}")
            continue
        line = f"  {label:<{width}}  {result['us_per_launch']:6.2f} us/launch"
        if label != "plain":
            line += (f"  {result['ratio']:.2f}x   ours under scope {result['ours_under_scope']}"
                     f", elsewhere {result['ours_elsewhere']}, others under scope "
                     f"{result['others_under_scope']}, untagged {result['untagged']}")
            calls = result.get("stand_in_calls_per_launch")
            if calls:
                line += "\n      per launch: " + ", ".join(f"{n} {v:.2f}" for n, v in
                                                        calls.items())
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"device": device, "count": args.count,
                                         "repeats": args.repeats, "results": results},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
