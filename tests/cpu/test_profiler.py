"""The Proton-style profiler through the interpreter: sessions, scopes, the triton hook, the
hatchet / Chrome trace exports, the autotuner's results and `tile-explore prof`."""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

import compiler
import compiler.language as tl
import compiler.profiler as proton
from compiler.profiler import viewer
from compiler.profiler.data import WALL_TIME
from compiler.profiler.state import STATE
from compiler.runtime import recording
from compiler.runtime.autotuner import Autotuner, AutotuneEnv, Config
from compiler.runtime.jit import JITFunction
from explorer import prof


def _metadata(grid, kernel, args):
    return {"name": f"add_meta n={args['n']}", "flops32": args["n"], "bytes": 12 * args["n"],
            "note": "not a number"}


@compiler.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


add_meta = compiler.jit(launch_metadata=_metadata)(add.fn)
N = 300
X = np.arange(N, dtype=np.float32)
OUT = np.zeros_like(X)


def launch(kernel=add, block=128):
    kernel[(math.ceil(N / block),)](X, X, OUT, N, BLOCK=block, interpret=True)


@pytest.fixture(autouse=True)
def no_sessions_left():
    yield
    if STATE.sessions:
        proton.finalize()
    assert not STATE.sessions


def _tree(path):
    return json.loads(path.read_text())


def _child(node, name):
    return next(c for c in node["children"] if c["frame"]["name"] == name)


def _spec(block=128):
    return f"add [*fp32, *fp32, *fp32, i32, BLOCK={block}]"


def test_scopes_nest_and_kernels_count_under_them(tmp_path):
    session = proton.start(str(tmp_path / "p"))
    with proton.scope("outer", {"bytes": 7}):
        launch()
        with proton.scope("inner"):
            launch()
            launch(block=64)
    launch()
    [path] = proton.finalize(session)
    assert path == tmp_path / "p.hatchet"
    root, device = _tree(path)
    assert root["frame"] == {"name": "ROOT", "type": "function"}
    assert device == {}                                   # no GPU here
    assert set(root["metrics"]) >= {"count", WALL_TIME, "bytes"}
    outer = _child(root, "outer")
    assert outer["metrics"] == {"bytes": 7}
    assert _child(outer, _spec())["metrics"]["count"] == 1
    inner = _child(outer, "inner")
    assert [c["frame"]["name"] for c in inner["children"]] == [_spec(), _spec(64)]
    assert _child(root, _spec())["metrics"]["count"] == 1
    kernel = _child(inner, _spec(64))
    assert kernel["metrics"][WALL_TIME] > 0
    assert kernel["attributes"] == {"kernel": "add", "specialization": _spec(64)}
    assert root["metadata"]["timing"]["method"] == "wall"


def test_layout_is_what_hatchet_reads(tmp_path):
    session = proton.start(str(tmp_path / "h"), hook="triton")
    with proton.scope("s"):
        launch(add_meta)
    [path] = proton.finalize(session)
    literal = _tree(path)

    def check(node):
        assert set(node) <= {"frame", "metrics", "children", "attributes", "metadata"}
        assert isinstance(node["frame"]["name"], str) and node["frame"]["type"] == "function"
        assert all(isinstance(v, (int, float, str)) for v in node["metrics"].values())
        for child in node["children"]:
            check(child)
    check(literal[0])
    hatchet = pytest.importorskip("hatchet")
    graph = hatchet.GraphFrame.from_literal(literal[:1])
    graph.update_inclusive_columns()
    assert "count" in graph.show_metric_columns()
    frame = graph.dataframe
    kernel = frame[frame["name"] == "add_meta n=300"]
    assert int(kernel["count"].iloc[0]) == 1 and int(kernel["flops32"].iloc[0]) == 300
    assert int(frame[frame["name"] == "ROOT"]["count (inc)"].iloc[0]) == 1


def test_activate_deactivate_and_two_sessions(tmp_path):
    first = proton.start(str(tmp_path / "a"))
    second = proton.start(str(tmp_path / "b"))
    assert first != second
    launch()
    proton.deactivate(first)
    launch()
    proton.deactivate()
    assert STATE.hook not in recording.OBSERVERS             # nothing active: fast path untouched
    launch()
    proton.activate(first)
    launch()
    paths = proton.finalize()
    counts = [_tree(p)[0]["children"][0]["metrics"]["count"] for p in paths]
    assert counts == [2, 2]
    assert STATE.hook not in recording.OBSERVERS


def test_decorators_and_enter_exit_scope(tmp_path):
    @proton.scope("decorated", {"flops16": 1})
    def work():
        launch()

    @proton.profile(name=str(tmp_path / "d"))
    def profiled():
        work()
        assert proton.enter_scope("manual", triton_op=True) == 0
        launch()
        assert proton.exit_scope(triton_op=True) == 0

    profiled()
    assert STATE.hook not in recording.OBSERVERS             # profile() deactivates
    work()                                                # not recorded
    [path] = proton.finalize()
    root = _tree(path)[0]
    decorated = _child(root, "decorated")
    assert decorated["metrics"] == {"flops16": 1}
    assert _child(decorated, _spec())["metrics"]["count"] == 1
    assert _child(_child(root, "manual"), _spec())["metrics"]["count"] == 1
    assert proton.enter_scope("off") == -1 and proton.exit_scope() == -1


def test_triton_hook_names_kernels_and_adds_metrics(tmp_path):
    plain = proton.start(str(tmp_path / "plain"))
    launch(add_meta)
    [path] = proton.finalize(plain)
    assert _tree(path)[0]["children"][0]["frame"]["name"] == _spec().replace("add", "add", 1)
    hooked = proton.start(str(tmp_path / "hooked"), hook="triton")
    launch(add_meta)
    launch(add_meta)
    [path] = proton.finalize(hooked)
    node = _tree(path)[0]["children"][0]
    assert node["frame"]["name"] == "add_meta n=300"
    assert node["metrics"]["flops32"] == 600 and node["metrics"]["bytes"] == 7200
    assert "note" not in node["metrics"]


def test_python_context_names_frames(tmp_path):
    session = proton.start(str(tmp_path / "py"), context="python")
    launch()
    [path] = proton.finalize(session)
    names = []
    node = _tree(path)[0]
    while node["children"]:
        node = node["children"][0]
        names.append(node["frame"]["name"])
    assert names[-1] == _spec()
    assert any(n.endswith(f"test_profiler.py:launch@{launch.__code__.co_firstlineno + 1}")
               for n in names)
    assert all("compiler/" not in n.split(":")[0] for n in names[:-1])


def test_chrome_trace_schema(tmp_path):
    session = proton.start(str(tmp_path / "t"))
    with proton.scope("outer"):
        launch()
        launch()
    [path] = proton.finalize(session, output_format="chrome_trace")
    assert path.name == "t.chrome_trace"
    trace = json.loads(path.read_text())
    assert trace["displayTimeUnit"] == "ns"
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert {e["name"] for e in meta} == {"process_name", "thread_name"}
    for event in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "cat", "args"} <= set(event)
        assert isinstance(event["ts"], float) and event["dur"] >= 0
    kernels = [e for e in complete if e["cat"] == "interpreter"]
    [scope] = [e for e in complete if e["cat"] == "host"]
    assert len(kernels) == 2 and scope["name"] == "outer"
    assert all(scope["ts"] <= k["ts"] and k["ts"] + k["dur"] <= scope["ts"] + scope["dur"]
               for k in kernels)
    assert kernels[0]["args"]["path"] == "outer"


@pytest.mark.parametrize("option, value, allowed", [
    ("context", "cuda", "'shadow', 'python'"), ("hook", "launch", "None, 'triton'"),
    ("data", "trace", "'tree'"), ("backend", "roctracer", "None, 'cupti', 'cuda_events'"),
    ("mode", "pcsampling", "None")])
def test_unsupported_options_say_what_is_allowed(option, value, allowed):
    with pytest.raises(ValueError, match=f"{option}={value!r} is not supported; "
                                         f"allowed: {allowed}"):
        proton.start("x", **{option: value})


def test_unknown_session_and_format():
    with pytest.raises(ValueError, match="no session 42"):
        proton.activate(42)
    with pytest.raises(ValueError, match="output_format='csv'.*'hatchet', 'chrome_trace'"):
        proton.finalize(output_format="csv")


def test_triton_alias_exposes_the_profiler():
    from compiler import triton_alias
    with triton_alias.installed():
        import triton.profiler as aliased
        assert aliased is proton                   # the same module, not a second copy
        assert sys.modules["triton.profiler"] is proton


class PretendGpu(JITFunction):
    """A JITFunction whose launches are recorded, on a pretend GPU (for the autotuner)."""

    def __init__(self, fn):
        super().__init__(fn)
        self._default_interpret = False

    def run(self, *args, grid, **kwargs):
        return None


def test_autotuning_goes_into_the_profile_and_prints(tmp_path, capsys, monkeypatch):
    configs = [Config({"BLOCK": 32}), Config({"BLOCK": 64}, num_warps=2)]
    kernel = PretendGpu(add.fn)
    times = iter([2.0, 1.0])
    monkeypatch.setenv("TILE_PRINT_AUTOTUNING", "1")
    tuned = Autotuner(kernel, kernel.arg_names, configs, key=["n"],
                      do_bench=lambda fn, warmup, rep, return_mode: next(times))
    assert tuned.env == AutotuneEnv(print_autotuning=True)
    session = proton.start(str(tmp_path / "tune"))
    tuned[(1,)](X, X, OUT, N)
    [path] = proton.finalize(session)
    root = _tree(path)[0]
    tuning = _child(root, "autotune add")
    fast = _child(tuning, f"config {configs[1]}")
    assert fast["metrics"]["autotune median (ns)"] == 1e6 and fast["attributes"]["chosen"]
    [record] = root["metadata"]["autotuning"]
    assert record["best"] == repr(configs[1]) and record["key"][0] == "300"
    assert [c["median_ms"] for c in record["configs"]] == [2.0, 1.0]
    printed = capsys.readouterr().out
    assert "Autotuning for add finished" in printed and f"* {configs[1]}: 1.0000 ms" in printed


def test_autotuning_env_is_read_once():
    assert AutotuneEnv.from_environ({"TRITON_PRINT_AUTOTUNING": "1"}).print_autotuning
    assert not AutotuneEnv.from_environ({}).print_autotuning


# ---- tile-explore prof -------------------------------------------------------------------------

SCRIPT = '''
import sys
import numpy as np
import triton
import triton.language as tl
import triton.profiler as proton


@triton.jit(launch_metadata=lambda grid, kernel, args: {"bytes": 12 * args["n"],
                                                        "flops32": args["n"]})
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


x = np.arange(100, dtype=np.float32)
out = np.zeros_like(x)
assert proton.start("ignored") is not None      # joins the command's session
with proton.scope("step"):
    for _ in range(3):
        add[(1,)](x, x, out, 100, BLOCK=128, interpret=True)
proton.finalize()                               # left to the command
print("script args", sys.argv[1:])
'''


def test_prof_runs_a_script_and_prints_the_tree(tmp_path, capsys):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    name = tmp_path / "out"
    assert prof.main(["-n", str(name), "--hook", "triton", "--", str(script), "a1"]) == 0
    printed = capsys.readouterr().out
    assert "script args ['a1']" in printed and f"wrote {name}.hatchet" in printed
    lines = printed.splitlines()
    header = next(line for line in lines if line.strip().startswith("time/ms"))
    assert header.split() == ["time/ms", "count", "pct", "rate", "name"]
    step = next(line for line in lines if line.endswith("└─ step"))
    assert " 3 " in step and "100.0%" in step and "TFLOP/s" in step and "GB/s" in step
    assert any(line.endswith("└─ add [*fp32, *fp32, *fp32, i32, BLOCK=128]") for line in lines)
    assert "timed with wall clock (interpreter)" in printed

    assert prof.main([f"{name}.hatchet", "-m", "count,avg_time/us,gbyte/s", "--depth", "1"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].split() == ["count", "avg_time/us", "gbyte/s", "name"]
    assert len(shown) == 1 + 2 + 1                 # header, ROOT, step, timing note
    assert prof.main([f"{name}.hatchet", "-e", "step"]) == 0
    assert "step" not in capsys.readouterr().out
    assert prof.main([f"{name}.hatchet", "-i", "add"]) == 0
    assert "add [" in capsys.readouterr().out


def test_prof_errors(tmp_path, capsys):
    assert prof.main([str(tmp_path / "missing.hatchet")]) == 2
    assert "cannot read a profile" in capsys.readouterr().err
    assert prof.main(["--", str(tmp_path / "none.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\nraise RuntimeError('boom')\n")
    assert prof.main(["-n", str(tmp_path / "bad"), "--", str(bad)]) == 1
    assert f"{bad}:2: RuntimeError: boom" in capsys.readouterr().err
    root, _ = viewer.load(tmp_path / "bad.hatchet")
    with pytest.raises(ValueError, match="metric 'nope' is not in this profile; choose from"):
        viewer.render(root, ("nope",))


def test_prof_runs_pytest(tmp_path, capsys):
    test_file = tmp_path / "test_tiny.py"
    test_file.write_text(SCRIPT.replace('print("script args", sys.argv[1:])', "")
                         .replace("with proton.scope", "def test_it():\n    pass\n\n\nwith "
                                  "proton.scope"))
    outer = dict(os.environ)
    try:
        status = prof.main(["-n", str(tmp_path / "pt"), "--", "python", "-m", "pytest", "-q",
                            "-p", "no:cacheprovider", str(test_file)])
    finally:
        # the nested session's plugins rewrite os.environ (pytest-textual-snapshot points
        # TEXTUAL_SNAPSHOT_TEMPDIR at a folder it deletes when it ends): the outer session's back
        os.environ.clear()
        os.environ.update(outer)
    assert status == 0
    assert "└─ step" in capsys.readouterr().out


# ---- GPU launches on a stand-in GPU (the fast launch stays in use) ---------------------------

from tests.cpu.test_jit_fast_launch import gpu, torch_like  # noqa: E402,F401 - the fixture


def test_fast_launch_goes_past_the_hook_without_the_slow_path(gpu, tmp_path, monkeypatch):
    kernel, compiled, calls = gpu
    x, out = torch_like(1 << 20), torch_like(1 << 21)
    kernel[(1,)](x, x, out, 64, BLOCK=32)                 # makes the fast launch
    fast = kernel._fast_launch
    slow = []
    monkeypatch.setattr(kernel, "run", lambda *a, **k: slow.append(a))
    session = proton.start(str(tmp_path / "fast"))
    with proton.scope("loop"):
        for _ in range(5):
            kernel[(1,)](x, x, out, 64, BLOCK=32)
    [path] = proton.finalize(session)
    assert kernel._fast_launch is fast and not slow and len(calls.calls) == 6
    [node] = _tree(path)[0]["children"][0]["children"]
    assert node["frame"]["name"] == "add_kernel [*fp32, *fp32, *fp32, i32, BLOCK=32]"
    assert node["metrics"]["count"] == 5


def test_roofline_against_the_device_peaks(tmp_path, capsys):
    from compiler.profiler.data import GPU_TIME, Profile
    from compiler.profiler.export import write_profile

    profile = Profile("roof", "shadow")
    profile.metadata.update(timing={"method": "cupti"}, device={"CUDA": {"0": {
        "arch": "90", "name": "NVIDIA H200", "num_sms": 114, "clock_rate": 1755000,
        "memory_clock_rate": 3000000, "bus_width": 4096}}})
    profile.add_kernel(("step",), "matmul", {GPU_TIME: 10**6, "flops16": 5e11, "bytes": 1e8},
                       0, 10**6, "gpu")
    profile.add_kernel(("step",), "copy", {GPU_TIME: 10**5, "bytes": 2.4e8}, 0, 10**5, "gpu")
    path = write_profile(profile, tmp_path / "roof", "hatchet")
    assert prof.main([str(path), "--roofline"]) == 0
    printed = capsys.readouterr().out
    assert "roofline on NVIDIA H200: peak 3072 GB/s, 756 TFLOP/s at 16-bit" in printed
    rows = {line.split()[1]: line.split() for line in printed.splitlines()
            if line[:1].isdigit()}
    assert rows["matmul"][2:] == ["5000.00", "500.000", "100.0", "3.3", "66.1", "compute"]
    assert rows["copy"][2:] == ["-", "-", "2400.0", "78.1", "-", "memory"]
    chart = [line for line in printed.splitlines() if line.startswith("│")]
    assert any("1" in line for line in chart) and any("-" in line for line in chart)
    assert "├─ matmul" in printed and "500.000 TFLOP/s" in printed


def test_prof_lists_metrics_and_python_context(tmp_path, capsys):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    name = tmp_path / "py"
    assert prof.main(["-n", str(name), "--context", "python", "--", str(script)]) == 0
    printed = capsys.readouterr().out
    assert f"{script}:<module>@" in printed           # the script's frame, as Proton names it
    assert prof.main([f"{name}.hatchet", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert {"count", "time", "time/ms", "tflop32/s", "gbyte/s"} <= set(listed)


def test_the_readme_prof_screenshot_shows_regions_and_rates(tmp_path):
    from .prof_screen import capture, profile
    svg = capture(profile(tmp_path))
    assert svg.startswith("<svg") and "tile-explore&#160;prof" in svg
    for text in ("matmul", "loop&#160;L", "dot&#160;L", "saxpy&#160;n=4096", "GB/s",
                 "wall&#160;clock&#160;(interpreter)"):
        assert text in svg, text
