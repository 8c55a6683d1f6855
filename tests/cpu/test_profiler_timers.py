"""The profiler's GPU timing paths without a GPU: a stand-in GPU (the fast launch's recording
cuLaunchKernel) and a stand-in `cupti` module that turns each launch into CUPTI-like kernel and
external-correlation records, and stand-in CUDA events for the fallback."""
from __future__ import annotations

import enum
import json
import sys
import types
import warnings

import pytest

import compiler.profiler as proton
from compiler.profiler import cupti_timer, timers
from compiler.profiler.state import STATE
from compiler.profiler.timers import TimerUnavailable
from compiler.runtime import driver, recording
from tests.cpu import test_jit_fast_launch as stand_in
from tests.cpu.test_jit_fast_launch import gpu, torch_like  # noqa: F401 - the fixture

KERNEL_NS = 5000            # every stand-in kernel runs this long


class Kind(enum.IntEnum):
    RUNTIME = 5
    DRIVER = 6
    CONCURRENT_KERNEL = 10
    EXTERNAL_CORRELATION = 40


class ExternalKind(enum.IntEnum):
    CUSTOM2 = 7


class FakeCupti:
    """Enough of `cupti.cupti` for the timer: enabling, external ids, records at flush."""

    ActivityKind = Kind
    ExternalCorrelationKind = ExternalKind

    def __init__(self, refuse=False):
        self.refuse = refuse
        self.stack, self.records, self.enabled = [], [], set()
        self.clock, self.correlation, self.completed = 10**9, 0, None

    def activity_register_callbacks(self, requested, completed):
        assert requested() == (8 * 1024 * 1024, 0)
        self.completed = completed

    def activity_enable(self, kind):
        if self.refuse:
            raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
        self.enabled.add(kind)

    def activity_disable(self, kind):
        self.enabled.discard(kind)

    def activity_push_external_correlation_id(self, kind, external_id):
        assert kind == ExternalKind.CUSTOM2
        self.stack.append(external_id)

    def activity_pop_external_correlation_id(self, kind):
        self.stack.pop()

    def get_timestamp(self):
        return self.clock

    def kernel(self, name):
        """A kernel launched now (ours through cuLaunchKernel, or another library's)."""
        if Kind.CONCURRENT_KERNEL not in self.enabled:
            return
        self.correlation += 1
        self.clock += 2 * KERNEL_NS
        self.records.append(types.SimpleNamespace(
            kind=int(Kind.CONCURRENT_KERNEL), correlation_id=self.correlation, name=name,
            start=self.clock, end=self.clock + KERNEL_NS))
        if self.stack:
            self.records.append(types.SimpleNamespace(
                kind=int(Kind.EXTERNAL_CORRELATION), correlation_id=self.correlation,
                external_id=self.stack[-1]))

    def activity_flush_all(self, flag):
        records, self.records = self.records, []
        self.completed(records)


@pytest.fixture
def fake_gpu(monkeypatch, gpu):
    """The stand-in GPU kernel plus a driver that says a GPU is there."""
    kernel, compiled, calls = gpu
    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    monkeypatch.setattr(driver, "synchronize", lambda device=0: None)
    monkeypatch.setattr(driver, "device_capability", lambda device=0: (9, 0))
    monkeypatch.setattr(driver, "device_name", lambda device=0: "stand-in H200")
    monkeypatch.setattr(driver, "device_attribute", lambda name, device=0: 7)
    yield kernel, calls
    if STATE.sessions:
        proton.finalize()


@pytest.fixture
def fake_cupti(monkeypatch, fake_gpu):
    cupti = FakeCupti()
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=cupti))
    monkeypatch.setattr(cupti_timer, "_REGISTERED", False)
    original = stand_in.Calls.__call__

    def launch(self, *args):
        cupti.kernel("add_kernel")
        return original(self, *args)
    monkeypatch.setattr(stand_in.Calls, "__call__", launch)
    return cupti


def _launch(kernel, times=1):
    x, out = torch_like(1 << 20), torch_like(1 << 21)
    for _ in range(times):
        kernel[(1,)](x, x, out, 64, BLOCK=32)


def _children(node):
    return {c["frame"]["name"]: c for c in node["children"]}


SPEC = "add_kernel [*fp32, *fp32, *fp32, i32, BLOCK=32]"


def test_cupti_records_are_attributed_to_scopes_and_specializations(fake_gpu, fake_cupti,
                                                                    tmp_path):
    kernel, calls = fake_gpu
    _launch(kernel)                                     # compile, fast launch (no session)
    fake_cupti.kernel("before_any_session")
    session = proton.start(str(tmp_path / "c"))
    with proton.scope("step"):
        _launch(kernel, 3)
        fake_cupti.kernel("torch_gemm")                 # another library's kernel
        with proton.scope("inner"):
            _launch(kernel)
    proton.deactivate(session)
    _launch(kernel)
    fake_cupti.kernel("while_inactive")
    proton.activate(session)
    _launch(kernel)
    [path] = proton.finalize(session)
    root = json.loads(path.read_text())[0]
    assert root["metadata"]["timing"] == {"method": "cupti", "other_kernels": True,
                                          "untagged_kernels": 2}   # run while inactive
    assert root["metadata"]["device"]["CUDA"]["0"]["arch"] == "90"
    top = _children(root)
    assert set(top) == {"step", SPEC}
    step = _children(top["step"])
    assert step[SPEC]["metrics"] == {"count": 3, "time (ns)": 3 * KERNEL_NS,
                                     "device_id": "0", "device_type": "CUDA"}
    assert step["torch_gemm"]["metrics"]["count"] == 1
    assert _children(step["inner"])[SPEC]["metrics"]["count"] == 1
    assert top[SPEC]["metrics"]["count"] == 1
    assert not fake_cupti.stack and not fake_cupti.enabled      # popped, stopped
    assert len(calls.calls) == 7


def test_hook_metrics_on_gpu_launches(fake_gpu, fake_cupti, tmp_path):
    kernel, _ = fake_gpu
    kernel.launch_metadata = lambda grid, k, args: {"name": f"add {args['n']}",
                                                    "bytes": args["n"] * 12}
    _launch(kernel)
    session = proton.start(str(tmp_path / "h"), hook="triton")
    _launch(kernel, 2)
    [path] = proton.finalize(session)
    node = _children(json.loads(path.read_text())[0])["add 64"]
    assert node["metrics"]["bytes"] == 2 * 64 * 12 and node["metrics"]["count"] == 2


class FakeEventDriver:
    """cuEventCreate/Record/Synchronize/ElapsedTime/Destroy on a clock that advances 1 ms
    per record (enough of cuda.bindings' driver for the event timer)."""

    CUevent_flags = types.SimpleNamespace(CU_EVENT_DEFAULT=0)

    def __init__(self):
        self.clock, self.at, self.created, self.destroyed = 0.0, {}, 0, 0

    def cuEventCreate(self, flags):
        self.created += 1
        return 0, self.created

    def cuEventRecord(self, event, stream):
        self.clock += 1.0
        self.at[event] = self.clock
        return (0,)

    def cuEventSynchronize(self, event):
        return (0,)

    def cuEventElapsedTime(self, start, end):
        return 0, self.at[end] - self.at[start]

    def cuEventDestroy(self, event):
        self.destroyed += 1
        return (0,)


def test_refused_cupti_falls_back_to_cuda_events_with_one_warning(monkeypatch, fake_gpu,
                                                                   tmp_path):
    kernel, _ = fake_gpu
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=FakeCupti(True)))
    monkeypatch.setattr(cupti_timer, "_REGISTERED", False)
    events = FakeEventDriver()
    monkeypatch.setattr(driver, "bindings", lambda: events)
    monkeypatch.setattr(timers, "MAX_PENDING", 64)       # read the times early, then reuse
    monkeypatch.setattr(timers, "POOL_START", 16)
    _launch(kernel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = proton.start(str(tmp_path / "e"))
    [warning] = caught
    assert "CUPTI is not usable" in str(warning.message)
    assert "INSUFFICIENT_PRIVILEGES" in str(warning.message)
    _launch(kernel, 5)
    timer = STATE.timer
    assert len(timer._pending) == 5 and len(timer._pool) == 16     # read lazily, at flush
    _launch(kernel, 100)                # past MAX_PENDING: read once, the pool reused
    assert len(timer._pending) == 105 - 64 and len(timer._pool) == 64
    [path] = proton.finalize(session)
    assert events.destroyed == events.created == 2 * 64 + 1
    root = json.loads(path.read_text())[0]
    timing = root["metadata"]["timing"]
    assert timing["method"] == "cuda_events" and timing["fallback_from"] == "cupti"
    assert "INSUFFICIENT_PRIVILEGES" in timing["why"]
    node = _children(root)[SPEC]
    assert node["metrics"]["count"] == 105 and node["metrics"]["time (ns)"] == 105 * 1e6


def test_asking_for_cupti_without_it_is_an_error(monkeypatch, fake_gpu):
    monkeypatch.setitem(sys.modules, "cupti", None)        # import fails
    with pytest.raises(TimerUnavailable, match=r"cupti-python is not importable.*\[profile\]"):
        proton.start("x", backend="cupti")
    assert not STATE.sessions


def test_cupti_kernels_in_the_chrome_trace(fake_gpu, fake_cupti, tmp_path):
    kernel, _ = fake_gpu
    _launch(kernel)
    session = proton.start(str(tmp_path / "trace"))
    with proton.scope("step"):
        _launch(kernel, 2)
        fake_cupti.kernel("torch_gemm")
    [path] = proton.finalize(session, output_format="chrome_trace")
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    gpu_events = [e for e in events if e["cat"] == "gpu"]
    assert [e["name"] for e in gpu_events] == [SPEC, SPEC, "torch_gemm"]
    assert all(e["dur"] == KERNEL_NS / 1e3 and e["args"]["path"] == "step" for e in gpu_events)
    assert gpu_events[0]["ts"] < gpu_events[1]["ts"] < gpu_events[2]["ts"]
    assert [e["name"] for e in events if e["cat"] == "host"] == ["step"]


def test_quiet_launches_push_nothing_and_shared_names_push_per_launch(fake_gpu, fake_cupti,
                                                                      tmp_path, monkeypatch):
    """Without a hook, a launch of ours pushes no id (the scope's stays pushed, the record's
    name finds the specialization); once two specializations share a function name, both
    push one per launch and each record still lands on its own node."""
    kernel, _ = fake_gpu
    pushes = []
    push = fake_cupti.activity_push_external_correlation_id
    monkeypatch.setattr(fake_cupti, "activity_push_external_correlation_id",
                        lambda kind, i: (pushes.append(i), push(kind, i)))
    _launch(kernel)
    x, out = torch_like(1 << 20), torch_like(1 << 21)
    kernel[(1,)](x, x, out, 64, BLOCK=64)                 # a second specialization, compiled
    session = proton.start(str(tmp_path / "q"))
    with proton.scope("step"):
        before = len(pushes)
        _launch(kernel, 50)
        assert len(pushes) == before                      # nothing pushed per launch
        assert len(recording.QUIET) == 1
        for _ in range(3):
            kernel[(1,)](x, x, out, 64, BLOCK=64)         # same function name: ambiguous
        _launch(kernel, 2)
        assert len(pushes) == before + 5 and not recording.QUIET
    [path] = proton.finalize(session)
    step = _children(_children(json.loads(path.read_text())[0])["step"])
    assert step[SPEC]["metrics"]["count"] == 52
    assert step[SPEC.replace("BLOCK=32", "BLOCK=64")]["metrics"]["count"] == 3
