"""The geometry of a TMA (Tensor Memory Accelerator) copy of a tensor-descriptor block, shared by
the compiler (the `tma-lowering` pass and the PTX lowering) and the launch (which encodes the
host descriptor's CUtensorMap with the same box and swizzle).

A descriptor block lands in shared memory in the `#ttg.nvmma_shared` layout wgmma reads
(`compiler.codegen.nvmma`): the block is cut along its contiguous (last) dim into column blocks
one swizzle row wide, each stored row after row with the hardware's XOR swizzle. A TMA box is
exactly one such column block: [block rows..., swizzle bytes / element bytes], so a block whose
rows are wider than the swizzle (256 fp16 = 512 bytes against 128) is copied by several TMA
messages, column block k landing k * box bytes into the buffer. The swizzle is the one
accelerate-matmul picks for a dot operand of that row width, so a descriptor load feeding a dot
needs no copy between layouts.
"""
from __future__ import annotations

from dataclasses import dataclass

#: the launcher's kind of a CUtensorMap argument
TENSOR_MAP_KIND = "tensormap"
#: the argument attribute marking a host descriptor's CUtensorMap parameter
TENSOR_MAP_ATTR = "tt.nv_tma_desc"
#: the widest box dim a TMA copy takes (each dim)
MAX_BOX = 256
#: swizzle widths (bytes) from the widest down; 0 is none
SWIZZLES = (128, 64, 32)


def swizzle_bytes(row_bytes: int) -> int:
    """The widest swizzle (128, 64, 32 bytes, else none) that a row of `row_bytes` fills."""
    for width in SWIZZLES:
        if row_bytes >= width:
            return width
    return 0


@dataclass(frozen=True)
class TmaBox:
    """How one descriptor block is copied: `swizzle` (bytes, 0 for none), `box` (the TMA box,
    outermost dim first, as the block), `copies` (TMA messages along the contiguous dim),
    `element_bytes`."""

    swizzle: int
    box: tuple
    copies: int
    element_bytes: int

    @property
    def box_bytes(self) -> int:
        """Bytes one message writes."""
        n = 1
        for d in self.box:
            n *= d
        return n * self.element_bytes


def tma_box(element_bits: int, block_shape) -> TmaBox | None:
    """The box of a `block_shape` block of `element_bits`-bit elements, or None when TMA cannot
    copy it: rank 1 to 5, each outer dim at most 256, rows of at least 16 bytes in 16-byte
    multiples, and (rank 2 and more) the nvmma layout only covers 2-d blocks."""
    block = tuple(int(b) for b in block_shape)
    if element_bits % 8 or len(block) != 2:
        return None
    element_bytes = element_bits // 8
    row_bytes = block[-1] * element_bytes
    if row_bytes < 16 or row_bytes % 16 or any(d > MAX_BOX for d in block[:-1]):
        return None
    swizzle = swizzle_bytes(row_bytes)
    inner = swizzle // element_bytes if swizzle else block[-1]
    inner = min(inner, block[-1], MAX_BOX)
    if block[-1] % inner:
        return None
    return TmaBox(swizzle, block[:-1] + (inner,), block[-1] // inner, element_bytes)


#: bits of the element types a descriptor may have (signature names, as `fp16`)
BITS = {"fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "i8": 8, "u8": 8, "i16": 16, "u16": 16,
        "i32": 32, "u32": 32, "i64": 64, "u64": 64, "fp8e4nv": 8, "fp8e5": 8}
#: the front end's dtype names (`tl.int8`) -> the signature's
ALIASES = {"int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
           "uint32": "u32", "int64": "i64", "uint64": "u64"}


def supports(element: str, block_shape) -> bool:
    """Whether a kernel compiled with TMA copies a `block_shape` descriptor of `element` by TMA
    (else it keeps the pointer path for it, and the launch passes no tensor map)."""
    element = ALIASES.get(element, element)
    return element in BITS and tma_box(BITS[element], block_shape) is not None


def is_tensor_map(arg) -> bool:
    """Whether a kernel argument (a block argument) is a host descriptor's CUtensorMap."""
    return TENSOR_MAP_ATTR in (getattr(arg, "attributes", None) or {})
