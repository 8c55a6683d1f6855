"""@autotune, Config, @heuristics, and compiler.testing (do_bench, assert_close)."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.runtime.autotuner import Autotuner, Config, Heuristics
from compiler.runtime.jit import JITFunction
from compiler.testing import assert_close, do_bench

CONFIGS = [Config({"BLOCK": 32}, num_warps=1), Config({"BLOCK": 64}, num_warps=2),
           Config({"BLOCK": 128}, num_warps=4, num_stages=2)]


@compiler.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def _grid(meta):
    return (compiler.cdiv(meta["n"], meta["BLOCK"]),)


def test_config_kwargs_and_repr():
    config = Config({"BLOCK": 64}, num_warps=8, num_stages=4)
    assert config.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_stages": 4, "num_ctas": 1}
    assert repr(config) == "BLOCK: 64, num_warps: 8, num_stages: 4, num_ctas: 1"
    assert Config({}, maxnreg=128).all_kwargs()["maxnreg"] == 128


def test_interpreter_uses_the_first_config():
    tuned = compiler.autotune(CONFIGS, key=["n"])(JITFunction(add_one.fn))
    x = np.arange(200, dtype=np.float32)
    out = np.zeros_like(x)
    tuned[_grid](x, out, 200, interpret=True)
    np.testing.assert_array_equal(out, x + 1)
    assert tuned.best_config is CONFIGS[0]
    assert list(tuned.cache.values()) == [CONFIGS[0]]


class Recorder(JITFunction):
    """A JITFunction that records launches instead of running them, on a pretend GPU."""

    def __init__(self, fn):
        super().__init__(fn)
        self._default_interpret = False
        self.calls = []

    def run(self, *args, grid, **kwargs):
        self.calls.append((args, kwargs))


def _fake_bench(timings):
    """A do_bench that runs the launch once and reports the time of its BLOCK."""
    def bench(fn, warmup, rep, return_mode):
        fn()
        return timings[bench.current()]
    return bench


def test_gpu_tuning_picks_the_fastest_and_caches_per_key():
    kernel = Recorder(add_one.fn)
    timings = {32: 3.0, 64: 1.0, 128: 2.0}
    bench = _fake_bench(timings)
    bench.current = lambda: kernel.calls[-1][1]["BLOCK"]
    tuned = Autotuner(kernel, kernel.arg_names, CONFIGS, key=["n"], do_bench=bench)
    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    tuned[(1,)](x, out, 1000)
    assert tuned.best_config is CONFIGS[1]
    assert len(kernel.calls) == 4                           # 3 timed + the real launch
    assert kernel.calls[-1][1] == {"BLOCK": 64, "num_warps": 2, "num_stages": 3, "num_ctas": 1}
    tuned[(1,)](x, out, 1000)
    assert len(kernel.calls) == 5                           # cached: no tuning
    tuned[(1,)](x, out, 2000)
    assert len(kernel.calls) == 9                           # new key: tuned again
    tuned[(1,)](x.astype(np.float16), out, 2000)
    assert len(kernel.calls) == 13                          # new dtype: tuned again
    assert tuned.configs_timings[CONFIGS[0]] == 3.0


def test_reset_to_zero_and_restore_value():
    kernel = Recorder(add_one.fn)
    seen = []

    def run(*args, grid, **kwargs):
        seen.append((args[0].copy(), args[1].copy()))
        args[0][:] += 5                                     # the kernel would clobber x
        args[1][:] = 7
    kernel.run = run
    bench = lambda fn, warmup, rep, return_mode: (fn(), 1.0)[1]  # noqa: E731
    tuned = Autotuner(kernel, kernel.arg_names, CONFIGS[:2], key=["n"], reset_to_zero=["out_ptr"],
                      restore_value=["x_ptr"], do_bench=bench)
    x, out = np.ones(4, np.float32), np.full(4, 9, np.float32)
    tuned[(1,)](x, out, 4)
    for x_seen, out_seen in seen[:2]:                       # the two timed runs
        np.testing.assert_array_equal(x_seen, np.ones(4))
        np.testing.assert_array_equal(out_seen, np.zeros(4))


def test_failing_configs_are_skipped_unless_all_fail():
    kernel = Recorder(add_one.fn)

    def bench(fn, warmup, rep, return_mode):
        fn()
        if kernel.calls[-1][1]["BLOCK"] != 128:
            raise RuntimeError("out of shared memory")
        return 1.0
    tuned = Autotuner(kernel, kernel.arg_names, CONFIGS, key=[], do_bench=bench)
    tuned[(1,)](np.zeros(4), np.zeros(4), 4)
    assert tuned.best_config is CONFIGS[2]
    failing = Autotuner(kernel, kernel.arg_names, CONFIGS[:2], key=[], do_bench=bench)
    with pytest.raises(RuntimeError, match="out of shared memory"):
        failing[(1,)](np.zeros(4), np.zeros(4), 4)


def test_pruning():
    kernel = Recorder(add_one.fn)
    early = lambda configs, named: [c for c in configs if c.kwargs["BLOCK"] <= named["n"]]  # noqa
    model = lambda **kw: -kw["BLOCK"]                       # noqa: E731 - bigger is "faster"
    tuned = Autotuner(kernel, kernel.arg_names, CONFIGS, key=["n"],
                      prune_configs_by={"early_config_prune": early, "perf_model": model,
                                        "top_k": 1})
    assert tuned.prune_configs({"n": 100}) == [CONFIGS[1]]
    assert tuned.prune_configs({"n": 1000}) == [CONFIGS[2]]
    tuned[(1,)](np.zeros(4), np.zeros(4), 100)              # one config left: no benchmarking
    assert len(kernel.calls) == 1 and kernel.calls[0][1]["BLOCK"] == 64
    with pytest.raises(ValueError, match="removed every config"):
        tuned.prune_configs({"n": 1})


def test_conflicting_meta_parameters_and_bad_names():
    tuned = compiler.autotune(CONFIGS, key=["n"])(JITFunction(add_one.fn))
    with pytest.raises(ValueError, match="BLOCK are set both"):
        tuned[(1,)](np.zeros(4), np.zeros(4), 4, BLOCK=16, interpret=True)
    with pytest.raises(ValueError, match="'m', which is not a parameter"):
        compiler.autotune(CONFIGS, key=["m"])(add_one)
    with pytest.raises(TypeError, match="above @jit"):
        compiler.autotune(CONFIGS, key=[])(lambda x: x)


def test_heuristics_under_autotune():
    kernel = JITFunction(add_one.fn)
    stacked = compiler.autotune([Config({}, num_warps=2)], key=["n"])(
        compiler.heuristics({"BLOCK": lambda args: compiler.next_power_of_2(args["n"])})(kernel))
    assert isinstance(stacked.fn, Heuristics) and stacked.jit_function is kernel
    x = np.arange(37, dtype=np.float32)
    out = np.zeros_like(x)
    stacked[(1,)](x, out, 37, interpret=True)
    np.testing.assert_array_equal(out, x + 1)
    key = next(iter(kernel._interp_cache))
    assert kernel.compile_options(key)["num_warps"] == 2
    assert (int, 64) in key


def test_autotuner_warmup_compiles_every_config(monkeypatch):
    import compiler.compiler as driver

    original = driver.compile
    monkeypatch.setattr(driver, "compile", lambda src, options=None, pipelines=None:
                        original(src, options, pipelines, stop_after="ttir"))
    tuned = compiler.autotune(CONFIGS, key=["n"])(JITFunction(add_one.fn))
    compiled = tuned.warmup("*fp32", "*fp32", "i32")
    assert len(compiled) == 3
    assert all("tt.func public @add_one" in c.asm["ttir"] for c in compiled)


# ---- compiler.testing ---------------------------------------------------------------------------

def test_do_bench_wall_clock():
    calls = []
    result = do_bench(lambda: calls.append(1), warmup=1, rep=2, use_gpu=False)
    assert isinstance(result, float) and result >= 0 and len(calls) > 3
    low, mid, high = do_bench(lambda: None, warmup=1, rep=1, quantiles=[0.2, 0.5, 0.8],
                              use_gpu=False)
    assert low <= mid <= high
    times = do_bench(lambda: sum(range(1000)), warmup=1, rep=2, return_mode="all",
                     use_gpu=False)
    assert isinstance(times, list) and all(t > 0 for t in times)
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(lambda: None, return_mode="best")


class _QueueTimer:
    """A device timer stand-in: regions are queued marks; reading one before a synchronize is a
    host wait inside the timed loop, and making one there is host work between runs; the test
    forbids both (Triton's do_bench makes its events first and never waits in the loop: a wait
    per run drains the device queue and adds launch latency to every time)."""

    def __init__(self):
        self.log, self.pending, self.timing = [], 0, False

    def regions(self, n):
        assert not self.timing, "a region was made inside the timed loop"
        self.log.append(f"regions {n}")
        return [[None] for _ in range(n)]

    def start(self, region):
        self.timing = True
        self.log.append("start")

    def stop(self, region):
        self.timing = False
        self.pending += 1
        region[0] = 0.25

    def elapsed(self, region):
        assert self.pending == 0, "a run's time was read before the queue was synchronized"
        return region[0]

    def flush_cache(self):
        self.log.append("flush")

    def synchronize(self):
        self.log.append("sync")
        self.pending = 0


def test_do_bench_device_timer_waits_once_per_phase(monkeypatch):
    import compiler.testing as testing

    timer = _QueueTimer()
    monkeypatch.setattr(testing, "_timer", lambda use_gpu: timer)
    runs = []
    median = do_bench(lambda: runs.append(1), warmup=1, rep=10, return_mode="median")
    assert median == 0.25
    # one wait after the first call, one after the estimate, one after all timed runs
    assert timer.log.count("sync") == 3
    # 5 estimate runs (0.05 ms each), 20 warm-up runs, 200 timed runs, each timed one flushed
    assert len(runs) == 1 + 5 + 20 + 200 and timer.log.count("flush") == 5 + 200
    assert [e for e in timer.log if e.startswith("regions")] == ["regions 1", "regions 200"]


def test_assert_close():
    assert_close(np.float16([1.0, 2.0]), np.float32([1.001, 2.0]))
    assert_close(np.int32([1, 2]), np.int32([1, 2]))
    with pytest.raises(AssertionError):
        assert_close(np.int32([1, 2]), np.int32([1, 3]))
    with pytest.raises(AssertionError):
        assert_close(np.float32([1.0]), np.float32([1.01]))
    assert_close(np.float32([1.0]), np.float32([1.01]), atol=0.02)


def test_perf_report_tables(capsys):
    from compiler.testing import Benchmark, perf_report

    @perf_report([Benchmark(x_names=["size"], x_vals=[2, 8], line_arg="provider",
                            line_vals=["a", "b"], line_names=["A", "B"], plot_name="demo",
                            args={"scale": 10})])
    def bench(size, provider, scale):
        value = size * scale + (1 if provider == "b" else 0)
        return value, value - 1, value + 1

    tables = bench.run(print_data=True, return_df=True)
    assert tables == [{"name": "demo", "columns": ["size", "A", "B"],
                       "rows": [[2, 20, 21], [8, 80, 81]]}]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "demo:" and printed[1].split() == ["size", "A", "B"]
    assert printed[3].split() == ["8", "80", "81"]


def test_the_launch_key_is_the_tuning_key_in_every_argument_form():
    """A launch reads the key from the positional arguments without building the name map
    (the host cost of a tuned launch, tutorial 03's 256^3 point); it must be the same tuple
    `tuning_key` gives, whichever way the arguments come."""
    tuned = compiler.autotune(CONFIGS, key=["n"])(JITFunction(add_one.fn))
    x16, x32 = np.zeros(4, np.float16), np.zeros(4, np.float32)
    forms = [((x16, x32, 200), {}), ((x16,), {"out_ptr": x32, "n": 200}),
             ((x16, x32), {"n": 200}), ((x16, x32, 7), {"BLOCK": 32})]
    for args, kwargs in forms:
        expected = tuned.tuning_key(tuned._named(args, kwargs))
        assert tuned._launch_key(args, kwargs) == expected
    assert tuned._launch_key((x16, x32, 200), {}) == (200, "float16", "float32")
    assert tuned._launch_key((3, 2.5, 200), {}) == (200,)       # plain values have no dtype


def test_config_launch_kwargs_are_built_once_per_config():
    """A launch merges its config's all_kwargs(), built at the config's first launch and kept
    (a Config is not expected to change once it launches)."""
    tuned = compiler.autotune(CONFIGS[:1], key=["n"])(JITFunction(add_one.fn))
    first = tuned._config_kwargs(CONFIGS[0])
    assert first == CONFIGS[0].all_kwargs() and tuned._config_kwargs(CONFIGS[0]) is first
    other = Config({"BLOCK": 16}, num_warps=1)
    assert tuned._config_kwargs(other) == other.all_kwargs()
