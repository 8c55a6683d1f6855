"""The `ttng` dialect (TritonNvidiaGPU): Hopper warp-group tensor-core ops.

`ttng.warp_group_dot` is a dot whose B operand (and usually A) is read by `wgmma.mma_async`
straight from a shared-memory buffer in a `#ttg.nvmma_shared` layout, with the accumulator in
a `#ttg.nvidia_mma` version 3 layout. When `isAsync` is set the result is only valid after a
`ttng.warp_group_dot_wait` that covers it: the wait passes its operands through, so every
later use of the accumulator (and the end of the buffers' reads) is ordered after the wait.

The TMA ops copy tensor-descriptor blocks between global and shared memory through a
CUtensorMap (a 128-byte kernel parameter): `ttng.async_tma_copy_global_to_local` starts a copy
that completes on an mbarrier (`ttng.init_barrier`, `ttng.barrier_expect` of the bytes to
arrive, `ttng.wait_barrier` on a phase); `ttng.async_tma_copy_local_to_global` is a bulk-group
store that `ttng.async_tma_store_wait` waits for, after `ttng.fence_async_shared` made the
threads' shared writes visible to the async proxy.
"""
from __future__ import annotations

from compiler.ir.accessors import attr, operand
from compiler.ir.parser import OpParts
from compiler.ir.syntax import Syntax, TypedOperands
from compiler.ir.traits import (LayoutAnchor, LayoutBarrier, MemoryRead, MemoryWrite,
                                SharedMemoryScratch)
from compiler.dialects.ttg import MemDescType
from compiler.ir.types import TensorType
from compiler.ir.verifier_errors import VerificationError

from .common import define_op, dot_types_text, expect_operands, parse_dot_types, set_counts


class _WarpGroupDotSyntax(Syntax):
    """`ttng.warp_group_dot %a, %b, %c {attrs} : A * B -> R` (Triton's printed form)."""

    def print(self, p, op, indent):
        return (f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)}"
                + dot_types_text(p, op))

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        return OpParts(operands, [parse_dot_types(ps)], attrs)


def _verify_warp_group_dot(op):
    expect_operands(op, 3)
    a, b, c = (v.type for v in op.operands)
    if not isinstance(b, MemDescType):
        raise VerificationError(op, f"operand B must be a shared !ttg.memdesc, got {b}")
    if not isinstance(a, (MemDescType, TensorType)):
        raise VerificationError(op, f"operand A must be a !ttg.memdesc or a tensor, got {a}")
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        raise VerificationError(op, f"inner dimensions differ: {list(sa)} x {list(sb)}")
    if not isinstance(c, TensorType) or c.shape != (sa[0], sb[1]) or op.results[0].type != c:
        raise VerificationError(op, f"accumulator must be a {sa[0]}x{sb[1]} tensor of the "
                                    f"result type, got {c}")


WarpGroupDotOp = define_op(
    "WarpGroupDotOp", "ttng.warp_group_dot", _WarpGroupDotSyntax(),
    (MemoryRead, LayoutAnchor, LayoutBarrier), _verify_warp_group_dot,
    a=operand(0), b=operand(1), c=operand(2),
    input_precision=attr("inputPrecision", default=None),
    is_async=attr("isAsync", default=None),
    max_num_imprecise_acc=attr("maxNumImpreciseAcc", default=None),
    doc="`ttng.warp_group_dot`: D = A * B + C on Hopper tensor cores (wgmma.mma_async), B "
        "(and A unless it is a register tensor) read from shared memory.")


def _verify_wait(op):
    if not op.operands:
        raise VerificationError(op, "waits on at least one value")
    if [v.type for v in op.operands] != [r.type for r in op.results]:
        raise VerificationError(op, "results must have the operands' types")


class _WaitSyntax(Syntax):
    """`ttng.warp_group_dot_wait %acc[, %bufs...] {pendings = N : i32} : T[, ...]`: results
    have the operands' types."""

    def print(self, p, op, indent):
        return (f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : "
                f"{p.types(v.type for v in op.operands)}")

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        ps.expect(":")
        return OpParts(operands, list(ps.type_list()), attrs)


WarpGroupDotWaitOp = define_op(
    "WarpGroupDotWaitOp", "ttng.warp_group_dot_wait", _WaitSyntax(), (MemoryRead, MemoryWrite),
    _verify_wait, pendings=attr("pendings"),
    doc="`ttng.warp_group_dot_wait {pendings}`: wait until at most `pendings` groups of "
        "asynchronous warp-group dots are in flight (wgmma.wait_group); its results are its "
        "operands, now complete.")


set_counts([WarpGroupDotOp], operands=3, results=1)
set_counts([WarpGroupDotWaitOp], operands=(1, None), results=(1, None))


# ---- TMA and mbarriers ----------------------------------------------------------------------
def _is_barrier(t) -> bool:
    return isinstance(t, MemDescType) and tuple(t.shape) == (1,) and str(t.element) == "i64"


def _verify_barrier_first(op, extra: tuple = ()):
    """Operand 0 is a one-word mbarrier (`!ttg.memdesc<1xi64>`); then operands of `extra`
    types (by name)."""
    if not op.operands or not _is_barrier(op.operands[0].type):
        raise VerificationError(op, "operand 0 must be an mbarrier !ttg.memdesc<1xi64>")
    if [str(v.type) for v in op.operands[1:]] != list(extra):
        raise VerificationError(op, f"after the barrier takes ({', '.join(extra)}), got "
                                    f"({', '.join(str(v.type) for v in op.operands[1:])})")


def _verify_tma_copy(op, with_barrier: bool):
    """%map (a pointer), %buf (a shared memdesc of the block), [%bar, %pred i1], i32 coords."""
    head = 4 if with_barrier else 2
    if len(op.operands) < head + 1 or not op.operands[0].type.is_ptr:
        raise VerificationError(op, "takes a tensor map, a buffer"
                                + (", an mbarrier, a predicate" if with_barrier else "")
                                + " and the coordinates")
    buf = op.operands[1].type
    if not isinstance(buf, MemDescType):
        raise VerificationError(op, f"operand 1 must be a shared !ttg.memdesc, got {buf}")
    if with_barrier and (not _is_barrier(op.operands[2].type) or
                         str(op.operands[3].type) != "i1"):
        raise VerificationError(op, "operands 2 and 3 must be an mbarrier and an i1 predicate")
    coords = op.operands[head:]
    if len(coords) != len(buf.shape) or any(str(v.type) != "i32" for v in coords):
        raise VerificationError(op, f"takes {len(buf.shape)} i32 coordinates, one per dim of "
                                    f"{buf}")


InitBarrierOp = define_op(
    "InitBarrierOp", "ttng.init_barrier", TypedOperands(), (MemoryWrite,),
    _verify_barrier_first, barrier=operand(0), count=attr("count"),
    doc="`ttng.init_barrier %bar {count}`: initialize an mbarrier expecting `count` arrivals "
        "per phase (mbarrier.init, by one thread).")

BarrierExpectOp = define_op(
    "BarrierExpectOp", "ttng.barrier_expect", TypedOperands(), (MemoryWrite,),
    lambda op: _verify_barrier_first(op, ("i1",)), barrier=operand(0), size=attr("size"),
    doc="`ttng.barrier_expect %bar, %pred {size}`: arrive on the barrier announcing `size` "
        "bytes of asynchronous copies to wait for (mbarrier.arrive.expect_tx, one thread).")

WaitBarrierOp = define_op(
    "WaitBarrierOp", "ttng.wait_barrier", TypedOperands(), (MemoryRead, MemoryWrite),
    lambda op: _verify_barrier_first(op, ("i32",)), barrier=operand(0), phase=operand(1),
    doc="`ttng.wait_barrier %bar, %phase`: wait until the barrier's phase `phase` (0 or 1) "
        "has completed (mbarrier.try_wait.parity in a loop).")

InvalBarrierOp = define_op(
    "InvalBarrierOp", "ttng.inval_barrier", TypedOperands(), (MemoryWrite,),
    _verify_barrier_first, barrier=operand(0),
    doc="`ttng.inval_barrier %bar`: end the mbarrier's life (mbarrier.inval, one thread), so "
        "its word may hold other data.")

AsyncTMACopyGlobalToLocalOp = define_op(
    "AsyncTMACopyGlobalToLocalOp", "ttng.async_tma_copy_global_to_local", TypedOperands(),
    (MemoryRead, MemoryWrite), lambda op: _verify_tma_copy(op, True),
    desc=operand(0), result=operand(1), barrier=operand(2), pred=operand(3),
    doc="`ttng.async_tma_copy_global_to_local %map, %buf, %bar, %pred, %coords...`: start a "
        "TMA copy of the block at `coords` into `buf` (cp.async.bulk.tensor, completing on "
        "the mbarrier), issued by one thread when `pred`.")

AsyncTMACopyLocalToGlobalOp = define_op(
    "AsyncTMACopyLocalToGlobalOp", "ttng.async_tma_copy_local_to_global", TypedOperands(),
    (MemoryRead, MemoryWrite), lambda op: _verify_tma_copy(op, False),
    desc=operand(0), src=operand(1),
    doc="`ttng.async_tma_copy_local_to_global %map, %buf, %coords...`: start a TMA store of "
        "`buf` to the block at `coords` (cp.async.bulk.tensor ... bulk_group, one thread, "
        "committed as one bulk group); out-of-bounds elements are not written.")

TMAStoreWaitOp = define_op(
    "TMAStoreWaitOp", "ttng.async_tma_store_wait", TypedOperands(), (MemoryRead, MemoryWrite),
    None, pendings=attr("pendings"),
    doc="`ttng.async_tma_store_wait {pendings}`: wait until at most `pendings` TMA store "
        "groups still read shared memory (cp.async.bulk.wait_group.read).")

FenceAsyncSharedOp = define_op(
    "FenceAsyncSharedOp", "ttng.fence_async_shared", TypedOperands(), (MemoryRead, MemoryWrite),
    None,
    doc="`ttng.fence_async_shared`: order the threads' generic-proxy shared-memory accesses "
        "before later async-proxy ones (fence.proxy.async.shared::cta).")

# ---- device-side tensor maps ---------------------------------------------------------------
#: PTX's `tensormap.replace .elemtype` codes (the CUtensorMapDataType order) by IR element
#: type, as the host maps have them: 8- and 16-bit integers and fp8 as unsigned bytes / halves
TENSORMAP_ELEMENT_TYPES = {"i8": 0, "f8E4M3FN": 0, "f8E5M2": 0, "i16": 1, "i32": 3, "i64": 5,
                           "f16": 6, "f32": 7, "f64": 9, "bf16": 10}
#: `tensormap.replace .swizzle_mode` codes by swizzle width in bytes
TENSORMAP_SWIZZLE_MODES = {0: 0, 32: 1, 64: 2, 128: 3}
#: `.fill_mode` codes by descriptor padding
TENSORMAP_FILL_MODES = {"zero": 0, "nan": 1}


def _verify_tensormap_create(op):
    """%map (the 128-byte destination in global memory), %address, then per dim (innermost
    first) its i32 size, and per dim but the innermost its i64 byte stride."""
    box = op.attributes.get("box_dim")
    rank = len(box.values) if box is not None else 0
    if not rank or len(op.operands) != 2 + rank + rank - 1:
        raise VerificationError(op, f"takes the map, the global address, {rank or 'N'} dims and "
                                    f"{max(rank - 1, 0) or 'N - 1'} byte strides (box_dim has "
                                    f"{rank} entries)")
    if not op.operands[0].type.is_ptr or not op.operands[1].type.is_ptr:
        raise VerificationError(op, "the map and the global address must be pointers")
    dims, strides = op.operands[2:2 + rank], op.operands[2 + rank:]
    if any(str(v.type) != "i32" for v in dims) or any(str(v.type) != "i64" for v in strides):
        raise VerificationError(op, "dims must be i32 and byte strides i64")
    for key, codes in (("elem_type", TENSORMAP_ELEMENT_TYPES.values()),
                       ("swizzle_mode", TENSORMAP_SWIZZLE_MODES.values()),
                       ("fill_mode", TENSORMAP_FILL_MODES.values())):
        value = op.attributes.get(key)
        if value is None or value.value not in tuple(codes):
            raise VerificationError(op, f"'{key}' must be one of {sorted(set(codes))}")


TensormapCreateOp = define_op(
    "TensormapCreateOp", "ttng.tensormap_create", TypedOperands(),
    (MemoryWrite, SharedMemoryScratch), _verify_tensormap_create,
    desc_ptr=operand(0), global_address=operand(1), box_dim=attr("box_dim"),
    elem_type=attr("elem_type"), swizzle_mode=attr("swizzle_mode"),
    fill_mode=attr("fill_mode"),
    doc="`ttng.tensormap_create %map, %address, %dims..., %byte_strides... {box_dim, "
        "elem_type, swizzle_mode, fill_mode}`: write a tiled tensor map (a CUtensorMap) to the "
        "128 bytes at `%map`: built by the first warp in a shared-memory scratch buffer with "
        "`tensormap.replace`, then copied out with a release fence for the tensor-map proxy "
        "(`tensormap.cp_fenceproxy`). Dims and strides innermost first.")

TensormapFenceproxyAcquireOp = define_op(
    "TensormapFenceproxyAcquireOp", "ttng.tensormap_fenceproxy_acquire", TypedOperands(),
    (MemoryRead, MemoryWrite), lambda op: _verify_pointer_operand(op),
    desc_ptr=operand(0),
    doc="`ttng.tensormap_fenceproxy_acquire %map`: make a tensor map written to global memory "
        "visible to the TMA unit (fence.proxy.tensormap::generic.acquire), then sync the CTA.")


def _verify_pointer_operand(op):
    if not op.operands[0].type.is_ptr:
        raise VerificationError(op, f"takes the tensor map's pointer, got {op.operands[0].type}")


set_counts([InitBarrierOp, InvalBarrierOp], operands=1, results=0)
set_counts([BarrierExpectOp, WaitBarrierOp], operands=2, results=0)
set_counts([AsyncTMACopyGlobalToLocalOp], operands=(5, None), results=0)
set_counts([AsyncTMACopyLocalToGlobalOp], operands=(3, None), results=0)
set_counts([TMAStoreWaitOp, FenceAsyncSharedOp], operands=0, results=0)
set_counts([TensormapFenceproxyAcquireOp], operands=1, results=0)
set_counts([TensormapCreateOp], operands=(3, None), results=0)
