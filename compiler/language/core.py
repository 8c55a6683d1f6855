"""The DSL's value model: dtypes, pointer and block types, `constexpr`, `tensor`, and the
`@builtin` marker that tells the code generator which functions it implements itself.

A kernel's runtime values are `tensor` objects (a scalar is a tensor of shape `[]`) wrapping an
IR value; compile-time values are `constexpr` objects. Builtins are plain functions whose first
parameter is the semantic context (`compiler.frontend.semantic.Semantic`) that the code generator
passes explicitly; calling one from ordinary Python raises `NotInKernelError`.
"""
from __future__ import annotations

import functools
import math
import re

from compiler.dialects.tt import PointerType
from compiler.ir import types as irt


class NotInKernelError(RuntimeError):
    """A `tl.*` builtin was called outside a kernel being compiled."""


# ---- dtypes -------------------------------------------------------------------------------------
class dtype:
    """A scalar element type with its signedness (IR integers are signless; the DSL's are not).

    `name` is Triton's spelling: int1, int8..int64, uint8..uint64, fp8e4nv, fp8e5, fp16,
    bf16, fp32, fp64.
    """

    SINT = ("int8", "int16", "int32", "int64")
    UINT = ("int1", "uint8", "uint16", "uint32", "uint64")  # int1 is unsigned, as in Triton
    #: The 8-bit float formats Triton names. fp8e4nv and fp8e5 have IR types (Hopper's e4m3 and
    #: e5m2: loads, stores, casts and wgmma dots); the others exist as dtypes, and an op given
    #: one fails with a located "not supported yet" error.
    FP8 = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16")
    FP = FP8 + ("fp16", "bf16", "fp32", "fp64")
    # Triton's class lists (names, as in `triton.language.dtype`).
    SINT_TYPES = list(SINT)
    UINT_TYPES = list(UINT)
    FP_TYPES = list(FP)
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]
    _PY_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                 **{name: "float8" + name[3:] for name in FP8}}
    _BITS = {"fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64}
    _IR_KINDS = {"fp8e4nv": "f8E4M3FN", "fp8e5": "f8E5M2", "fp16": "f16", "bf16": "bf16",
                 "fp32": "f32", "fp64": "f64"}

    def __init__(self, name: str):
        if name not in self.SINT + self.UINT + self.FP:
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name

    #: Float formats: name -> (mantissa bits, exponent bias).
    _FP_FORMATS = {"fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15),
                   "fp8e5b16": (2, 16), "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127),
                   "fp64": (52, 1023)}

    @property
    def fp_mantissa_width(self) -> int:
        """Mantissa bits of a float dtype (10 for fp16, 23 for fp32, 3 for fp8e4nv, ...)."""
        return self._float_format()[0]

    @property
    def exponent_bias(self) -> int:
        """Exponent bias of a float dtype (15 for fp16, 127 for fp32 and bf16, ...)."""
        return self._float_format()[1]

    def _float_format(self) -> tuple:
        if not self.is_floating():
            raise AttributeError(f"{self.name} is not a floating-point dtype; it has no "
                                 f"mantissa or exponent bias")
        return self._FP_FORMATS[self.name]

    def is_fp8(self) -> bool:
        """True for the 8-bit float formats (fp8e4nv, fp8e5, fp8e4b15, fp8e5b16, fp8e4b8)."""
        return self.name in self.FP8

    # -- classification (Triton's method names) --
    def is_floating(self) -> bool:
        """True for fp16, bf16, fp32 and fp64."""
        return self.name in self.FP

    def is_int(self) -> bool:
        """True for signed and unsigned integers (int1 included)."""
        return self.name in self.SINT + self.UINT

    def is_bool(self) -> bool:
        """True for int1."""
        return self.name == "int1"

    def is_int_signed(self) -> bool:
        """True for int8..int64."""
        return self.name in self.SINT

    def is_int_unsigned(self) -> bool:
        """True for int1 and uint8..uint64."""
        return self.name in self.UINT

    def is_ptr(self) -> bool:
        """True for pointer types."""
        return False

    def is_fp16(self) -> bool:
        """True for fp16."""
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        """True for bf16."""
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        """True for fp32."""
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        """True for fp64."""
        return self.name == "fp64"

    @property
    def primitive_bitwidth(self) -> int:
        """The width in bits (1 for int1)."""
        if self.is_fp8():
            return 8
        if self.is_floating():
            return self._BITS[self.name]
        return int(self.name.lstrip("uint"))

    @property
    def int_bitwidth(self) -> int:
        """The width in bits of an integer dtype."""
        return self.primitive_bitwidth

    @property
    def scalar(self) -> "dtype":
        """The element dtype (a dtype is its own)."""
        return self

    def to_ir(self) -> irt.Type:
        """The IR type (signless integers, MLIR float kinds); only fp8e4nv and fp8e5 of the
        8-bit floats have one."""
        if self.is_fp8() and self.name not in self._IR_KINDS:
            from compiler.frontend.errors import SemanticError
            supported = tuple(n for n in self._IR_KINDS if n.startswith("fp8"))
            raise SemanticError(f"type {self.name} ({self._PY_NAMES[self.name]}) not supported "
                                f"in this architecture. The supported fp8 dtypes are "
                                f"{supported}")
        if self.is_floating():
            return irt.FloatType(self._IR_KINDS[self.name])
        return irt.IntegerType(self.primitive_bitwidth)

    def kind(self) -> int:
        """Triton's type kind order used by scalar promotion: bool < integer < float."""
        if self.is_bool():
            return 0
        if self.is_int():
            return 1
        return 2

    def __eq__(self, other) -> bool:
        return isinstance(other, dtype) and not isinstance(other, pointer_type) \
            and other.name == self.name

    def __hash__(self) -> int:
        return hash(("dtype", self.name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"triton.language.{self._PY_NAMES.get(self.name, self.name)}"


class pointer_type(dtype):
    """A pointer to global memory holding `element_ty` values (`*fp32` in a signature)."""

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"{'const_' if const else ''}pointer<{element_ty.name}>"

    def is_ptr(self) -> bool:
        """True for pointer types."""
        return True

    @property
    def primitive_bitwidth(self) -> int:
        """Pointers are 64 bits wide."""
        return 64

    def kind(self) -> int:
        """Pointers rank above every numeric kind."""
        return 3

    def to_ir(self) -> irt.Type:
        """The IR type."""
        return PointerType(self.element_ty.to_ir(), self.address_space)

    def __eq__(self, other) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty \
            and other.const == self.const

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty, self.const))

    def __str__(self) -> str:
        return ("*const " if self.const else "*") + self.element_ty.name

    def __repr__(self) -> str:
        return f"pointer_type({self.element_ty!r})"


#: Triton's limit on the elements of one block (`triton.language.core.TRITON_MAX_TENSOR_NUMEL`).
TRITON_MAX_TENSOR_NUMEL = 2 ** 20


class const:
    """The annotation `p: tl.const` of a kernel parameter: the pointer is read-only (a store
    through it, or mixing it with a writable pointer, is a compile error)."""


class block_type:
    """The type of a block (tensor) value: an element dtype and a static shape of at most
    `TRITON_MAX_TENSOR_NUMEL` elements (larger blocks are refused where they are made, as
    Triton does, instead of compiling for minutes)."""

    def __init__(self, element_ty: dtype, shape):
        self.element_ty = element_ty
        self.shape = tuple(int(d) for d in shape)
        numel = math.prod(self.shape)
        if numel > TRITON_MAX_TENSOR_NUMEL:
            from compiler.frontend.errors import SemanticError
            raise SemanticError(f"numel ({numel}) exceeds triton maximum tensor numel "
                                f"({TRITON_MAX_TENSOR_NUMEL})")

    @property
    def scalar(self) -> dtype:
        """The element dtype (a dtype is its own)."""
        return self.element_ty

    @property
    def numel(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)

    def to_ir(self) -> irt.Type:
        """The IR type."""
        return irt.TensorType(self.shape, self.element_ty.to_ir())

    def __eq__(self, other) -> bool:
        return isinstance(other, block_type) and other.element_ty == self.element_ty \
            and other.shape == self.shape

    def __hash__(self) -> int:
        return hash((self.element_ty, self.shape))

    def __str__(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty}>"


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
float8e4b15 = dtype("fp8e4b15")
float8e4nv = dtype("fp8e4nv")
float8e4b8 = dtype("fp8e4b8")
float8e5 = dtype("fp8e5")
float8e5b16 = dtype("fp8e5b16")
#: Triton's name for a pointer to int32 (`x.to(tl.pi32_t)` turns an address into one).
pi32_t = pointer_type(int32)

DTYPES_BY_NAME = {d.name: d for d in (int1, int8, int16, int32, int64, uint8, uint16, uint32,
                                      uint64, float8e4nv, float8e5, float16, bfloat16, float32,
                                      float64)}
SIGNATURE_ALIASES = {"i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                     "u1": "int1", "u8": "uint8", "u16": "uint16", "u32": "uint32",
                     "u64": "uint64", "fp16": "fp16", "bf16": "bf16", "fp32": "fp32",
                     "fp64": "fp64", "f16": "fp16", "f32": "fp32", "f64": "fp64"}


def dtype_from_signature(text: str) -> dtype:
    """Parse a Triton signature string (`"*fp32"`, `"i32"`, `"u8"`, ...) into a dtype."""
    text = text.strip()
    if text.startswith("*"):
        return pointer_type(dtype_from_signature(text[1:]))
    name = SIGNATURE_ALIASES.get(text, text)
    if name not in DTYPES_BY_NAME:
        raise ValueError(f"unknown signature type {text!r}; expected e.g. '*fp32', 'i32', 'fp32'")
    return DTYPES_BY_NAME[name]


def str_to_ty(name: str, c=None) -> dtype:
    """Triton's spelling of `dtype_from_signature` (the second argument, a constexpr value
    Triton takes for "constexpr" entries, is unused: a signature type names a dtype)."""
    return dtype_from_signature(name)


class PropagateNan:
    """Whether tl.maximum / tl.minimum / tl.clamp return NaN when an operand is NaN (`ALL`)
    or the other operand (`NONE`, the default), with Triton's values."""

    NONE = 0x000000
    ALL = 0xFFFF


# ---- compile-time values --------------------------------------------------------------------------
class constexpr:
    """A compile-time constant; also the annotation (`BLOCK: tl.constexpr`) of such parameters."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return self.value.__index__()

    def __eq__(self, other) -> bool:
        other = other.value if isinstance(other, constexpr) else other
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)


# ---- runtime values ---------------------------------------------------------------------------
class tensor:
    """A runtime value inside a kernel: an IR value `handle` with a DSL type (a scalar `dtype`
    or a `block_type`)."""

    def __init__(self, handle, type_):
        self.handle = handle
        self.type = type_

    @property
    def dtype(self) -> dtype:
        """The element dtype (Triton's `x.dtype`), e.g. `pointer_type(fp32)` for a pointer block."""
        return self.type.scalar

    @property
    def shape(self) -> tuple:
        """The static shape; `()` for a scalar."""
        return self.type.shape if isinstance(self.type, block_type) else ()

    @property
    def numel(self) -> int:
        """The number of elements."""
        return self.type.numel if isinstance(self.type, block_type) else 1

    def is_block(self) -> bool:
        """True for a block (tensor) value, False for a scalar."""
        return isinstance(self.type, block_type)

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __bool__(self):
        raise NotInKernelError("a tensor's truth value is only known at run time; use it in an "
                               "`if` inside a kernel")


class aggregate:
    """A compile-time structure of runtime scalars (a block pointer): the front end carries
    its `fields()` through loops as separate values and rebuilds it with `with_fields`."""

    def fields(self) -> list:
        """The runtime values, in a fixed order."""
        raise NotImplementedError

    def with_fields(self, fields: list) -> "aggregate":
        """The same structure holding `fields` (values of the same types)."""
        raise NotImplementedError

    def same_structure(self, other) -> bool:
        """Whether `other` can stand for this value across a loop iteration."""
        return type(other) is type(self)


class block_pointer(aggregate):
    """A Triton block pointer (`tl.make_block_ptr`): a `block_shape` window at `offsets` into
    a `shape`d tensor at `base` with `strides`; `order` lists the dims fastest first. Shape and
    strides are int64 scalars, offsets int32 scalars (as Triton casts them)."""

    ATTRIBUTES = ("block_shape", "order")

    def __init__(self, base: tensor, shape: list, strides: list, offsets: list,
                 block_shape: tuple, order: tuple):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.offsets = list(offsets)
        self.block_shape = tuple(block_shape)
        self.order = tuple(order)

    @property
    def element_ty(self) -> dtype:
        """The pointee dtype."""
        return self.base.dtype.element_ty

    @property
    def dtype(self) -> "pointer_type":
        """Triton's type of a block pointer: a pointer to a block."""
        return pointer_type(block_type(self.element_ty, self.block_shape))

    def fields(self) -> list:
        """The base, shape, strides and offsets."""
        return [self.base] + self.shape + self.strides + self.offsets

    def with_fields(self, fields: list) -> "block_pointer":
        """The same window over new runtime values."""
        rank = len(self.block_shape)
        return block_pointer(fields[0], fields[1:1 + rank], fields[1 + rank:1 + 2 * rank],
                             fields[1 + 2 * rank:1 + 3 * rank], self.block_shape, self.order)

    def same_structure(self, other) -> bool:
        """Same block shape, order and pointee."""
        return isinstance(other, block_pointer) and other.block_shape == self.block_shape \
            and other.order == self.order and other.base.type == self.base.type

    def __repr__(self) -> str:
        return f"block_pointer({self.element_ty}, block_shape={list(self.block_shape)})"


def _descriptor_method(name: str):
    """A getter of a tensor-descriptor method's builtin (imported when first used: the
    builtins are defined after this module)."""
    def get():
        from . import block_pointers
        return getattr(block_pointers, name)
    return get


class tensor_descriptor(aggregate):
    """A device-side tensor descriptor (`tl.make_tensor_descriptor`): a `shape`d tensor at
    `base` with `strides`, read and written in `block_shape` blocks at offsets given to each
    `desc.load(offsets)` / `desc.store(offsets, value)`; out-of-bounds elements read as zero
    (or NaN with padding_option="nan") and are not written."""

    ATTRIBUTES = ("block_shape", "padding")

    def __init__(self, base: tensor, shape: list, strides: list, block_shape: tuple,
                 padding: str = "zero", tensor_map: tensor | None = None):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = tuple(block_shape)
        self.padding = padding
        #: the tensor map of a descriptor the kernel copies by TMA: a host descriptor's
        #: CUtensorMap argument, or the address `tt.make_tensor_descriptor` gives
        #: (the last field then, so that a @jit callee taking the descriptor gets it too)
        self.tensor_map = tensor_map

    @property
    def dtype(self) -> dtype:
        """The element dtype."""
        return self.base.dtype.element_ty

    def fields(self) -> list:
        """The base, shape and strides (and the tensor map of a TMA descriptor)."""
        tail = [] if self.tensor_map is None else [self.tensor_map]
        return [self.base] + self.shape + self.strides + tail

    def with_fields(self, fields: list) -> "tensor_descriptor":
        """The same descriptor over new runtime values."""
        rank = len(self.block_shape)
        tensor_map = fields[1 + 2 * rank] if self.tensor_map is not None else None
        return tensor_descriptor(fields[0], fields[1:1 + rank], fields[1 + rank:1 + 2 * rank],
                                 self.block_shape, self.padding, tensor_map)

    def same_structure(self, other) -> bool:
        """Same block shape, padding, pointee and copy path (TMA or pointers)."""
        return isinstance(other, tensor_descriptor) and other.block_shape == self.block_shape \
            and other.padding == self.padding and other.base.type == self.base.type \
            and (other.tensor_map is None) == (self.tensor_map is None)

    def __repr__(self) -> str:
        return f"tensor_descriptor({self.dtype}, block_shape={list(self.block_shape)})"


tensor_descriptor.METHODS = {"load": _descriptor_method("load_tensor_descriptor"),
                             "store": _descriptor_method("store_tensor_descriptor")}


class tensor_descriptor_type:
    """The type of a kernel parameter that is a host `TensorDescriptor` (signature
    `tensordesc<fp16[64, 64]>`, `tensordesc<fp16[64, 64],nan>` for NaN padding): the element
    type, block shape and padding are compile-time; the kernel takes the base pointer, the
    shape (int32s) and the strides but the last (int64s) as arguments, the last stride being
    1 (the host descriptor checks it), and rebuilds a `tensor_descriptor` from them."""

    _TEXT = re.compile(r"^tensordesc<(\w+)\[([\d,\s]*)\](?:,(zero|nan))?>$")

    def __init__(self, element_ty: dtype, block_shape: tuple, padding: str = "zero"):
        self.element_ty = element_ty
        self.block_shape = tuple(block_shape)
        self.padding = padding

    @staticmethod
    def is_signature(text) -> bool:
        """Whether a signature string names a tensor descriptor."""
        return isinstance(text, str) and text.strip().startswith("tensordesc<")

    @classmethod
    def parse(cls, text: str) -> "tensor_descriptor_type":
        """The type a signature string names; ValueError when it is malformed or its block
        shape is not made of powers of two (as `tl.arange` needs)."""
        match = cls._TEXT.match(text.strip())
        if match is None:
            raise ValueError(f"{text!r} is not a tensor-descriptor signature type; expected "
                             f"e.g. 'tensordesc<fp16[64, 64]>'")
        element = dtype_from_signature(match.group(1))
        blocks = tuple(int(b) for b in match.group(2).split(",") if b.strip())
        if not blocks or any(b <= 0 or b & (b - 1) for b in blocks):
            raise ValueError(f"a tensor descriptor's block_shape entries must be powers of two, "
                             f"got {list(blocks)} (set block_shape before the launch, e.g. in "
                             f"the autotune config's pre_hook)")
        return cls(element, blocks, match.group(3) or "zero")

    def argument_types(self) -> list:
        """The kernel arguments it stands for: base, shape..., strides but the last."""
        rank = len(self.block_shape)
        return [pointer_type(self.element_ty)] + [int32] * rank + [int64] * (rank - 1)

    def build(self, sem, args: list, tensor_map: tensor | None = None) -> tensor_descriptor:
        """The descriptor over the kernel arguments `args` (see `argument_types`), copied by TMA
        through `tensor_map` when one is given."""
        rank = len(self.block_shape)
        strides = list(args[1 + rank:]) + [sem.constant(1, int64)]
        return tensor_descriptor(args[0], list(args[1:1 + rank]), strides, self.block_shape,
                                 self.padding, tensor_map)

    def __repr__(self) -> str:
        padding = ",nan" if self.padding == "nan" else ""
        return f"tensordesc<{self.element_ty}{list(self.block_shape)}{padding}>"


# ---- builtins ---------------------------------------------------------------------------------
def builtin(fn=None, *, host=None):
    """Mark `fn(semantic, *args, **kwargs)` as a DSL builtin the code generator calls itself.

    The returned function raises `NotInKernelError` when called from ordinary Python, unless a
    `host` implementation is given (e.g. `cdiv` works on plain ints outside kernels too).
    """
    def mark(impl):
        """Wrap `impl` so that ordinary calls raise (or run `host`)."""
        @functools.wraps(impl)
        def outside_kernel(*args, **kwargs):
            """The builtin called from ordinary Python."""
            if host is not None:
                return host(*args, **kwargs)
            raise NotInKernelError(f"tl.{impl.__name__} can only be called inside a @jit kernel")
        outside_kernel.__tile_builtin__ = impl
        return outside_kernel
    return mark(fn) if fn is not None else mark


class library_function:
    """A function of the language's own library written in the DSL (tl.rand, tl.sort, ...),
    as Triton writes its standard library with `@jit`: a kernel calling it compiles it like a
    user's @jit helper (specialized, called with tt.call, then inlined). The front end knows
    it by its `fn`, as it knows a `JITFunction`; calling it from ordinary Python raises."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        raise NotInKernelError(f"tl.{self.fn.__name__} can only be called inside a @jit kernel")

    def __repr__(self) -> str:
        return f"<tl library function {self.fn.__name__}>"


def builtin_impl(obj):
    """The in-kernel implementation of a builtin, or None for anything else."""
    return getattr(obj, "__tile_builtin__", None)
