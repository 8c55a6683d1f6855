"""The `ttg` dialect: layout encodings (how a tensor is spread over threads, warps and shared
memory) and the ops that move data between layouts and memories.

Encodings print as Triton's do (`#ttg.blocked<{sizePerThread = [4], ...}>`) and are used as the
`encoding` of a `TensorType`. `compiler.analysis.layouts` answers which thread holds which
element for any distributed encoding here.
"""
from __future__ import annotations


from dataclasses import dataclass


from typing import Any

from compiler.ir.accessors import attr, operand, optional_operand, variadic_operands
from compiler.ir.attributes import DenseArrayAttr
from compiler.ir.core import Operation, register_op
from compiler.ir.immutable import hash_once
from compiler.ir.parser import OpParts
from compiler.ir.syntax import Convert, OperandTypes, Syntax, TypedOperands
from compiler.ir.traits import (LayoutBarrier, MemoryRead, MemoryWrite, Pure,
                                SharedMemoryScratch)
from compiler.ir.types import FunctionType, TensorType, Type, shape_of
from compiler.ir.verifier_errors import VerificationError

from .common import ANY, define_op, dialect, set_attribute_kinds, set_counts

TTG = dialect("ttg")


def _ints(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@hash_once
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


@hash_once
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


@hash_once
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


@hash_once
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


@hash_once
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


# ---- shared-memory buffers -----------------------------------------------------------------------
SHARED_MEMORY_ALIAS = "#smem"


@hash_once
@dataclass(frozen=True)
class MemDescType(Type):
    """`!ttg.memdesc<AxBxT, #shared, #smem[, mutable]>`: a buffer in shared memory."""

    shape: tuple
    element: Type
    encoding: Any
    mutable: bool = True

    def _text(self, encoding_text: str) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        mut = ", mutable" if self.mutable else ""
        return f"!ttg.memdesc<{dims}{self.element}, {encoding_text}, {SHARED_MEMORY_ALIAS}{mut}>"

    def __str__(self) -> str:
        return self._text(str(self.encoding))

    def print_with(self, printer) -> str:
        """The printed form with the encoding written by its alias (`#shared`)."""
        return self._text(printer.layout(self.encoding))


def _parse_memdesc_type(ps) -> MemDescType:
    """`<AxBxT, #enc, #smem[, mutable]>` after `!ttg.memdesc`."""
    ps.expect("<")
    shape, element = ps.shape_and_element()
    ps.expect(",")
    encoding = ps.encoding_ref()
    ps.expect(",")
    ps.expect(SHARED_MEMORY_ALIAS)
    mutable = False
    if ps.consume(","):
        ps.expect("mutable")
        mutable = True
    ps.expect(">")
    return MemDescType(tuple(shape), element, encoding, mutable)


TTG.register_type("ttg.memdesc", _parse_memdesc_type)
TTG.add_fixed_alias(SHARED_MEMORY_ALIAS, "#ttg.shared_memory")


@hash_once
@dataclass(frozen=True)
class AsyncTokenType(Type):
    """`!ttg.async.token`: the completion of asynchronous copies. It holds no data: the copies
    give one, `ttg.async_commit_group` closes a group of them into another, `ttg.async_wait`
    names the groups it waits for and gives one more, which a `ttg.local_load` of the copied
    buffer takes, so the order of the copies, their wait and the reads is in the dataflow."""

    def __str__(self) -> str:
        return "!ttg.async.token"


ASYNC_TOKEN = AsyncTokenType()
TTG.register_type("ttg.async.token", lambda ps: ASYNC_TOKEN)


# ---- parsing encodings ---------------------------------------------------------------------------
LIST, INT, ENCODING, BOOL = "a list of integers", "an integer", "a layout", "true or false"


def _parse_fields(ps, name: str, required: dict, optional: dict | None = None) -> dict:
    """`<{key = value, ...}>` where values are ints, int lists, bools or nested encodings;
    every field of `required` ({key: kind}) must be present, and each of its kind."""
    start = ps.pos
    ps.expect("<")
    ps.expect("{")
    kinds = dict(required, **(optional or {}))
    fields = {}
    while not ps.consume("}"):
        key_pos = ps.pos
        key = ps.identifier()
        if key in fields:
            raise ps.error(f"#{name} gives '{key}' twice", key_pos)
        ps.expect("=")
        ps.skip_ws()
        value_pos = ps.pos
        if ps.at("["):
            ps.expect("[")
            values = []
            while not ps.consume("]"):
                values.append(ps.integer())
                if not ps.consume(","):
                    ps.expect("]")
                    break
            fields[key], kind = tuple(values), LIST
        elif ps.at("#"):
            fields[key], kind = ps.encoding_ref(), ENCODING
        elif ps.keyword("true"):
            fields[key], kind = True, BOOL
        elif ps.keyword("false"):
            fields[key], kind = False, BOOL
        else:
            fields[key], kind = ps.integer(), INT
        if key in kinds and kinds[key] != kind:
            raise ps.error(f"#{name}: '{key}' must be {kinds[key]}", value_pos)
        if not ps.consume(","):
            ps.expect("}")
            break
    ps.expect(">")
    missing = [k for k in required if k not in fields]
    if missing:
        raise ps.error(f"#{name} needs {', '.join(missing)}", start)
    return fields


def _parse_blocked(ps):
    f = _parse_fields(ps, "ttg.blocked", {"sizePerThread": LIST, "threadsPerWarp": LIST,
                                          "warpsPerCTA": LIST, "order": LIST})
    return BlockedEncoding(f["sizePerThread"], f["threadsPerWarp"], f["warpsPerCTA"], f["order"])


def _parse_slice(ps):
    f = _parse_fields(ps, "ttg.slice", {"dim": INT, "parent": ENCODING})
    return SliceEncoding(f["dim"], f["parent"])


def _parse_mma(ps):
    f = _parse_fields(ps, "ttg.nvidia_mma", {"versionMajor": INT, "versionMinor": INT,
                                             "warpsPerCTA": LIST, "instrShape": LIST})
    return NvidiaMmaEncoding(f["versionMajor"], f["versionMinor"], f["warpsPerCTA"],
                             f["instrShape"])


def _parse_dot_op(ps):
    f = _parse_fields(ps, "ttg.dot_op", {"opIdx": INT, "parent": ENCODING}, {"kWidth": INT})
    return DotOperandEncoding(f["opIdx"], f["parent"], f.get("kWidth", 0))


def _parse_shared(ps):
    f = _parse_fields(ps, "ttg.swizzled_shared", {"vec": INT, "perPhase": INT, "maxPhase": INT,
                                                  "order": LIST})
    return SwizzledSharedEncoding(f["vec"], f["perPhase"], f["maxPhase"], f["order"])


for _mnemonic, _parse in (("ttg.blocked", _parse_blocked), ("ttg.slice", _parse_slice),
                          ("ttg.nvidia_mma", _parse_mma), ("ttg.dot_op", _parse_dot_op),
                          ("ttg.swizzled_shared", _parse_shared)):
    TTG.register_attribute(_mnemonic, _parse)


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


def _keyword_operands(ps, operands: list, *keywords) -> list:
    """`operands`, then the operand of each optional `keyword %v` clause, in `keywords`' order."""
    for word in keywords:
        if ps.keyword(word):
            operands.append(ps.operand())
    return operands


def _checked_arrow(ps, operand, result=None):
    """`: T -> R` where T must be `operand`'s type; returns R, read by `result(ps)` (default: a
    type)."""
    ps.expect(":")
    ps.skip_ws()
    pos = ps.pos
    ps.check_written_types([operand], [ps.type()], pos)
    ps.expect("->")
    return result(ps) if result is not None else ps.type()


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
        ps.skip_ws()
        pos = ps.pos
        fn = ps.type()
        if not isinstance(fn, FunctionType):
            raise ps.error("expected ([T]) -> !ttg.memdesc<...>", pos)
        ps.check_written_types(operands, fn.inputs, pos)
        return OpParts(operands, list(fn.results), attrs)


def _verify_local_alloc(op):
    if not isinstance(op.results[0].type, MemDescType):
        raise VerificationError(op, "result must be a !ttg.memdesc")
    if op.operands and shape_of(op.operands[0].type) != op.results[0].type.shape:
        raise VerificationError(op, "initial value shape differs from the buffer's")


LocalAllocOp = define_op("LocalAllocOp", "ttg.local_alloc", _LocalAllocSyntax(),
                         (MemoryWrite, LayoutBarrier), _verify_local_alloc, src=optional_operand(0),
                         doc="`ttg.local_alloc`: a shared-memory buffer, optionally initialized.")


class _LocalLoadSyntax(Syntax):
    """`ttg.local_load %buf [token %t] {attrs} : !ttg.memdesc<...> -> tensor<...>` (Triton's
    form: the token, when there is one, is the `ttg.async_wait` the buffer's copies landed by)."""

    def print(self, p, op, indent):
        token = f" token {p.values([op.operands[1]])}" if len(op.operands) > 1 else ""
        return (f"{op.name} {p.values(op.operands[:1])}{token}{p.attr_dict(op.attributes)} : "
                f"{p.type(op.operands[0].type)} -> {p.type(op.results[0].type)}")

    def parse(self, ps, cls, num_results):
        operands = _keyword_operands(ps, [ps.operand()], "token")
        attrs = ps.attr_dict()
        return OpParts(operands, [_checked_arrow(ps, operands[0])], attrs)


def _verify_tokens(op, values) -> None:
    """Every value of `values` is a `!ttg.async.token`."""
    for value in values:
        if not isinstance(value.type, AsyncTokenType):
            raise VerificationError(op, f"expects !ttg.async.token, got {value.type}")


def _verify_local_load(op):
    _verify_tokens(op, op.operands[1:])


LocalLoadOp = define_op("LocalLoadOp", "ttg.local_load", _LocalLoadSyntax(), (MemoryRead,),
                        _verify_local_load,
                        src=operand(0), token=optional_operand(1),
                        doc="`ttg.local_load`: read a shared-memory buffer into registers "
                            "(after the `ttg.async_wait` its optional token names).")


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


def _memdesc_short(p, t: MemDescType) -> str:
    """A buffer type as Triton writes it where the op fixes the type's kind: `<AxBxT, ...>`."""
    return p.type(t).removeprefix("!ttg.memdesc")


def _buffer_type(ps) -> MemDescType:
    """A buffer type written either way: `<AxBxT, ...>` or `!ttg.memdesc<AxBxT, ...>`."""
    return _parse_memdesc_type(ps) if ps.at("<") else ps.type()


class _AsyncCopySyntax(Syntax):
    """`%t = ttg.async_copy_global_to_local %ptrs, %buf [mask %m] [other %o] {attrs} :
    tensor<...x!tt.ptr<T>> -> <...>` (Triton's form: the buffer's type without its
    `!ttg.memdesc`, which the parser also takes written out)."""

    def print(self, p, op, indent):
        ptrs, buf = op.operands[:2]
        text = f"{op.name} {p.values([ptrs, buf])}"
        extra = op.operands[2:]
        if extra:
            text += f" mask {p.values([extra[0]])}"
        if len(extra) > 1:
            text += f" other {p.values([extra[1]])}"
        return (text + f"{p.attr_dict(op.attributes)} : {p.type(ptrs.type)} -> "
                f"{_memdesc_short(p, buf.type)}")

    def parse(self, ps, cls, num_results):
        ptrs = ps.operand()
        ps.expect(",")
        operands = _keyword_operands(ps, [ptrs, ps.operand()], "mask", "other")
        attrs = ps.attr_dict()
        pos = ps.pos
        buf_type = _checked_arrow(ps, ptrs, _buffer_type)
        ps.check_written_types(operands[:2], [ptrs.type, buf_type], pos)
        return OpParts(operands, [ASYNC_TOKEN], attrs)


def _verify_async_copy(op):
    if len(op.operands) < 2 or not isinstance(op.operands[1].type, MemDescType):
        raise VerificationError(op, "copies a tensor of pointers into a !ttg.memdesc")
    if shape_of(op.operands[0].type) != tuple(op.operands[1].type.shape):
        raise VerificationError(op, "pointer tensor and buffer shapes differ")
    _verify_tokens(op, op.results)


class _TokensSyntax(Syntax):
    """`%t = <op> [<keyword>] %a, %b {attrs}`: async tokens in, one token out
    (`ttg.async_commit_group tokens %c`, `ttg.async_wait %g0, %g1 {num = 2 : i32}`)."""

    def __init__(self, keyword: str = ""):
        self.keyword = keyword

    def print(self, p, op, indent):
        text = op.name
        if op.operands:
            text += f" {self.keyword + ' ' if self.keyword else ''}{p.values(op.operands)}"
        return text + p.attr_dict(op.attributes)

    def parse(self, ps, cls, num_results):
        if self.keyword and ps.keyword(self.keyword):
            operands = [ps.operand()]
            while ps.consume(","):
                operands.append(ps.operand())
        else:
            operands = ps.operand_list()
        return OpParts(operands, [ASYNC_TOKEN], ps.attr_dict())


def _verify_token_op(op):
    _verify_tokens(op, list(op.operands) + list(op.results))


AsyncCopyGlobalToLocalOp = define_op(
    "AsyncCopyGlobalToLocalOp", "ttg.async_copy_global_to_local", _AsyncCopySyntax(),
    (MemoryRead, MemoryWrite), _verify_async_copy, ptr=operand(0), buffer=operand(1),
    mask=optional_operand(2), other=optional_operand(3),
    doc="`ttg.async_copy_global_to_local`: start copying global memory into a shared buffer "
        "(cp.async); masked-off elements are zero-filled. Its token joins the next "
        "`ttg.async_commit_group`; the data is visible after the `ttg.async_wait` of that group.")
AsyncCommitGroupOp = define_op(
    "AsyncCommitGroupOp", "ttg.async_commit_group", _TokensSyntax("tokens"), (MemoryWrite,),
    _verify_token_op, tokens=variadic_operands(0),
    doc="`ttg.async_commit_group tokens %copies`: close the group of asynchronous copies "
        "issued so far (cp.async.commit_group); its token stands for the group.")
AsyncWaitOp = define_op(
    "AsyncWaitOp", "ttg.async_wait", _TokensSyntax(), (MemoryRead, MemoryWrite),
    _verify_token_op, num=attr("num"), tokens=variadic_operands(0),
    doc="`ttg.async_wait %groups {num}`: wait until at most `num` committed copy groups are "
        "pending (`num` is chosen so that the groups its tokens name have landed), then make "
        "the copied data visible to the whole CTA; its token orders the reads after it.")


# ---- linear layouts and Hopper shared layouts (see compiler.analysis.layout_to_linear) ---------
def _bases_text(bases) -> str:
    return "[" + ", ".join(_ints(b) for b in bases) + "]"


@hash_once
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


@hash_once
@dataclass(frozen=True)
class NVMMASharedEncoding:
    """Hopper's shared layout for wgmma / TMA operands: rows of `swizzlingByteWidth` bytes
    (0, 32, 64 or 128) whose 16-byte chunks are XOR-swizzled by the row index; `transposed`
    makes dim 0 the contiguous one."""

    swizzling_byte_width: int
    transposed: bool
    element_bit_width: int
    alias_prefix = "shared"

    @property
    def order(self) -> tuple:
        """Dims fastest-varying first (rank 2): the last dim is contiguous unless transposed."""
        return (0, 1) if self.transposed else (1, 0)

    @property
    def vec(self) -> int:
        """Elements per 16-byte chunk: the unit the swizzle moves, kept contiguous."""
        return max(1, 128 // self.element_bit_width)

    def __str__(self) -> str:
        return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {self.swizzling_byte_width}, "
                f"transposed = {str(bool(self.transposed)).lower()}, "
                f"elementBitWidth = {self.element_bit_width}}}>")


def _parse_nvmma_shared(ps):
    f = _parse_fields(ps, "ttg.nvmma_shared", {"swizzlingByteWidth": INT,
                                               "elementBitWidth": INT}, {"transposed": BOOL})
    return NVMMASharedEncoding(f["swizzlingByteWidth"], bool(f.get("transposed", False)),
                               f["elementBitWidth"])


DISTRIBUTED = DISTRIBUTED + (LinearEncoding,)
TTG.register_attribute("ttg.linear", _parse_linear)
TTG.register_attribute("ttg.nvmma_shared", _parse_nvmma_shared)


# ---- views of shared buffers ---------------------------------------------------------------------
def transposed_shared(encoding, order: tuple):
    """The shared layout of a buffer in `encoding` seen through the dims permutation `order`
    (view dim i = buffer dim order[i]): the same bytes, another index order. nvmma_shared
    (rank 2) flips `transposed`; a swizzled layout renames the dims of its `order`. None when
    the layout cannot be viewed so: an nvmma_shared buffer of rank other than 2, or a swizzled
    one with `vec` 1, which the lowering stores row-major whatever its order
    (`codegen.lower_convert.follows_order`), so no order describes its transpose."""
    order = tuple(order)
    if isinstance(encoding, NVMMASharedEncoding):
        if order != (1, 0):
            return None
        return NVMMASharedEncoding(encoding.swizzling_byte_width, not encoding.transposed,
                                   encoding.element_bit_width)
    if isinstance(encoding, SwizzledSharedEncoding) and encoding.vec > 1:
        position = {dim: view_dim for view_dim, dim in enumerate(order)}
        return SwizzledSharedEncoding(encoding.vec, encoding.per_phase, encoding.max_phase,
                                      tuple(position[d] for d in encoding.order))
    return None


def transposed_memdesc(t: MemDescType, order) -> MemDescType | None:
    """The type of `ttg.memdesc_trans` of a buffer of type `t` by `order` (None: not viewable)."""
    encoding = transposed_shared(t.encoding, order)
    if encoding is None or sorted(order) != list(range(len(t.shape))):
        return None
    return MemDescType(tuple(t.shape[d] for d in order), t.element, encoding, t.mutable)


@register_op
class MemDescTransOp(Operation):
    """`ttg.memdesc_trans %buf {order = array<i32: 1, 0>} : !ttg.memdesc<AxB> ->
    !ttg.memdesc<BxA>`: the buffer seen with its dims permuted (view dim i = buffer dim
    order[i]); no data moves, the result's shared layout addresses the same bytes
    (`transposed_shared`). A wgmma reads a transposed view of a TMA-loaded tile through its
    descriptor's major-ness instead of transposing it in registers (Triton's memdesc_trans)."""

    name = "ttg.memdesc_trans"
    syntax = Convert("->")
    traits = (Pure,)
    src = operand(0)
    order = attr("order", field="values")

    def verify_op(self):
        src, dst = self.operands[0].type, self.results[0].type
        if not isinstance(src, MemDescType) or not isinstance(dst, MemDescType):
            raise VerificationError(self, "views a !ttg.memdesc as a !ttg.memdesc")
        order = tuple(self.order)
        if sorted(order) != list(range(len(src.shape))):
            raise VerificationError(self, f"order {list(order)} is not a permutation of the "
                                          f"{len(src.shape)} dims")
        expected = transposed_memdesc(src, order)
        if expected is None:
            raise VerificationError(self, f"{src.encoding} cannot be viewed with order "
                                          f"{list(order)}")
        if dst != expected:
            raise VerificationError(self, f"memdesc_trans with order {list(order)} of {src} "
                                          f"is {expected}, not {dst}")


MEMDESC_VIEWS = (MemDescIndexOp, MemDescTransOp)
"""Ops whose result is a view of their first operand's shared buffer (same storage)."""


def replace_buffer(old, new) -> None:
    """Make every user of buffer `old` read buffer `new` instead, re-deriving the types of the
    `ttg.memdesc_trans` views on it (a slot of a mutable multi-buffer makes them mutable)."""
    old.replace_all_uses_with(new)
    work = [new]
    while work:
        value = work.pop()
        for user in value.users():
            if isinstance(user, MemDescTransOp) and user.operands[0] is value:
                user.results[0].type = transposed_memdesc(value.type, tuple(user.order))
                work.append(user.results[0])


def view_root(value):
    """The value a chain of `MEMDESC_VIEWS` ops starts from (the value itself if none)."""
    while isinstance(value.owner_op, MEMDESC_VIEWS):
        value = value.owner_op.operands[0]
    return value


# ---- layout sanity (what compiler.analysis.layouts and the lowering assume) --------------------
MAX_SIZE_PER_THREAD = 1 << 12


def _module_int(module, key: str) -> int | None:
    attr = module.attributes.get(key)
    value = getattr(attr, "value", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _product(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _check_order(enc, order, rank) -> str | None:
    if sorted(order) != list(range(rank)):
        return f"order {list(order)} is not a permutation of 0..{rank - 1}"
    return None


def _encoding_problem(enc, num_warps: int | None, threads: int | None) -> str | None:
    """What is wrong with `enc` (None when it is sound)."""
    if isinstance(enc, BlockedEncoding):
        fields = (enc.size_per_thread, enc.threads_per_warp, enc.warps_per_cta, enc.order)
        if len({len(f) for f in fields}) != 1 or not enc.order:
            return "sizePerThread, threadsPerWarp, warpsPerCTA and order differ in length"
        if any(v < 1 for f in fields[:3] for v in f):
            return "sizePerThread, threadsPerWarp and warpsPerCTA must be positive"
        if any(v > MAX_SIZE_PER_THREAD for v in enc.size_per_thread):
            return f"sizePerThread above {MAX_SIZE_PER_THREAD} per dim"
        if threads is not None and _product(enc.threads_per_warp) != threads:
            return (f"threadsPerWarp {list(enc.threads_per_warp)} covers "
                    f"{_product(enc.threads_per_warp)} lanes, the module has {threads}")
        if num_warps is not None and _product(enc.warps_per_cta) != num_warps:
            return (f"warpsPerCTA {list(enc.warps_per_cta)} covers "
                    f"{_product(enc.warps_per_cta)} warps, the module has {num_warps}")
        return _check_order(enc, enc.order, enc.rank)
    if isinstance(enc, SliceEncoding):
        if not isinstance(enc.parent, DISTRIBUTED):
            return "a slice's parent must be a distributed layout"
        if enc.parent.rank < 2 or not 0 <= enc.dim < enc.parent.rank:
            return f"dim {enc.dim} cannot be sliced from a rank-{enc.parent.rank} parent"
        return _encoding_problem(enc.parent, num_warps, threads)
    if isinstance(enc, NvidiaMmaEncoding):
        if enc.version_major not in (2, 3):
            return f"versionMajor {enc.version_major} is not 2 or 3"
        if len(enc.warps_per_cta) not in (2, 3) or any(v < 1 for v in enc.warps_per_cta) or \
                any(v < 1 for v in enc.instr_shape):
            return "warpsPerCTA and instrShape must be positive (rank 2 or 3)"
        if num_warps is not None and _product(enc.warps_per_cta) != num_warps:
            return (f"warpsPerCTA {list(enc.warps_per_cta)} covers "
                    f"{_product(enc.warps_per_cta)} warps, the module has {num_warps}")
        return None
    if isinstance(enc, DotOperandEncoding):
        if enc.op_idx not in (0, 1):
            return f"opIdx {enc.op_idx} is not 0 or 1"
        if not isinstance(enc.parent, (BlockedEncoding, NvidiaMmaEncoding)) or enc.k_width < 0:
            return "a dot operand's parent must be a blocked or nvidia_mma layout"
        return _encoding_problem(enc.parent, num_warps, threads)
    if isinstance(enc, SwizzledSharedEncoding):
        if min(enc.vec, enc.per_phase, enc.max_phase) < 1:
            return "vec, perPhase and maxPhase must be positive"
        return _check_order(enc, enc.order, enc.rank)
    if isinstance(enc, LinearEncoding):
        bases = [b for d in LinearEncoding.IN_DIMS for b in getattr(enc, d)]
        if not bases or len({len(b) for b in bases}) != 1 or not bases[0]:
            return "#ttg.linear needs bases of one positive length (one value per dim)"
        if any(v < 0 for b in bases for v in b):
            return "#ttg.linear bases must not be negative"
        return None
    if isinstance(enc, NVMMASharedEncoding):
        if enc.swizzling_byte_width not in (0, 32, 64, 128):
            return f"swizzlingByteWidth {enc.swizzling_byte_width} is not 0, 32, 64 or 128"
        if enc.element_bit_width not in (8, 16, 32, 64):
            return f"elementBitWidth {enc.element_bit_width} is not 8, 16, 32 or 64"
        return None
    return f"{enc} is not a layout"


def _typed_values(module):
    """(op, type) for every value the module defines: op results and block arguments."""
    for op in module.walk():
        for r in op.results:
            yield op, r.type
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    yield op, a.type


def _verify_layouts(module) -> None:
    """Layouts are sound, match the tensors' ranks and the module's warps and lanes, and in a
    ttgir module (`ttg.num-warps` set) every tensor has one."""
    num_warps = _module_int(module, "ttg.num-warps")
    threads = _module_int(module, "ttg.threads-per-warp")
    if "ttg.num-warps" in module.attributes and (num_warps is None or num_warps < 1):
        raise VerificationError(None, "ttg.num-warps must be a positive integer")
    if "ttg.threads-per-warp" in module.attributes and (threads is None or threads < 1):
        raise VerificationError(None, "ttg.threads-per-warp must be a positive integer")
    checked: dict = {}
    for op, t in _typed_values(module):
        if isinstance(t, (TensorType, MemDescType)) and t.encoding is not None:
            enc = t.encoding
            if enc not in checked:
                checked[enc] = _encoding_problem(enc, num_warps, threads)
            if checked[enc] is not None:
                raise VerificationError(op, f"bad layout: {checked[enc]}")
            if isinstance(t, TensorType) and not isinstance(enc, DISTRIBUTED):
                raise VerificationError(op, f"a tensor needs a distributed layout, not {enc}")
            if isinstance(t, MemDescType) and not isinstance(enc, SHARED):
                raise VerificationError(op, f"a shared buffer needs a shared layout, not {enc}")
            if isinstance(t, TensorType) and enc.rank != t.rank:
                raise VerificationError(op, f"layout of rank {enc.rank} on {t}")
        elif isinstance(t, TensorType) and num_warps is not None:
            raise VerificationError(op, f"ttgir tensors need a layout: {t}")


SHARED = (SwizzledSharedEncoding, NVMMASharedEncoding)
TTG.add_module_check(_verify_layouts)


def _verify_global_scratch_alloc(op):
    if not op.results[0].type.is_ptr:
        raise VerificationError(op, f"the result must be a pointer, got {op.results[0].type}")
    for key in ("nbytes", "alignment"):
        value = op.attributes.get(key)
        if value is None or value.value <= 0:
            raise VerificationError(op, f"needs a positive '{key}'")


GlobalScratchAllocOp = define_op(
    "GlobalScratchAllocOp", "ttg.global_scratch_alloc", TypedOperands(), (),
    _verify_global_scratch_alloc, nbytes=attr("nbytes"), alignment=attr("alignment"),
    offset=attr("ttg.global_scratch_memory_offset", default=None),
    doc="`ttg.global_scratch_alloc {nbytes, alignment}`: `nbytes` of global memory private to "
        "the program, in the kernel's global scratch buffer (one slice per program, which the "
        "launch allocates); `global-scratch-allocation` gives it its offset in the slice.")


# ---- operand and result counts (checked before the verifiers above run) ------------------------
set_counts([ConvertLayoutOp], operands=1, results=1)
set_counts([LocalLoadOp], operands=(1, 2), results=1)
set_counts([LocalAllocOp], operands=(0, 1), results=1)
set_counts([LocalStoreOp], operands=2, results=0)
set_counts([LocalDeallocOp], operands=1, results=0)
set_counts([BarrierOp], operands=0, results=0)
set_counts([AsyncCommitGroupOp, AsyncWaitOp], operands=ANY, results=1)
set_counts([MemDescIndexOp], operands=2, results=1)
set_counts([MemDescTransOp], operands=1, results=1)
set_counts([GlobalScratchAllocOp], operands=0, results=1)
set_attribute_kinds([MemDescTransOp], order=DenseArrayAttr)
set_counts([AsyncCopyGlobalToLocalOp], operands=(2, 4), results=1)
