"""`@autotune` and `@heuristics`: choosing meta-parameters per launch, as Triton does.

`autotune(configs, key)` wraps a kernel; on the first launch for each value of the `key`
arguments (and the dtypes of array arguments) it times every config that survives pruning
with `compiler.testing.do_bench` and keeps the fastest for that key. When the kernel runs in
the interpreter (no GPU, `interpret=True`, `TILE_INTERPRET=1`) timing means nothing, so the
first surviving config is used without benchmarking. `heuristics({name: fn(args)})` computes
meta-parameters from the other arguments before each launch. Benchmarks run in profiler scopes
(`autotune KERNEL / config CONFIG`), and each tuning run's times and choice go into the active
profiler sessions; `TRITON_PRINT_AUTOTUNING=1` or `TILE_PRINT_AUTOTUNING=1` print them.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass

from compiler.profiler.tuning import config_scope, format_tuning, record_tuning, tuning_scope
from compiler.runtime.jit import JITFunction, KernelInterface


@dataclass(frozen=True)
class AutotuneEnv:
    """Environment switches of the autotuner, read once (when a kernel is decorated)."""

    print_autotuning: bool = False

    @classmethod
    def from_environ(cls, environ=os.environ) -> "AutotuneEnv":
        """Read `TRITON_PRINT_AUTOTUNING` / `TILE_PRINT_AUTOTUNING` (1/true/yes/on: print
        each tuning run's config times and choice to stdout)."""
        names = ("TRITON_PRINT_AUTOTUNING", "TILE_PRINT_AUTOTUNING")
        return cls(print_autotuning=any(
            environ.get(n, "").strip().lower() in ("1", "true", "yes", "on") for n in names))


class Config:
    """One point of an autotuning space: meta-parameter values plus launch options."""

    def __init__(self, kwargs: dict, num_warps: int = 4, num_stages: int = 3,
                 num_ctas: int = 1, maxnreg: int | None = None, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """The meta-parameters and launch options this config passes to a launch."""
        merged = dict(self.kwargs)
        for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            value = getattr(self, name)
            if value is not None:
                merged[name] = value
        return merged

    def __repr__(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in self.all_kwargs().items())


#: Argument types that have no dtype (skipped without a failing attribute lookup, which costs
#: an exception per argument and launch)
_PLAIN_TYPES = frozenset({int, float, bool, str, type(None)})
#: str(dtype) by dtype object (torch and numpy dtypes are hashable and few)
_DTYPE_NAMES: dict = {}


def _dtype_names(values) -> list:
    """str(v.dtype) of each value that has a dtype, in order (the arrays of a launch)."""
    names = []
    for v in values:
        if type(v) in _PLAIN_TYPES or not hasattr(v, "dtype"):
            continue
        dtype = v.dtype
        try:
            name = _DTYPE_NAMES.get(dtype)
            if name is None:
                name = _DTYPE_NAMES[dtype] = str(dtype)
        except TypeError:               # an unhashable dtype-like value
            name = str(dtype)
        names.append(name)
    return names


class Autotuner(KernelInterface):
    """A kernel whose meta-parameters are chosen per key by timing configs (see module doc)."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, prune_configs_by=None, warmup=None, rep=None,
                 do_bench=None):
        if not configs:
            configs = [Config({})]
        self.fn = fn
        self.arg_names = list(arg_names)
        self.configs = list(configs)
        self.keys = list(key)
        for name in self.keys + list(reset_to_zero or []) + list(restore_value or []):
            if name not in self.arg_names:
                raise ValueError(f"autotune names '{name}', which is not a parameter of "
                                 f"{fn.__name__} ({', '.join(self.arg_names)})")
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        prune = prune_configs_by or {}
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k")
        self.early_config_prune = prune.get("early_config_prune")
        self.num_warmup_ms = 25 if warmup is None else warmup
        self.num_rep_ms = 100 if rep is None else rep
        self.bench_fn = do_bench
        self.cache: dict = {}            # key tuple -> best Config
        self.configs_timings: dict = {}  # Config -> ms (last tuning run)
        self.best_config = None
        #: where each `key` argument sits among the parameters (the launch's fast path reads
        #: them from the positional arguments when they are there)
        self._key_positions = tuple(self.arg_names.index(k) for k in self.keys)
        self._needed_positional = max(self._key_positions, default=-1) + 1
        self._launch_kwargs: dict = {}   # id(Config) -> (Config, its all_kwargs())
        self.__name__ = fn.__name__
        self.env = AutotuneEnv.from_environ()

    # -- keys and pruning -----------------------------------------------------------------------

    def _named(self, args, kwargs) -> dict:
        named = dict(zip(self.arg_names, args))
        named.update(kwargs)
        return named

    def tuning_key(self, named: dict) -> tuple:
        """The values of the `key` arguments plus the dtypes of every array argument."""
        values = [named[k] for k in self.keys if k in named]
        return tuple(values + _dtype_names(named.values()))

    def prune_configs(self, named: dict) -> list:
        """Configs left after `early_config_prune` and the `perf_model`'s `top_k`."""
        configs = self.configs
        if self.early_config_prune:
            configs = list(self.early_config_prune(configs, named))
            if not configs:
                raise ValueError(f"{self.__name__}: early_config_prune removed every config")
        if self.perf_model and self.top_k:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(configs) * top_k))
            estimates = {config: self.perf_model(**named, **config.all_kwargs())
                         for config in configs}
            configs = sorted(configs, key=estimates.__getitem__)[:top_k]
        return configs

    # -- launching ------------------------------------------------------------------------------

    def _launch_key(self, args, kwargs) -> tuple:
        """`tuning_key` of these arguments without building their name map when every `key`
        argument is positional (the common launch): the same tuple."""
        if len(args) < self._needed_positional or (kwargs and not kwargs.keys().isdisjoint(
                self.keys)):
            return self.tuning_key(self._named(args, kwargs))
        values = [args[i] for i in self._key_positions] + _dtype_names(args)
        if kwargs:
            values += _dtype_names(kwargs.values())
        return tuple(values)

    def _config_kwargs(self, config: Config) -> dict:
        """`config.all_kwargs()`, built at the config's first launch and kept (a launch merges
        it every time; a Config is not expected to change once it launches)."""
        entry = self._launch_kwargs.get(id(config))
        if entry is None or entry[0] is not config:
            entry = self._launch_kwargs[id(config)] = (config, config.all_kwargs())
        return entry[1]

    def run(self, *args, grid, **kwargs):
        """Launch with the best config for these arguments (tuning it first if new)."""
        key = self._launch_key(args, kwargs)
        config = self.cache.get(key)
        if config is None:
            config = self._choose(args, grid, kwargs, self._named(args, kwargs))
            self.cache[key] = config
        self.best_config = config
        full = self._merge(config, kwargs) if kwargs else self._config_kwargs(config)
        if config.pre_hook:
            config.pre_hook({**self._named(args, kwargs), **full})
        # `fn[grid](...)`, the same launch as `fn.run(..., grid=grid)`: a jit function's fast
        # launch takes a cache hit in ~2 us where `run` re-binds every argument (~15 us), and
        # tutorial 03's 256^3 matmul is a 3 us kernel
        return self.fn[grid](*args, **full)

    def _merge(self, config: Config, kwargs: dict) -> dict:
        if kwargs and not kwargs.keys().isdisjoint(config.kwargs):
            clash = sorted(set(kwargs) & set(config.kwargs))
            raise ValueError(f"{self.__name__}: meta-parameter(s) {', '.join(clash)} are set "
                             f"both by the launch and by the autotuning configs; pass them in "
                             f"one place only")
        return {**kwargs, **self._config_kwargs(config)}

    def _choose(self, args, grid, kwargs, named) -> Config:
        configs = self.prune_configs(named)
        if len(configs) == 1 or self.jit_function.will_interpret(kwargs.get("interpret")):
            return configs[0]
        timings, first_error = {}, None
        began = time.perf_counter()
        with tuning_scope(self.__name__):
            for config in configs:
                try:
                    with config_scope(config):
                        timings[config] = self._bench(config, args, grid, kwargs, named)
                except Exception as err:  # noqa: BLE001 - a config that fails is not chosen
                    timings[config] = math.inf
                    first_error = first_error or err
        self.configs_timings = timings
        best = min(timings, key=timings.get)
        seconds = time.perf_counter() - began
        record_tuning(self.__name__, self.tuning_key(named), timings, best, seconds)
        if self.env.print_autotuning:
            print(format_tuning(self.__name__, timings, best, seconds), file=sys.stdout)
        if math.isinf(timings[best]):
            raise first_error
        return best

    def _bench(self, config: Config, args, grid, kwargs, named) -> float:
        """Median milliseconds of one config, values reset/restored around each run."""
        from compiler import testing

        full = self._merge(config, kwargs)
        saved = {name: _snapshot(named[name]) for name in self.restore_value}

        def launch():
            for name in self.reset_to_zero:
                _zero(named[name])
            if config.pre_hook:
                config.pre_hook({**named, **full})
            if self.user_pre_hook:
                self.user_pre_hook(named)
            self.fn[grid](*args, **full)
            for name, value in saved.items():
                _restore(named[name], value)
            if self.user_post_hook:
                self.user_post_hook(named, None)

        bench = self.bench_fn or testing.do_bench
        return bench(launch, warmup=self.num_warmup_ms, rep=self.num_rep_ms,
                     return_mode="median")

    def warmup(self, *args, **kwargs) -> list:
        """Compile every config that survives pruning (no launch); the compiled kernels."""
        named = self._named(args, kwargs)
        return [self.fn.warmup(*args, **self._merge(config, kwargs))
                for config in self.prune_configs(named)]


class Heuristics(KernelInterface):
    """A kernel whose listed meta-parameters are computed from the other arguments."""

    def __init__(self, fn, arg_names, values: dict):
        self.fn = fn
        self.arg_names = list(arg_names)
        self.values = dict(values)
        self.__name__ = fn.__name__

    def _with_values(self, args, kwargs) -> dict:
        kwargs = dict(kwargs)
        for name, heuristic in self.values.items():
            kwargs[name] = heuristic({**dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def run(self, *args, grid, **kwargs):
        """Launch with the heuristics' values added to the keyword arguments."""
        return self.fn.run(*args, grid=grid, **self._with_values(args, kwargs))

    def warmup(self, *args, **kwargs):
        """Compile with the heuristics' values (no launch)."""
        return self.fn.warmup(*args, **self._with_values(args, kwargs))


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    """Decorate a kernel (under `@autotune`, over `@jit`) to be tuned over `configs` per value
    of the `key` arguments. `use_cuda_graph` and `cache_results` are accepted and ignored
    (tuning results live in memory for the process)."""
    def decorate(fn):
        return Autotuner(fn, _arg_names(fn), configs, key, reset_to_zero, restore_value,
                         pre_hook, post_hook, prune_configs_by, warmup, rep, do_bench)
    return decorate


def heuristics(values: dict):
    """Decorate a kernel so each `values[name](args_dict)` supplies meta-parameter `name`."""
    def decorate(fn):
        return Heuristics(fn, _arg_names(fn), values)
    return decorate


def _arg_names(fn) -> list:
    if isinstance(fn, (JITFunction, Autotuner, Heuristics)):
        return list(fn.arg_names)
    raise TypeError(f"@autotune/@heuristics go above @jit, not on a plain "
                    f"{type(fn).__name__}")


# ---- argument values during tuning --------------------------------------------------------------

def _snapshot(value):
    """A host copy of an array argument's contents."""
    from compiler.testing import to_numpy

    return to_numpy(value).copy()


def _restore(target, saved) -> None:
    """Write `saved` (host) back into the array `target` (numpy, torch or DeviceArray)."""
    if hasattr(target, "copy_from_numpy"):
        target.copy_from_numpy(saved)
    elif hasattr(target, "copy_"):
        import torch

        target.copy_(torch.from_numpy(saved))
    else:
        target[...] = saved


def _zero(target) -> None:
    """Set an array argument to zeros (numpy, torch or DeviceArray)."""
    if hasattr(target, "zero_"):
        target.zero_()
    elif hasattr(target, "copy_from_numpy"):
        import numpy as np

        target.copy_from_numpy(np.zeros(target.shape, dtype=target.dtype))
    else:
        target[...] = 0
