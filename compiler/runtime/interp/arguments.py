"""Binding launch arguments to a kernel's parameters: arrays to addresses, scalars to dtypes.

Pointer parameters take numpy arrays (or torch CPU tensors, through `.numpy()` views so that
writes land in the tensor, or `reinterpret` wrappers of them), whose dtype must match the pointee; `None` passes a null pointer.
Arrays in GPU memory (torch CUDA tensors, or anything with `to_numpy()` and
`copy_from_numpy()` such as `DeviceArray`) are staged: copied to the host for the launch and
copied back after it. Scalar parameters take Python or numpy numbers, converted to the
parameter's exact type.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from compiler.codegen.tma import is_tensor_map
from compiler.dialects.tt import PointerType
from compiler.ir.types import FloatType, IntegerType, Type
from compiler.runtime.tensor_wrapper import TensorWrapper

from .errors import InterpreterError, OpError
from .memory import Memory
from .tma import bind_tensor_map
from .values import coerce, storage_dtype


def param_names(func) -> list[str]:
    """Each parameter's name (from its location, as the front end names it) or `argN`."""
    names = []
    for i, arg in enumerate(func.body.args):
        label = arg.loc.name() if arg.loc is not None else None
        names.append(label or f"arg{i}")
    return names


def host_array(value) -> tuple[np.ndarray | None, Callable[[], None] | None]:
    """`value` as a numpy array the kernel may write, and the function that copies the writes
    back to `value` after the launch (None when the array shares `value`'s memory)."""
    if isinstance(value, np.ndarray):
        return value, None
    if isinstance(value, TensorWrapper):            # `triton.reinterpret`: the base's memory
        return host_array(value.base)
    if type(value).__module__.split(".")[0] == "torch":
        return stage_torch_tensor(value)
    if hasattr(value, "to_numpy") and hasattr(value, "copy_from_numpy"):
        host = value.to_numpy()
        return host, lambda: value.copy_from_numpy(host)
    if hasattr(value, "__array_interface__"):       # other host arrays, viewed without a copy
        return np.asarray(value), None
    return None, None


def _on_host(tensor):
    """A torch tensor's host copy (itself when it is on the CPU)."""
    return tensor.cpu() if tensor.device.type != "cpu" else tensor


def stage_torch_tensor(value, to_host=_on_host):
    """A torch tensor as a writable numpy array (`to_host`: its host copy, or itself on the
    CPU) and the writeback of that copy. The writeback goes through `.data`, as Triton's
    interpreter does: autograd's version counter of the tensor is left alone, so a kernel
    that reads a tensor saved for backward (tutorial 05's layer norm saves its input) does
    not make `backward()` fail with "modified by an inplace operation"."""
    import torch
    tensor = value.data
    host = to_host(tensor)
    # numpy has no bfloat16 or float8: those are passed as their bits
    raw = host.view(torch.int16) if host.dtype == torch.bfloat16 else \
        host.view(torch.uint8) if host.dtype.itemsize == 1 and host.dtype.is_floating_point \
        else host
    writeback = (lambda: tensor.copy_(host)) if host is not tensor else None
    return raw.numpy(), writeback


def _dtype_fits(dtype: np.dtype, pointee: Type) -> bool:
    """Whether an array of `dtype` can back a `!tt.ptr<pointee>` (same size and kind)."""
    if dtype.itemsize != storage_dtype(pointee).itemsize:
        return False
    if isinstance(pointee, FloatType):
        if pointee.kind == "bf16":
            return dtype.kind in "iu" or dtype.name == "bfloat16"
        if pointee.kind in ("f16", "f32", "f64"):
            return dtype.kind == "f"
        return dtype.kind in "iu" or dtype.name.startswith("float8")
    if isinstance(pointee, (IntegerType, PointerType)):
        return dtype.kind in "iub"
    return False


def _bind_pointer(value, t: PointerType, where: str, memory: Memory, name: str,
                  writebacks: list):
    if value is None:
        return np.int64(0)
    array, writeback = host_array(value)
    if array is None:
        raise InterpreterError(f"{where} is a pointer parameter ({t}) and needs an array, got "
                               f"{type(value).__name__}")
    if not _dtype_fits(array.dtype, t.pointee):
        raise InterpreterError(f"{where} points to {t.pointee} but the array holds "
                               f"{array.dtype}; pass an array of the matching dtype")
    if writeback is not None:
        writebacks.append(writeback)
    return np.int64(memory.add_array(array, name))


def _bind_scalar(value, t: Type, where: str):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(t, IntegerType):
        if not isinstance(value, (int, bool, np.integer, np.bool_)):
            raise InterpreterError(f"{where} is an {t} parameter and needs an integer, got "
                                   f"{type(value).__name__}")
        number = int(value)
        if t.width == 1:
            if number not in (0, 1):
                raise InterpreterError(f"{where} is an i1 parameter and needs a bool, got {number}")
            return np.bool_(number)
        if not -(1 << (t.width - 1)) <= number < (1 << t.width):
            raise InterpreterError(f"{where} is an {t} parameter; {number} does not fit in "
                                   f"{t.width} bits")
        return np.asarray(number & ((1 << t.width) - 1), dtype=np.uint64).astype(
            np.dtype(f"u{t.width // 8}")).view(np.dtype(f"i{t.width // 8}"))[()]
    if isinstance(t, FloatType):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise InterpreterError(f"{where} is an {t} parameter and needs a number, got "
                                   f"{type(value).__name__}")
        return coerce(np.float64(value), t)
    raise InterpreterError(f"{where} has type {t}, which the interpreter cannot pass")


def bind_arguments(func, args: list, memory: Memory) -> tuple[list, list]:
    """The kernel's block-argument values for `args`, registering arrays in `memory`, and the
    functions that copy staged (device) arrays back after the launch."""
    params = func.body.args
    names = param_names(func)
    if len(args) != len(params):
        raise InterpreterError(
            f"@{func.sym_name} takes {len(params)} arguments ({', '.join(names)}), "
            f"got {len(args)}")
    bound, writebacks = [], []
    for i, (value, param, name) in enumerate(zip(args, params, names)):
        where = f"argument {i} '{name}' of @{func.sym_name}"
        try:
            if is_tensor_map(param):
                bound.append(bind_tensor_map(value, memory, name, host_array))
            elif isinstance(param.type, PointerType):
                bound.append(_bind_pointer(value, param.type, where, memory, name, writebacks))
            else:
                bound.append(_bind_scalar(value, param.type, where))
        except OpError as exc:
            raise InterpreterError(f"{where}: {exc}") from None
    return bound, writebacks
