"""Specialization entries, their split into compiler inputs, and ASTSource hashing."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.runtime.specialization import (
    EQUAL_TO_1, NONE_ENTRY, ASTSource, UnsupportedArgument, constexpr_entry, dtype_type_name,
    parse_signature_string, specialize, specialize_unspecialized, split_entries,
)


class FakeTensor:
    """Looks like a torch tensor to the specializer: dtype and data_ptr()."""

    def __init__(self, address, dtype="torch.float16"):
        self.address = address
        self.dtype = dtype

    def data_ptr(self):
        return self.address


@pytest.mark.parametrize("value, entry, unspecialized", [
    (1, EQUAL_TO_1, "i32"),
    (16, "i32:16", "i32"),
    (17, "i32", "i32"),
    (-32, "i32:16", "i32"),
    (2**31 - 1, "i32", "i32"),
    (2**31, "i64:16", "i64"),
    (-2**31 - 3, "i64", "i64"),
    (2**63, "u64:16", "u64"),
    (True, "i1", "i1"),
    (0.5, "fp32", "fp32"),
    (None, NONE_ENTRY, NONE_ENTRY),
    ("*fp32:16", "*fp32:16", "*fp32"),
    (np.int64(48), "i64:16", "i64"),
    (np.int32(1), EQUAL_TO_1, "i32"),
    (np.float64(2.0), "fp64", "fp64"),
    (np.float16(2.0), "fp16", "fp16"),
])
def test_scalar_entries(value, entry, unspecialized):
    assert specialize(value) == entry
    assert specialize_unspecialized(value) == unspecialized


def test_array_entries_follow_dtype_and_alignment():
    buffer = np.zeros(64, dtype=np.float32)
    assert buffer.__array_interface__["data"][0] % 16 == 0
    assert specialize(buffer) == "*fp32:16"
    assert specialize(buffer[1:]) == "*fp32"
    assert specialize(buffer[4:]) == "*fp32:16"
    assert specialize(np.zeros(8, dtype=np.int8)) == "*i8:16"
    assert specialize(np.zeros(8, dtype=np.uint32)) == "*u32:16"
    assert specialize(np.zeros(8, dtype=np.bool_)) == "*i1:16"
    assert specialize_unspecialized(buffer) == "*fp32"


def test_tensor_like_entries():
    assert specialize(FakeTensor(4096)) == "*fp16:16"
    assert specialize(FakeTensor(4098, "torch.bfloat16")) == "*bf16"
    assert specialize(FakeTensor(64, "torch.int64")) == "*i64:16"
    assert dtype_type_name(np.dtype(np.float64)) == "fp64"
    assert dtype_type_name("torch.float32") == "fp32"


def test_unsupported_argument_is_reported_by_name():
    entry = specialize({"not": "an array"})
    assert isinstance(entry, UnsupportedArgument)
    with pytest.raises(ValueError, match="argument 'x' is a dict, which a kernel cannot take"):
        split_entries(["x"], frozenset(), [entry], [{}])


def test_split_entries():
    names = ["x", "n", "one", "none", "BLOCK"]
    entries = ["*fp32:16", "i32:16", EQUAL_TO_1, NONE_ENTRY, constexpr_entry(128)]
    spec = split_entries(names, frozenset({"BLOCK"}), entries, [None, 32, 1, None, 128])
    assert spec.signature == {"x": "*fp32", "n": "i32"}
    assert spec.constexprs == {"one": 1, "none": None, "BLOCK": 128}
    assert spec.divisibility_16 == ["x", "n"]
    assert spec.attrs == {"divisibility_16": ["x", "n"]}
    assert spec.runtime_params == (0, 1)


def test_constexpr_value_objects_are_unwrapped():
    spec = split_entries(["B"], frozenset({"B"}), [constexpr_entry(1)], [tl.constexpr(64)])
    assert spec.constexprs == {"B": 64}


def test_constexpr_entries_distinguish_types_and_unhashables():
    assert constexpr_entry(1) != constexpr_entry(True)
    assert constexpr_entry([1, 2]) == (list, "[1, 2]")


@pytest.mark.parametrize("text, expected", [
    ("*fp32", ("*fp32", False)), ("i32:16", ("i32", True)), (" *bf16:16 ", ("*bf16", True)),
    ("u64", ("u64", False)),
])
def test_signature_strings(text, expected):
    assert parse_signature_string(text) == expected


@pytest.mark.parametrize("text", ["*float", "fp33", "i32:8", "**fp32", ""])
def test_bad_signature_strings(text):
    with pytest.raises(ValueError, match="not a signature string"):
        parse_signature_string(text)


# ---- ASTSource hashing --------------------------------------------------------------------------

SCALE = 2


@compiler.jit
def helper(x):
    return x * SCALE


@compiler.jit
def kernel_a(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs)), mask=offs < n)


@compiler.jit
def kernel_b(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1, mask=offs < n)


def _source(fn, **changes):
    base = dict(signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 64},
                attrs={"divisibility_16": ["x_ptr"]})
    base.update(changes)
    return ASTSource(fn, **base)


def test_hash_is_stable_and_names_the_kernel():
    src = _source(kernel_a)
    assert src.hash() == _source(kernel_a).hash()
    assert len(src.hash()) == 64
    assert src.name == "kernel_a"
    assert src.line == kernel_a.line
    assert "def kernel_a" in src.source


@pytest.mark.parametrize("change", [
    {"signature": {"x_ptr": "*fp16", "n": "i32"}},
    {"constexprs": {"BLOCK": 128}},
    {"attrs": {"divisibility_16": []}},
])
def test_hash_changes_with_specialization(change):
    assert _source(kernel_a).hash() != _source(kernel_a, **change).hash()


def test_hash_changes_with_options_and_source():
    src = _source(kernel_a)
    assert src.hash({"num_warps": 4}) != src.hash({"num_warps": 8})
    assert src.hash() != _source(kernel_b).hash()


def test_hash_changes_with_globals_read_by_kernel_or_callee(monkeypatch):
    before = _source(kernel_a).hash()
    monkeypatch.setitem(kernel_a.fn.__globals__, "SCALE", 3)
    assert _source(kernel_a).hash() != before
    monkeypatch.setitem(kernel_a.fn.__globals__, "SCALE", 2)
    assert _source(kernel_a).hash() == before


CALLEE_MODULE = """
import compiler
import compiler.language as tl


@compiler.jit
def twice(x):
    return x {op} 2


@compiler.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))
"""


def _load_kernel(path, op):
    import importlib.util

    path.write_text(CALLEE_MODULE.format(op=op))
    spec = importlib.util.spec_from_file_location("callee_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


def test_hash_changes_when_a_callee_changes(tmp_path):
    first = _load_kernel(tmp_path / "v1.py", "*")
    second = _load_kernel(tmp_path / "v2.py", "+")
    same = _load_kernel(tmp_path / "v3.py", "*")
    assert first.src == second.src
    sources = [ASTSource(k, {"x_ptr": "*fp32"}, {"BLOCK": 32}) for k in (first, second, same)]
    assert sources[0].hash() != sources[1].hash()
    assert sources[0].hash() == sources[2].hash()


def test_unsupported_dtypes_and_ranges():
    assert specialize(np.zeros(2, np.complex64)).what == "an array of complex64"
    assert specialize(np.complex64(1)).what == "a numpy complex64"
    assert specialize(2**64).what == "an int outside the 64-bit range"


# ---- launch handlers: the entry and the value the GPU launcher packs, in one call -------------

def test_launch_handlers_read_device_addresses_once():
    from compiler.runtime.device_array import DeviceArray
    from compiler.runtime.specialization import launch_handler_for, launch_value

    def torch_like(address, is_cuda):
        cls = type("Tensor", (), {"__module__": "torch", "dtype": "torch.float32",
                                  "is_cuda": is_cuda, "data_ptr": lambda self: address})
        return cls()

    class Interface:
        def __init__(self, address):
            self.__cuda_array_interface__ = {"version": 3, "shape": (1,), "typestr": "<f2",
                                             "data": (address, False)}

    gpu, cpu = torch_like(4096, True), torch_like(4100, False)
    assert launch_handler_for(gpu)(gpu) == ("*fp32:16", 4096)
    assert launch_handler_for(cpu)(cpu) == ("*fp32", cpu)        # the launcher rejects it
    array = DeviceArray((4,), np.int32, 64, owner=False)
    assert launch_handler_for(array)(array) == ("*i32:16", 64)
    assert launch_handler_for(Interface(72))(Interface(72)) == ("*fp16", 72)
    host = np.zeros(4, np.float32)
    entry, value = launch_handler_for(host)(host)
    assert entry in ("*fp32", "*fp32:16") and value is host
    assert launch_handler_for(48)(48) == ("i32:16", 48)
    assert launch_handler_for(0.5)(0.5) == ("fp32", 0.5)
    assert launch_value(gpu) == 4096 and launch_value(None) is None
