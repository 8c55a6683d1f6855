"""Why `compare` can or cannot time a pipeline: the recorded launch arguments are held weakly
and come back only while the script's arrays exist; the reasons printed under the table."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from compiler.trace import CompileTrace, Launch
from explorer import timing

recording = pytest.importorskip("compiler.runtime.recording")


def test_launch_arguments_come_back_while_the_arrays_live():
    x = np.zeros(4, dtype=np.float32)
    held = recording.LaunchArguments((2,), (x, 7, 1.5), None)
    values = held.resolve()
    assert values[0] is x and values[1:] == (7, 1.5)
    del x, values
    gc.collect()
    assert held.resolve() is None


def test_why_not_timed_names_each_reason():
    x = np.zeros(4, dtype=np.float32)
    held = recording.LaunchArguments((1,), (x,), None)
    never = CompileTrace("k")
    on_gpu = CompileTrace("k", launches=[Launch(grid=(1,), backend="gpu", time_ms=0.1)])
    interpreted = CompileTrace("k", launches=[Launch(grid=(1,), backend="interpreter")])
    assert timing.why_not_timed(never, held, gpu=True) == timing.NOT_LAUNCHED
    assert timing.why_not_timed(on_gpu, held, gpu=False) == timing.NO_GPU
    assert timing.why_not_timed(on_gpu, held, gpu=True, declined=True) == timing.GPU_DECLINED
    assert timing.why_not_timed(interpreted, held, gpu=True) == timing.ONLY_INTERPRETED
    assert timing.why_not_timed(on_gpu, None, gpu=True) == timing.UNREACHABLE
    assert timing.why_not_timed(on_gpu, held, gpu=True) is None
    del x
    gc.collect()
    assert timing.why_not_timed(on_gpu, held, gpu=True) == timing.UNREACHABLE


def test_the_recorder_keeps_the_last_launch_arguments_of_each_trace():
    import compiler
    import compiler.language as tl

    @compiler.jit
    def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)

    x, out = np.arange(16, dtype=np.float32), np.zeros(16, dtype=np.float32)
    with recording.record(full_compile=False) as rec:
        double_kernel[(1,)](x, out, 16, BLOCK=16, interpret=True)
        double_kernel[(1,)](out, x, 32, BLOCK=16, interpret=True)     # same specialization
    held = rec.arguments_of(rec.traces[0])
    assert held.grid == (1,)
    values = held.resolve()
    assert len(rec.traces) == 1
    assert values[0] is out and values[1] is x and values[2] == 32      # the last launch
