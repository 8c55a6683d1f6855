"""The `tt` dialect: Triton's block-level ops (functions, program ids, ranges, pointers, memory,
reductions, scans, dot, atomics, printing)."""
from __future__ import annotations

from dataclasses import dataclass

from compiler.ir.accessors import attr, block, flag, operand, optional_operand, variadic_operands
from compiler.ir.attributes import (DenseArrayAttr, IntegerAttr, StringAttr, SymbolRefAttr,
                                   TypeAttr, symbol_text)
from compiler.ir.core import Block, Operation, register_op
from compiler.ir.immutable import hash_once
from compiler.ir.parser import OpParts
from compiler.ir.syntax import (AttrsThenType, Convert, EnumThenType, Indexed, OperandTypes, SameType,
                                Syntax, Terminator, TypedOperands)
from compiler.ir.types import (FunctionType, IntegerType, TensorType, Type, like,
                               shape_of)
from compiler.ir.traits import (CallLike, Elementwise, FunctionLike, HasCombineRegion, LayoutAnchor,
                                LayoutBarrier, LayoutExchange, LayoutLeaf, MemoryRead,
                                MemoryWrite, Pure, ReturnLike, SameOperandsAndResultLayout,
                                SharedMemoryScratch)
from compiler.ir.traits import Terminator as TerminatorTrait
from compiler.ir.verifier_errors import VerificationError

from .common import (ANY, define_op, dialect, dot_types_text, expect_operands, parse_dot_types,
                     set_attribute_kinds, set_counts, verify_same_shape, verify_same_type)

TT = dialect("tt")


# ---- types -------------------------------------------------------------------------------------
@hash_once
@dataclass(frozen=True)
class PointerType(Type):
    """`!tt.ptr<T>`: a pointer to global memory (address space 1) unless told otherwise."""

    pointee: Type
    address_space: int = 1

    @property
    def is_ptr(self) -> bool:
        return True

    def __str__(self) -> str:
        if self.address_space == 1:
            return f"!tt.ptr<{self.pointee}>"
        return f"!tt.ptr<{self.pointee}, {self.address_space}>"


def _parse_pointer_type(ps) -> PointerType:
    """`<T[, address_space]>` after `!tt.ptr`."""
    ps.expect("<")
    pointee = ps.type()
    space = 1
    if ps.consume(","):
        space = ps.bounded_integer(0, 255, "address space")
    ps.expect(">")
    return PointerType(pointee, space)


TT.register_type("tt.ptr", _parse_pointer_type)


# ---- functions ---------------------------------------------------------------------------------
class _FuncSyntax(Syntax):
    """`tt.func public @name(%a: T {attrs} loc(..), ...) -> R attributes {...} { body }`."""

    def print(self, p, op, indent):
        block = op.regions[0].blocks[0]
        p.name_block_args(block)
        args = []
        for arg in block.args:
            attrs = p.attr_dict(arg.attributes)
            args.append(f"{p.value(arg)}: {p.type(arg.type)}{attrs} {p.loc(arg.loc)}")
        fn_type = op.attributes["function_type"].type
        results = ""
        if fn_type.results:
            results = " -> " + (p.type(fn_type.results[0]) if len(fn_type.results) == 1
                                else "(" + p.types(fn_type.results) + ")")
        vis = op.attributes.get("sym_visibility")
        vis_text = f"{vis.value} " if vis is not None else ""
        rest = p.attr_dict(op.attributes, exclude=("sym_name", "function_type", "sym_visibility"),
                           keyword="attributes ")
        body = p.region(op.regions[0], indent, print_entry_args=False)
        return (f"{op.name} {vis_text}{symbol_text(op.attributes['sym_name'].value)}"
                f"({', '.join(args)})"
                f"{results}{rest} {body}")

    def parse(self, ps, cls, num_results):
        attrs = {}
        if ps.keyword("public"):
            attrs["sym_visibility"] = StringAttr("public")
        elif ps.keyword("private"):
            attrs["sym_visibility"] = StringAttr("private")
        attrs["sym_name"] = StringAttr(ps.symbol_name())
        ps.expect("(")
        entry = []
        while not ps.consume(")"):
            name = ps.value_name()
            ps.expect(":")
            t = ps.type()
            arg_attrs = ps.attr_dict()
            loc = ps.location()
            entry.append((name, t, loc, arg_attrs))
            ps.consume(",")
        results = []
        if ps.consume("->"):
            results = ps._result_types()
        if ps.keyword("attributes"):
            attrs.update(ps.attr_dict())
        attrs["function_type"] = TypeAttr(FunctionType(tuple(e[1] for e in entry), tuple(results)))
        region = ps.region(entry_args=[(n, t, loc) for n, t, loc, _ in entry])
        for arg, (_, _, _, arg_attrs) in zip(region.blocks[0].args, entry):
            arg.attributes = arg_attrs
        return OpParts([], [], attrs, [region])


@register_op
class FuncOp(Operation):
    """`tt.func`: a kernel or device function; its one region's entry block holds the args."""

    name = "tt.func"
    syntax = _FuncSyntax()
    traits = (FunctionLike,)

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"].value

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def function_type(self) -> FunctionType:
        return self.attributes["function_type"].type

    def verify_op(self):
        if len(self.regions) != 1 or not self.regions[0].blocks:
            raise VerificationError(self, "needs one region with an entry block")
        if not isinstance(self.function_type, FunctionType):
            raise VerificationError(self, f"function_type must be a function type, got "
                                          f"{self.function_type}")
        arg_types = tuple(a.type for a in self.body.args)
        if arg_types != self.function_type.inputs:
            raise VerificationError(self, "entry block arguments differ from the function type")


TT.allow_at_module_level(FuncOp)


def _verify_return(op):
    func = op.parent_op
    if not isinstance(func, FuncOp):
        raise VerificationError(op, "must be inside a tt.func")
    expected = func.attributes["function_type"].type.results
    got = tuple(v.type for v in op.operands)
    if got != tuple(expected):
        raise VerificationError(op, f"returns ({', '.join(map(str, got))}) but the function "
                                    f"declares ({', '.join(map(str, expected))})")


ReturnOp = define_op("ReturnOp", "tt.return", Terminator(), (ReturnLike, LayoutBarrier),
                     _verify_return)


class _CallSyntax(Syntax):
    """`tt.call @f(%a, %b) : (Ta, Tb) -> R`."""

    def print(self, p, op, indent):
        ins = p.types(v.type for v in op.operands)
        outs = p.types(r.type for r in op.results)
        rest = p.attr_dict(op.attributes, exclude=("callee",))
        return (f"{op.name} {op.attributes['callee']}({p.values(op.operands)}){rest} : "
                f"({ins}) -> ({outs})")

    def parse(self, ps, cls, num_results):
        callee = ps.symbol_name()
        ps.expect("(")
        operands = ps.operand_list()
        ps.expect(")")
        attrs = ps.attr_dict()
        attrs["callee"] = SymbolRefAttr(callee)
        ps.expect(":")
        pos = ps.pos
        fn = ps.type()
        if not isinstance(fn, FunctionType):
            raise ps.error("expected the callee's type (T...) -> (R...)", pos)
        ps.check_written_types(operands, fn.inputs, pos)
        return OpParts(operands, list(fn.results), attrs)


CallOp = define_op("CallOp", "tt.call", _CallSyntax(), (CallLike, LayoutBarrier),
                   callee=attr("callee"), args=variadic_operands(0))


# ---- program ids and ranges -------------------------------------------------------------------
def _verify_axis_scalar(op):
    axis = op.attributes["axis"].value
    if axis not in (0, 1, 2):
        raise VerificationError(op, f"axis must be 0, 1 or 2, got {axis}")
    if op.results[0].type != IntegerType(32):
        raise VerificationError(op, "result must be i32")


GetProgramIdOp = define_op("GetProgramIdOp", "tt.get_program_id",
                           EnumThenType("axis", ("x", "y", "z")), (Pure,), _verify_axis_scalar,
                           axis=attr("axis"))
GetNumProgramsOp = define_op("GetNumProgramsOp", "tt.get_num_programs",
                             EnumThenType("axis", ("x", "y", "z")), (Pure,), _verify_axis_scalar,
                             axis=attr("axis"))


def _verify_make_range(op):
    start, end = op.attributes["start"], op.attributes["end"]
    if start.type != IntegerType(32) or end.type != IntegerType(32):
        raise VerificationError(op, f"start and end must be i32, got {start} and {end}")
    start, end = start.value, end.value
    t = op.results[0].type
    if not isinstance(t, TensorType) or t.rank != 1 or t.element != IntegerType(32):
        raise VerificationError(op, f"result must be a 1-D i32 tensor, got {t}")
    if end - start != t.shape[0]:
        raise VerificationError(op, f"range [{start}, {end}) does not match shape {t.shape}")
    n = end - start
    if n <= 0 or n & (n - 1):
        raise VerificationError(op, f"range length {n} must be a power of two")
    if start < 0:
        raise VerificationError(op, f"range start {start} must not be negative")


MakeRangeOp = define_op("MakeRangeOp", "tt.make_range", AttrsThenType(),
                        (Pure, SameOperandsAndResultLayout, LayoutLeaf), _verify_make_range,
                        start=attr("start"), end=attr("end"))


# ---- shape manipulation -----------------------------------------------------------------------
def _verify_splat(op):
    src, dst = op.operands[0].type, op.results[0].type
    if isinstance(src, TensorType) or not isinstance(dst, TensorType) or dst.element != src:
        raise VerificationError(op, f"splat makes a tensor of the scalar's type: {src} -> {dst}")


def _verify_broadcast(op):
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, TensorType) or not isinstance(dst, TensorType):
        raise VerificationError(op, "broadcast works on tensors")
    if src.rank != dst.rank or src.element != dst.element:
        raise VerificationError(op, f"broadcast keeps rank and element type: {src} -> {dst}")
    for s, d in zip(src.shape, dst.shape):
        if s != d and s != 1:
            raise VerificationError(op, f"cannot broadcast {src.shape} to {dst.shape}")


def _verify_expand_dims(op):
    src, dst = op.operands[0].type, op.results[0].type
    axis = op.attributes["axis"].value
    if not isinstance(dst, TensorType) or not 0 <= axis <= len(shape_of(src)):
        raise VerificationError(op, f"axis {axis} out of range for {src}")
    expected = list(shape_of(src))
    expected.insert(axis, 1)
    if tuple(expected) != shape_of(dst):
        raise VerificationError(op, f"expand_dims at axis {axis} of {src} gives shape "
                                    f"{tuple(expected)}, not {shape_of(dst)}")


def _verify_reshape(op):
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, TensorType) or not isinstance(dst, TensorType):
        raise VerificationError(op, "reshape works on tensors")
    if src.numel != dst.numel or src.element != dst.element:
        raise VerificationError(op, f"reshape keeps element count and type: {src} -> {dst}")


def _verify_trans(op):
    src, dst = op.operands[0].type, op.results[0].type
    order = op.attributes["order"].values
    if not isinstance(src, TensorType) or not isinstance(dst, TensorType):
        raise VerificationError(op, "trans works on tensors")
    if sorted(order) != list(range(src.rank)):
        raise VerificationError(op, f"order {list(order)} is not a permutation of the dims")
    if tuple(src.shape[i] for i in order) != dst.shape:
        raise VerificationError(op, f"trans with order {list(order)} of {src} gives the wrong shape")


SplatOp = define_op("SplatOp", "tt.splat", Convert("->"),
                    (Pure, SameOperandsAndResultLayout, LayoutLeaf), _verify_splat, src=operand(0))
BroadcastOp = define_op("BroadcastOp", "tt.broadcast", Convert("->"),
                        (Pure, SameOperandsAndResultLayout), _verify_broadcast, src=operand(0))
ExpandDimsOp = define_op("ExpandDimsOp", "tt.expand_dims", Convert("->"), (Pure,),
                         _verify_expand_dims, src=operand(0), axis=attr("axis"))
ReshapeOp = define_op("ReshapeOp", "tt.reshape", Convert("->"),
                      (Pure, LayoutAnchor, LayoutExchange, SharedMemoryScratch), _verify_reshape,
                      src=operand(0))
TransOp = define_op("TransOp", "tt.trans", Convert("->"),
                    (Pure, LayoutAnchor, LayoutExchange, SharedMemoryScratch), _verify_trans,
                    src=operand(0), order=attr("order", field="values"))


def _verify_bitcast(op):
    if shape_of(op.operands[0].type) != shape_of(op.results[0].type):
        raise VerificationError(op, "bitcast keeps the shape")


BitcastOp = define_op("BitcastOp", "tt.bitcast", Convert("->"), (Pure, Elementwise),
                      _verify_bitcast, src=operand(0))
IntToPtrOp = define_op("IntToPtrOp", "tt.int_to_ptr", Convert("->"), (Pure, Elementwise),
                       _verify_bitcast, src=operand(0))
PtrToIntOp = define_op("PtrToIntOp", "tt.ptr_to_int", Convert("->"), (Pure, Elementwise),
                       _verify_bitcast, src=operand(0))
PreciseSqrtOp = define_op("PreciseSqrtOp", "tt.precise_sqrt", SameType(), (Pure, Elementwise),
                          verify_same_type, src=operand(0))
PreciseDivFOp = define_op("PreciseDivFOp", "tt.precise_divf", SameType(),
                          (Pure, Elementwise), verify_same_type, lhs=operand(0), rhs=operand(1))
MulhiUIOp = define_op("MulhiUIOp", "tt.mulhiui", SameType(), (Pure, Elementwise),
                      verify_same_type, lhs=operand(0), rhs=operand(1))


FP_ROUNDINGS = ("rtne", "rtz")


def _verify_fp_to_fp(op):
    _verify_bitcast(op)
    src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
    if not (src.is_float and dst.is_float):
        raise VerificationError(op, f"converts floats to floats, got {src} -> {dst}")
    rounding = op.attributes.get("rounding")
    if rounding is None or rounding.value not in FP_ROUNDINGS:
        raise VerificationError(op, f"needs rounding = one of {', '.join(FP_ROUNDINGS)}")


FpToFpOp = define_op("FpToFpOp", "tt.fp_to_fp", Convert("->"), (Pure, Elementwise),
                     _verify_fp_to_fp, "A float conversion with an explicit rounding mode "
                     "(Triton's tl.cast(..., fp_downcast_rounding='rtz')).",
                     src=operand(0), rounding=attr("rounding"))


def _verify_inline_asm(op):
    for key, kind in (("asm_string", StringAttr), ("constraints", StringAttr)):
        if not isinstance(op.attributes.get(key), kind):
            raise VerificationError(op, f"needs a string `{key}` attribute")
    shapes = {shape_of(v.type) for v in list(op.operands) + list(op.results)}
    if len(shapes) > 1:
        raise VerificationError(op, "operands and results must have one shape")
    if not op.results:
        raise VerificationError(op, "needs at least one result")


ElementwiseInlineAsmOp = define_op(
    "ElementwiseInlineAsmOp", "tt.elementwise_inline_asm", None, (Elementwise,),
    _verify_inline_asm, "User PTX applied element by element (tl.inline_asm_elementwise): "
    "`asm_string` with LLVM inline-asm `constraints`, results first; `pure` says it has no "
    "side effects; `packed_element` elements go to each asm instance.",
    args=variadic_operands(0), asm_string=attr("asm_string"), constraints=attr("constraints"),
    pure=attr("pure", default=False), packed_element=attr("packed_element", default=1))


def _verify_gather(op):
    expect_operands(op, 2)
    src, idx = op.operands[0].type, op.operands[1].type
    out = op.results[0].type
    axis = op.attributes["axis"].value
    if not (isinstance(src, TensorType) and isinstance(idx, TensorType)) or src.rank != idx.rank:
        raise VerificationError(op, f"source and indices must be tensors of one rank, got {src} "
                                    f"and {idx}")
    if not isinstance(idx.scalar, IntegerType):
        raise VerificationError(op, f"indices must be integers, got {idx}")
    if not 0 <= axis < src.rank:
        raise VerificationError(op, f"axis {axis} is out of range for rank {src.rank}")
    if any(a != b for d, (a, b) in enumerate(zip(src.shape, idx.shape)) if d != axis):
        raise VerificationError(op, f"indices {idx.shape} must match the source {src.shape} on "
                                    f"every dim but {axis}")
    if shape_of(out) != shape_of(idx) or out.scalar != src.scalar:
        raise VerificationError(op, f"result must have the indices' shape and the source's "
                                    f"element type, got {out}")


GatherOp = define_op("GatherOp", "tt.gather", Indexed(),
                     (Pure, SharedMemoryScratch, LayoutBarrier), _verify_gather,
                     "out[i][j] = src[indices[i][j]][j] (for axis 0) (Triton's tl.gather): warp "
                     "shuffles when the gathered dim lies within warps, else the source through "
                     "shared memory, read back at the indices. `efficient_layout` (a unit "
                     "attribute) marks layouts that optimize-thread-locality chose for it and "
                     "that later passes keep.",
                     src=operand(0), indices=operand(1), axis=attr("axis"),
                     efficient_layout=flag("efficient_layout"))


def _verify_histogram(op):
    if len(op.operands) not in (1, 2):
        raise VerificationError(op, f"takes the values and an optional mask, got "
                                    f"{len(op.operands)} operands")
    src, out = op.operands[0].type, op.results[0].type
    if not (isinstance(src, TensorType) and src.rank == 1 and isinstance(src.scalar, IntegerType)):
        raise VerificationError(op, f"needs a 1-D integer tensor, got {src}")
    if len(op.operands) == 2 and shape_of(op.operands[1].type) != shape_of(src):
        raise VerificationError(op, "the mask must have the values' shape")
    if not (isinstance(out, TensorType) and out.rank == 1 and out.scalar == IntegerType(32)):
        raise VerificationError(op, f"result must be a 1-D i32 tensor (the bins), got {out}")


HistogramOp = define_op("HistogramOp", "tt.histogram", None,
                        (Pure, SharedMemoryScratch, LayoutBarrier), _verify_histogram,
                        "Counts of the values in bins [0, 1), [1, 2), ... (as many as the "
                        "result has); masked-off lanes and values outside are not counted.",
                        src=operand(0), mask=optional_operand(1))


# ---- pointers and memory ----------------------------------------------------------------------
def _verify_addptr(op):
    ptr, offset = op.operands
    if not ptr.type.scalar.is_ptr:
        raise VerificationError(op, f"first operand must be a pointer, got {ptr.type}")
    if not offset.type.scalar.is_int:
        raise VerificationError(op, f"offset must be an integer, got {offset.type}")
    if op.results[0].type != ptr.type:
        raise VerificationError(op, "result must have the pointer operand's type")
    verify_same_shape(op)


AddPtrOp = define_op("AddPtrOp", "tt.addptr", OperandTypes(lambda ts, a: ts[0]),
                     (Pure, Elementwise), _verify_addptr, ptr=operand(0), offset=operand(1))


def _load_result(types, attrs):
    ptr = types[0]
    if not ptr.scalar.is_ptr:
        return ptr                  # the verifier rejects the load, with its location
    return like(ptr, ptr.scalar.pointee)


def _verify_load(op):
    if not 1 <= len(op.operands) <= 3:
        raise VerificationError(op, "takes a pointer, an optional mask and an optional other")
    ptr = op.operands[0].type
    if not ptr.scalar.is_ptr:
        raise VerificationError(op, f"needs a pointer operand, got {ptr}")
    if op.results[0].type != like(ptr, ptr.scalar.pointee):
        raise VerificationError(op, f"result {op.results[0].type} does not match pointer {ptr}")
    if len(op.operands) >= 2:
        mask = op.operands[1].type
        if mask.scalar != IntegerType(1) or shape_of(mask) != shape_of(ptr):
            raise VerificationError(op, f"mask must be i1 of the pointer's shape, got {mask}")
    if len(op.operands) == 3 and op.operands[2].type != op.results[0].type:
        raise VerificationError(op, f"other must have the loaded type {op.results[0].type}")
    _verify_memory_hints(op, LOAD_CACHE_MODIFIERS)


#: Cache hints a load or store may carry (attribute `cache`, the PTX cache operator without its
#: dot) and eviction policies (attribute `evict`); absent means the default. Triton's values.
LOAD_CACHE_MODIFIERS = ("ca", "cg", "cv")
STORE_CACHE_MODIFIERS = ("wb", "cg", "cs", "wt")
EVICTION_POLICIES = ("evict_first", "evict_last")


def _verify_memory_hints(op, cache_modifiers):
    cache, evict = op.attributes.get("cache"), op.attributes.get("evict")
    if cache is not None and cache.value not in cache_modifiers:
        raise VerificationError(op, f"cache modifier '{cache.value}' is not one of "
                                    f"{', '.join(cache_modifiers)}")
    if evict is not None and evict.value not in EVICTION_POLICIES:
        raise VerificationError(op, f"eviction policy '{evict.value}' is not one of "
                                    f"{', '.join(EVICTION_POLICIES)}")


LoadOp = define_op("LoadOp", "tt.load", OperandTypes(_load_result, num_types=1),
                   (MemoryRead, SameOperandsAndResultLayout, LayoutAnchor, LayoutBarrier),
                   _verify_load, ptr=operand(0), mask=optional_operand(1),
                   other=optional_operand(2))


def _verify_store(op):
    if not 2 <= len(op.operands) <= 3:
        raise VerificationError(op, "takes a pointer, a value and an optional mask")
    ptr, value = op.operands[0].type, op.operands[1].type
    if not ptr.scalar.is_ptr or value != like(ptr, ptr.scalar.pointee):
        raise VerificationError(op, f"stored value {value} does not match pointer {ptr}")
    if len(op.operands) == 3:
        mask = op.operands[2].type
        if mask.scalar != IntegerType(1) or shape_of(mask) != shape_of(ptr):
            raise VerificationError(op, f"mask must be i1 of the pointer's shape, got {mask}")
    _verify_memory_hints(op, STORE_CACHE_MODIFIERS)


StoreOp = define_op("StoreOp", "tt.store", OperandTypes(lambda ts, a: None, num_types=1),
                    (MemoryWrite, SameOperandsAndResultLayout, LayoutBarrier), _verify_store,
                    ptr=operand(0), value=operand(1), mask=optional_operand(2))

def _verify_descriptor_access(op, first_offset: int):
    """A tensor map (`!tt.ptr<i8>` kernel argument), [the stored value], one i32 offset per dim
    of the block."""
    block = op.results[0].type if op.results else op.operands[1].type
    if not isinstance(block, TensorType):
        raise VerificationError(op, f"the block must be a tensor, got {block}")
    offsets = op.operands[first_offset:]
    if len(offsets) != len(block.shape) or any(str(v.type) != "i32" for v in offsets):
        raise VerificationError(op, f"takes {len(block.shape)} i32 offsets, one per dim of "
                                    f"{block}")
    if not op.operands[0].type.is_ptr:
        raise VerificationError(op, f"the tensor map must be a pointer, got "
                                    f"{op.operands[0].type}")


DescriptorLoadOp = define_op(
    "DescriptorLoadOp", "tt.descriptor_load", TypedOperands(), (MemoryRead, LayoutAnchor),
    lambda op: _verify_descriptor_access(op, 1), desc=operand(0),
    doc="`tt.descriptor_load %map, %offsets...`: the block of a host tensor descriptor at "
        "`offsets`, read through its CUtensorMap `%map` (by TMA: `tma-lowering`); elements "
        "out of bounds read as the descriptor's padding.")

DescriptorStoreOp = define_op(
    "DescriptorStoreOp", "tt.descriptor_store", TypedOperands(), (MemoryWrite, LayoutBarrier),
    lambda op: _verify_descriptor_access(op, 2), desc=operand(0), value=operand(1),
    doc="`tt.descriptor_store %map, %value, %offsets...`: write a block of a host tensor "
        "descriptor through its CUtensorMap; elements out of bounds are not written.")


def _verify_make_tensor_descriptor(op):
    """%base (a scalar pointer), then one i32 dim and one i64 element stride per dim of
    `block_shape`; the result is the tensor map's address (`!tt.ptr<i8>`)."""
    block = op.attributes.get("block_shape")
    rank = len(block.values) if block is not None else 0
    if not rank or len(op.operands) != 1 + 2 * rank:
        raise VerificationError(op, f"takes a base pointer, {rank or 'N'} dims and "
                                    f"{rank or 'N'} strides (one per dim of block_shape)")
    if not op.operands[0].type.is_ptr or isinstance(op.operands[0].type, TensorType):
        raise VerificationError(op, f"the base must be a scalar pointer, got "
                                    f"{op.operands[0].type}")
    if any(str(v.type) != "i32" for v in op.operands[1:1 + rank]) or \
            any(str(v.type) != "i64" for v in op.operands[1 + rank:]):
        raise VerificationError(op, "dims must be i32 and strides i64")
    if not op.results[0].type.is_ptr:
        raise VerificationError(op, f"the result must be a pointer, got {op.results[0].type}")


MakeTensorDescriptorOp = define_op(
    "MakeTensorDescriptorOp", "tt.make_tensor_descriptor", TypedOperands(), (),
    _verify_make_tensor_descriptor, address=operand(0), block_shape=attr("block_shape"),
    padding=attr("padding", default=None),
    doc="`tt.make_tensor_descriptor %base, %dims..., %strides... {block_shape, padding}`: a "
        "device-side tensor descriptor of the tensor at `base` (element strides, the last 1) "
        "for `block_shape` blocks, as the address of its tensor map; `tma-lowering` builds "
        "the map in global scratch memory (`ttng.tensormap_create`).")


ATOMIC_RMW_KINDS = ("and", "or", "xor", "add", "fadd", "max", "min", "umax", "umin", "exch")


def _verify_atomic_rmw(op):
    kind = op.attributes["atomic_rmw_op"].value
    if kind not in ATOMIC_RMW_KINDS:
        raise VerificationError(op, f"unknown atomic kind '{kind}'")
    ptr, val = op.operands[0].type, op.operands[1].type
    if not ptr.scalar.is_ptr:
        raise VerificationError(op, f"needs a pointer operand, got {ptr}")
    if val != like(ptr, ptr.scalar.pointee) or op.results[0].type != val:
        raise VerificationError(op, "value and result must match the pointee type")


AtomicRMWOp = define_op("AtomicRMWOp", "tt.atomic_rmw", None,
                        (MemoryRead, MemoryWrite, SameOperandsAndResultLayout, LayoutAnchor,
                         LayoutBarrier, SharedMemoryScratch), _verify_atomic_rmw,
                        ptr=operand(0), val=operand(1), mask=optional_operand(2),
                        kind=attr("atomic_rmw_op"))


def _verify_atomic_cas(op):
    ptr, cmp, val = (v.type for v in op.operands)
    if not ptr.scalar.is_ptr:
        raise VerificationError(op, f"needs a pointer operand, got {ptr}")
    if op.results[0].type != val:
        raise VerificationError(op, "the result has the value's type")
    if cmp != val or val != like(ptr, ptr.scalar.pointee):
        raise VerificationError(op, "compare and value must match the pointee type")


AtomicCASOp = define_op("AtomicCASOp", "tt.atomic_cas", None,
                        (MemoryRead, MemoryWrite, SameOperandsAndResultLayout, LayoutAnchor,
                         LayoutBarrier, SharedMemoryScratch), _verify_atomic_cas,
                        ptr=operand(0), cmp=operand(1), val=operand(2))


# ---- reductions, scans, dot -------------------------------------------------------------------
def _verify_reduce(op):
    axis = op.attributes["axis"].value
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        raise VerificationError(op, "needs one combine region of one block")
    block = op.regions[0].blocks[0]
    n = len(op.operands)
    if len(op.results) != n:
        raise VerificationError(op, f"reduces {n} operands into {len(op.results)} results")
    _verify_combiner_types(op, block)
    if len(block.args) != 2 * n:
        raise VerificationError(op, f"combine region needs {2 * n} arguments, has {len(block.args)}")
    for v, r in zip(op.operands, op.results):
        src = v.type
        if not isinstance(src, TensorType) or not 0 <= axis < src.rank:
            raise VerificationError(op, f"axis {axis} out of range for {src}")
        shape = src.shape[:axis] + src.shape[axis + 1:]
        if shape_of(r.type) != tuple(shape) or r.type.scalar != src.element:
            raise VerificationError(op, f"result {r.type} does not match reducing {src} "
                                        f"along axis {axis}")
    term = block.terminator
    if term is None or term.name != op.name + ".return" or len(term.operands) != n:
        raise VerificationError(op, f"combine region must end in {op.name}.return of {n} values")


ReduceOp = define_op("ReduceOp", "tt.reduce", None, (Pure, HasCombineRegion, SharedMemoryScratch),
                     _verify_reduce, axis=attr("axis"), srcs=variadic_operands(0),
                     combine=block(0))
ReduceReturnOp = define_op("ReduceReturnOp", "tt.reduce.return", Terminator(), (TerminatorTrait,))


def _verify_combiner_types(op, block):
    """The combine region takes (accumulators..., values...) of the operands' element types."""
    elements = [v.type.scalar for v in op.operands]
    if [a.type for a in block.args] != elements * 2:
        raise VerificationError(op, "the combine region's arguments must be two sets of the "
                                    "operands' element types")
    term = block.terminator
    if term is not None and [v.type for v in term.operands] != elements:
        raise VerificationError(op, "the combine region must return the operands' element types")


def _verify_scan(op):
    axis = op.attributes["axis"].value
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        raise VerificationError(op, "needs one combine region of one block")
    if len(op.results) != len(op.operands):
        raise VerificationError(op, f"scans {len(op.operands)} operands into "
                                    f"{len(op.results)} results")
    block = op.regions[0].blocks[0]
    if len(block.args) != 2 * len(op.operands):
        raise VerificationError(op, f"combine region needs {2 * len(op.operands)} arguments")
    _verify_combiner_types(op, block)
    for v, r in zip(op.operands, op.results):
        if v.type != r.type or not isinstance(v.type, TensorType):
            raise VerificationError(op, "scan results keep the operand (tensor) types")
        if not 0 <= axis < v.type.rank:
            raise VerificationError(op, f"axis {axis} out of range for {v.type}")


ScanOp = define_op("ScanOp", "tt.scan", None,
                   (Pure, HasCombineRegion, SameOperandsAndResultLayout, SharedMemoryScratch),
                   _verify_scan, axis=attr("axis"), reverse=attr("reverse", default=False),
                   srcs=variadic_operands(0), combine=block(0))
ScanReturnOp = define_op("ScanReturnOp", "tt.scan.return", Terminator(), (TerminatorTrait,))


class _DotSyntax(Syntax):
    """`%a, %b, %c, inputPrecision = tf32 : Ta * Tb -> Tc`."""

    def print(self, p, op, indent):
        prec = op.attributes.get("inputPrecision")
        prec_text = f", inputPrecision = {prec.value}" if prec is not None else ""
        rest = p.attr_dict(op.attributes, exclude=("inputPrecision",))
        return f"{op.name} {p.values(op.operands)}{prec_text}{rest}" + dot_types_text(p, op)

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = {}
        if ps.consume(","):
            ps.expect("inputPrecision")
            ps.expect("=")
            attrs["inputPrecision"] = StringAttr(ps.identifier())
        attrs.update(ps.attr_dict())
        return OpParts(operands, [parse_dot_types(ps)], attrs)


def _verify_dot(op):
    expect_operands(op, 3)
    a, b, c = (v.type for v in op.operands)
    d = op.results[0].type
    if not all(isinstance(t, TensorType) and t.rank == 2 for t in (a, b, c)):
        raise VerificationError(op, "operands must be 2-D tensors")
    if a.shape[1] != b.shape[0]:
        raise VerificationError(op, f"inner dimensions differ: {a.shape} x {b.shape}")
    if c.shape != (a.shape[0], b.shape[1]) or d != c:
        raise VerificationError(op, f"accumulator must be {a.shape[0]}x{b.shape[1]} "
                                    f"of the result type, got {c}")


DotOp = define_op("DotOp", "tt.dot", _DotSyntax(), (Pure, LayoutAnchor, LayoutBarrier), _verify_dot,
                  a=operand(0), b=operand(1), c=operand(2),
                  input_precision=attr("inputPrecision", default=None))

# ---- debugging ---------------------------------------------------------------------------------
PrintOp = define_op("PrintOp", "tt.print", None,
                    (MemoryWrite, SameOperandsAndResultLayout, LayoutBarrier))


class _AssertSyntax(Syntax):
    """`tt.assert %cond, "message" {attrs} : T`, as Triton prints it."""

    def print(self, p, op, indent):
        rest = p.attr_dict(op.attributes, exclude=("message",))
        return (f"{op.name} {p.values(op.operands)}, {op.attributes['message']}{rest} : "
                f"{p.type(op.operands[0].type)}")

    def parse(self, ps, cls, num_results):
        operands = [ps.operand()]
        ps.expect(",")
        message = ps.string()
        attrs = ps.attr_dict()
        ps.expect(":")
        pos = ps.pos
        ps.check_written_types(operands, [ps.type()], pos)
        attrs["message"] = StringAttr(message)
        return OpParts(operands, [], attrs)


def _verify_assert(op):
    expect_operands(op, 1)
    if not isinstance(op.attributes.get("message"), StringAttr):
        raise VerificationError(op, "needs a `message` string")
    if op.operands[0].type.scalar != IntegerType(1):
        raise VerificationError(op, f"condition must be i1, got {op.operands[0].type}")


AssertOp = define_op("AssertOp", "tt.assert", _AssertSyntax(),
                     (MemoryWrite, SameOperandsAndResultLayout, LayoutBarrier), _verify_assert,
                     condition=operand(0))

def _verify_assume(op):
    expect_operands(op, 1)
    if op.operands[0].type != IntegerType(1):
        raise VerificationError(op, f"takes a scalar i1 condition, got {op.operands[0].type}")


# Kept (MemoryWrite) although it writes nothing: no pass may drop or move the promise.
AssumeOp = define_op("AssumeOp", "llvm.intr.assume", OperandTypes(lambda types, attrs: None),
                     (MemoryWrite,), _verify_assume,
                     "tl.assume: a promise that the scalar condition holds, for LLVM to draw "
                     "facts from (`llvm.assume`); it is not checked.", condition=operand(0))


# ---- in-kernel profiling ----------------------------------------------------------------------
class _ProfileRecordSyntax(Syntax):
    """`tt.profile_enter 3 "loop L12" %a, %b {attrs} : T1, T2`: the region id, its name, then
    the values the record's clock read is ordered against (see ProfileRecordOp) with their
    types; a record without such values prints only its id, name and attributes."""

    def print(self, p, op, indent):
        rest = p.attr_dict(op.attributes, exclude=("region", "name"))
        head = f"{op.name} {op.attributes['region'].value} {op.attributes['name']}"
        if not op.operands:
            return head + rest
        types = p.types(v.type for v in op.operands)
        return f"{head} {p.values(op.operands)}{rest} : {types}"

    def parse(self, ps, cls, num_results):
        region = ps.integer()
        name = ps.string()
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        if operands:
            ps.expect(":")
            pos = ps.pos
            ps.check_written_types(operands, ps.type_list(), pos)
        attrs.update(region=IntegerAttr(region, IntegerType(32)), name=StringAttr(name))
        return OpParts(operands, [], attrs)


def _verify_profile_record(op) -> None:
    if op.results:
        raise VerificationError(op, "has no results")
    region = op.attributes.get("region")
    if region is None or not isinstance(region.value, int) or region.value < 0:
        raise VerificationError(op, "needs a `region` id >= 0")
    if not isinstance(op.attributes.get("name"), StringAttr):
        raise VerificationError(op, "needs a `name` string")


class ProfileRecordOp(Operation):
    """Base of `tt.profile_enter` / `tt.profile_exit`: one timestamp record of region `region`
    (`kind`: 0 enter, 1 exit). MemoryWrite (they store into the profile buffer), never Pure:
    CSE must not merge them, LICM must not hoist them, DCE must not drop them. Outside a module
    the `instrument-regions` pass has run on, the lowering emits nothing for them.

    Operands (the pass fills them, `analysis.profile_regions.region_flow`): on an enter, the
    values flowing into the region, which the lowering re-defines right after the clock read
    so the region's work cannot start before it; on an exit, the values the region hands on,
    which the lowering uses right before the clock read so that work cannot sink past it."""

    syntax = _ProfileRecordSyntax()
    traits = (MemoryWrite,)
    kind: int = 0
    verify_op = _verify_profile_record
    region = attr("region")
    label = attr("name")


ProfileEnterOp = define_op("ProfileEnterOp", "tt.profile_enter", ProfileRecordOp.syntax,
                           ProfileRecordOp.traits, doc="`tt.profile_enter`: region `region` "
                           "starts (see ProfileRecordOp).", base=ProfileRecordOp)
ProfileExitOp = define_op("ProfileExitOp", "tt.profile_exit", ProfileRecordOp.syntax,
                          ProfileRecordOp.traits, doc="`tt.profile_exit`: region `region` ends "
                          "(see ProfileRecordOp).", base=ProfileRecordOp)
ProfileExitOp.kind = 1


# ---- operand, result and attribute declarations (checked before the verifiers above) --------
set_counts([FuncOp], operands=0, results=0, regions=1)
set_counts([DescriptorLoadOp], operands=(2, None), results=1)
set_counts([DescriptorStoreOp], operands=(3, None), results=0)
set_counts([MakeTensorDescriptorOp], operands=(3, None), results=1)
set_counts([ReturnOp, ReduceReturnOp, ScanReturnOp], operands=ANY, results=0)
set_counts([CallOp], operands=ANY, results=ANY)
set_counts([GetProgramIdOp, GetNumProgramsOp, MakeRangeOp], operands=0, results=1)
set_counts([SplatOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, BitcastOp, IntToPtrOp,
            PtrToIntOp, PreciseSqrtOp], operands=1, results=1)
set_counts([PreciseDivFOp, MulhiUIOp, AddPtrOp], operands=2, results=1)
set_counts([LoadOp], operands=(1, 3), results=1)
set_counts([StoreOp], operands=(2, 3), results=0)
set_counts([AtomicRMWOp], operands=(2, 3), results=1)
set_counts([AtomicCASOp, DotOp], operands=3, results=1)
set_counts([ReduceOp, ScanOp], operands=(1, None), results=(1, None), regions=1)
set_counts([PrintOp, AssertOp], operands=ANY, results=0)
set_counts([AssumeOp], operands=1, results=0)
set_counts([ProfileEnterOp, ProfileExitOp], operands=ANY, results=0)
set_attribute_kinds([FuncOp], sym_name=StringAttr, function_type=TypeAttr)
set_attribute_kinds([CallOp], callee=SymbolRefAttr)
set_attribute_kinds([GetProgramIdOp, GetNumProgramsOp, ExpandDimsOp, ReduceOp, ScanOp],
                    axis=IntegerAttr)
set_attribute_kinds([MakeRangeOp], start=IntegerAttr, end=IntegerAttr)
set_attribute_kinds([TransOp], order=DenseArrayAttr)
set_attribute_kinds([AtomicRMWOp], atomic_rmw_op=StringAttr)
set_attribute_kinds([ProfileEnterOp, ProfileExitOp], region=IntegerAttr, name=StringAttr)


def _verify_calls(module) -> None:
    """Every tt.call names a function of the module and passes and gets its types."""
    for op in module.walk():
        if not isinstance(op, CallOp):
            continue
        callee = module.lookup(op.attributes["callee"].name)
        if not isinstance(callee, FuncOp):
            raise VerificationError(op, f"calls {op.attributes['callee']}, which is not a "
                                        "function of this module")
        fn = callee.function_type
        ins = tuple(v.type for v in op.operands)
        outs = tuple(r.type for r in op.results)
        if ins != fn.inputs or outs != fn.results:
            raise VerificationError(op, f"call types ({', '.join(map(str, ins))}) -> "
                                        f"({', '.join(map(str, outs))}) differ from "
                                        f"{callee.sym_name}'s {fn}")


TT.add_module_check(_verify_calls)

__all__ = [n for n in dir() if n.endswith("Op")]
set_counts([FpToFpOp], operands=1, results=1)
set_counts([ElementwiseInlineAsmOp], operands=ANY, results=(1, None))
set_counts([GatherOp], operands=2, results=1)
set_counts([HistogramOp], operands=(1, 2), results=1)
