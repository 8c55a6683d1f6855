"""`triton.tools.tensor_descriptor.TensorDescriptor`: the host-side description of a tiled view
of a tensor (base, shape, strides, block shape, padding), checked as Triton checks it.

Passing one to a kernel is refused with a located error: the tensor-descriptor ops it stands
for (`tt.make_tensor_descriptor`, `tt.descriptor_load`, `tt.descriptor_store`, lowered to TMA)
are not supported by this compiler yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class TensorDescriptor:
    """A tensor seen as a grid of `block_shape` tiles: `base` (a tensor with `data_ptr()`),
    its `shape` and `strides` (elements; the last stride must be 1), and `padding` ("zero" or
    "nan") for out-of-bounds reads."""

    base: Any
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"

    #: Why a kernel cannot take one (shown in the launch's error).
    kernel_argument_note = ("a TensorDescriptor: tensor descriptors (tt.make_tensor_descriptor, "
                            "tt.descriptor_load / tt.descriptor_store, lowered to TMA) are not "
                            "supported yet")

    def __post_init__(self):
        rank = len(self.shape)
        if not (len(self.strides) == rank == len(self.block_shape)):
            raise ValueError(f"TensorDescriptor: shape {list(self.shape)}, strides "
                             f"{list(self.strides)} and block_shape {list(self.block_shape)} "
                             f"must have the same length")
        if rank == 0:
            raise ValueError("TensorDescriptor needs at least one dimension")
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last dimension must be contiguous "
                             f"(stride 1), got strides {list(self.strides)}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding is 'zero' or 'nan', not "
                             f"{self.padding!r}")
        element = getattr(getattr(self.base, "dtype", None), "itemsize", None)
        if element:
            for stride in self.strides[:-1]:
                if (stride * element) % 16:
                    raise ValueError(f"TensorDescriptor: strides must be 16-byte multiples, "
                                     f"got {list(self.strides)} for {element}-byte elements")

    @staticmethod
    def from_tensor(tensor, block_shape, padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of a whole tensor (its shape and strides) tiled by `block_shape`."""
        return TensorDescriptor(tensor, list(tensor.shape), list(tensor.stride()),
                                list(block_shape), padding)
