"""The profiler on a real GPU: CUPTI kernel times against do_bench, torch's kernels in the tree,
the CUDA-event fallback, and the overhead on 10,000 tiny launches (Proton's 1.5x claim).

CUPTI tests skip (with the reason) where `cupti-python` is missing or CUPTI refuses; the
fallback tests run either way.
"""
from __future__ import annotations

import json
import time
import warnings

import numpy as np
import pytest

import compiler
import compiler.language as tl
import compiler.profiler as proton
from compiler.profiler.state import STATE
from compiler.profiler.timers import TimerUnavailable
from compiler.runtime import driver
from compiler.runtime.device_array import DeviceArray
from compiler.testing import do_bench

pytestmark = pytest.mark.gpu

SPIN_ITERS = 200_000         # about half a millisecond per launch on an H200


@compiler.jit
def spin(out, iters, BLOCK: tl.constexpr):
    """A compute-bound kernel whose length is set by `iters` (a dependent FMA chain)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = offs.to(tl.float32)
    for _ in range(iters):
        acc = acc * 0.999999 + 0.5
    tl.store(out + offs, acc)


@compiler.jit
def tiny(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs.to(tl.float32))


def _cupti_reason() -> str | None:
    from compiler.profiler.cupti_timer import load_cupti
    try:
        load_cupti()
    except TimerUnavailable as why:
        return str(why)
    return None


needs_cupti = pytest.mark.skipif(_cupti_reason() is not None,
                                 reason=f"CUPTI not usable: {_cupti_reason()}")


@pytest.fixture(autouse=True)
def no_sessions_left():
    yield
    if STATE.sessions:
        proton.finalize()


def _kernel_nodes(node, found=None):
    found = [] if found is None else found
    if not node["children"] and node["metrics"].get("count"):
        found.append(node)
    for child in node["children"]:
        _kernel_nodes(child, found)
    return found


def _profile_spin(tmp_path, backend, launches=20):
    out = DeviceArray.empty((132 * 128,), np.float32)
    grid = (132,)
    spin[grid](out, SPIN_ITERS, BLOCK=128)        # compile outside the session
    driver.synchronize()
    session = proton.start(str(tmp_path / backend), backend=backend)
    with proton.scope("spin"):
        for _ in range(launches):
            spin[grid](out, SPIN_ITERS, BLOCK=128)
    [path] = proton.finalize(session)
    expected = do_bench(lambda: spin[grid](out, SPIN_ITERS, BLOCK=128),
                        return_mode="median")
    literal = json.loads(path.read_text())
    [node] = _kernel_nodes(literal[0])
    assert node["metrics"]["count"] == launches
    return node["metrics"]["time (ns)"] / launches / 1e6, expected, literal[0]["metadata"]


@pytest.mark.timing
@needs_cupti
def test_cupti_kernel_time_matches_do_bench(tmp_path):
    measured, expected, metadata = _profile_spin(tmp_path, "cupti")
    assert metadata["timing"]["method"] == "cupti"
    assert abs(measured - expected) / expected < 0.05, (measured, expected)


@pytest.mark.timing
def test_cuda_event_fallback_times_our_kernels(tmp_path):
    measured, expected, metadata = _profile_spin(tmp_path, "cuda_events")
    assert metadata["timing"] == {"method": "cuda_events", "other_kernels": False}
    assert abs(measured - expected) / expected < 0.10, (measured, expected)


@pytest.mark.skipif(_cupti_reason() is None, reason="cupti-python is usable here")
def test_missing_cupti_falls_back_with_one_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = proton.start(str(tmp_path / "fallback"))
    assert any("CUDA events instead" in str(w.message) for w in caught)
    [path] = proton.finalize(session)
    timing = json.loads(path.read_text())[0]["metadata"]["timing"]
    assert timing["method"] == "cuda_events" and timing["fallback_from"] == "cupti"


@needs_cupti
def test_torch_kernels_appear_under_their_scope(tmp_path):
    torch = pytest.importorskip("torch")
    a = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    session = proton.start(str(tmp_path / "torch"))
    with proton.scope("torch matmul"):
        for _ in range(3):
            a @ a
    [path] = proton.finalize(session)
    root = json.loads(path.read_text())[0]
    [scope] = [c for c in root["children"] if c["frame"]["name"] == "torch matmul"]
    kernels = _kernel_nodes(scope)
    assert kernels and sum(k["metrics"]["count"] for k in kernels) >= 3
    assert all(k["metrics"]["time (ns)"] > 0 for k in kernels)


def _loop_seconds(out, launches: int) -> float:
    driver.synchronize()
    start = time.perf_counter()
    for _ in range(launches):
        tiny[(1,)](out, BLOCK=32)
    driver.synchronize()
    return time.perf_counter() - start


def _record_pairs_seconds(pairs: int) -> float:
    """`pairs` cuEventRecord pairs on the default stream with no launch between (the CUDA
    events path's own driver work, per the same 10,000 iterations)."""
    cu = driver.bindings()
    events = [driver.check(cu.cuEventCreate(0), "cuEventCreate") for _ in range(2)]
    driver.synchronize()
    start = time.perf_counter()
    for _ in range(pairs):
        cu.cuEventRecord(events[0], None)
        cu.cuEventRecord(events[1], None)
    driver.synchronize()
    seconds = time.perf_counter() - start
    for event in events:
        cu.cuEventDestroy(event)
    return seconds


@pytest.mark.timing
@pytest.mark.parametrize("backend", [
    pytest.param("cupti", marks=needs_cupti), "cuda_events"])
def test_overhead_on_tiny_launches(tmp_path, backend):
    out = DeviceArray.empty((32,), np.float32)
    _loop_seconds(out, 200)                            # compile, make the fast launch
    plain = min(_loop_seconds(out, 10_000) for _ in range(3))
    session = proton.start(str(tmp_path / f"overhead_{backend}"), backend=backend)
    profiled = min(_loop_seconds(out, 10_000) for _ in range(3))
    [path] = proton.finalize(session)
    [node] = _kernel_nodes(json.loads(path.read_text())[0])
    assert node["metrics"]["count"] == 30_000
    # CUPTI names the record by the loaded function; the profile names it by specialization
    assert node["frame"]["name"] == "tiny [*fp32, BLOCK=32]", node["frame"]["name"]
    print(f"{backend}: {plain * 1e2:.2f} us/launch plain, {profiled * 1e2:.2f} profiled "
          f"({profiled / plain:.2f}x)")
    if backend == "cupti":
        assert profiled <= 1.5 * plain, (plain, profiled)      # Proton's claim, for CUPTI
        return
    # CUDA events cannot meet 1.5x on a tiny launch: each launch records two events, two
    # more driver calls that cost about what the launch's own cuLaunchKernel does (on the
    # H200: 9.7 us/launch plain, 18.7 with events). The honest bound is that the profiler
    # adds those two records and little else: at most 2 us of Python per launch beyond the
    # records' own cost measured alone (1.25x of it, for the noise of a shared host).
    records = min(_record_pairs_seconds(10_000) for _ in range(3))
    added = profiled - plain
    print(f"cuda_events: the two records alone {records * 1e2:.2f} us/launch, the profiler "
          f"added {added * 1e2:.2f}")
    assert added <= 1.25 * records + 10_000 * 2e-6, (plain, profiled, records)
