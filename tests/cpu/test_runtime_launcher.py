"""Argument packing and launch logic of `compiler.runtime.launcher`, with a stand-in for
cuLaunchKernel that decodes the packed `void*[]` exactly as the driver would read it."""
from __future__ import annotations

import ctypes
import operator
import statistics
import struct
import time
import types

import numpy as np
import pytest

from compiler.runtime import driver
from compiler.runtime.launcher import (ArgumentError, KernelLauncher, Launcher, bf16_bits,
                                       check_grid, device_pointer, kernel_arg_kinds,
                                       kernel_arg_names, layout_args, normalize_kind)

SIZES = {"Q": 8, "q": 8, "I": 4, "i": 4, "h": 2, "H": 2, "b": 1, "B": 1, "e": 2, "f": 4,
         "d": 8}


class RecordingLaunch:
    """Stands in for cuLaunchKernel: records the launch and reads each parameter through the
    `void*[]` it was given, like the driver does."""

    def __init__(self, formats, result=0):
        self.formats = formats
        self.calls = []
        self.result = result

    def __call__(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        for dim in (gx, gy, gz, bx, by, bz, shared):     # Cython's `unsigned int` conversion
            if not 0 <= operator.index(dim) < 2**32:
                raise OverflowError("value too large to convert to unsigned int")
        array = (ctypes.c_void_p * max(len(self.formats), 1)).from_address(params)
        values = []
        for i, fmt in enumerate(self.formats):
            raw = ctypes.string_at(array[i], SIZES[fmt])
            values.append(struct.unpack("<" + fmt, raw)[0])
        self.calls.append(dict(f=f, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                               stream=stream, values=values, extra=extra))
        return (self.result,)


class FakeDeviceTensor:
    """Looks like a DeviceArray / cupy array: data_ptr() and __cuda_array_interface__."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address

    @property
    def __cuda_array_interface__(self):
        return {"version": 3, "shape": (4,), "typestr": "<f4", "data": (self.address, False)}


class InterfaceOnly:
    """Only the CUDA array interface, like numba's device arrays."""

    def __init__(self, address):
        self.__cuda_array_interface__ = {"version": 3, "shape": (1,), "typestr": "<f4",
                                         "data": (address, False)}


def fake_torch_tensor(address, is_cuda=True):
    """An object whose type lives in a module named torch, like torch.Tensor."""
    cls = type("Tensor", (), {"__module__": "torch",
                              "data_ptr": lambda self: address,
                              "is_cuda": is_cuda})
    return cls()


def make(kinds, formats, **kw):
    recorder = RecordingLaunch(formats)
    return Launcher("FN", kinds, launch_fn=recorder, name="k", **kw), recorder


def test_layout_respects_natural_alignment():
    layout = layout_args(["i32", "ptr", "i1", "fp64", "i16", "fp16"])
    assert layout.offsets == (0, 8, 16, 24, 32, 34)
    assert layout.size >= 36
    assert layout_args(["*fp32", "ptr<f16>", "f32"]).kinds == ("ptr", "ptr", "fp32")


def test_unknown_kind_is_rejected_with_the_allowed_list():
    with pytest.raises(ValueError, match="unsupported kernel argument kind 'c64'.*fp32"):
        normalize_kind("c64")


def test_every_kind_reaches_the_kernel_with_its_value():
    kinds = ["ptr", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16",
             "bf16", "fp32", "fp64"]
    formats = ["Q", "I", "b", "h", "i", "q", "B", "H", "I", "Q", "e", "H", "f", "d"]
    launcher, rec = make(kinds, formats)
    args = (FakeDeviceTensor(0xDEAD0000), True, -5, -300, -2**31, 2**40, 255, 65535, 2**32 - 1,
            2**64 - 1, 1.5, 2.0, 0.1, 1e300)
    launcher.launch((3, 2, 1), 4, 128, None, args)
    (call,) = rec.calls
    assert call["grid"] == (3, 2, 1) and call["block"] == (128, 1, 1)
    assert call["shared"] == 128 and call["stream"] is None and call["extra"] == 0
    values = call["values"]
    assert values[:10] == [0xDEAD0000, 1, -5, -300, -2**31, 2**40, 255, 65535, 2**32 - 1,
                           2**64 - 1]
    assert values[10] == 1.5
    assert values[11] == 0x4000                       # bf16 2.0
    assert values[12] == pytest.approx(np.float32(0.1))
    assert values[13] == 1e300


@pytest.mark.parametrize("arg,expected", [
    (FakeDeviceTensor(0x1000), 0x1000),
    (InterfaceOnly(0x2000), 0x2000),
    (0x3000, 0x3000),
    (None, 0),
])
def test_pointer_arguments_of_every_accepted_kind(arg, expected):
    launcher, rec = make(["ptr"], ["Q"])
    launcher.launch((1,), 1, 0, None, (arg,))
    assert rec.calls[0]["values"] == [expected]


def test_torch_like_tensors_use_data_ptr_and_must_be_on_the_gpu():
    assert device_pointer(fake_torch_tensor(0x4000)) == 0x4000
    launcher, _ = make(["ptr"], ["Q"])
    with pytest.raises(ArgumentError, match="host array.*DeviceArray.from_numpy"):
        launcher.launch((1,), 1, 0, None, (fake_torch_tensor(0x4000, is_cuda=False),))


def test_numpy_host_array_gets_a_clear_error_naming_the_argument():
    launcher, rec = make(["ptr", "ptr", "i32"], ["Q", "Q", "i"],
                         arg_names=["x_ptr", "y_ptr", "n"])
    with pytest.raises(ArgumentError) as info:
        launcher.launch((1,), 4, 0, None, (FakeDeviceTensor(16), np.zeros(4), 4))
    message = str(info.value)
    assert "y_ptr" in message and "numpy.ndarray" in message
    assert "DeviceArray.from_numpy" in message
    # the argument's name is added without losing the class: Triton raises a ValueError here
    # (the H200 run of tests/gpu/test_compat_gpu_launch.py caught the plain ArgumentError)
    assert isinstance(info.value, ValueError)
    assert not rec.calls


def test_unsupported_pointer_object():
    with pytest.raises(ArgumentError, match="cannot pass a str as a pointer"):
        device_pointer("hello")


@pytest.mark.parametrize("kind,value,pattern", [
    ("i32", 2**31, "out of range"),
    ("i32", 1.5, "must be an integer"),
    ("u32", -1, "out of range"),
    ("i64", "7", "must be an integer"),
    ("fp32", "x", "must be a float"),
    ("fp16", 1e6, "too large for fp16"),
    ("fp32", 1e39, "too large for fp32"),
])
def test_bad_scalars_are_named(kind, value, pattern):
    launcher, rec = make([kind], [layout_args([kind]).struct_format[-1]], arg_names=["s"])
    with pytest.raises(ArgumentError, match=pattern) as info:
        launcher.launch((1,), 1, 0, None, (value,))
    assert "argument s of kernel k" in str(info.value)
    assert not rec.calls


def test_numpy_scalars_are_accepted():
    launcher, rec = make(["i32", "fp32", "i64"], ["i", "f", "q"])
    launcher.launch((1,), 1, 0, None, (np.int32(7), np.float32(0.5), np.int64(-9)))
    assert rec.calls[0]["values"] == [7, 0.5, -9]


def test_wrong_argument_count():
    launcher, _ = make(["ptr", "i32"], ["Q", "i"], arg_names=["p", "n"])
    with pytest.raises(ArgumentError, match=r"takes 2 arguments \(p, n\), got 3"):
        launcher.launch((1,), 1, 0, None, (0, 1, 2))
    with pytest.raises(ArgumentError, match="must be a tuple or list"):
        launcher.launch((1,), 1, 0, None, 5)


@pytest.mark.parametrize("grid,expected", [((4,), (4, 1, 1)), ((2, 3), (2, 3, 1)),
                                           ([5, 6, 7], (5, 6, 7))])
def test_grid_forms(grid, expected):
    launcher, rec = make(["i32"], ["i"])
    launcher.launch(grid, 2, 0, None, (1,))
    assert rec.calls[0]["grid"] == expected and rec.calls[0]["block"] == (64, 1, 1)


def test_empty_grid_launches_nothing_and_bad_grids_are_explained():
    launcher, rec = make(["i32"], ["i"])
    launcher.launch((0,), 4, 0, None, (1,))
    assert not rec.calls
    for bad in (4, (1, 2, 3, 4), (-1,), (1.5,)):
        with pytest.raises(ArgumentError, match="grid must be a tuple"):
            launcher.launch(bad, 4, 0, None, (1,))
    assert check_grid((2,)) == (2, 1, 1)


def test_streams_are_passed_as_handles():
    launcher, rec = make(["i32"], ["i"])
    torch_like = types.SimpleNamespace(cuda_stream=0x77)
    launcher.launch((1,), 1, 0, 0x55, (1,))
    launcher.launch((1,), 1, 0, torch_like, (1,))
    assert [c["stream"] for c in rec.calls] == [0x55, 0x77]


def _stand_in_torch(initialized: bool, raw_stream: int):
    """A module standing in for torch as `driver.current_stream` reads it."""
    cuda = types.SimpleNamespace(is_initialized=lambda: initialized)
    c = types.SimpleNamespace(_cuda_getDevice=lambda: 0,
                              _cuda_getCurrentRawStream=lambda device: raw_stream)
    return types.SimpleNamespace(cuda=cuda, _C=c)


def test_a_launch_without_a_stream_goes_to_torchs_current_stream(monkeypatch):
    """Triton launches on torch's current stream: a kernel launched inside
    `torch.cuda.stream(s)` (tutorial 02's benchmark sets one) must be ordered with the torch work
    and the timing events on `s`, not run on the default stream beside them."""
    import sys
    launcher, rec = make(["i32"], ["i"])
    bound = launcher.bind(4)
    monkeypatch.setitem(sys.modules, "torch", _stand_in_torch(True, 0x99))
    launcher.launch((1,), 1, 0, None, (1,))
    bound((1,), (1,))
    launcher.launch((1,), 1, 0, 0x55, (1,))              # an explicit stream still wins
    monkeypatch.setitem(sys.modules, "torch", _stand_in_torch(True, 0))
    launcher.launch((1,), 1, 0, None, (1,))              # torch on its default stream
    monkeypatch.setitem(sys.modules, "torch", _stand_in_torch(False, 0x99))
    launcher.launch((1,), 1, 0, None, (1,))              # torch without CUDA initialized
    monkeypatch.delitem(sys.modules, "torch")
    launcher.launch((1,), 1, 0, None, (1,))
    assert [c["stream"] for c in rec.calls] == [0x99, 0x99, 0x55, None, None, None]


def test_bound_launch_fixes_warps_and_shared_memory():
    launcher, rec = make(["ptr", "i32"], ["Q", "i"])
    run = launcher.bind(num_warps=8, shared_bytes=70000)
    run((2,), (FakeDeviceTensor(64), 9))
    run((1,), (None, 1), stream=3)
    assert rec.calls[0]["block"] == (256, 1, 1) and rec.calls[0]["shared"] == 70000
    assert rec.calls[0]["values"] == [64, 9]
    assert rec.calls[1]["stream"] == 3 and rec.calls[1]["values"] == [0, 1]
    with pytest.raises(ValueError, match="power of two"):
        launcher.bind(num_warps=3)


def test_kernel_without_arguments():
    launcher, rec = make([], [])
    launcher.launch((1,), 1, 0, None, ())
    assert rec.calls[0]["values"] == []


def test_failed_launch_raises_cuda_error_naming_the_kernel():
    cu = driver.bindings()
    recorder = RecordingLaunch(["i"], result=cu.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    launcher = Launcher("FN", ["i32"], launch_fn=recorder, name="big_kernel")
    with pytest.raises(driver.CudaError) as info:
        launcher.launch((1,), 32, 0, None, (1,))
    assert info.value.name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
    assert "cuLaunchKernel(big_kernel" in str(info.value)


def test_bf16_rounding_matches_truncating_a_rounded_float32():
    for value in (1.0, -2.5, 3.140625, 1e-3, 65504.0, 1.00390625, 1.01171875):
        bits = np.array([value], np.float32).view(np.uint32)[0]
        rounded = (int(bits) + 0x7FFF + ((int(bits) >> 16) & 1)) >> 16
        assert bf16_bits(value) == rounded
    assert bf16_bits(1.0) == 0x3F80
    assert bf16_bits(1.00390625) == 0x3F80          # halfway: ties to even
    assert bf16_bits(float("nan")) & 0x7FC0 == 0x7FC0


def test_python_work_per_launch_is_small():
    """The launch budget is ~2 us of Python on top of cuLaunchKernel; allow slack for a busy
    CI machine but catch regressions such as per-launch inspection (tens of us)."""
    launcher = Launcher("FN", ["ptr", "ptr", "ptr", "i32"], launch_fn=lambda *a: (0,))
    run = launcher.bind(4)
    args = (FakeDeviceTensor(16), FakeDeviceTensor(32), FakeDeviceTensor(48), 1024)
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(2000):
            run((4,), args)
        samples.append((time.perf_counter() - start) / 2000 * 1e6)
    assert statistics.median(samples) < 10.0, samples


def test_arg_kinds_and_names_from_reference_ttgir(reference_dir):
    from compiler.ir.parser import parse_module
    module = parse_module((reference_dir / "layernorm.ttgir").read_text())
    assert kernel_arg_kinds(module) == ["ptr", "ptr", "ptr", "ptr", "i32", "i32", "fp32"]
    assert kernel_arg_names(module) == ["X", "Y", "W", "B", "stride", "N", "eps"]


def test_for_kernel_builds_a_bound_launcher_through_the_driver(reference_dir):
    from compiler.ir.parser import parse_module
    from compiler.metadata import KernelMetadata
    from compiler.runtime.driver import LoadedKernel
    module = parse_module((reference_dir / "add.ttgir").read_text())
    loads = []

    def load_kernel(name, binary, shared, device=0):
        loads.append((name, binary, shared, device))
        return LoadedKernel(name, "MOD", "FUNCTION", shared)

    kernel = types.SimpleNamespace(name="add_kernel", asm={"ptx": ".target sm_90", "cubin":
                                   b"\x7fELF..."},
                                   metadata=KernelMetadata.from_ttgir(module, "add_kernel"),
                                   ttgir_module=module)
    recorder = RecordingLaunch(["Q", "Q", "Q", "i"])
    bound = Launcher.for_kernel(kernel, loader=load_kernel, launch_fn=recorder)
    assert isinstance(bound, KernelLauncher)
    assert loads == [("add_kernel", b"\x7fELF...", 0, 0)]
    bound.launch((8,), (FakeDeviceTensor(16), FakeDeviceTensor(32), FakeDeviceTensor(48), 99))
    assert recorder.calls[0]["f"] == "FUNCTION" and recorder.calls[0]["values"] == [16, 32, 48, 99]
    assert recorder.calls[0]["block"] == (128, 1, 1)
    with pytest.raises(ArgumentError, match="argument out_ptr"):
        bound.launch((8,), (FakeDeviceTensor(16), FakeDeviceTensor(32), np.ones(2), 99))


# ---- the launch taking addresses (what the jit's fast launch calls) ----------------------------

def test_bound_launch_taking_addresses():
    launcher, recorder = make(["ptr", "i32", "ptr"], ["Q", "i", "Q"])
    run = launcher.bind(num_warps=2, addresses=True)
    run((3,), (1 << 20, 7, 0))
    assert recorder.calls[0]["values"] == [1 << 20, 7, 0]
    with pytest.raises(ArgumentError, match=r"argument #2 of kernel k: this launch takes "
                                            r"pointers as int device addresses, not "
                                            r"FakeDeviceTensor"):
        run((3,), (1 << 20, 7, FakeDeviceTensor(64)))
    with pytest.raises(ArgumentError, match="argument #0 of kernel k: a host array"):
        run((3,), (np.zeros(4), 7, 0))
    with pytest.raises(ArgumentError, match=r"out of range"):
        run((3,), (1 << 20, 2**40, 0))
    assert len(recorder.calls) == 1


def test_kernel_launcher_has_both_forms():
    recorder = RecordingLaunch(["Q"])
    bound = KernelLauncher(Launcher("FN", ["ptr"], launch_fn=recorder), None, 4, 0)
    bound.launch((1,), (FakeDeviceTensor(32),))
    bound.launch_addresses((1,), (48,))
    assert [c["values"] for c in recorder.calls] == [[32], [48]]


def test_pointer_source_names_how_addresses_are_read():
    from compiler.runtime.launcher import pointer_source

    cpu_first = fake_torch_tensor(16, is_cuda=False)
    assert pointer_source(cpu_first) == "torch"     # decided by type, not by this instance
    assert pointer_source(FakeDeviceTensor(16)) == "data_ptr"
    assert pointer_source(InterfaceOnly(16)) == "interface"
    assert pointer_source(5) == "int" and pointer_source(None) == "null"
    assert pointer_source(np.zeros(2)) is None and pointer_source("text") is None


# ---- cooperative launches (launch_cooperative_grid=True) -----------------------------------------
def _cooperative(monkeypatch, per_sm: int, sms: int):
    """A KernelLauncher's cooperative form over a recorder, on a pretend device."""
    monkeypatch.setattr(driver, "max_active_blocks_per_sm", lambda fn, block, shared: per_sm)
    monkeypatch.setattr(driver, "device_attribute", lambda name, device=0: sms)
    recorder = RecordingLaunch(["Q", "i"])

    def cooperative_kernel(f, gx, gy, gz, bx, by, bz, shared, stream, params):
        """cuLaunchCooperativeKernel's arguments: cuLaunchKernel's without `extra`."""
        return recorder(f, gx, gy, gz, bx, by, bz, shared, stream, params, None)
    plain = KernelLauncher(Launcher("FN", ["ptr", "i32"], name="k", launch_fn=recorder),
                           None, 4, 0)
    return plain, plain.cooperative(launch_fn=cooperative_kernel), recorder


def test_cooperative_launch_goes_through_the_cooperative_entry_point(monkeypatch):
    plain, coop, recorder = _cooperative(monkeypatch, per_sm=2, sms=132)
    coop.launch((264,), (16, 3))
    assert recorder.calls[0]["grid"] == (264, 1, 1) and recorder.calls[0]["extra"] is None
    assert recorder.calls[0]["values"] == [16, 3] and recorder.calls[0]["block"] == (128, 1, 1)
    assert plain.cooperative() is coop              # built once per loaded kernel
    plain.launch((1,), (16, 3))
    assert recorder.calls[1]["extra"] == 0          # the ordinary form still uses cuLaunchKernel


def test_a_cooperative_grid_beyond_the_resident_capacity_is_refused(monkeypatch):
    from compiler.runtime.errors import OutOfResources

    _, coop, recorder = _cooperative(monkeypatch, per_sm=2, sms=132)
    with pytest.raises(OutOfResources, match=r"CTAs resident at once for the cooperative "
                                             r"launch of k .*132 SMs x 2 CTAs each.*required: "
                                             r"265, hardware limit: 264"):
        coop.launch((265,), (16, 3))
    assert recorder.calls == []


def test_the_jit_launches_cooperatively_when_asked(monkeypatch):
    from compiler.runtime.jit import _GpuEntry

    plain, coop, recorder = _cooperative(monkeypatch, per_sm=1, sms=4)
    kernel = types.SimpleNamespace(launcher=lambda: plain, trace=None)
    spec = types.SimpleNamespace(runtime_params=(0, 1), descriptor_params=())
    entry = _GpuEntry(kernel, spec, 4, cooperative=True)
    entry.launch((4,), entry.runtime_args((16, 3)))
    assert recorder.calls[-1]["extra"] is None
    _GpuEntry(kernel, spec, 4).launch((4,), (16, 3))
    assert recorder.calls[-1]["extra"] == 0
