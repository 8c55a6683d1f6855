"""In-kernel regions on a real GPU (issue 13 item 4): a loop-heavy kernel's per-iteration
region cycles add up to within 10% of its whole-kernel region, every warp of every program
reports, user scopes are timed, and the instrumentation's overhead is measured and printed."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
import compiler.language as tl
import compiler.profiler as proton
from compiler.profiler.instrument import measure_overhead
from compiler.profiler.state import STATE
from compiler.runtime import driver
from compiler.runtime.device_array import DeviceArray

pytestmark = pytest.mark.gpu

ITERS = 100                     # loop iterations: 2 records each, plus the kernel's 2
PROGRAMS, WARPS, BLOCK = 132, 4, 128
MODE = "instrumentation:slots=512"


@compiler.jit
def heavy_loop(out, iters, BLOCK: tl.constexpr):
    """Each iteration is a 1024-deep dependent FMA chain (~4000 cycles): the body dominates
    the loop."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = offs.to(tl.float32)
    for _ in range(iters):
        for _k in tl.static_range(1024):
            acc = acc * 0.999999 + 0.5
    with tl.profile("store"):
        tl.store(out + offs, acc)


@pytest.fixture(autouse=True)
def no_sessions_left():
    yield
    if STATE.sessions:
        proton.finalize()


def _regions(tmp_path):
    out = DeviceArray.empty((PROGRAMS * BLOCK,), np.float32)
    heavy_loop[(PROGRAMS,)](out, ITERS, BLOCK=BLOCK, num_warps=WARPS)   # plain, compiled first
    plain = out.to_numpy()
    session = proton.start(str(tmp_path / "regions"), mode=MODE)
    heavy_loop[(PROGRAMS,)](out, ITERS, BLOCK=BLOCK, num_warps=WARPS)
    profile = STATE.sessions[session].profile
    kernel = next(iter(profile.root.children.values()))
    assert np.array_equal(out.to_numpy(), plain)           # instrumenting changed no result
    return profile, kernel.children


def test_loop_regions_add_up_to_the_kernel(tmp_path):
    profile, regions = _regions(tmp_path)
    body = next(node for name, node in regions.items() if name.endswith("body"))
    whole = regions["kernel"]
    assert profile.metadata["instrumentation"]["lost_records"] == 0
    assert body.metrics["region_executions"] == PROGRAMS * WARPS * ITERS
    assert whole.attributes["warps"] == PROGRAMS * WARPS
    loop_cycles = body.attributes["cycles"]["median"]        # per warp, all iterations
    kernel_cycles = whole.attributes["cycles"]["median"]
    print(f"loop body {loop_cycles:.0f} cycles of the kernel's {kernel_cycles:.0f} "
          f"({loop_cycles / kernel_cycles:.1%}) per warp, median over "
          f"{whole.attributes['warps']} warps")
    assert 0.9 * kernel_cycles <= loop_cycles <= kernel_cycles
    assert regions["store"].metrics["region_executions"] == PROGRAMS * WARPS
    assert whole.attributes["ns"]["median"] > 0


def test_chrome_trace_has_a_track_per_warp(tmp_path):
    profile, _ = _regions(tmp_path)
    tracks = {e["tid"] for e in profile.warp_events if e["ph"] == "X"}
    assert tracks == set(range(PROGRAMS * WARPS))


def test_instrumentation_overhead_is_measured():
    out = DeviceArray.empty((PROGRAMS * BLOCK,), np.float32)
    cost = measure_overhead(heavy_loop, (PROGRAMS,), out, ITERS, BLOCK=BLOCK, num_warps=WARPS,
                            mode=MODE)
    driver.synchronize()
    print(f"plain {cost['plain_ms']:.3f} ms, instrumented {cost['instrumented_ms']:.3f} ms: "
          f"{cost['overhead']:.2f}x ({cost['pass']})")
    assert cost["instrumented_ms"] >= 0.9 * cost["plain_ms"]
    assert cost["overhead"] < 3.0
