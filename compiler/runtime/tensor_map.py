"""Host tensor descriptors as CUtensorMaps: what a kernel compiled with TMA (the `tma` compile
option on sm_90+) takes for each host `TensorDescriptor` argument besides its fields.

`encoding_args` computes the arguments of the driver's `cuTensorMapEncodeTiled` (data type,
rank, global address, dims and byte strides innermost first, the box of
`compiler.codegen.tma.tma_box`, unit element strides, no interleave, the box's swizzle, L2
promotion, out-of-bounds fill: zeros, or NaN for padding="nan"); `encode` makes the call and
returns the 128 opaque bytes the launch passes as a `.param .align 64 .b8 [128]` kernel
parameter. Encodings are cached by everything they depend on, so a loop of launches over the
same tensors encodes once. The driver call is the one boundary tests stand in for.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from compiler.codegen.tma import ALIASES, BITS, supports, tma_box  # noqa: F401 (supports: API)

#: bytes of a CUtensorMap
TENSOR_MAP_BYTES = 128
#: element type name (`specialization.dtype_type_name`) -> CUtensorMapDataType member
DATA_TYPES = {"fp16": "FLOAT16", "bf16": "BFLOAT16", "fp32": "FLOAT32", "fp64": "FLOAT64",
              "i8": "UINT8", "u8": "UINT8", "i16": "UINT16", "u16": "UINT16", "i32": "INT32",
              "u32": "UINT32", "i64": "INT64", "u64": "UINT64", "fp8e4nv": "UINT8",
              "fp8e5": "UINT8"}
SWIZZLE_NAMES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
L2_PROMOTION = "L2_128B"


class TensorMapError(ValueError):
    """A host descriptor TMA cannot describe (the message says which rule it breaks)."""


@dataclass(frozen=True)
class EncodingArgs:
    """The arguments of one cuTensorMapEncodeTiled call; enum members by name (the
    CU_TENSOR_MAP_* suffix), dims and strides innermost first as the driver takes them."""

    data_type: str
    rank: int
    address: int
    global_dims: tuple
    global_strides: tuple          # bytes, rank - 1 entries (dim 0's is implied)
    box_dims: tuple
    element_strides: tuple
    interleave: str
    swizzle: str
    l2_promotion: str
    oob_fill: str


def encoding_args(element: str, address: int, shape, strides, block_shape,
                  padding: str = "zero") -> EncodingArgs:
    """The cuTensorMapEncodeTiled arguments of a descriptor over `element` ("fp16") at device
    `address` with `shape` and element `strides` (outermost first, the last 1). Raises
    TensorMapError for what TMA refuses: an address not 16-byte aligned, byte strides not
    multiples of 16 or of 2**40 and more, dims over 2**32."""
    element = ALIASES.get(element, element)
    box = tma_box(BITS[element], block_shape) if element in DATA_TYPES else None
    if box is None:
        raise TensorMapError(f"TMA cannot copy a {element} block of shape {list(block_shape)}")
    elem_bytes = BITS[element] // 8
    if address % 16:
        raise TensorMapError(f"a TMA descriptor's base must be 16-byte aligned, got address "
                             f"{address:#x}")
    byte_strides = tuple(int(s) * elem_bytes for s in reversed(list(strides)[:-1]))
    for stride in byte_strides:
        if stride % 16 or not 0 < stride < 2 ** 40:
            raise TensorMapError(f"a TMA descriptor's strides must be positive multiples of "
                                 f"16 bytes below 2**40, got {list(strides)} elements of "
                                 f"{elem_bytes} bytes")
    dims = tuple(int(d) for d in reversed(list(shape)))
    if any(not 0 < d <= 2 ** 32 for d in dims):
        raise TensorMapError(f"a TMA descriptor's dims must be from 1 to 2**32, got "
                             f"{list(shape)}")
    return EncodingArgs(DATA_TYPES[element], len(dims), int(address), dims, byte_strides,
                        tuple(reversed(box.box)), (1,) * len(dims), "NONE",
                        SWIZZLE_NAMES[box.swizzle], L2_PROMOTION,
                        "NAN_REQUEST_ZERO_FMA" if padding == "nan" else "NONE")


def call_driver(args: EncodingArgs, cuda) -> bytes:
    """`cuTensorMapEncodeTiled` through the cuda.bindings driver module `cuda`: the map's 128
    bytes; a driver error raises TensorMapError naming the arguments."""
    err, tensor_map = cuda.cuTensorMapEncodeTiled(
        getattr(cuda.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{args.data_type}"),
        args.rank, args.address,
        # The bindings take these arrays only as their own fixed-width integer objects.
        [cuda.cuuint64_t(d) for d in args.global_dims],
        [cuda.cuuint64_t(s) for s in args.global_strides],
        [cuda.cuuint32_t(b) for b in args.box_dims],
        [cuda.cuuint32_t(e) for e in args.element_strides],
        getattr(cuda.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{args.interleave}"),
        getattr(cuda.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{args.swizzle}"),
        getattr(cuda.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{args.l2_promotion}"),
        getattr(cuda.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{args.oob_fill}"))
    if int(err) != 0:
        raise TensorMapError(f"cuTensorMapEncodeTiled failed ({err}) for {args}")
    words = tensor_map.opaque
    return b"".join(int(w).to_bytes(8, "little") for w in words)


@functools.lru_cache(maxsize=1024)
def _encode_cached(args: EncodingArgs) -> bytes:
    from . import driver
    return call_driver(args, driver.bindings())


def encode(element: str, address: int, shape, strides, block_shape,
           padding: str = "zero") -> bytes:
    """The 128-byte CUtensorMap of a descriptor (see `encoding_args`), cached."""
    return _encode_cached(encoding_args(element, address, tuple(shape), tuple(strides),
                                        tuple(block_shape), padding))


def descriptor_map_args(desc) -> tuple | None:
    """`descriptor_map`'s arguments for a host `TensorDescriptor`: (element, base address,
    shape, strides, block shape, padding), or None when its base has no known element type."""
    from .specialization import _address, dtype_type_name
    element = dtype_type_name(getattr(desc.base, "dtype", None))
    if element is None:
        return None
    return (element, _address(desc.base), tuple(desc.shape), tuple(desc.strides),
            tuple(desc.block_shape), desc.padding)


def of_descriptor(desc) -> bytes | None:
    """The CUtensorMap of a host `TensorDescriptor`, or None when its element type and block
    are not copied by TMA (`supports`; the kernel then has no tensor-map parameter for it)."""
    args = descriptor_map_args(desc)
    return descriptor_map(*args) if args is not None else None


@functools.lru_cache(maxsize=4096)
def descriptor_map(element: str, address: int, shape: tuple, strides: tuple,
                    block_shape: tuple, padding: str) -> bytes | None:
    """`of_descriptor` past the descriptor's fields, cached on them: a launch with descriptors
    (tutorial 06's forward takes four) re-derived the box, swizzle and byte strides of each one
    on every call, about half of the launch's host time on the H200."""
    if not supports(element, block_shape):
        return None
    return encode(element, address, shape, strides, block_shape, padding)
