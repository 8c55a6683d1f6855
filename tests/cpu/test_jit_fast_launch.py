"""The generated fast launch of `kernel[grid](...)` (compiler.runtime.fast_launch).

A stand-in compiled kernel carries a real `Launcher` whose cuLaunchKernel is a recorder that
reads the packed `void*[]` back, so these tests see exactly what the GPU would get. Every case
runs after the fast launch was generated (a first launch), and checks that it launches what
`run` would, or falls back to `run` with the same result and the same errors.
"""
from __future__ import annotations

import ctypes
import functools
import struct
import time

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.language.core import tensor_descriptor_type
from compiler.runtime.device_array import DeviceArray
from compiler.runtime.fast_launch import MISSING, make_fast_launch
from compiler.runtime.jit import MAX_FAST_LAUNCHES, JITFunction, KernelArgumentError
from compiler.runtime.launcher import ArgumentError, KernelLauncher, Launcher
from compiler.runtime.recording import record


@compiler.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@compiler.jit(do_not_specialize=["n"])
def scale_kernel(x_ptr, n, factor, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)


class Calls:
    """Stands in for cuLaunchKernel: decodes each launch's arguments from the `void*[]`."""

    def __init__(self):
        self.formats = []
        self.calls = []

    def __call__(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        array = (ctypes.c_void_p * max(len(self.formats), 1)).from_address(params)
        values = [struct.unpack("<" + fmt, ctypes.string_at(array[i], struct.calcsize(fmt)))[0]
                  for i, fmt in enumerate(self.formats)]
        self.calls.append(((gx, gy, gz), bx, stream, values))
        return (0,)


FORMATS = {"i32": "i", "i64": "q", "fp32": "f", "i1": "I", "u64": "Q"}


def _argument_kinds(signature: dict) -> tuple[list, list]:
    """The kernel's argument kinds and names: a tensor descriptor is its fields (base, shape
    as i32s, strides but the last as i64s), as the compiled kernel takes them."""
    kinds, names = [], []
    for name, kind in signature.items():
        if tensor_descriptor_type.is_signature(kind):
            rank = len(tensor_descriptor_type.parse(kind).block_shape)
            fields = ["*fp32"] + ["i32"] * rank + ["i64"] * (rank - 1)
            kinds += fields
            names += [f"{name}.{i}" for i in range(len(fields))]
        else:
            kinds.append(kind)
            names.append(name)
    return kinds, names


class FakeCompiled:
    """A compiled kernel whose launcher is real, with a recording cuLaunchKernel."""

    def __init__(self, src, calls: Calls):
        from compiler.trace import CompileTrace

        self.src = src
        self.trace = CompileTrace(kernel_name=src.name)
        self.num_warps = 4
        kinds, names = _argument_kinds(src.signature)
        calls.formats = ["Q" if kind.startswith("*") else FORMATS[kind] for kind in kinds]
        self._launcher = KernelLauncher(Launcher("FN", kinds, name=src.name, arg_names=names,
                                                 launch_fn=calls), None, 4, 0)

    def launcher(self):
        return self._launcher


class TorchDtype:
    """Prints like torch.float32."""

    def __init__(self, name):
        self.name_ = name

    def __str__(self):
        return f"torch.{self.name_}"


FLOAT32 = TorchDtype("float32")


def torch_like(address, is_cuda=True):
    """An object whose type lives in a module named torch, like torch.Tensor."""
    cls = type("Tensor", (), {"__module__": "torch", "dtype": FLOAT32, "is_cuda": is_cuda,
                              "data_ptr": lambda self: address})
    return cls()


def device_array(address):
    """A DeviceArray over an address it does not own (nothing is allocated)."""
    return DeviceArray((64,), np.float32, address, owner=False)


@pytest.fixture
def gpu(monkeypatch):
    """A fresh add_kernel on a stand-in GPU: (kernel, compiled kernels, launch recorder)."""
    import compiler.compiler as driver

    calls, compiled = Calls(), []

    def fake_compile(src, options=None, pipelines=None):
        compiled.append(FakeCompiled(src, calls))
        return compiled[-1]

    monkeypatch.setattr(driver, "compile", fake_compile)
    kernel = JITFunction(add_kernel.fn)
    kernel._default_interpret = False
    return kernel, compiled, calls


def test_first_launch_generates_the_fast_launch_and_later_launches_use_it(gpu):
    kernel, compiled, calls = gpu
    x, y, out = torch_like(1 << 20), torch_like(1 << 21), torch_like((1 << 22) + 4)
    kernel[(3,)](x, y, out, 100, BLOCK=32)
    fast = kernel._fast_launch
    assert fast.__name__ == "fast_launch" and "data_ptr()" in fast.source
    kernel[(3,)](x, y, out, 200, BLOCK=32)
    kernel[(2, 2)](x, y, n=300, out_ptr=out, BLOCK=32)
    assert kernel._fast_launch is fast and len(compiled) == 1
    assert compiled[0].src.attrs == {"divisibility_16": ["x_ptr", "y_ptr"]}   # out: +4
    assert [c[3] for c in calls.calls] == [[1 << 20, 1 << 21, (1 << 22) + 4, n]
                                           for n in (100, 200, 300)]
    assert calls.calls[2][0] == (2, 2, 1) and calls.calls[2][1] == 128


def test_fast_launch_hits_without_calling_run(gpu, monkeypatch):
    kernel, compiled, calls = gpu
    x = device_array(4096)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    monkeypatch.setattr(kernel, "run", None)    # the fast path must not need it
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    kernel[(1,)](x, x, x, 64, BLOCK=16, num_warps=None, stream=None)
    assert len(calls.calls) == 3 and calls.calls[-1][3] == [4096, 4096, 4096, 64]


def test_specialization_changes_go_through_run_and_compile(gpu):
    kernel, compiled, calls = gpu
    x, odd = torch_like(1 << 20), torch_like((1 << 20) + 4)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    kernel[(1,)](odd, x, x, 64, BLOCK=16)        # misaligned: a new specialization
    kernel[(1,)](x, x, x, 1, BLOCK=16)            # n == 1: a constant
    kernel[(1,)](x, x, x, 2**40, BLOCK=16)        # i64
    kernel[(1,)](x, x, x, 64, BLOCK=32)           # another constexpr
    kernel[(1,)](x, x, x, 64, BLOCK=16, num_warps=8)
    assert len(compiled) == 6
    assert compiled[1].src.attrs["divisibility_16"] == ["y_ptr", "out_ptr", "n"]
    assert compiled[2].src.constexprs == {"n": 1, "BLOCK": 16}
    assert compiled[3].src.signature["n"] == "i64"
    assert calls.calls[2][3] == [1 << 20, 1 << 20, 1 << 20]
    kernel[(1,)](x, x, x, 64, BLOCK=16)           # back to the first: a hit
    assert len(compiled) == 6 and calls.calls[-1][3] == [1 << 20, 1 << 20, 1 << 20, 64]


def test_other_argument_types_take_the_slow_path_then_get_their_own(gpu):
    kernel, compiled, calls = gpu
    kernel[(1,)](torch_like(1 << 20), torch_like(1 << 20), torch_like(1 << 20), 64, BLOCK=16)
    first = kernel._fast_launch
    arrays = [device_array(1 << 21)] * 3
    kernel[(1,)](*arrays, 64, BLOCK=16)
    assert kernel._fast_launch is not first and len(compiled) == 1   # same key: fp32, :16
    kernel[(1,)](*arrays, np.int64(64), BLOCK=16)                    # a numpy int: new key
    assert len(compiled) == 2 and compiled[1].src.signature["n"] == "i64"
    assert [c[3][0] for c in calls.calls] == [1 << 20, 1 << 21, 1 << 21]


def test_regeneration_is_bounded(gpu):
    kernel, compiled, calls = gpu
    a, b = torch_like(1 << 20), device_array(1 << 20)
    for _ in range(2 * MAX_FAST_LAUNCHES):
        kernel[(1,)](a, a, a, 64, BLOCK=16)
        kernel[(1,)](b, b, b, 64, BLOCK=16)
    assert kernel._fast_made == MAX_FAST_LAUNCHES and len(calls.calls) == 4 * MAX_FAST_LAUNCHES


def test_cpu_tensor_is_reported_by_the_launcher(gpu):
    kernel, compiled, calls = gpu
    x = torch_like(1 << 20)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    with pytest.raises(ArgumentError, match="argument out_ptr of kernel add_kernel: a host array"):
        kernel[(1,)](x, x, torch_like(1 << 20, is_cuda=False), 64, BLOCK=16)
    assert len(calls.calls) == 1


def test_call_errors_are_the_same_as_runs(gpu):
    kernel, compiled, calls = gpu
    x = torch_like(1 << 20)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    cases = [((x, x, x, 64), {}, "without 'BLOCK'"),
             ((x, x, x, 64, 16, 3), {}, "was given 6 positional arguments"),
             ((x, x, x, 64, 16), {"BLOCK": 16}, "two values for 'BLOCK'"),
             ((x, x, x, 64), {"BLOCK": 16, "num_warp": 4}, "keyword 'num_warp'"),
             ((x, x, x), {"BLOCK": 16}, "without 'n'")]
    for args, kwargs, message in cases:
        with pytest.raises(KernelArgumentError, match=message):
            kernel[(1,)](*args, **kwargs)
    with pytest.raises(KernelArgumentError, match="argument 'n' is a list"):
        kernel[(1,)](x, x, x, [64], BLOCK=16)
    assert len(calls.calls) == 1


def test_grid_forms_and_stream(gpu):
    kernel, compiled, calls = gpu
    x = torch_like(1 << 20)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    seen = []

    def grid(meta):
        seen.append(meta)
        return (meta["n"] // meta["BLOCK"],)

    kernel[grid](x, x, x, 64, BLOCK=16)
    kernel[[2, 3]](x, x, x, 64, BLOCK=16, stream=None)
    assert seen == [{"x_ptr": x, "y_ptr": x, "out_ptr": x, "n": 64, "BLOCK": 16}]
    assert [c[0] for c in calls.calls[1:]] == [(4, 1, 1), (2, 3, 1)]
    assert kernel[grid] is kernel[grid]


def test_warmup_interpret_and_recording_go_through_run(gpu, monkeypatch):
    from compiler.runtime import recording

    kernel, compiled, calls = gpu
    x = torch_like(1 << 20)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    assert kernel[(1,)](x, x, x, 64, BLOCK=16, warmup=True) is compiled[0]
    monkeypatch.setattr(recording, "_gpu_timed", lambda entry, grid, args, stream:
                        entry.launch(grid, args, stream) or 0.5)
    with record() as rec:
        kernel[(1,)](x, x, x, 64, BLOCK=16)
    assert rec.launches[0].time_ms == 0.5
    assert len(calls.calls) == 2 and calls.calls[1][3] == [1 << 20, 1 << 20, 1 << 20, 64]
    out = np.zeros(16, np.float32)
    kernel[(1,)](np.ones(16, np.float32), np.ones(16, np.float32), out, 16, BLOCK=16,
                 interpret=True)
    np.testing.assert_array_equal(out, 2)


def test_unhashable_constexpr_and_defaults(monkeypatch):
    import compiler.compiler as driver

    calls, compiled = Calls(), []
    monkeypatch.setattr(driver, "compile", lambda src, options=None, pipelines=None:
                        compiled.append(FakeCompiled(src, calls)) or compiled[-1])
    kernel = JITFunction(scale_kernel.fn, do_not_specialize=["n"])
    kernel._default_interpret = False
    x = torch_like(1 << 20)
    kernel[(1,)](x, 1, 2.5)
    kernel[(1,)](x, 1, 2.5, BLOCK=64)                   # the default, given: same key
    kernel[(1,)](x, 32, 0.5, [1, 2])                    # unhashable constexpr
    kernel[(1,)](x, 32, 0.5, [1, 2])
    assert len(compiled) == 2 and compiled[0].src.signature == {"x_ptr": "*fp32", "n": "i32",
                                                                  "factor": "fp32"}
    assert [c[3] for c in calls.calls] == [[1 << 20, 1, 2.5]] * 2 + [[1 << 20, 32, 0.5]] * 2


def test_generated_source_reads_each_address_once(gpu):
    kernel, compiled, calls = gpu
    reads = []

    class Counting:
        __module__ = "torch"
        dtype = FLOAT32
        is_cuda = True

        def data_ptr(self):
            reads.append(1)
            return 1 << 20

    x = Counting()
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    reads.clear()
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    assert len(reads) == 3


def test_an_autotuned_launch_takes_the_fast_launch_on_a_cache_hit(gpu, monkeypatch):
    """An autotuner launches its chosen config through `fn[grid]`, so a tuned key's launch is
    the jit's fast launch (no re-binding through `run`): tutorial 03's 256^3 matmul is a 3 us
    kernel that the ~15 us slow path left host-bound."""
    from compiler.runtime.autotuner import Autotuner
    kernel, compiled, calls = gpu
    configs = [compiler.Config({"BLOCK": 16}, num_warps=4), compiler.Config({"BLOCK": 32})]
    tuned = Autotuner(kernel, kernel.arg_names, configs, key=["n"],
                      do_bench=lambda fn, **_: (fn(), 1.0)[1])
    x = device_array(4096)
    grid = lambda meta: (64 // meta["BLOCK"],)  # noqa: E731
    tuned[grid](x, x, x, 64)                    # tunes (two configs), then launches the best
    monkeypatch.setattr(kernel, "run", None)    # a cache hit must not need it
    tuned[grid](x, x, x, 64)
    assert [c[0] for c in calls.calls] == [(4, 1, 1), (2, 1, 1), (4, 1, 1), (4, 1, 1)]


def test_fast_launch_for_a_kernel_without_parameters():
    def nothing():
        pass

    kernel = JITFunction(nothing)
    fast = make_fast_launch(kernel, (), 0, functools.partial(kernel._launch_slow, []))
    kernel._default_interpret = True
    seen = []
    kernel.run = lambda *args, grid, **kwargs: seen.append((args, grid, kwargs))
    fast((1,), num_warps=2)
    assert seen == [((), (1,), {"num_warps": 2})] and repr(MISSING) == "<not given>"


def test_fast_launch_overhead(gpu):
    """Python work of a launch on a cache hit, the launcher's included (cuLaunchKernel is a
    stand-in that does nothing): about 1.8 us on an idle core here. The bound is loose (a
    shared machine), but a re-binding through `run` per launch would exceed it."""
    kernel, compiled, calls = gpu
    calls.__class__ = type("Quiet", (Calls,), {"__call__": lambda self, *args: (0,)})
    x = torch_like(1 << 20)
    grid = (128,)
    kernel[grid](x, x, x, 4096, BLOCK=1024)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(2000):
            kernel[grid](x, x, x, 4096, BLOCK=1024)
        best = min(best, (time.perf_counter() - start) / 2000 * 1e6)
    print(f"fast launch: {best:.2f} us")
    assert best < 15.0


def test_call_shapes(gpu):
    """The fast launch is made for the shape of a call (which parameters come by position);
    other shapes launch the same, through `run` or by merging keywords."""
    kernel, compiled, calls = gpu
    x = torch_like(1 << 20)
    kernel[(1,)](x, x, x, 64, BLOCK=16)
    fast = kernel._fast_launch
    assert "/, *_tile_extra, BLOCK=_tile_M" in fast.source
    kernel[(1,)](x, x, x, 64, 16)                        # BLOCK by position: a new shape
    assert kernel._fast_launch is not fast and "BLOCK=_tile_M, /" in kernel._fast_launch.source
    kernel[(1,)](x, x, x, n=64, BLOCK=16)                # n by keyword: merged, fast
    kernel[(1,)](BLOCK=16, n=64, out_ptr=x, y_ptr=x, x_ptr=x)
    with pytest.raises(KernelArgumentError, match="two values for 'n'"):
        kernel[(1,)](x, x, x, 64, 16, n=64)
    assert len(compiled) == 1 and len(calls.calls) == 4
    assert all(c[3] == [1 << 20, 1 << 20, 1 << 20, 64] for c in calls.calls)


def test_real_compiled_kernel_through_its_launcher(monkeypatch):
    """The whole pipeline's CompiledKernel, its real `Launcher.for_kernel` (a stand-in
    backend and cuLaunchKernel): the arguments the GPU would get, first and later launches."""
    from compiler.compiler import CompiledKernel
    from compiler.runtime.driver import LoadedKernel

    calls = Calls()
    calls.formats = ["Q", "Q", "Q", "i"]

    def load_kernel(name, binary, shared, device=0):
        return LoadedKernel(name, "MODULE", "FUNCTION", shared)

    def launcher(self):
        if self._launcher is None:
            self._launcher = Launcher.for_kernel(self, loader=load_kernel, launch_fn=calls)
        return self._launcher

    monkeypatch.setattr(CompiledKernel, "launcher", launcher)
    kernel = JITFunction(add_kernel.fn)
    kernel._default_interpret = False
    x, y, out = device_array(1 << 20), device_array(1 << 21), device_array((1 << 22) + 4)
    for n in (1000, 2000):
        kernel[(4,)](x, y, out, n, BLOCK=256)
    with pytest.raises(ArgumentError, match="argument out_ptr of kernel add_kernel: a host"):
        kernel[(4,)](x, y, np.zeros(4, np.float32), 1000, BLOCK=256)
    assert [c[3] for c in calls.calls] == [[1 << 20, 1 << 21, (1 << 22) + 4, n]
                                           for n in (1000, 2000)]
    assert calls.calls[0][:2] == ((4, 1, 1), 128)


@compiler.jit
def _descriptor_scale(src, dst, factor):
    block = src.load([tl.program_id(0) * src.block_shape[0], 0])
    dst.store([tl.program_id(0) * src.block_shape[0], 0], block * factor)


def test_descriptor_arguments_launch_as_their_fields_and_block_shapes_rekey(gpu):
    from compiler.tools.tensor_descriptor import TensorDescriptor

    _, compiled, calls = gpu
    kernel = JITFunction(_descriptor_scale.fn)
    kernel._default_interpret = False
    src = TensorDescriptor(torch_like(1 << 20), [64, 32], [32, 1], [16, 32])
    dst = TensorDescriptor(torch_like(1 << 21), [64, 32], [40, 1], [16, 32])
    kernel[(4,)](src, dst, 2.0)
    kernel[(4,)](src, dst, 3.0)                   # the fast launch
    assert "_tile_H0" in kernel._fast_launch.source and len(compiled) == 1
    src.block_shape = dst.block_shape = [32, 32]  # another kernel (a pre_hook does this)
    kernel[(2,)](src, dst, 2.0)
    assert len(compiled) == 2
    assert compiled[0].src.signature["src"] == "tensordesc<fp32[16, 32]>"
    assert compiled[1].src.signature["dst"] == "tensordesc<fp32[32, 32]>"
    assert "dst.3" not in compiled[0].src.attrs["divisibility_16"]    # stride 40
    assert [c[3] for c in calls.calls] == [
        [1 << 20, 64, 32, 32, 1 << 21, 64, 32, 40, factor] for factor in (2.0, 3.0, 2.0)]
