"""tma-lowering: host tensor-descriptor loads and stores become TMA copies with mbarriers.

A `tt.descriptor_load` becomes a shared buffer in the `#ttg.nvmma_shared` layout of its TMA box
(`compiler.codegen.tma`), an mbarrier initialized for one arrival, `ttng.barrier_expect` of the
block's bytes, `ttng.async_tma_copy_global_to_local` and `ttng.wait_barrier` on phase 0; when
its one user is the `ttg.local_alloc` that accelerate-matmul made for a wgmma operand in that
very layout, the dot reads the TMA buffer directly (no register round trip), else a
`ttg.local_load` brings the block into the load's layout. The barrier is invalidated after the
wait, so every load has its own, and a CTA barrier before each copy keeps a copy in a loop from
overwriting data other warps still read. A `tt.descriptor_store` writes the value into an
nvmma_shared buffer (`ttg.local_alloc`, whose lowering fences the writes for the async proxy
and syncs the CTA) and stores it with `ttng.async_tma_copy_local_to_global`, waiting for the bulk group to have
read the buffer before it may be reused. Runs only when the compile copies descriptors by TMA
(the `tma` option on sm_90+): the front end emits these ops for host descriptors then only.
"""
from __future__ import annotations

from compiler.codegen.tma import tma_box
from compiler.dialects import tt
from compiler.dialects.arith import BINARY_OPS
from compiler.dialects.ttg import (BarrierOp, ConvertLayoutOp, DotOperandEncoding,
                                   GlobalScratchAllocOp, LocalAllocOp, LocalLoadOp, MemDescType,
                                   NVMMASharedEncoding, SwizzledSharedEncoding, replace_buffer)
from compiler.dialects.ttng import (AsyncTMACopyGlobalToLocalOp, AsyncTMACopyLocalToGlobalOp,
                                    BarrierExpectOp, FenceAsyncSharedOp, InitBarrierOp,
                                    InvalBarrierOp, TENSORMAP_ELEMENT_TYPES,
                                    TENSORMAP_FILL_MODES, TENSORMAP_SWIZZLE_MODES,
                                    TensormapCreateOp, TensormapFenceproxyAcquireOp,
                                    TMAStoreWaitOp, WaitBarrierOp)
from compiler.ir.attributes import DenseArrayAttr, IntegerAttr
from compiler.ir.core import Module, Operation, Value
from compiler.ir.types import TensorType, i1, i32, i64

from .base import Pass, PassContext, register_pass
from .ir_utils import insert_new, make_constant
from .requirements import SHARED_ALLOCATED, TTGIR

#: an mbarrier: one 64-bit word of shared memory
BARRIER_TYPE = MemDescType((1,), i64, SwizzledSharedEncoding(1, 1, 1, (0,)), True)


def box_of(t) -> tuple:
    """(TMA box, nvmma_shared encoding) of a descriptor block type (tensor or memdesc)."""
    box = tma_box(t.element.width, t.shape)
    if box is None:
        raise ValueError(f"TMA cannot copy a block of type {t}")
    return box, NVMMASharedEncoding(box.swizzle, False, t.element.width)


def _reused_alloc(load: Operation, enc: NVMMASharedEncoding) -> Operation | None:
    """The load's only user when it is a `ttg.local_alloc` of the load into `enc`, in the
    load's block (the copy is issued where the buffer is made)."""
    users = load.results[0].users()
    if len(users) != 1 or not isinstance(users[0], LocalAllocOp) or \
            users[0].parent is not load.parent:
        return None
    alloc = users[0]
    return alloc if alloc.results[0].type.encoding == enc else None


def _barrier(before: Operation, count: int = 1):
    """An mbarrier for `count` arrivals, initialized and visible to every thread."""
    bar = insert_new(LocalAllocOp, [], [BARRIER_TYPE], {}, before).results[0]
    insert_new(InitBarrierOp, [bar], [], {"count": IntegerAttr(count, i32)}, before)
    insert_new(FenceAsyncSharedOp, [], [], {}, before)
    insert_new(BarrierOp, [], [], {}, before)
    return bar


def lower_load(load: Operation, ctx: PassContext) -> None:
    """One `tt.descriptor_load` -> TMA copy into shared memory (see the module docstring)."""
    t: TensorType = load.results[0].type
    box, enc = box_of(t)
    alloc = _reused_alloc(load, enc)
    anchor = alloc if alloc is not None else load
    insert_new(BarrierOp, [], [], {}, anchor, load.loc)
    buf = insert_new(LocalAllocOp, [], [MemDescType(t.shape, t.element, enc, True)], {},
                     anchor, load.loc).results[0]
    bar = _barrier(anchor)
    true = make_constant(1, i1, anchor)
    insert_new(BarrierExpectOp, [bar, true], [],
               {"size": IntegerAttr(box.box_bytes * box.copies, i32)}, anchor, load.loc)
    insert_new(AsyncTMACopyGlobalToLocalOp, [load.operands[0], buf, bar, true]
               + list(load.operands[1:]), [], {}, anchor, load.loc)
    insert_new(WaitBarrierOp, [bar, make_constant(0, i32, anchor)], [], {}, anchor, load.loc)
    insert_new(BarrierOp, [], [], {}, anchor, load.loc)
    insert_new(InvalBarrierOp, [bar], [], {}, anchor, load.loc)
    if alloc is not None:
        replace_buffer(alloc.results[0], buf)
        alloc.erase()
        load.erase()
        ctx.record_pattern("tt.descriptor_load -> TMA copy read by wgmma in place", op=anchor)
        return
    value = insert_new(LocalLoadOp, [buf], [t], {}, load, load.loc).results[0]
    load.results[0].replace_all_uses_with(value)
    load.erase()
    ctx.record_pattern("tt.descriptor_load -> TMA copy + local_load", op=value.owner_op)


def _unconverted(value: Value) -> Value:
    """The value a `ttg.convert_layout` converts, when `value` is one whose source is in a
    register layout: the shared buffer a TMA store copies from is written from any register
    layout (a tensor-core accumulator by stmatrix), so the conversion's own trip through
    shared memory would be paid twice (Triton folds it into the local_alloc too)."""
    producer = value.owner_op
    if isinstance(producer, ConvertLayoutOp) and \
            not isinstance(producer.operands[0].type.encoding, DotOperandEncoding):
        return producer.operands[0]
    return value


def lower_store(store: Operation, ctx: PassContext) -> None:
    """One `tt.descriptor_store` -> shared buffer + TMA store (see the module docstring)."""
    value = store.operands[1]
    t = value.type
    _, enc = box_of(t)
    stored = _unconverted(value)
    buf = insert_new(LocalAllocOp, [stored], [MemDescType(t.shape, t.element, enc, False)], {},
                     store).results[0]
    copy = insert_new(AsyncTMACopyLocalToGlobalOp, [store.operands[0], buf]
                      + list(store.operands[2:]), [], {}, store)
    insert_new(TMAStoreWaitOp, [], [], {"pendings": IntegerAttr(0, i32)}, store)
    insert_new(BarrierOp, [], [], {}, store)
    store.erase()
    if stored is not value and not value.has_uses():
        value.owner_op.erase()
    ctx.record_pattern("tt.descriptor_store -> TMA store", op=copy)


#: bytes of a tensor map (a CUtensorMap), and the alignment TMA needs of one in memory
TENSOR_MAP_BYTES = 128


def lower_make_descriptor(make: Operation, ctx: PassContext) -> None:
    """One `tt.make_tensor_descriptor` -> a 128-byte tensor map in the program's global scratch
    memory (`ttg.global_scratch_alloc`), written by `ttng.tensormap_create` with the box and
    swizzle the descriptor's loads and stores use (`box_of`) and made visible to the TMA unit
    by `ttng.tensormap_fenceproxy_acquire`; the map's address replaces the op's result."""
    block = make.attributes["block_shape"].values
    element = make.operands[0].type.pointee
    box, _ = box_of(TensorType(tuple(block), element))
    rank = len(block)
    dims = make.operands[1:1 + rank]
    strides = make.operands[1 + rank:]
    scratch = insert_new(GlobalScratchAllocOp, [], [make.results[0].type],
                         {"nbytes": IntegerAttr(TENSOR_MAP_BYTES, i32),
                          "alignment": IntegerAttr(TENSOR_MAP_BYTES, i32)}, make).results[0]
    element_bytes = make_constant(box.element_bytes, i64, make)
    byte_strides = [insert_new(BINARY_OPS["muli"], [s, element_bytes], [i64], {}, make).results[0]
                    for s in reversed(strides[:-1])]
    padding = make.attributes.get("padding")
    insert_new(TensormapCreateOp, [scratch, make.operands[0]] + list(reversed(dims))
               + byte_strides, [],
               {"box_dim": DenseArrayAttr(tuple(reversed(box.box))),
                "elem_type": IntegerAttr(TENSORMAP_ELEMENT_TYPES[str(element)], i32),
                "swizzle_mode": IntegerAttr(TENSORMAP_SWIZZLE_MODES[box.swizzle], i32),
                "fill_mode": IntegerAttr(TENSORMAP_FILL_MODES[padding.value if padding else
                                                              "zero"], i32)}, make)
    insert_new(TensormapFenceproxyAcquireOp, [scratch], [], {}, make)
    make.results[0].replace_all_uses_with(scratch)
    make.erase()
    ctx.record_pattern("tt.make_tensor_descriptor -> tensor map in global scratch",
                       op=scratch.owner_op)


@register_pass
class TmaLowering(Pass):
    """Turns tensor-descriptor loads and stores (`tt.descriptor_load/store`, made when the
    compile copies descriptors by TMA) into TMA copies between global and shared memory that
    complete on mbarriers (cp.async.bulk.tensor); a load feeding a wgmma operand lands in the
    operand's swizzled buffer, which the dot reads without a register round trip. A
    device-side descriptor (`tt.make_tensor_descriptor`) becomes a tensor map the kernel writes
    to its global scratch memory."""

    name = "tma-lowering"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions():
            for op in list(func.walk()):
                if isinstance(op, tt.MakeTensorDescriptorOp):
                    lower_make_descriptor(op, ctx)
                elif isinstance(op, tt.DescriptorLoadOp):
                    lower_load(op, ctx)
                elif isinstance(op, tt.DescriptorStoreOp):
                    lower_store(op, ctx)
