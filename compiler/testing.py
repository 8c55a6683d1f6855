"""Benchmarking and checking helpers, in the shape of `triton.testing`.

`do_bench` times a callable with CUDA events when a GPU is usable (torch's events when torch
has CUDA, else our driver's), and with the wall clock otherwise; `assert_close` compares
arrays from numpy, torch or the GPU (`DeviceArray`) with tolerances chosen by dtype;
`perf_report`/`Benchmark` print the benchmark tables of Triton's tutorials.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

#: Bytes written between timed runs to flush the L2 cache (H200's L2 is 60 MB).
L2_FLUSH_BYTES = 256 * 1024 * 1024

_RETURN_MODES = ("min", "max", "mean", "median", "all")


class _WallTimer:
    """Host wall clock: the callable is assumed synchronous (the interpreter, numpy). The other
    timers override the same methods with device events.

    `regions(n)` makes n timed regions up front; `start(r)` and `stop(r)` mark one's ends and
    `elapsed(r)` reads its milliseconds. Device timers only record events in `start`/`stop`
    and read them after `synchronize`: the host neither waits nor creates events between
    runs, so the device queue stays full and the times are the device's, not the host's
    launch latency (as in `triton.testing.do_bench`)."""

    def regions(self, n: int) -> list:
        """`n` timed regions, made before the timed loop."""
        return [[0.0, 0.0] for _ in range(n)]

    def start(self, region) -> None:
        """Mark the start of `region`."""
        region[0] = time.perf_counter()

    def stop(self, region) -> None:
        """Mark the end of `region`."""
        region[1] = time.perf_counter()

    def elapsed(self, region) -> float:
        """Milliseconds of `region` (after `synchronize` for device timers)."""
        return (region[1] - region[0]) * 1e3

    def flush_cache(self):
        """Evict the device's L2 cache so each run starts cold (nothing to do on the host)."""

    def synchronize(self):
        """Wait for queued work (nothing queued on the host)."""


class _EventTimer(_WallTimer):
    """A device timer whose regions are (start event, end event) pairs: `start` and `stop`
    only record them; the subclass makes the events and reads the time between them."""

    def start(self, region) -> None:
        region[0].record()

    def stop(self, region) -> None:
        region[1].record()


class _DriverTimer(_EventTimer):
    """CUDA events through compiler.runtime.driver; flushes L2 with a device memset."""

    def __init__(self):
        from compiler.runtime import driver

        self.driver = driver
        self.flush_buffer = None

    def regions(self, n: int) -> list:
        return [(self.driver.Event(), self.driver.Event()) for _ in range(n)]

    def elapsed(self, region) -> float:
        return region[0].elapsed_ms(region[1])

    def flush_cache(self):
        if self.flush_buffer is None:
            self.flush_buffer = self.driver.mem_alloc(L2_FLUSH_BYTES)
        self.driver.memset_d8(self.flush_buffer, 0, L2_FLUSH_BYTES)

    def synchronize(self):
        self.driver.synchronize()

    def __del__(self):
        if getattr(self, "flush_buffer", None):
            try:
                self.driver.mem_free(self.flush_buffer)
            except Exception:
                pass


class _TorchTimer(_EventTimer):
    """CUDA events through torch (when the code being timed uses torch's streams)."""

    def __init__(self, torch):
        self.torch = torch
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def regions(self, n: int) -> list:
        event = self.torch.cuda.Event
        return [(event(enable_timing=True), event(enable_timing=True)) for _ in range(n)]

    def elapsed(self, region) -> float:
        return region[0].elapsed_time(region[1])

    def flush_cache(self):
        self.flush_buffer.zero_()

    def synchronize(self):
        self.torch.cuda.synchronize()


def _timer(use_gpu: bool | None):
    """The best timer here: torch's CUDA events, the driver's, or the wall clock."""
    if use_gpu is False:
        return _WallTimer()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        return _TorchTimer(torch)
    try:
        from compiler.runtime.driver import gpu_available
    except ImportError:
        return _WallTimer()
    if gpu_available():
        return _DriverTimer()
    if use_gpu:
        raise RuntimeError("do_bench(use_gpu=True) but no usable CUDA GPU was found")
    return _WallTimer()


def do_bench(fn, warmup: float = 25, rep: float = 100, grad_to_none=None, quantiles=None,
             return_mode: str = "mean", use_gpu: bool | None = None):
    """Time `fn()` in milliseconds, like `triton.testing.do_bench`.

    Estimates one call's time, then runs about `warmup` ms of untimed calls and `rep` ms of
    timed ones (each after flushing L2 on the GPU). Returns the `quantiles` of the times when
    given, else one statistic chosen by `return_mode` ("min", "max", "mean", "median", or
    "all" for the list). `use_gpu=None` uses CUDA events when a GPU is usable.
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, "
                         f"not {return_mode!r}")
    timer = _timer(use_gpu)
    fn()
    timer.synchronize()
    estimate_region = timer.regions(1)[0]
    timer.start(estimate_region)
    for _ in range(5):
        timer.flush_cache()
        fn()
    timer.stop(estimate_region)
    timer.synchronize()
    estimate = max(timer.elapsed(estimate_region) / 5, 1e-6)
    n_warmup, n_repeat = max(1, int(warmup / estimate)), max(1, int(rep / estimate))
    regions = timer.regions(n_repeat)
    for _ in range(n_warmup):
        fn()
    for region in regions:
        if grad_to_none is not None:
            for tensor in grad_to_none:
                tensor.grad = None
        timer.flush_cache()
        timer.start(region)
        fn()
        timer.stop(region)
    timer.synchronize()
    return _summarize([timer.elapsed(r) for r in regions], quantiles, return_mode)


def do_bench_cudagraph(fn, rep: float = 20, grad_to_none=None, quantiles=None,
                       return_mode: str = "mean"):
    """Triton's CUDA-graph timing. Not supported: our launches are not captured into CUDA
    graphs yet, so this refuses (NotImplementedError) rather than time something else."""
    raise NotImplementedError("triton.testing.do_bench_cudagraph is not supported by this "
                              "compiler (launches are not captured into CUDA graphs yet); "
                              "use triton.testing.do_bench")


def _summarize(times: list, quantiles, return_mode: str):
    if quantiles is not None:
        values = np.quantile(np.asarray(times, dtype=np.float64), list(quantiles)).tolist()
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return list(times)
    if return_mode == "median":
        return statistics.median(times)
    return {"min": min, "max": max, "mean": statistics.fmean}[return_mode](times)


def to_numpy(x) -> np.ndarray:
    """A numpy view or copy of a numpy array, torch tensor (bf16 widened to fp32),
    DeviceArray or scalar."""
    from compiler.runtime.arrays import to_host

    if hasattr(x, "detach") and str(x.dtype) == "torch.bfloat16":
        x = x.float()
    return to_host(x)


_DEFAULT_TOLERANCES = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-5, 1e-4),
                       np.dtype(np.float64): (1e-8, 1e-7)}


def assert_close(actual, expected, atol: float | None = None, rtol: float | None = None,
                 err_msg: str = "") -> None:
    """Assert that two arrays (numpy, torch, DeviceArray) agree elementwise within tolerances
    (defaults by the actual array's dtype: fp16 1e-2, fp32 1e-5/1e-4, exact for integers)."""
    a, e = to_numpy(actual), to_numpy(expected)
    default_atol, default_rtol = _DEFAULT_TOLERANCES.get(a.dtype, (0.0, 0.0))
    np.testing.assert_allclose(
        a.astype(np.float64) if a.dtype.kind == "f" else a,
        e.astype(np.float64) if e.dtype.kind == "f" else e,
        atol=default_atol if atol is None else atol,
        rtol=default_rtol if rtol is None else rtol, err_msg=err_msg)


# ---- perf_report: the tutorials' benchmark tables ------------------------------------------------

class Benchmark:
    """One benchmark table of `perf_report`: a column per value of `line_arg`, a row per x.

    Same fields as `triton.testing.Benchmark`; the plotting fields are accepted and used only
    when matplotlib is installed and plots are asked for.
    """

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None, color=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log = x_log, y_log
        self.styles, self.color = styles, color


class Mark:
    """A function decorated by `perf_report`; `run()` fills and prints its tables."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks if isinstance(benchmarks, (list, tuple)) else [benchmarks]

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False,
            **kwargs):
        """Measure every (x, line) point. Prints the tables when `print_data`; returns them
        (a list of `{"name", "columns", "rows"}` dicts, one per benchmark) when `return_df`."""
        tables = [self._table(bench, kwargs) for bench in self.benchmarks]
        for bench, table in zip(self.benchmarks, tables):
            if print_data:
                print(f"{bench.plot_name}:\n{format_table(table['columns'], table['rows'])}")
            if show_plots or save_path:
                _plot(bench, table, show_plots, save_path)
        return tables if return_df else None

    def _table(self, bench: Benchmark, kwargs: dict) -> dict:
        rows = []
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            row = xs[:len(bench.x_names)]
            for line in bench.line_vals:
                value = self.fn(**dict(zip(bench.x_names, xs)), **{bench.line_arg: line},
                                **bench.args, **kwargs)
                row.append(value[0] if isinstance(value, (tuple, list)) else value)
            rows.append(row)
        return {"name": bench.plot_name, "columns": bench.x_names + bench.line_names,
                "rows": rows}


def perf_report(benchmarks):
    """Decorate a measuring function `fn(**x, **{line_arg: v}, **args)` into a `Mark`."""
    return lambda fn: Mark(fn, benchmarks)


def format_table(columns: list, rows: list) -> str:
    """A plain-text table, numbers right-aligned."""
    cells = [[str(c) for c in columns]] + \
        [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths))
                     for row in cells)


def _plot(bench: Benchmark, table: dict, show: bool, save_path: str) -> None:
    """Draw the table with matplotlib when it is installed (else say why not)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{bench.plot_name}: matplotlib is not installed; no plot drawn")
        return
    figure, axes = plt.subplots()
    xs = [row[0] for row in table["rows"]]
    for index, name in enumerate(bench.line_names):
        axes.plot(xs, [row[len(bench.x_names) + index] for row in table["rows"]], label=name)
    axes.set_xlabel(bench.xlabel or bench.x_names[0])
    axes.set_ylabel(bench.ylabel)
    axes.set_xscale("log" if bench.x_log else "linear")
    axes.set_yscale("log" if bench.y_log else "linear")
    axes.legend()
    if save_path:
        figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show:
        plt.show()
    plt.close(figure)
