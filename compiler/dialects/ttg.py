"""The `ttg` dialect: layout encodings (how a tensor is spread over threads, warps and shared
memory) and the ops that move data between layouts and memories.

Encodings print as Triton's do (`#ttg.blocked<{sizePerThread = [4], ...}>`) and are used as the
`encoding` of a `TensorType`. `compiler.analysis.layouts` answers which thread holds which
element for any distributed encoding here.
"""
from __future__ import annotations


from dataclasses import dataclass


from compiler.ir.accessors import attr, operand, optional_operand
from compiler.ir.parser import ENCODING_PARSERS, OpParts
from compiler.ir.syntax import Convert, OperandTypes, Syntax
from compiler.ir.types import MemDescType, TensorType, shape_of
from compiler.ir.traits import (LayoutBarrier, MemoryRead, MemoryWrite, Pure,
                                SharedMemoryScratch)
from compiler.ir.verifier_errors import VerificationError

from .common import define_op


def _ints(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@dataclass(frozen=True)
class BlockedEncoding:
    """Each thread holds `sizePerThread` contiguous elements; `threadsPerWarp` lanes and
    `warpsPerCTA` warps tile the tensor; `order` lists dims fastest-varying first."""

    size_per_thread: tuple
    threads_per_warp: tuple
    warps_per_cta: tuple
    order: tuple
    alias_prefix = "blocked"

    @property
    def rank(self) -> int:
        return len(self.order)

    def shape_per_cta_tile(self) -> tuple:
        """How many elements along each dim one pass of all threads covers."""
        return tuple(s * t * w for s, t, w in
                     zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    def __str__(self) -> str:
        return (f"#ttg.blocked<{{sizePerThread = {_ints(self.size_per_thread)}, threadsPerWarp = "
                f"{_ints(self.threads_per_warp)}, warpsPerCTA = {_ints(self.warps_per_cta)}, "
                f"order = {_ints(self.order)}}}>")


@dataclass(frozen=True)
class SliceEncoding:
    """The layout of a tensor made by removing dim `dim` from a tensor in layout `parent`
    (the result of reducing along `dim`, or the input of expand_dims at `dim`)."""

    dim: int
    parent: object
    alias_prefix = "slice"

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    @property
    def dependencies(self) -> tuple:
        return (self.parent,)

    def __str__(self) -> str:
        return f"#ttg.slice<{{dim = {self.dim}, parent = {self.parent}}}>"

    def print_with(self, printer) -> str:
        return f"#ttg.slice<{{dim = {self.dim}, parent = {printer.layout(self.parent)}}}>"


@dataclass(frozen=True)
class NvidiaMmaEncoding:
    """The accumulator layout of tensor-core instructions (`mma.sync` v2, `wgmma` v3)."""

    version_major: int
    version_minor: int
    warps_per_cta: tuple
    instr_shape: tuple
    alias_prefix = "mma"

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)

    def __str__(self) -> str:
        return (f"#ttg.nvidia_mma<{{versionMajor = {self.version_major}, versionMinor = "
                f"{self.version_minor}, warpsPerCTA = {_ints(self.warps_per_cta)}, instrShape = "
                f"{_ints(self.instr_shape)}}}>")


@dataclass(frozen=True)
class DotOperandEncoding:
    """The layout of operand `op_idx` (0 = A, 1 = B) of a dot whose result has layout `parent`."""

    op_idx: int
    parent: object
    k_width: int = 0
    alias_prefix = "dot_op"

    @property
    def rank(self) -> int:
        return self.parent.rank

    @property
    def dependencies(self) -> tuple:
        return (self.parent,)

    def _text(self, parent_text: str) -> str:
        kw = f", kWidth = {self.k_width}" if self.k_width else ""
        return f"#ttg.dot_op<{{opIdx = {self.op_idx}, parent = {parent_text}{kw}}}>"

    def __str__(self) -> str:
        return self._text(str(self.parent))

    def print_with(self, printer) -> str:
        return self._text(printer.layout(self.parent))


@dataclass(frozen=True)
class SwizzledSharedEncoding:
    """A shared-memory layout: rows of `order[0]`-contiguous elements, XOR-swizzled in groups of
    `vec` with `perPhase` rows per phase and `maxPhase` phases (all 1: no swizzling)."""

    vec: int
    per_phase: int
    max_phase: int
    order: tuple
    alias_prefix = "shared"

    @property
    def rank(self) -> int:
        return len(self.order)

    def __str__(self) -> str:
        return (f"#ttg.swizzled_shared<{{vec = {self.vec}, perPhase = {self.per_phase}, "
                f"maxPhase = {self.max_phase}, order = {_ints(self.order)}}}>")


DISTRIBUTED = (BlockedEncoding, SliceEncoding, NvidiaMmaEncoding, DotOperandEncoding)


# ---- parsing encodings ---------------------------------------------------------------------------
def _parse_fields(ps) -> dict:
    """`<{key = value, ...}>` where values are ints, int lists, bools or nested encodings."""
    ps.expect("<")
    ps.expect("{")
    fields = {}
    while not ps.consume("}"):
        key = ps.identifier()
        ps.expect("=")
        ps.skip_ws()
        if ps.at("["):
            ps.expect("[")
            values = []
            while not ps.consume("]"):
                values.append(ps.integer())
                ps.consume(",")
            fields[key] = tuple(values)
        elif ps.at("#"):
            fields[key] = ps.encoding_ref()
        elif ps.keyword("true") or ps.text[ps.pos - 4:ps.pos] == "true":
            fields[key] = True
        elif ps.keyword("false"):
            fields[key] = False
        else:
            fields[key] = ps.integer()
        ps.consume(",")
    ps.expect(">")
    return fields


def _parse_blocked(ps):
    f = _parse_fields(ps)
    return BlockedEncoding(f["sizePerThread"], f["threadsPerWarp"], f["warpsPerCTA"], f["order"])


def _parse_slice(ps):
    f = _parse_fields(ps)
    return SliceEncoding(f["dim"], f["parent"])


def _parse_mma(ps):
    f = _parse_fields(ps)
    return NvidiaMmaEncoding(f["versionMajor"], f["versionMinor"], f["warpsPerCTA"],
                             f["instrShape"])


def _parse_dot_op(ps):
    f = _parse_fields(ps)
    return DotOperandEncoding(f["opIdx"], f["parent"], f.get("kWidth", 0))


def _parse_shared(ps):
    f = _parse_fields(ps)
    return SwizzledSharedEncoding(f["vec"], f["perPhase"], f["maxPhase"], f["order"])


ENCODING_PARSERS.update({
    "ttg.blocked": _parse_blocked,
    "ttg.slice": _parse_slice,
    "ttg.nvidia_mma": _parse_mma,
    "ttg.dot_op": _parse_dot_op,
    "ttg.swizzled_shared": _parse_shared,
})


# ---- ops -------------------------------------------------------------------------------------------
def _verify_convert_layout(op):
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, TensorType) or not isinstance(dst, TensorType):
        raise VerificationError(op, "converts tensors only")
    if src.shape != dst.shape or src.element != dst.element:
        raise VerificationError(op, f"keeps shape and element type: {src} -> {dst}")


ConvertLayoutOp = define_op("ConvertLayoutOp", "ttg.convert_layout", Convert("->"),
                            (Pure, SharedMemoryScratch), _verify_convert_layout, src=operand(0),
                            doc="`ttg.convert_layout`: the same tensor in another layout.")


def _parse_arrow_types(ps):
    """`: T -> R` after an op's operands and attributes; returns R."""
    ps.expect(":")
    ps.type()
    ps.expect("->")
    return ps.type()


class _LocalAllocSyntax(Syntax):
    """`ttg.local_alloc [%src] {attrs} : ([T]) -> !ttg.memdesc<...>`."""

    def print(self, p, op, indent):
        ins = p.types(v.type for v in op.operands)
        return (f"{op.name}{' ' + p.values(op.operands) if op.operands else ''}"
                f"{p.attr_dict(op.attributes)} : ({ins}) -> {p.type(op.results[0].type)}")

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        ps.expect(":")
        fn = ps.type()
        return OpParts(operands, list(fn.results), attrs)


def _verify_local_alloc(op):
    if not isinstance(op.results[0].type, MemDescType):
        raise VerificationError(op, "result must be a !ttg.memdesc")
    if op.operands and shape_of(op.operands[0].type) != op.results[0].type.shape:
        raise VerificationError(op, "initial value shape differs from the buffer's")


LocalAllocOp = define_op("LocalAllocOp", "ttg.local_alloc", _LocalAllocSyntax(),
                         (MemoryWrite, LayoutBarrier), _verify_local_alloc, src=optional_operand(0),
                         doc="`ttg.local_alloc`: a shared-memory buffer, optionally initialized.")
LocalLoadOp = define_op("LocalLoadOp", "ttg.local_load", Convert("->"), (MemoryRead,),
                        src=operand(0),
                        doc="`ttg.local_load`: read a shared-memory buffer into registers.")


class _LocalStoreSyntax(Syntax):
    """`ttg.local_store %v, %buf : T -> !ttg.memdesc<...>`."""

    def print(self, p, op, indent):
        v, buf = op.operands
        return (f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : "
                f"{p.type(v.type)} -> {p.type(buf.type)}")

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        _parse_arrow_types(ps)
        return OpParts(operands, [], attrs)


LocalStoreOp = define_op("LocalStoreOp", "ttg.local_store", _LocalStoreSyntax(),
                         (MemoryWrite,), value=operand(0), dst=operand(1),
                         doc="`ttg.local_store`: write registers into a shared-memory buffer.")


LocalDeallocOp = define_op("LocalDeallocOp", "ttg.local_dealloc",
                           OperandTypes(lambda types, attrs: None),   # `op %buf : T`
                           (MemoryWrite,), buffer=operand(0),
                           doc="`ttg.local_dealloc`: end of a buffer's life.")


class _BarrierSyntax(Syntax):
    def print(self, p, op, indent):
        return op.name + p.attr_dict(op.attributes)

    def parse(self, ps, cls, num_results):
        return OpParts([], [], ps.attr_dict())


BarrierOp = define_op("BarrierOp", "gpu.barrier", _BarrierSyntax(), (MemoryWrite,),
                      doc="`gpu.barrier`: all threads of the CTA wait here (bar.sync 0).")


# ---- multi-buffered shared memory and asynchronous copies (software pipelining) ----------------
class _MemDescIndexSyntax(Syntax):
    """`ttg.memdesc_index %buf[%i] : !ttg.memdesc<SxAxB...> -> !ttg.memdesc<AxB...>`."""

    def print(self, p, op, indent):
        buf, index = op.operands
        return (f"{op.name} {p.values([buf])}[{p.values([index])}]{p.attr_dict(op.attributes)} : "
                f"{p.type(buf.type)} -> {p.type(op.results[0].type)}")

    def parse(self, ps, cls, num_results):
        buf = ps.operand()
        ps.expect("[")
        index = ps.operand()
        ps.expect("]")
        attrs = ps.attr_dict()
        return OpParts([buf, index], [_parse_arrow_types(ps)], attrs)


def _verify_memdesc_index(op):
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, MemDescType) or not isinstance(dst, MemDescType):
        raise VerificationError(op, "indexes a !ttg.memdesc into a !ttg.memdesc")
    if tuple(src.shape[1:]) != tuple(dst.shape) or src.element != dst.element:
        raise VerificationError(op, f"result must be one slice of the buffer: {src} -> {dst}")


MemDescIndexOp = define_op("MemDescIndexOp", "ttg.memdesc_index", _MemDescIndexSyntax(),
                           (Pure,), _verify_memdesc_index, buffer=operand(0), index=operand(1),
                           doc="`ttg.memdesc_index`: slice `i` (along dim 0) of a multi-buffered "
                               "shared allocation.")


class _AsyncCopySyntax(Syntax):
    """`ttg.async_copy_global_to_local %ptrs, %buf [mask %m] [other %o] {attrs} :
    tensor<...x!tt.ptr<T>> -> !ttg.memdesc<...>` (Triton's form, without the async token)."""

    def print(self, p, op, indent):
        ptrs, buf = op.operands[:2]
        text = f"{op.name} {p.values([ptrs, buf])}"
        extra = op.operands[2:]
        if extra:
            text += f" mask {p.values([extra[0]])}"
        if len(extra) > 1:
            text += f" other {p.values([extra[1]])}"
        return (text + f"{p.attr_dict(op.attributes)} : {p.type(ptrs.type)} -> "
                f"{p.type(buf.type)}")

    def parse(self, ps, cls, num_results):
        operands = [ps.operand()]
        ps.expect(",")
        operands.append(ps.operand())
        if ps.keyword("mask"):
            operands.append(ps.operand())
        if ps.keyword("other"):
            operands.append(ps.operand())
        attrs = ps.attr_dict()
        _parse_arrow_types(ps)
        return OpParts(operands, [], attrs)


def _verify_async_copy(op):
    if len(op.operands) < 2 or not isinstance(op.operands[1].type, MemDescType):
        raise VerificationError(op, "copies a tensor of pointers into a !ttg.memdesc")
    if shape_of(op.operands[0].type) != tuple(op.operands[1].type.shape):
        raise VerificationError(op, "pointer tensor and buffer shapes differ")


AsyncCopyGlobalToLocalOp = define_op(
    "AsyncCopyGlobalToLocalOp", "ttg.async_copy_global_to_local", _AsyncCopySyntax(),
    (MemoryRead, MemoryWrite), _verify_async_copy, ptr=operand(0), buffer=operand(1),
    mask=optional_operand(2), other=optional_operand(3),
    doc="`ttg.async_copy_global_to_local`: start copying global memory into a shared buffer "
        "(cp.async); masked-off elements are zero-filled. Visible after `ttg.async_wait`.")
AsyncCommitGroupOp = define_op(
    "AsyncCommitGroupOp", "ttg.async_commit_group", _BarrierSyntax(), (MemoryWrite,),
    doc="`ttg.async_commit_group`: close the group of asynchronous copies issued so far.")
AsyncWaitOp = define_op(
    "AsyncWaitOp", "ttg.async_wait", _BarrierSyntax(), (MemoryRead, MemoryWrite),
    num=attr("num"),
    doc="`ttg.async_wait {num}`: wait until at most `num` committed copy groups are pending, "
        "then make the copied data visible to the whole CTA.")


# ---- linear layouts and Hopper shared layouts (see compiler.analysis.layout_to_linear) ---------
def _bases_text(bases) -> str:
    return "[" + ", ".join(_ints(b) for b in bases) + "]"


@dataclass(frozen=True)
class LinearEncoding:
    """A distributed layout given directly as linear-layout bases: for each bit of the register,
    lane, warp and block ids, the tensor coordinate (one int per dim) it adds by XOR."""

    register: tuple
    lane: tuple
    warp: tuple
    block: tuple = ()
    alias_prefix = "linear"

    IN_DIMS = ("register", "lane", "warp", "block")

    @property
    def rank(self) -> int:
        for bases in (self.register, self.lane, self.warp, self.block):
            if bases:
                return len(bases[0])
        raise ValueError("#ttg.linear with no bases has no rank")

    def __str__(self) -> str:
        fields = ", ".join(f"{d} = {_bases_text(getattr(self, d))}" for d in self.IN_DIMS)
        return f"#ttg.linear<{{{fields}}}>"


def _parse_linear(ps):
    """`#ttg.linear<{register = [[0, 1], ...], lane = [...], warp = [...], block = []}>`."""
    ps.expect("<")
    ps.expect("{")
    fields = {}
    while not ps.consume("}"):
        start = ps.pos
        key = ps.identifier()
        if key not in LinearEncoding.IN_DIMS:
            raise ps.error(f"unknown #ttg.linear field '{key}'", start)
        ps.expect("=")
        ps.expect("[")
        bases = []
        while not ps.consume("]"):
            ps.expect("[")
            basis = []
            while not ps.consume("]"):
                basis.append(ps.integer())
                ps.consume(",")
            bases.append(tuple(basis))
            ps.consume(",")
        fields[key] = tuple(bases)
        ps.consume(",")
    ps.expect(">")
    widths = {len(b) for bases in fields.values() for b in bases}
    if len(widths) > 1:
        raise ps.error("#ttg.linear bases must all have one value per tensor dim")
    return LinearEncoding(fields.get("register", ()), fields.get("lane", ()),
                          fields.get("warp", ()), fields.get("block", ()))


@dataclass(frozen=True)
class NVMMASharedEncoding:
    """Hopper's shared layout for wgmma / TMA operands: rows of `swizzlingByteWidth` bytes
    (0, 32, 64 or 128) whose 16-byte chunks are XOR-swizzled by the row index; `transposed`
    makes dim 0 the contiguous one."""

    swizzling_byte_width: int
    transposed: bool
    element_bit_width: int
    alias_prefix = "shared"

    def __str__(self) -> str:
        return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {self.swizzling_byte_width}, "
                f"transposed = {str(bool(self.transposed)).lower()}, "
                f"elementBitWidth = {self.element_bit_width}}}>")


def _parse_nvmma_shared(ps):
    f = _parse_fields(ps)
    return NVMMASharedEncoding(f["swizzlingByteWidth"], bool(f.get("transposed", False)),
                               f["elementBitWidth"])


DISTRIBUTED = DISTRIBUTED + (LinearEncoding,)
ENCODING_PARSERS.update({"ttg.linear": _parse_linear, "ttg.nvmma_shared": _parse_nvmma_shared})
