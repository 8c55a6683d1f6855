"""`triton.reinterpret`: a tensor's memory passed to a kernel as another element type.

`reinterpret(tensor, dtype)` returns a `TensorWrapper` holding the tensor (`.base`) and a
`triton.language` dtype of the same width (`uint32` for int32 data, `float8e5` for int8
bytes, ...). A kernel given the wrapper sees a pointer to `dtype`; the interpreter reads and
writes the base tensor's memory, and a GPU launch passes its address. `reinterpret` of a
wrapper re-wraps its base, and back to the base's own dtype gives the base itself.
`type_canonicalisation_dict` maps dtype spellings (numpy/torch names, Triton's long and short
names) to the short signature name ("uint32" -> "u32", "float8e5" -> "fp8e5").
"""
from __future__ import annotations

from compiler.runtime.specialization import DTYPE_NAMES

#: Every spelling of a kernel element type -> its short signature name.
type_canonicalisation_dict = {
    **DTYPE_NAMES,
    **{short: short for short in set(DTYPE_NAMES.values())},
    "int1": "i1", "float8e5": "fp8e5", "float8e4nv": "fp8e4nv", "float8e4b15": "fp8e4b15",
    "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16", "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2fnuz": "fp8e5b16",
}


def _element_bits(dtype) -> int:
    """Bits per element of a triton.language dtype or a torch dtype."""
    bits = getattr(dtype, "primitive_bitwidth", None)
    if bits is None:
        itemsize = getattr(dtype, "itemsize", None)
        if itemsize is None:
            raise TypeError(f"{dtype!r} is not a dtype")
        bits = 8 * itemsize
    return int(bits)


class TensorWrapper:
    """A tensor (`base`) seen by kernels as an array of `dtype` (a triton.language dtype)."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = base.data
        self.device = base.device
        self.shape = self.base.shape

    def data_ptr(self) -> int:
        """The base tensor's address."""
        return self.base.data_ptr()

    def stride(self, *args):
        """The base tensor's strides (in elements; the widths are equal)."""
        return self.base.stride(*args)

    def element_size(self) -> int:
        """Bytes per element (the base's)."""
        return self.base.element_size()

    def numel(self) -> int:
        """Number of elements."""
        return self.base.numel()

    def dim(self) -> int:
        """Number of dimensions."""
        return self.base.dim()

    def cpu(self) -> "TensorWrapper":
        """The same view of the base copied to the host."""
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device) -> "TensorWrapper":
        """The same view of the base moved to `device`."""
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self) -> "TensorWrapper":
        """A copy of the base, viewed the same way."""
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other) -> "TensorWrapper":
        """Copy `other`'s bits (a wrapper or a tensor) into the base."""
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def new_empty(self, sizes) -> "TensorWrapper":
        """An uninitialized wrapper of `sizes` with this dtype."""
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __repr__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """`tensor`'s memory seen as `dtype` by kernels: a TensorWrapper, or the base tensor when
    `dtype` is a wrapper's base dtype again. The widths must agree."""
    if isinstance(tensor, TensorWrapper):
        base_name = type_canonicalisation_dict.get(str(tensor.base.dtype).replace("torch.", ""))
        if base_name is not None and base_name == type_canonicalisation_dict.get(
                getattr(dtype, "name", str(dtype))):
            return tensor.base
        tensor = tensor.base
    if not (callable(getattr(tensor, "data_ptr", None)) and hasattr(tensor, "dtype")):
        raise TypeError(f"reinterpret() takes a tensor, got {type(tensor).__name__}")
    if _element_bits(dtype) != _element_bits(tensor.dtype):
        raise TypeError(f"reinterpret(): {dtype} is {_element_bits(dtype)} bits wide but the "
                        f"tensor's {tensor.dtype} is {_element_bits(tensor.dtype)}; the widths "
                        f"must match")
    return TensorWrapper(tensor, dtype)
