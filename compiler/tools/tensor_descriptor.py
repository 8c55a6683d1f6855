"""`triton.tools.tensor_descriptor.TensorDescriptor`: the host-side description of a tiled view
of a tensor (base, shape, strides, block shape, padding), checked as Triton checks it.

A kernel takes one as an argument: the launch expands it into its runtime parts
(`kernel_fields`: the base pointer, the shape as int32s and the strides but the last as
int64s; the last stride is the constant 1) and its signature type (`signature_type`:
`tensordesc<fp16[64, 64]>`, with `,nan` for NaN padding) puts the element type, block shape
and padding in the specialization key, so changing `block_shape` (an autotune `pre_hook` does)
compiles another kernel. Inside the kernel it is a `tl.tensor_descriptor`, lowered without TMA
(see `compiler/language/block_pointers.py`) unless the kernel is compiled with `tma=True` on
sm_90+: the launch then also passes its CUtensorMap (`compiler.runtime.tensor_map`).
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
        """The descriptor of a whole tensor (its shape and strides) tiled by `block_shape`;
        `tensor` is a torch tensor (`stride()`) or a numpy array (byte `strides`)."""
        if callable(getattr(tensor, "stride", None)):
            strides = list(tensor.stride())
        else:
            strides = [s // tensor.itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, list(block_shape), padding)

    def signature_type(self, element: str) -> str:
        """The kernel signature type of this descriptor over `element` ("fp16"):
        `tensordesc<fp16[64, 64]>`, or `tensordesc<fp16[64, 64],nan>` with NaN padding."""
        padding = ",nan" if self.padding == "nan" else ""
        return f"tensordesc<{element}{[int(b) for b in self.block_shape]}{padding}>"

    def kernel_fields(self) -> tuple:
        """What a launch passes for it, in order: base, shape..., strides but the last."""
        return (self.base, *(int(s) for s in self.shape), *(int(s) for s in self.strides[:-1]))
